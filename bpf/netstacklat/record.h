// SPDX-License-Identifier: GPL-2.0
/* netstacklat's histograms: hist_for() finds the histogram of a hook and
 * group (the ungrouped array, the GroupBy hash, or a GroupBy cgroup slot),
 * count_skip() counts an event left out, and record() times an event into
 * it (with the SampleEvery path when NSL_SAMPLING is 1); tstamp_not_rx()
 * tells a sender's delivery time from a receive time.
 *
 * Included by netstacklat.bpf.c, after what it uses from there: the
 * settings targ_groupby, targ_nwanted, targ_hook_pos, targ_sample_every,
 * targ_clock_tai, targ_outlier_ns and realtime_offset_ns, NSL_SAMPLING and
 * NSL_OUTLIERS; and after outlier.h (outlier()). */
#ifndef NSL_RECORD_H
#define NSL_RECORD_H

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, NSL_NHOOKS);
  __type(key, __u32);
  __type(value, struct nsl_hist);
} netstacklat_seconds SEC(".maps");

/* GroupBy: max_entries is set from MaxGroups before load (1 when off);
 * value_size from the stripes: targ_stripe_mask + 1 struct nsl_stripe
 * (netstacklat.h). Not per CPU (memory grew with the possible CPUs: 385 MB
 * at 256 for MaxGroups 128 and 7 hooks), so no BTF value type: its size is
 * known only at load. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __uint(key_size, sizeof(struct nsl_group_key));
  __uint(value_size, NSL_STRIPE_SIZE);
} netstacklat_grouped_seconds SEC(".maps");

/* GroupBy cgroup: the histograms of the groups that have a slot, at
 * slot * targ_nwanted + targ_hook_pos[hook]; each stripe's owner is the
 * cgroup id the slot belongs to (written by user space with the slot), so
 * a socket that outlives its cgroup never counts into a slot given to
 * another. max_entries and value_size (the stripes, as the group table's)
 * are set before load (1 entry when unused). */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, NSL_STRIPE_SIZE);
} netstacklat_cgroup_slots SEC(".maps");

/* The stripes (netstacklat.h, struct nsl_stripe): S - 1 (S a power of two,
 * at most NSL_STRIPES_MAX), and whether CPUs share a stripe (more possible
 * CPUs than S). Then, and only with GroupBy, record() adds atomically
 * (lock-prefixed adds, the result unused: BPF_XADD, every kernel from
 * 5.10): two CPUs of a stripe (cpu and cpu + S, ...) that meet on a
 * group's line lose no count; the verifier prunes the path that is not
 * taken, so a host with a stripe per CPU makes plain adds. */
const volatile __u32 targ_stripe_mask = 0;
const volatile bool targ_stripes_shared = false;
#define NSL_SHARED (targ_groupby != NSL_GROUP_NONE && targ_stripes_shared)
/* GroupBy: each CPU's ways (struct nsl_front, hist_of()); false only
 * with EBPF_TEST_NO_WAYS (user space sets it with the ways' maps). */
const volatile bool targ_fronts = false;
#define NSL_FRONTS (targ_groupby != NSL_GROUP_NONE && targ_fronts)
#define NSL_ADD(atomic, field, v)                                              \
  do {                                                                         \
    if (NSL_SHARED && (atomic))                                                \
      __sync_fetch_and_add(&(field), (v));                                     \
    else                                                                       \
      (field) += (v);                                                          \
  } while (0)

/* The calling CPU's stripe of a GroupBy value. */
static __always_inline struct nsl_stripe *stripe_of(struct nsl_stripe *v) {
  __u32 i = bpf_get_smp_processor_id() & targ_stripe_mask;
  return v + i;
}

