/* No program of the built BPF objects (build/bpf/NAME.bpf.o) does an atomic
 * operation (BPF_STX | BPF_ATOMIC: opcodes 0xdb, 0xc3) on a map value that
 * is not per-CPU, but for the values ALLOWED names, each with its reason,
 * and those only after a plain load of the same field (the check that the
 * event will be sent): a storm of events at one site must not bounce one
 * cache line across the CPUs that receive it.
 *
 * Each program is followed instruction by instruction from its symbol on,
 * with what each register points to: a map (ld_imm64 relocated against a
 * map of .maps), a map's value (what bpf_map_lookup_elem returns for that
 * map, or a global of .bss/.data, plus the offsets added to it), or
 * nothing known; registers spilled to the stack and filled again keep it. The order is the program's text order (branches are not
 * followed): the compiler keeps a lookup before its use. Where paths meet,
 * a value of one map and of another is a value of either (each checked),
 * and a NULL on one path is the other's value (the atomic is past the NULL
 * test); a value plus a scalar is the value at an unknown offset. An atomic on a
 * register of unknown origin fails too. */
#include "testlib.h"

#include <bpf/libbpf.h>
#include <dirent.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Shared values an atomic may touch, and why; striped: at any offset (a
 * CPU's stripe), without a read before. */
static const struct {
  const char *map;
  const char *why;
  bool striped;
} ALLOWED[] = {
    {"drops_event_rate", "DropLimit is the host's: counted only for a drop "
                         "that will be sent, after plain reads of it", false},
    {"netstacklat_outlier_rate", "OutlierLimit is the host's: counted only "
                                 "for an outlier that will be sent, after "
                                 "plain reads of it", false},
    {"netstacklat_grouped_seconds",
     "GroupBy's stripes (struct nsl_stripe): per-CPU values took 1,680 bytes "
     "per possible CPU (385 MB at 256 CPUs); a CPU writes its own stripe, "
     "atomically only on hosts past 16 CPUs, where CPUs share stripes",
     true},
    {"netstacklat_cgroup_slots", "GroupBy cgroup's slots: the same stripes",
     true},
};

/* Test objects, never loaded on a packet or drop hook. */
static const char *const SKIP[] = {
    "selftest.bpf.o",  /* the loader's test: openat() calls of one process */
    "clockpair.bpf.o", /* rtclock's test */
};

/* K_NULL: the constant 0 (a lookup's NULL on one path of a join). */
enum kind { K_NONE, K_MAP, K_VALUE, K_NULL };
#define OFF_VAR (-(1L << 40)) /* a value's offset not known here */
#define MAX_ALSO 3
struct reg {
  enum kind kind;
  char map[64];
  long off;
  /* K_VALUE where paths met: a value of one of these maps too */
  char also[MAX_ALSO][64];
  int nalso;
};

/* What the registers and the stack hold on one path. */
struct regs {
  struct reg r[11];
  struct reg stack[64]; /* spilled registers, by 8-byte slot below r10 */
};

#define MAX_LOADS 256
struct prog_state {
  struct regs *cur;   /* at the instruction being followed */
  struct regs **at;   /* per instruction: met there by forward jumps */
  struct {
    char map[64];
    long off;
  } loads[MAX_LOADS];
  int nloads;
};

static int failures_found;

/* 0: not allowed; 1: allowed after a read; 2: allowed (striped). */
static int allowed(const char *map) {
  for (size_t i = 0; i < sizeof(ALLOWED) / sizeof(ALLOWED[0]); i++)
    if (!strcmp(ALLOWED[i].map, map))
      return ALLOWED[i].striped ? 2 : 1;
  return 0;
}

static bool loaded_before(const struct prog_state *st, const char *map,
                          long off) {
  for (int i = 0; i < st->nloads; i++)
    if (!strcmp(st->loads[i].map, map) && st->loads[i].off == off)
      return true;
  return false;
}

static bool map_percpu(struct bpf_object *obj, const char *name) {
  struct bpf_map *m = bpf_object__find_map_by_name(obj, name);
  if (!m)
    return false; /* .bss, .data: one value for every CPU */
  enum bpf_map_type t = bpf_map__type(m);
  return t == BPF_MAP_TYPE_PERCPU_ARRAY || t == BPF_MAP_TYPE_PERCPU_HASH ||
         t == BPF_MAP_TYPE_LRU_PERCPU_HASH;
}

/* The relocation at byte offset `at` of the section: the symbol's name
 * (a map) or its section's (a global), and whether it is a map of .maps. */
struct relocs {
  Elf *elf;
  Elf_Data *rel, *syms;
  size_t nrel, strndx, maps_shndx;
};

