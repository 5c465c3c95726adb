# Sourced by tests/vm/run-matrix: a kernel package's image and the extras
# its guest needs (config, sock_diag modules), unpacked from the .debs that
# fetch() downloads; both cached under $VM/kernels/<package>.

# The uncompressed ELF vmlinux inside a bzImage: try each compressed stream
# that starts at a known magic until one inflates to an ELF file. An arm64
# vmlinuz is the uncompressed Image already (or, gzipped, inflates to one):
# qemu boots it as it is.
is_image() { # file: an ELF vmlinux or an arm64 Image ("ARMd" at 0x38)
  [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ] ||
    [ "$(tail -c +57 "$1" 2>/dev/null | head -c 4 | tr -d '\0')" = ARMd ]
}
unpack_vmlinux() { # vmlinuz out
  local magic tool off
  if is_image "$1"; then
    cp "$1" "$2"
    return 0
  fi
  for pair in '\x1f\x8b\x08:gzip -dc' '\xfd7zXZ\x00:xz -dc' '\x28\xb5\x2f\xfd:zstd -dcq' \
    '\x02\x21\x4c\x18:lz4 -dc' '\x5d\x00\x00\x00:xz -dc --format=lzma' 'BZh:bzip2 -dc'; do
    magic=${pair%%:*} tool=${pair#*:}
    command -v "${tool%% *}" >/dev/null || continue
    for off in $(LC_ALL=C grep -obUaP "$magic" "$1" 2>/dev/null | cut -d: -f1 | head -n 8); do
      tail -c +$((off + 1)) "$1" | $tool 2>/dev/null >"$2.tmp"
      if is_image "$2.tmp"; then
        mv "$2.tmp" "$2"
        return 0
      fi
    done
  done
  rm -f "$2.tmp"
  return 1
}

vmlinuz_in() { # .deb -> the tar member name of its kernel image, or nothing
  dpkg-deb -c "$1" | awk '{ print $NF }' | grep -E '^\./(boot/vmlinuz-[^/]*|usr/lib/modules/[^/]*/vmlinuz)$' | head -n 1
}
kernel_image() { # package -> path of its vmlinux (cached)
  local pkg=$1 dir=$VM/kernels/$1 deb bin member
  if [ ! -s "$dir/vmlinux" ]; then
    deb=$(fetch "$pkg") || return 1
    rm -rf "$dir" && mkdir -p "$dir"
    # Newer kernels (trixie-backports' 6.19 and later) ship the image in a
    # package of its own, linux-binary-<version>, that linux-image-* depends
    # on, as /usr/lib/modules/<version>/vmlinuz.
    member=$(vmlinuz_in "$deb")
    if [ -z "$member" ]; then
      bin=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed -n 's/^ *\(linux-binary-[^ ]*\).*/\1/p' | head -n 1)
      [ -n "$bin" ] || { say "$pkg: no vmlinuz in it and no linux-binary package in its Depends"; return 1; }
      deb=$(fetch "$bin") || return 1
      member=$(vmlinuz_in "$deb")
      [ -n "$member" ] || { say "$bin: no vmlinuz in it"; return 1; }
    fi
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dir" "$member" || return 1
    unpack_vmlinux "$dir/$member" "$dir/vmlinux" || {
      say "$pkg: no ELF vmlinux found in its vmlinuz"
      return 1
    }
    rm -rf "$dir/boot" "$dir/usr"
  fi
  echo "$dir/vmlinux"
}

# What a guest needs of its kernel's package besides the image: the
# kernel's config (/boot/config-<version>, which libbpf reads for the
# __kconfig values, as tcp_window's iterator needs CONFIG_HZ) and the
# sock_diag modules (inet_diag, tcp_diag: modules in Debian's kernels) for
# tcp_window's stalled receivers; /init loads the modules. Packed as a cpio
# archive that is appended to the initramfs (the kernel unpacks them one
# after the other). Prints its path (cached).
kernel_extras() { # package -> path of its extra cpio
  local pkg=$1 dir=$VM/kernels/$1 deb bin x f
  if [ ! -s "$dir/extra.cpio" ]; then
    deb=$(fetch "$pkg") || return 1
    x=$dir/extra
    rm -rf "$x" && mkdir -p "$x/boot" "$x/lib/modules/extra"
    # Newer kernels (trixie-backports' 7.x) split the package: the image
    # in linux-binary-*, the modules in linux-modules-*, the rest in
    # linux-base-*, all in linux-image-*'s Depends.
    for d in "$deb" $(dpkg-deb -f "$deb" Depends | tr ',' '\n' |
      sed -n 's/^ *\(linux-\(binary\|modules\|base\)-[^ ]*\).*/\1/p' |
      while read -r bin; do fetch "$bin" || true; done); do
      dpkg-deb --fsys-tarfile "$d" | tar -x -C "$x" --wildcards --no-anchored \
        'boot/config-*' '*/net/ipv4/inet_diag.ko*' '*/net/ipv4/tcp_diag.ko*' 2>/dev/null
    done
    for f in $(find "$x" -name '*_diag.ko*' -not -path '*/lib/modules/extra/*'); do
      case $f in
      *.xz) xz -dc "$f" >"$x/lib/modules/extra/$(basename "$f" .xz)" ;;
      *.zst) zstd -qdc "$f" >"$x/lib/modules/extra/$(basename "$f" .zst)" ;;
      *) cp "$f" "$x/lib/modules/extra/" ;;
      esac
    done
    rm -rf "$x/lib/modules/"[0-9]* "$x/usr"
    (cd "$x" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) >"$dir/extra.cpio.tmp" &&
      mv "$dir/extra.cpio.tmp" "$dir/extra.cpio" || return 1
  fi
  echo "$dir/extra.cpio"
}
