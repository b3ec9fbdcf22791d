/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Loads one run's BPF objects, fills the policy maps, attaches them to the run's cgroup through
 * bpf_link only, and pins the links under <bpffs>/sluice/<run_id>/ so that nothing inside the run
 * can detach them and enforcement survives a crash of the loader.
 */
#ifndef SLUICE_LOADER_H
#define SLUICE_LOADER_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>

#include "../bpf/sluice.h"
#include "../policy/policy.h"

#define LOADER_BPFFS "/sys/fs/bpf"

struct loader;

/* The learned-address maps' size, per family, for a policy that learns (a run's, a resumed one's). */
#define LOADER_LEARNED_MAX 65536

struct loader_opts {
	uint32_t ringbuf_bytes; /* power of two, >= page size */
	uint32_t wakeup_bytes;	/* force a reader wake-up once this much is queued */
	bool verbose;		/* pass libbpf's debug output through */
	uint16_t dns_port;	/* the run's resolver on loopback; 0: no resolver, no redirect */
	uint32_t learned_max;	/* capacity of the learned-address maps, per family, for a
				   policy that learns (one entry for one that cannot) */
	bool no_backstop;	/* selftests only: show what the packet checks catch */
	bool tc_clsact;		/* selftests only: attach tc as clsact even where tcx exists */
	bool strict_evidence;	/* refuse connections whose allow cannot be recorded */
	bool ns_share;		/* a host side (--netns): share the namespace's attribution maps
				   with its other runs (bpf/nsflows.bpf.h); run_cfg names it */
	struct sl_run_cfg run_cfg; /* kept with the programs for sluice resume */
};

/* Open, configure and load the programs, and fill the policy maps. Sets errno, returns NULL. */
struct loader *loader_load(const struct policy *p, const struct policy_compiled *c,
			   const struct loader_opts *opts);

/*
 * The sizes of a set's maps that depend on the run: its policy's CIDR tries (entries per family)
 * and rules (n_rules + 1), its ring buffer's bytes and its learned-address maps' entries.
 */
struct loader_caps {
	uint32_t v4, v6, rules;
	uint32_t ringbuf_bytes;
	uint32_t learned_max;
	bool host_totals; /* a policy with max_total_* caps: sl_host_bytes full size, else 1 entry */
};

/*
 * A spare (sluice daemon's pool): a whole set of a run's programs loaded and verified for no run
 * yet, its maps sized by caps, nothing written in them, nothing attached, nothing pinned (its
 * end, or its process's, frees it all). Any thread; sets errno and returns NULL.
 */
struct loader *loader_load_spare(const struct loader_caps *caps, bool verbose);

/* Whether a spare never taken can serve a run of policy c with opts (loader_take). */
bool loader_fits(const struct loader *l, const struct policy *p, const struct policy_compiled *c,
		 const struct loader_opts *opts);

/*
 * Make a spare the run's: for a run with a host side (ns_share) its namespace's maps put in the
 * set's slots and the run joined there, then its configuration and policy written, as
 * loader_load would have, so loader_attach can follow. Once per spare: -EBUSY for one taken already, -E2BIG for a run it
 * does not fit (loader_fits). On failure the spare must be destroyed, not given to another run.
 */
int loader_take(struct loader *l, const struct policy *p, const struct policy_compiled *c,
		const struct loader_opts *opts);

/*
 * A switch the run's log announced and never closed (its last policy_switch_begin): the
 * generation it was to load and the one in force before it, its policy's digest (lower-case
 * hex) and its mode (SL_MODE_*). The only switch whose commit loader_reopen may finish.
 */
struct loader_open_switch {
	uint32_t era, prev_era;
	char policy_sha256[65];
	int mode;
};

/*
 * The loader of a run whose writer died: its programs attached and pinned under
 * <bpffs>/sluice/<run_id> (with the maps a writer needs), opened from there without attaching
 * or changing anything, but to settle a switch's commit its writer died inside (the pins made
 * those of the programs the links run; a move of the links that stopped half-way finished to
 * the set the writer staged, when that set is sw's: see loader.c, reopen_finish_commit).
 * loader_detach then ends the run's enforcement as it would have.
 * Sets errno and returns NULL: ENOENT, no such run is pinned (or not all of it); EBUSY, the
 * run's loader (or another resume of it) is alive: one writer per log; EPROTO, the pinned maps
 * have another shape than this build's (another version of sluice made the run); ENOLINK, the
 * run shares its namespace's flows (--netns) but its host side was never attached and it was
 * not marked as having none (killed before it), or a join mark contradicts its links; EXDEV, its
 * hooks run programs of two sets and no staged set of sw's (sw NULL: none is finished) names
 * the one to finish the move to.
 */