/* GroupBy cgroup: the cgroups whose events found the group table full,
 * at the position nsl_cg_index_pos() gives with targ_wait_mask (the last
 * one there wins); user space gives them slots. max_entries: the group
 * index's, at least NSL_WAIT_MIN (1 when unused), so that a tenant who
 * fills the table with a cgroup a packet rarely writes over the note of
 * a cgroup with steady traffic before the read. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} netstacklat_cg_waiting SEC(".maps");

/* Kernels 5.18-6.10 flag a delivery time with this bit; 6.11 replaced it
 * with the 2-bit tstamp_type (commit 4d25ca2d6801, "net: Rename
 * mono_delivery_time to tstamp_type for scalabilty"). */
struct sk_buff___old {
  __u8 mono_delivery_time : 1;
} __attribute__((preserve_access_index));

/* 1 if skb->tstamp is not a receive time (a sender's EDT time carried over
 * loopback or veth), 0 otherwise. */
static __always_inline int tstamp_not_rx(const struct sk_buff *skb,
                                         const bool probed) {
  if (bpf_core_field_exists(skb->tstamp_type))
    return probed ? BPF_CORE_READ_BITFIELD_PROBED(skb, tstamp_type) != 0
                  : BPF_CORE_READ_BITFIELD(skb, tstamp_type) != 0;
  const struct sk_buff___old *o = (const void *)skb;
  if (bpf_core_field_exists(o->mono_delivery_time))
    return probed ? BPF_CORE_READ_BITFIELD_PROBED(o, mono_delivery_time)
                  : BPF_CORE_READ_BITFIELD(o, mono_delivery_time);
  return 0;
}

/* The CPU's stripe of the histogram of hook and group (with GroupBy; the
 * CPU's histogram of hook without). *own: true when it is the group's own
 * entry, not the group "other" of a full table. */
static __always_inline struct nsl_hist *hist_for(__u32 hook, __u64 group,
                                                 bool *own) {
  *own = true;
  if (targ_groupby == NSL_GROUP_NONE)
    return bpf_map_lookup_elem(&netstacklat_seconds, &hook);
  if (targ_groupby == NSL_GROUP_CGROUP && (group >> NSL_SLOT_SHIFT)) {
    /* A slot (see nsl_cg_group()): the array, if the slot is still the
     * cgroup's; else the hash, as before the slot was given. */
    __u32 slot = (__u32)(group >> NSL_SLOT_SHIFT) - 1;
    group &= NSL_SLOT_ID_MASK;
    __u32 i = slot * targ_nwanted + targ_hook_pos[hook];
    struct nsl_stripe *v = bpf_map_lookup_elem(&netstacklat_cgroup_slots, &i);
    if (v) {
      v = stripe_of(v);
      if (v->owner == group)
        return &v->h;
    }
  }
  struct nsl_group_key key = {.group = group, .hook = hook};
  struct nsl_stripe *v = bpf_map_lookup_elem(&netstacklat_grouped_seconds, &key);
  if (v)
    return &stripe_of(v)->h;
  /* A new entry's value, zero: the largest there is. */
  static const struct nsl_stripe zero[NSL_STRIPES_MAX];
  bpf_map_update_elem(&netstacklat_grouped_seconds, &key, zero, BPF_NOEXIST);
  v = bpf_map_lookup_elem(&netstacklat_grouped_seconds, &key);
  if (v)
    return &stripe_of(v)->h;
  struct nsl_hist *h;
  /* The table is full: said on the hook's ungrouped entry, and the event
   * counted in the group "other". A cgroup is noted where user space looks
   * for one to give a slot (a tenant filling the table with cgroups it
   * makes and removes cannot keep another's cgroup out of its own group). */
  h = bpf_map_lookup_elem(&netstacklat_seconds, &hook);
  if (h)
    h->skipped[NSL_SKIP_MAP_FULL]++;
  if (targ_groupby == NSL_GROUP_CGROUP) {
    __u32 pos = nsl_cg_index_pos(group, targ_wait_mask);
    __u64 *w = bpf_map_lookup_elem(&netstacklat_cg_waiting, &pos);
    if (w)
      *w = group;
  }
  key.group = NSL_GROUP_OTHER;
  *own = false;
  v = bpf_map_lookup_elem(&netstacklat_grouped_seconds, &key);
  return v ? &stripe_of(v)->h : NULL;
}