static bool reloc_at(const struct relocs *rl, size_t at, char *out,
                     size_t len, bool *is_map, long *sym_off) {
  for (size_t i = 0; rl->rel && i < rl->nrel; i++) {
    GElf_Rel r;
    gelf_getrel(rl->rel, (int)i, &r);
    if (r.r_offset != at)
      continue;
    GElf_Sym s;
    gelf_getsym(rl->syms, (int)GELF_R_SYM(r.r_info), &s);
    *is_map = s.st_shndx == rl->maps_shndx;
    *sym_off = *is_map ? 0 : (long)s.st_value;
    const char *name;
    if (*is_map) {
      name = elf_strptr(rl->elf, rl->strndx, s.st_name);
    } else {
      GElf_Shdr sh;
      Elf_Scn *scn = elf_getscn(rl->elf, s.st_shndx);
      size_t shstrndx;
      elf_getshdrstrndx(rl->elf, &shstrndx);
      gelf_getshdr(scn, &sh);
      name = elf_strptr(rl->elf, shstrndx, sh.sh_name);
    }
    snprintf(out, len, "%s", name ? name : "?");
    return true;
  }
  return false;
}

static void atomic_one(const char *obj_name, const char *prog,
                       struct bpf_object *obj, const struct prog_state *st,
                       const struct reg *base, long off);

/* An atomic on a value of one of several maps (paths met): each is
 * checked as if alone. */
static void atomic_seen(const char *obj_name, const char *prog,
                        struct bpf_object *obj, const struct prog_state *st,
                        const struct reg *base, long off) {
  atomic_one(obj_name, prog, obj, st, base, off);
  for (int i = 0; base->kind == K_VALUE && i < base->nalso; i++) {
    struct reg r = *base;
    memcpy(r.map, base->also[i], sizeof(r.map));
    r.nalso = 0;
    atomic_one(obj_name, prog, obj, st, &r, off);
  }
}

static void atomic_one(const char *obj_name, const char *prog,
                       struct bpf_object *obj, const struct prog_state *st,
                       const struct reg *base, long off) {
  long at = base->off + off;
  if (base->kind != K_VALUE) {
    printf("  %s %s: an atomic at +%ld on a value of unknown origin\n",
           obj_name, prog, off);
    failures_found++;
  } else if (map_percpu(obj, base->map)) {
    return;
  } else if (!allowed(base->map)) {
    printf("  %s %s: an atomic on %s+%ld, shared by the CPUs\n", obj_name,
           prog, base->map, at);
    failures_found++;
  } else if (allowed(base->map) == 2) {
    return;
  } else if (base->off == OFF_VAR || !loaded_before(st, base->map, at)) {
    printf("  %s %s: an atomic on %s+%ld before any plain read of it\n",
           obj_name, prog, base->map, at);
    failures_found++;
  }
}

static struct reg *stack_slot(struct prog_state *st, short off) {
  static struct reg none;
  int i = (-off - 1) / 8;
  if (off >= 0 || i >= 64) {
    none.kind = K_NONE;
    return &none;
  }
  return &st->cur->stack[i];
}