struct loader *loader_reopen(const char *run_id, const struct loader_open_switch *sw,
			     bool verbose);

/*
 * Selftests only: SIGKILL this process when SLUICE_SELFTEST_KILL names point, a step of a
 * switch (test_switch_kill.sh) or of an attach ("before-maps", "before-tc", "before-join":
 * test_backstop.sh, test_pool.sh, test_switch_kill.sh), or of a socket's destroy ("in-destroy":
 * test_reset_form.sh). The one place a kill point is read: every point is named the same way.
 */
void loader_selftest_kill(const char *point);

/*
 * Remove a pinned run that no writer takes over (loader_reopen refused it, or an attach a dead
 * daemon never finished): its token out of its namespace's runs map and its slot pin removed
 * (as at a run's end), then every pin of its directory (its links: the programs detach) and the
 * directory, and its clsact filters (kernels without tcx) on its namespace's veth peers (one
 * not found stays until its veth goes: said on stderr). -EBUSY: a writer holds the run;
 * -ENOENT: nothing is pinned under that id.
 */
int loader_purge(const char *run_id);

/*
 * The runs gone from every namespace's maps (<bpffs>/sluice/netns@*): their tokens and slot pins
 * that no loaded program holds, and a namespace's pins once no run is left there. What a writer
 * killed in an attach before its run's configuration was pinned (its token unknown to
 * loader_purge), or before its pin directory existed, left behind; else only the next join or
 * leave in that namespace would collect it. A daemon does it when it starts (its take-over).
 */
void loader_ns_collect_all(void);

/* The run's resolver port the programs redirect DNS to (0: none). */
uint16_t loader_dns_port(const struct loader *l);
/* The mode the programs enforce (SL_MODE_*), and what loader_opts.run_cfg kept. */
int loader_mode(const struct loader *l);
bool loader_strict(const struct loader *l); /* --strict-evidence, as loaded */
const struct sl_run_cfg *loader_run_cfg(const struct loader *l);
/*
 * The id of the cgroup the run's programs are attached to, from the kernel's view of the
 * pinned connect4 link: 0 once that cgroup is gone (the kernel detaches its links then).
 * -errno if the link cannot be read.
 */
int loader_cgroup_id(const struct loader *l, uint64_t *id);

/*
 * Keep the name host_id stands for with the run (sl_hosts), before any address is learned for
 * it; loader_host_names calls fn for each kept name (a non-zero return stops the walk).
 */
int loader_host_name(struct loader *l, uint32_t host_id, const char *name);
int loader_host_names(const struct loader *l,
		      int (*fn)(uint32_t host_id, const char *name, void *ctx), void *ctx);

/*
 * Attach every program to the cgroup and pin the links under <bpffs>/sluice/<run_id>, and the
 * maps a resumed writer needs beside them (loader_reopen). The optional BPF-LSM layer (loaded
 * with the others where the kernel has it) is attached here too, once the configuration names
 * the cgroup's id and level; whether it could be is loader_lsm_active().
 */
int loader_attach(struct loader *l, int cgroup_fd, uint64_t cgroup_id, int cgroup_level,
		  const char *run_id);

/* The BPF-LSM layer is attached; otherwise why not (a static string) in *why. */
bool loader_lsm_active(const struct loader *l, const char **why);

/*
 * Attach the host-side tc program to the peer of every veth in the run's network namespace
 * (tcx, pinned with the other links; a clsact filter where the kernel has no tcx) and pin it.
 * A run that shares its namespace's maps then joins its runs, or, with no veth peer, pins a
 * mark that it has no host side (what a take-over finds: loader_reopen).
 * Writes "IFNAME[@NETNS],…" (the peers) into desc. Returns how many peers, or -errno.
 */
int loader_attach_tc(struct loader *l, int run_netns_fd, char *desc, size_t desc_size);

/*
 * For a resumed writer: the host side on the peers of run_netns_fd's veths. The clsact filters
 * (kernels without tcx) its run left, found by the pinned program they run, so that
 * loader_detach removes them; and the peer each tcx link (pinned: loader_reopen has them) is
 * attached to, which a destroy's RST needs (loader_kill_socket). A pinned clsact filter not
 * found is named on stderr (it stays wherever it is). Returns how many clsact filters were
 * found, or -errno.
 */
int loader_refind_host_side(struct loader *l, int run_netns_fd);

/*
 * The loaded object of one layer: "sock_addr" (the decision layer, which owns the run's maps),
 * "skb" or "tc"; NULL for any other name. For selftests that drive the programs through
 * BPF_PROG_RUN (selftests/progrun/) and share these maps with objects of their own.
 */