/* GroupBy: the CPU's ways (struct nsl_front), one value per hook; else
 * one value of 8 bytes (set before load: no BTF value type), which no
 * program reads (the verifier prunes the path), so that a host without
 * GroupBy pays no memory per CPU. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, NSL_NHOOKS);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, sizeof(struct nsl_front));
} netstacklat_fronts SEC(".maps");

/* The ways' releases, at cpu * NSL_NHOOKS + hook (user space writes them;
 * max_entries: possible CPUs x NSL_NHOOKS with the ways, else 1). Read at
 * every event: each CPU's are its own 32-byte values. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct nsl_front_release);
} netstacklat_front_release SEC(".maps");

/* A way freed: its histogram zeroed by one helper call, a copy of zeros
 * (rare: a way is freed once per group gone), instead of 210 stores in
 * every place hist_of() is inlined. */
static const struct nsl_hist nsl_zero_hist;
static __always_inline void front_clear(struct nsl_front *f, __u32 w) {
  bpf_probe_read_kernel(&f->h[w], sizeof(struct nsl_hist), &nsl_zero_hist);
  f->key[w] = 0;
}

/* The histogram an event of hook and group counts into. *atomic: true when
 * other CPUs add to it too (a shared stripe: NSL_ADD adds atomically).
 * With GroupBy, a group that has a way of the CPU's (or takes a free one)
 * counts there, with plain adds on lines no other CPU writes and without
 * the group table's lookup: where CPUs share stripes, two CPUs that hit
 * one group at once no longer write one line (make bench's stripes
 * section, 2026-12-05: +39 % to +54 % per event through a shared
 * stripe, -3 % to +7 % in ways), and a way costs less than a stripe
 * (166-184 ns a run against 230-246). The group table keeps the group's
 * entry (made by hist_for() when the way is taken), so it is named and
 * limited by MaxGroups as before; a group in "other" takes no way. */
static __always_inline struct nsl_hist *hist_of(__u32 hook, __u64 group,
                                                bool *atomic) {
  bool own;
  *atomic = NSL_SHARED;
  if (!NSL_FRONTS)
    return hist_for(hook, group, &own);
  __u64 id = targ_groupby == NSL_GROUP_CGROUP ? group & NSL_SLOT_ID_MASK
                                              : group;
  struct nsl_front *f = NULL;
  struct nsl_front_release *rel = NULL;
  if (id && id != NSL_GROUP_OTHER) {
    /* A copy of hook for the key: with hook's own address taken, clang
     * kept hook on the stack, and 5.10's and 6.1's verifiers lost its
     * bounds at the reload, then refused the index into targ_hook_pos[]
     * ("R3 unbounded memory access"; 6.18's accepted it). */
    __u32 fk = hook;
    __u32 ri = bpf_get_smp_processor_id() * NSL_NHOOKS + hook;
    f = bpf_map_lookup_elem(&netstacklat_fronts, &fk);
    rel = bpf_map_lookup_elem(&netstacklat_front_release, &ri);
  }
  __u32 free = NSL_FRONT_WAYS;
  if (f && rel) {
#pragma unroll
    for (__u32 w = 0; w < NSL_FRONT_WAYS; w++) {
      __u64 k = f->key[w];
      if (k && rel->key[w] == k) {
        front_clear(f, w); /* released: its group is gone */
        k = 0;
      }
      if (k == id) {
        *atomic = false;
        return &f->h[w];
      }
      if (!k && free == NSL_FRONT_WAYS && rel->key[w] != id)
        free = w;
    }
  }
  struct nsl_hist *h = hist_for(hook, group, &own);
  if (h && own && f && free < NSL_FRONT_WAYS) {
    f->key[free] = id;
    *atomic = false;
    return &f->h[free];
  }
  return h;
}