/* One instruction's effect on what the registers point to. */
static void step(const char *obj_name, const char *prog,
                 struct bpf_object *obj, struct prog_state *st,
                 const struct relocs *rl, const struct bpf_insn *in,
                 size_t at) {
  __u8 op = in->code, cls = op & 0x07;
  struct reg *d = &st->cur->r[in->dst_reg & 0xf];
  struct reg *s = &st->cur->r[in->src_reg & 0xf];
  if (op == (BPF_LD | BPF_IMM | BPF_DW)) {
    bool is_map;
    long sym_off = 0;
    d->kind = K_NONE;
    if (reloc_at(rl, at, d->map, sizeof(d->map), &is_map, &sym_off)) {
      d->kind = is_map ? K_MAP : K_VALUE;
      d->off = is_map ? 0 : sym_off + in->imm;
    }
  } else if (op == (BPF_ALU64 | BPF_MOV | BPF_X)) {
    *d = *s;
  } else if (op == (BPF_ALU64 | BPF_MOV | BPF_K) && in->imm == 0) {
    d->kind = K_NULL;
  } else if (op == (BPF_ALU64 | BPF_ADD | BPF_K) && d->kind == K_VALUE) {
    if (d->off != OFF_VAR)
      d->off += in->imm;
  } else if (op == (BPF_ALU64 | BPF_ADD | BPF_X) &&
             (d->kind == K_VALUE) != (s->kind == K_VALUE)) {
    /* a value plus a scalar (a stripe's offset): the value, somewhere */
    if (s->kind == K_VALUE)
      *d = *s;
    d->off = OFF_VAR;
  } else if (op == (BPF_JMP | BPF_CALL)) {
    struct reg r1 = st->cur->r[1], *r = st->cur->r;
    for (int i = 0; i <= 5; i++)
      r[i].kind = K_NONE;
    if (in->imm == BPF_FUNC_map_lookup_elem && r1.kind == K_MAP) {
      r[0] = r1;
      r[0].kind = K_VALUE;
      r[0].off = 0;
      r[0].nalso = 0;
    }
  } else if (cls == BPF_LDX && (in->src_reg & 0xf) == BPF_REG_10) {
    *d = *stack_slot(st, in->off); /* a fill */
  } else if (cls == BPF_STX && (in->dst_reg & 0xf) == BPF_REG_10 &&
             BPF_MODE(op) == BPF_MEM) {
    *stack_slot(st, in->off) = BPF_SIZE(op) == BPF_DW ? *s : (struct reg){0};
  } else if (cls == BPF_ST && (in->dst_reg & 0xf) == BPF_REG_10) {
    stack_slot(st, in->off)->kind = K_NONE;
  } else if (cls == BPF_LDX) {
    if (s->kind == K_VALUE && st->nloads < MAX_LOADS) {
      memcpy(st->loads[st->nloads].map, s->map, sizeof(s->map));
      st->loads[st->nloads++].off = s->off + in->off;
    }
    d->kind = K_NONE;
  } else if (cls == BPF_STX && BPF_MODE(op) == BPF_ATOMIC) {
    atomic_seen(obj_name, prog, obj, st, d, in->off);
    if (in->imm & BPF_FETCH)
      s->kind = K_NONE;
  } else if (cls == BPF_ALU || cls == BPF_ALU64) {
    d->kind = K_NONE;
  }
}

/* Whether value register a is (or may be) of map m. */
static bool has_map(const struct reg *a, const char *m) {
  if (!strcmp(a->map, m))
    return true;
  for (int i = 0; i < a->nalso; i++)
    if (!strcmp(a->also[i], m))
      return true;
  return false;
}

/* Two values met: a value of either's maps (at most 1 + MAX_ALSO), at an
 * offset known where both agree. */
static void meet_values(struct reg *a, const struct reg *b) {
  if (a->off != b->off)
    a->off = OFF_VAR;
  for (int i = -1; i < b->nalso; i++) {
    const char *m = i < 0 ? b->map : b->also[i];
    if (has_map(a, m))
      continue;
    if (a->nalso == MAX_ALSO) {
      a->kind = K_NONE;
      return;
    }
    memcpy(a->also[a->nalso++], m, sizeof(a->also[0]));
  }
}

/* Two paths meet: what they agree on. NULL on one path and a value on the
 * other is the value (an atomic is reached only past the NULL test). */
static void meet(struct regs *into, const struct regs *from) {
  struct reg *a = into->r, *b = (struct reg *)from->r;
  for (size_t i = 0; i < sizeof(*into) / sizeof(struct reg); i++) {
    if (a[i].kind == K_NULL && b[i].kind == K_VALUE)
      a[i] = b[i];
    else if (a[i].kind == K_VALUE && b[i].kind == K_NULL)
      continue;
    else if (a[i].kind == K_VALUE && b[i].kind == K_VALUE)
      meet_values(&a[i], &b[i]);
    else if (a[i].kind != b[i].kind || a[i].off != b[i].off ||
             strcmp(a[i].map, b[i].map))
      a[i].kind = K_NONE;
  }
}

/* A forward jump from i: its target meets this path. */
static void jump(struct prog_state *st, const struct bpf_insn *in, size_t i,
                 size_t n) {
  __u8 cls = in->code & 0x07, op = BPF_OP(in->code);
  if ((cls != BPF_JMP && cls != BPF_JMP32) || op == BPF_CALL ||
      op == BPF_EXIT || in->off <= 0 || i + 1 + (size_t)in->off >= n)
    return;
  size_t t = i + 1 + (size_t)in->off;
  if (!st->at[t]) {
    st->at[t] = malloc(sizeof(struct regs));
    *st->at[t] = *st->cur;
  } else {
    meet(st->at[t], st->cur);
  }
}

/* Whether a program starts at instruction i: its name. */
static const char *prog_at(Elf *elf, const struct relocs *rl, size_t shndx,
                           size_t i) {
  size_t nsyms = rl->syms->d_size / sizeof(Elf64_Sym);
  for (size_t k = 0; k < nsyms; k++) {
    GElf_Sym s;
    gelf_getsym(rl->syms, (int)k, &s);
    if (s.st_shndx == shndx && GELF_ST_TYPE(s.st_info) == STT_FUNC &&
        s.st_value == i * sizeof(struct bpf_insn))
      return elf_strptr(elf, rl->strndx, s.st_name);
  }
  return NULL;
}