struct bpf_object;
struct bpf_object *loader_object(const struct loader *l, const char *layer);

/* Fd of the run's ring buffer map. */
int loader_events_fd(const struct loader *l);

/*
 * Allow addr (4 or 16 bytes) for rule_ids (1-based; none, or SL_RULE_DEFAULT, for report
 * mode's unlisted names) because the run's resolver answered it for a name of those rules; host_id
 * names it in the log if it is the address's first. expires_ns is CLOCK_BOOTTIME, 0 for the
 * run. All rules or none: -EXFULL when the address cannot carry them all (at most
 * SL_LEARNED_RULES distinct rules per address, whatever names brought them), -E2BIG when the
 * map is full; either way the caller must not hand out the address.
 */
int loader_learn(struct loader *l, int family, const uint8_t *addr, const uint16_t *rule_ids,
		 size_t n_rules, uint32_t host_id, uint64_t expires_ns);

/* One address of an answer: family, 4 or 16 bytes, expiry (CLOCK_BOOTTIME, 0: the run). */
struct loader_learn_addr {
	int family;
	const uint8_t *addr;
	uint64_t expires_ns;
};

/*
 * loader_learn for every address of one answer, as one step no other answer's learning comes
 * between (checked and written under one lock): all of them or none. An address that cannot
 * take the rules (-EXFULL) leaves all unwritten; a write that fails (-E2BIG: the map full, or
 * -errno) puts back those written before it. *failed: the index of the address that failed.
 */
int loader_learn_answer(struct loader *l, const struct loader_learn_addr *addrs, size_t n,
			const uint16_t *rule_ids, size_t n_rules, uint32_t host_id,
			size_t *failed);
/*
 * Whether loader_learn_answer would fit now: 0 or -EXFULL (*failed as there); writes nothing.
 * Only a first look, for refusing before anything else is written: another answer may take
 * the slots before the write, which loader_learn_answer checks again.
 */
int loader_learn_fits(struct loader *l, const struct loader_learn_addr *addrs, size_t n,
		      const uint16_t *rule_ids, size_t n_rules, size_t *failed);

/* What the resolver learned for addr (4 or 16 bytes): 0, -ENOENT (nothing), or -errno. */
int loader_learned(const struct loader *l, int family, const uint8_t *addr,
		   struct sl_learned *out);

/*
 * Whether the run's budget for a host (k as host_key_of makes it) is spent under its rule's
 * max_total_* caps, as the connect programs judge it before they refuse a new flow
 * (host_total_cap). False when the rule has no total cap or the host has sent nothing.
 */
bool loader_host_spent(const struct loader *l, uint16_t rule_id, const struct sl_host_key *k);
/*
 * Make sure l knows the maps the run's attached programs use: a resumed writer's loader
 * (loader_reopen) has only pins and links, and the budget maps are not pinned; it collects them
 * through its links (as loader_next_load does). 0 or -errno.
 */
int loader_run_maps(struct loader *l);
/*
 * The budget id that keys the hosts' totals of rule_id (sl_rule_budget; its number if it has
 * none) into *id. 0, or -ENOENT when l does not know the run's map (loader_run_maps), -EPROTO
 * when the run's map is another build's (err, which may be NULL, names it and both shapes; it
 * is not read), -errno.
 */
int loader_rule_budget(const struct loader *l, uint16_t rule_id, uint16_t *id, char *err,
		       size_t err_len);
/*
 * Raise *max to the highest budget id any host's totals are kept under. 0, or -ENOENT when l does
 * not know the run's sl_host_bytes (loader_run_maps), -EPROTO as loader_rule_budget, -errno.
 */
int loader_host_budgets_max(const struct loader *l, uint16_t *max, char *err, size_t err_len);
/*
 * This build's shape (mapshape.h) of the map the kernel names name (its first BPF_OBJ_NAME_LEN -
 * 1 characters), as its objects declare it: what a map of a run this process did not load must
 * have before it is read. 0, -ENOENT (no map of that name), -errno.
 */
struct map_shape;
int loader_build_map_shape(const char *name, struct map_shape *out);
/*
 * The map fd, of a run this process did not load, has this build's shape for the map the kernel
 * names name (its held map too, for a map of maps holding one): 0, or -EPROTO with err (may be
 * NULL) naming it and both shapes, -errno.
 */
int loader_map_check(int fd, const char *name, char *err, size_t err_len);