/* An event left out for a reason counted in skipped[why]. */
static __always_inline void count_skip(__u32 hook, __u64 group, __u32 why) {
  bool at;
  struct nsl_hist *h = hist_of(hook, group, &at);
  if (h)
    NSL_ADD(at, h->skipped[why], 1);
}

/* The one handler. tstamp: the packet's receive time (0 when none);
 * not_rx: it is a delivery time; group: cgroup id or ifindex. sk (socket
 * hooks) or skb (packet hooks) and ifindex describe an outlier. */
static __always_inline void record(__u32 hook, __u64 tstamp, int not_rx,
                                   __u64 group, const struct sock *sk,
                                   const struct sk_buff *skb,
                                   __u32 ifindex) {
  bool at;
  struct nsl_hist *h = hist_of(hook, group, &at);
  if (!h)
    return;
  if (!tstamp) {
    NSL_ADD(at, h->skipped[NSL_SKIP_NO_TSTAMP], 1);
    return;
  }
  if (not_rx) {
    NSL_ADD(at, h->skipped[NSL_SKIP_NOT_RX], 1);
    return;
  }
  NSL_ADD(at, h->count, 1);
  /* SampleEvery N: one event in N timed on average, the others only
   * counted: no clock read for them. A countdown in the CPU's own entry
   * or GroupBy stripe (no atomics: where CPUs share a stripe, two that
   * meet may draw one gap twice, the share timed stays about 1 in N and
   * count stays exact); after each timed event the next gap is drawn at random,
   * uniform in [0, 2N - 2] (mean N - 1), by a multiply and shift (no
   * division). A fixed countdown of N - 1 fell in step with workloads that
   * alternate: a proxy reading a client and a backend socket in turn on
   * one CPU had, with N even, only one of them ever timed. */
  if (NSL_SAMPLING && targ_sample_auto) {
    /* SampleEvery auto: N can change at every read. A countdown drawn for
     * a larger N than the one now in force is dropped, so that a lower N
     * takes effect at once, not after the old gap. */
    __u32 n = 1;
    if (hook < NSL_NHOOKS)
      n = sample_n[hook];
    if (n > 1) {
      __u64 cd = h->countdown;
      if (cd && cd < 2 * (__u64)n - 1) {
        h->countdown = cd - 1;
        return;
      }
      h->countdown = ((__u64)bpf_get_prandom_u32() * (2 * (__u64)n - 1)) >> 32;
    }
  } else if (NSL_SAMPLING && targ_sample_every > 1) {
    if (h->countdown) {
      h->countdown--;
      return;
    }
    h->countdown = ((__u64)bpf_get_prandom_u32() *
                    (2 * (__u64)targ_sample_every - 1)) >> 32;
  }
  __u64 now = targ_clock_tai ? bpf_ktime_get_tai_ns() : bpf_ktime_get_ns();
  __s64 delta = (__s64)(now + realtime_offset_ns - tstamp);
  if (delta < 0) {
    NSL_ADD(at, h->skipped[NSL_SKIP_FUTURE], 1);
    return;
  }
  /* nsl_slot_of() already clamps, but clang drops this check and indexes
   * with a copy of the unclamped register; 6.1's verifier then sees an
   * index up to 2^32 and rejects every program (6.12's tracks the copy).
   * The barriers keep the check on the register that is used: a 64-bit
   * index (a 32-bit one was checked zero-extended in a copy, then
   * zero-extended again for the two adds of NSL_ADD), opaque before the
   * check and again after it. */
  __u64 slot = nsl_slot_of(delta);
  barrier_var(slot);
  if (slot < NSL_NFINE) {
    barrier_var(slot);
    NSL_ADD(at, h->bucket[slot], 1);
  }
  NSL_ADD(at, h->sum_ns, delta);
  if (NSL_OUTLIERS && targ_outlier_ns && (__u64)delta > targ_outlier_ns)
    outlier(hook, now, delta, sk, skb, ifindex);
}

#endif /* NSL_RECORD_H */