/* The programs of one executable section, each from its symbol on, along
 * the text with the paths of forward jumps met at their targets. */
static int check_section(const char *obj_name, struct bpf_object *obj,
                         Elf *elf, Elf_Scn *scn, size_t shndx,
                         struct relocs *rl) {
  Elf_Data *data = elf_getdata(scn, NULL);
  size_t n = data->d_size / sizeof(struct bpf_insn);
  const struct bpf_insn *insn = data->d_buf;
  struct prog_state *st = calloc(1, sizeof(*st));
  st->cur = calloc(1, sizeof(struct regs));
  st->at = calloc(n + 1, sizeof(*st->at));
  const char *prog = "?";
  int nprogs = 0;
  bool reached = true; /* falls through from the instruction before */
  for (size_t i = 0; i < n; i++) {
    const char *name = prog_at(elf, rl, shndx, i);
    if (name) {
      memset(st->cur, 0, sizeof(struct regs));
      st->nloads = 0;
      prog = name;
      nprogs++;
    } else if (st->at[i]) {
      if (reached)
        meet(st->cur, st->at[i]);
      else
        *st->cur = *st->at[i];
    } else if (!reached) {
      memset(st->cur, 0, sizeof(struct regs));
    }
    step(obj_name, prog, obj, st, rl, &insn[i], i * sizeof(struct bpf_insn));
    jump(st, &insn[i], i, n);
    __u8 op = BPF_OP(insn[i].code), cls = insn[i].code & 0x07;
    reached = !(cls == BPF_JMP && (op == BPF_JA || op == BPF_EXIT));
    if (insn[i].code == (BPF_LD | BPF_IMM | BPF_DW))
      i++;
  }
  for (size_t i = 0; i <= n; i++)
    free(st->at[i]);
  free(st->at);
  free(st->cur);
  free(st);
  return nprogs;
}

/* Every executable section of one object; the programs it checked. */
static int check_object(const char *dir, const char *name) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  struct bpf_object *obj = bpf_object__open_file(path, NULL);
  int fd = open(path, O_RDONLY);
  Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
  if (!obj || !elf) {
    printf("  %s: cannot be read\n", path);
    failures_found++;
    return 0;
  }
  struct relocs rl = {.elf = elf};
  size_t shstrndx;
  elf_getshdrstrndx(elf, &shstrndx);
  for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh;
    gelf_getshdr(scn, &sh);
    if (sh.sh_type == SHT_SYMTAB) {
      rl.syms = elf_getdata(scn, NULL);
      rl.strndx = sh.sh_link;
    } else if (!strcmp(elf_strptr(elf, shstrndx, sh.sh_name), ".maps")) {
      rl.maps_shndx = elf_ndxscn(scn);
    }
  }
  int nprogs = 0;
  for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh;
    gelf_getshdr(scn, &sh);
    if (sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR))
      continue;
    size_t shndx = elf_ndxscn(scn);
    rl.rel = NULL;
    for (Elf_Scn *r = NULL; (r = elf_nextscn(elf, r));) {
      GElf_Shdr rh;
      gelf_getshdr(r, &rh);
      if (rh.sh_type == SHT_REL && rh.sh_info == shndx) {
        rl.rel = elf_getdata(r, NULL);
        rl.nrel = rh.sh_size / rh.sh_entsize;
      }
    }
    nprogs += check_section(name, obj, elf, scn, shndx, &rl);
  }
  elf_end(elf);
  close(fd);
  bpf_object__close(obj);
  return nprogs;
}

DEF_TEST(no_shared_atomics_on_packet_or_drop_hooks) {
  const char *build = getenv("BUILD");
  char dir[256];
  snprintf(dir, sizeof(dir), "%s/bpf", build && *build ? build : "build");
  elf_version(EV_CURRENT);
  libbpf_set_print(NULL);
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  int nobj = 0, nprogs = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    bool skip = len < 7 || strcmp(e->d_name + len - 6, ".bpf.o") != 0;
    for (size_t i = 0; !skip && i < sizeof(SKIP) / sizeof(SKIP[0]); i++)
      skip = !strcmp(e->d_name, SKIP[i]);
    if (skip)
      continue;
    nobj++;
    nprogs += check_object(dir, e->d_name);
  }
  if (d)
    closedir(d);
  printf("  %d objects, %d programs, %d shared atomics found\n", nobj,
         nprogs, failures_found);
  CHECK(nobj >= 5 && nprogs >= 30);
  CHECK(failures_found == 0);
  return 0;
}

int main(void) {
  RUN_TEST(no_shared_atomics_on_packet_or_drop_hooks);
  END_TEST;
}