/*
 * Let TLS flows to addr (4 or 16 bytes) name host in their ClientHello: the resolver produced
 * addr for it, under the rules v holds (loader_sni_name: the name's own rules, which the packet
 * layer puts a flow naming it under). The name is kept whole (lower-cased) and matched exactly.
 * Returns 0 or -errno (-E2BIG: map full; -ENAMETOOLONG: longer than a server name can be).
 * loader_sni_name: v for host_id and the name's rules (SL_RULE_DEFAULT ones skipped), strictest
 * first (policy_rules_strictest, by l's caps); -EXFULL when more than SL_LEARNED_RULES are left,
 * as an address's learned entry would refuse them. Every learned entry and server-name pair
 * written (loader_learn_answer, loader_next_learned_put, loader_next_sni) holds its rules so.
 */
int loader_sni_name(const struct loader *l, struct sl_sni_name *v, uint32_t host_id,
		    const uint16_t *rule_ids, size_t n_rules);
int loader_sni_learn(struct loader *l, int family, const uint8_t *addr, const char *name,
		     const struct sl_sni_name *v);
/*
 * Undo loader_sni_learn of a pair it added, for an answer refused after it wrote the pair: a
 * pair left behind would let TLS name that server on the address under another name's rule.
 * 0 or -errno (-ENOENT: not there).
 */
int loader_sni_forget(struct loader *l, int family, const uint8_t *addr, const char *name);

/*
 * Destroy the TCP socket with this cookie in the network namespace netns_fd (-1: that of
 * process pid, else ours), so a flow the packet layer denied fails at once: with
 * bpf_sock_destroy (6.5+), else through sock_diag. 0: destroyed; -ENOENT: no socket has the
 * cookie (closed already); -EOPNOTSUPP: the kernel can do neither; else -errno.
 */
/*
 * The new policy's server names (a switch's re-judge): (addr, name) is in sl_sni_ok.
 * loader_sni_get: its value, the name and its rules: 0 or -errno (-ENOENT: not there).
 */
bool loader_sni_ok(const struct loader *l, int family, const uint8_t *addr, const char *name);
int loader_sni_get(const struct loader *l, int family, const uint8_t *addr, const char *name,
		   struct sl_sni_name *out);
/* A rule's caps as the programs hold them (plus one; see struct sl_rule_caps). 0 or -errno. */
int loader_rule_caps(const struct loader *l, uint16_t rule_id, struct sl_rule_caps *out);
/*
 * The socket storage of the socket at sock_fd (a copy of a run's socket): its flow and TLS
 * state. Returns which were found (LOADER_SOCK_*), or -errno. loader_sock_flow_set rewrites
 * the flow (only an existing one): bytes the programs count between the read and the write are
 * lost to it (a TCP flow counts them again from its sequence numbers at its next packet).
 */
#define LOADER_SOCK_FLOW 0x1
#define LOADER_SOCK_TLS 0x2
int loader_sock_state(const struct loader *l, int sock_fd, struct sl_flow *flow,
		      struct sl_sk_tls *tls);
int loader_sock_flow_set(const struct loader *l, int sock_fd, const struct sl_flow *flow);
/* The policy generation the programs judge in (sl_cfg.era): a flow judged now carries it. */
uint32_t loader_era(const struct loader *l);

/*
 * The generation of a switch's new set: above the one in force and above every one a set was
 * loaded with before (highest), committed or not. A commit that failed may have moved some links
 * before it moved them back: flows its connect programs stamped carry its generation, which must
 * never be taken for a later policy's. 0 when none is left (UINT32_MAX handed out): the switch
 * is refused (loader_next_load, -EOVERFLOW). Wrapped to 1, the programs (which compare eras for
 * equality only: sl_flow.era, the judged caches) would take a flow the run's first policy
 * judged, still open, for one judged now, and pass it unjudged to wherever it goes; and the
 * log would name generation 1 twice (sluice verify refuses it).
 */
static inline uint32_t loader_era_next(uint32_t in_force, uint32_t highest)
{
	uint32_t top = in_force > highest ? in_force : highest;

	return top == UINT32_MAX ? 0 : top + 1;
}

/*
 * The highest generation handed out is pinned with the run (loader_attach, before each
 * loader_next_load hands one out), and a writer taking the run over goes on from it exactly.
 * A run pinned by a sluice that kept no such pin: its taker starts this far above the
 * generation in force (the dead writer may have loaded sets above it, and failed their commits;
 * it would have needed this many switches to reach past the gap).
 */
#define LOADER_ERA_RESUME_GAP (1u << 16)
/* Every later payload of the TCP socket at sock_fd is dropped (sl_sk_tls: denied). */
int loader_sock_tls_deny(const struct loader *l, int sock_fd);
/* The TCP socket at sock_fd is held to the server-name check from now on (sl_sk_tls: t). */
int loader_sock_tls_set(const struct loader *l, int sock_fd, const struct sl_sk_tls *t);

int loader_kill_socket(struct loader *l, uint64_t cookie, int netns_fd, uint32_t pid);

/* The process that sent DNS from the socket with this cookie; -ENOENT if unknown. */
int loader_dns_client(const struct loader *l, uint64_t cookie, struct sl_dns_client *out);

/* Sum over CPUs of the failed ring-buffer reservations, per hook. */
int loader_lost_counts(const struct loader *l, uint64_t lost[SL_HOOK_MAX]);

/* The run's next kernel sequence number: every record ever attempted took one below it. */
uint64_t loader_next_seq(const struct loader *l);
/*
 * The run's log cannot be written: with --strict-evidence the decision layer refuses, from now
 * on, whatever would go ahead (SL_REASON_LOG_UNWRITABLE). For the rest of the run. Any thread.
 */
int loader_log_unwritable(const struct loader *l);
/* The log was found unwritable (loader_log_unwritable) at some time in the run. Any thread. */
bool loader_log_down(const struct loader *l);

/* Unpin and detach every link, unpin the maps and remove the pin directory. Accepts NULL. */
void loader_detach(struct loader *l);

/*
 * Free everything. Links not detached before stay pinned, so the programs keep judging whatever
 * is left in the cgroup after sluice is gone. Accepts NULL.
 */
void loader_destroy(struct loader *l);

/*
 * Switching a live run (switch.c): a second set of the run's programs, loaded with policy p in
 * mode (SL_MODE_*) beside the attached set, sharing every map of the run's state and with
 * policy maps of its own; the learned addresses and server names are left for the caller to
 * fill (loader_next_learned_put, loader_next_sni). loader_next_commit moves every link of the
 * run to it (bpf_link_update: each hook runs the old or the new programs, never neither) and
 * frees the old set; on failure it moves back what it moved and says why in err (where a move
 * back fails, it finishes the commit forward instead: 0; failing that too, -ENOTRECOVERABLE,
 * both sets stay as they are, the hooks running programs of both). A resumed
 * writer's loader (loader_reopen) finds the run's programs and maps through its links (the
 * BPF-LSM layer's too: a new layer is loaded on them). Each switch is a new generation
 * (sl_cfg.era, loader_era), a set-mode too: the packet layer judges in full every flow not
 * stamped with it, and judges it again at its next packet out (the backstop), unless
 * loader_sock_flow_set stamped it first. budgets: each rule's budget id, indexed by rule_id
 * (sl_rule_budget; NULL: its number). A map of the run that is not found, or is not of the
 * shape this build's programs expect (a run another build started), fails the load with err
 * naming it; on other failures err is left as it was.
 */
struct loader_next;
int loader_next_load(struct loader *l, const struct policy *p, const struct policy_compiled *c,
		     int mode, const uint16_t *budgets, struct loader_next **out, char *err,
		     size_t err_len);
int loader_next_commit(struct loader *l, struct loader_next *n, char *err, size_t err_len);
void loader_next_free(struct loader_next *n); /* a set never committed; accepts NULL */
/* The generation (sl_cfg.era) the set was loaded with: its programs stamp it once committed. */
uint32_t loader_next_era(const struct loader_next *n);

/* The attached set's learned addresses (4 or 16 bytes), and (address, server name) pairs. */
int loader_learned_walk(const struct loader *l, int family,
			int (*fn)(const uint8_t *addr, const struct sl_learned *e, void *ctx),
			void *ctx);
int loader_sni_walk(const struct loader *l,
		    int (*fn)(const uint8_t addr[16], const char *name,
			      const struct sl_sni_name *v, void *ctx),
		    void *ctx);
/* The new set's learned addresses and server names, before the commit. */
int loader_next_learned_get(struct loader_next *n, int family, const uint8_t *addr,
			    struct sl_learned *e);
int loader_next_learned_put(struct loader_next *n, int family, const uint8_t *addr,
			    const struct sl_learned *e);
int loader_next_learned_del(struct loader_next *n, int family, const uint8_t *addr);
int loader_next_learned_walk(struct loader_next *n, int family,
			     int (*fn)(const uint8_t *addr, const struct sl_learned *e, void *ctx),
			     void *ctx);
int loader_next_sni(struct loader_next *n, const uint8_t addr[16], const char *name,
		    const struct sl_sni_name *v);

/* A sentence saying why loading failed, for the errno loader_load() set. */
const char *loader_explain(int err);

#endif /* SLUICE_LOADER_H */
