// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <limits.h>
#include <pthread.h>
#include <time.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "loader.h"
#include "mapshape.h"
#include "util.h"
#include "sock_addr.skel.h"
#include "skb.skel.h"
#include "surface.skel.h"
#include "destroy.skel.h"
#include "tc.skel.h"
#include "lsm.skel.h"
#include "netdev.h"
#include "sockdiag.h"
#include "../bpf/addr.bpf.h" /* host_bytes_spent */
#include <fcntl.h>
#include <sched.h>

/* Every program of the run, in attach order; the decision hooks first, then the rewriters. */
enum loader_prog {
	PROG_CONNECT4,
	PROG_CONNECT6,
	PROG_SENDMSG4,
	PROG_SENDMSG6,
	PROG_RECVMSG4,
	PROG_RECVMSG6,
	PROG_GETPEERNAME4,
	PROG_GETPEERNAME6,
	PROG_BACKSTOP,
	PROG_EGRESS,
	PROG_INGRESS,
	PROG_SOCK_CREATE,
	PROG_SETSOCKOPT,
	PROG_SOCK_RELEASE,
	PROG_MAX,
};

static const char *const prog_names[PROG_MAX] = {
	[PROG_CONNECT4] = "connect4",	      [PROG_CONNECT6] = "connect6",
	[PROG_SENDMSG4] = "sendmsg4",	      [PROG_SENDMSG6] = "sendmsg6",
	[PROG_RECVMSG4] = "recvmsg4",	      [PROG_RECVMSG6] = "recvmsg6",
	[PROG_GETPEERNAME4] = "getpeername4", [PROG_GETPEERNAME6] = "getpeername6",
	[PROG_BACKSTOP] = "backstop",
	[PROG_EGRESS] = "egress",
	[PROG_INGRESS] = "ingress",
	[PROG_SOCK_CREATE] = "sock_create",
	[PROG_SETSOCKOPT] = "setsockopt",
	[PROG_SOCK_RELEASE] = "sock_release",
};

/*
 * The maps a writer that resumes a dead one's run needs, pinned beside the links as
 * "map-<name>": the evidence maps (ring buffer, loss counters, sequence counter), what the
 * run's resolver writes and reads (learned addresses, server names, DNS clients, host names),
 * and the run's configuration (struct sl_cfg: the resolver's port, the mode, what resume needs).
 */
enum loader_map {
	MAP_EVENTS,
	MAP_LOST,
	MAP_SEQ,
	MAP_DNS_CLIENTS,
	MAP_LEARNED4,
	MAP_LEARNED6,
	MAP_SNI_OK,
	MAP_HOSTS,
	MAP_CFG,
	MAP_LOG_STATE,
	MAP_MAX,
};

static const char *const map_pin_names[MAP_MAX] = {
	[MAP_EVENTS] = "map-events",	     [MAP_LOST] = "map-lost",
	[MAP_SEQ] = "map-seq",		     [MAP_DNS_CLIENTS] = "map-dns-clients",
	[MAP_LEARNED4] = "map-learned4",     [MAP_LEARNED6] = "map-learned6",
	[MAP_SNI_OK] = "map-sni-ok",	     [MAP_HOSTS] = "map-hosts",
	[MAP_CFG] = "map-cfg",		     [MAP_LOG_STATE] = "map-log-state",
};

/* The run's configuration map's name in every object (the section of struct sl_cfg). */
#define CFG_MAP ".data.cfg"

/* A host-side attachment: a tcx link, or a clsact filter (which has no link to pin). */
struct tc_attachment {
	struct bpf_link *link;
	struct netdev_peer peer;
	bool clsact;
	bool clsact_created; /* we added the clsact qdisc: remove it when done */
	__u32 handle;	     /* the clsact filter's */
};

/*
 * A clsact filter has no link, so a resumed writer could not find it and it would outlive the
 * run (and its handle would refuse the next run on that veth). The filter's program is pinned
 * instead, as "tc-clsact-<N>-<ifindex>-<handle>[-qdisc]" ("-qdisc": sluice added the clsact
 * qdisc): a resumed writer looks on the run's veth peers for the filter at that handle running
 * that very program, and detaches it at the end of the run (loader_refind_host_side).
 *
 * Runs sharing a namespace each have a filter of their own, at the first free handle from
 * TC_HANDLE on, all at the first priority; an allowed frame goes on to the next (TC_ACT_UNSPEC,
 * the value of TCX_NEXT), so each run's allowlist judges it.
 */
#define TC_CLSACT_PIN "tc-clsact-"
#define TC_HANDLE 0x51c
#define TC_HANDLES 64
#define TC_PRIORITY 1

/*
 * The maps the runs of one network namespace share (bpf/nsflows.bpf.h), pinned as "flows" and
 * "runs" under <bpffs>/sluice/netns@<dev>-<ino> (no run id has an "@"; bpffs refuses dots).
 * Their shape is fixed (SL_NS_FLOWS_MAX, SL_NS_RUNS_MAX): the programs reach them through the
 * slot of a map of maps (ns_bind), which takes only maps of its template's shape.
 * The flows map is an LRU: the packet layer notes every packet it lets out just before the host
 * side sees its frame, so the map has to remember a flow only while it is idle (for an ICMP
 * error about it); a flow forgotten is judged by every run's host side, which fails closed.
 * It exists only while two runs or more are in the namespace (ns_sync): each run's flows slot
 * is pinned there too, as "slot-<token>", so that the loader of another run can fill or empty it.
 */
#define NS_DIR_FMT "%s/sluice/netns@%llu-%llu"
#define NS_SLOT_FMT "%s/slot-%016llx"

/*
 * What a run that shares its namespace's maps pinned about its join, for a writer that takes it
 * over (loader_reopen): a second name of the run's own event ring in its pin directory.
 * NS_MARK_NOHOST: the namespace had no veth peer when the run's host side was to be attached;
 * the run has no host side and deliberately never joins (a take-over adopts it unjoined).
 * NS_MARK_PENDING: pinned before its host side's first peer, removed once it has joined (a
 * take-over finishes the join). A run with a token, no host side and no NOHOST mark was
 * killed between its cgroup links and its host side: refused. A mark that is not the run's own
 * event ring, or that contradicts the run's links, is refused too.
 */
#define NS_MARK_NOHOST "ns-no-host-side"
#define NS_MARK_PENDING "ns-join-pending"

struct clsact_pin {
	char name[64];
	int ifindex;
	__u32 handle;
	bool qdisc;	  /* sluice created the qdisc */
	__u32 prog_id;	  /* the pinned program's */
	bool found;	  /* a filter on a peer runs it (resume) */
};

struct loader {
	struct sl_sock_addr *skel;
	struct sl_tc *tc;	     /* the host-side layer; shares the policy and evidence maps */
	struct sl_lsm *lsm;	     /* optional BPF-LSM layer; NULL where the kernel has none */
	struct bpf_link *lsm_links[3];
	char lsm_why[128];	     /* why there is no LSM layer */
	struct tc_attachment tc_att[NETDEV_PEERS_MAX];
	int n_tc;
	struct clsact_pin clsact_pins[NETDEV_PEERS_MAX];
	int n_clsact_pins;
	/*
	 * The host side's program before a switch whose commit a take-over finished
	 * (reopen_finish_commit): a clsact filter found running it is moved to the pinned one.
	 */
	__u32 clsact_stale_id;
	bool tc_clsact;
	struct sl_skb *skb;	     /* the packet layer; shares the evidence and TLS maps */
	struct sl_surface *surface;  /* socket kinds and options; shares the evidence maps */
	struct sl_destroy *destroy; /* NULL where the kernel lacks bpf_sock_destroy */
	struct bpf_link *links[PROG_MAX];
	char pin_dir[PATH_MAX];
	bool maps_pinned;	     /* the maps a resumed writer needs are pinned in pin_dir */
	int pin_lock;		     /* pin_dir, flock()ed: one writer per run at a time; -1 */
	int ncpus;
	bool no_backstop;
	char ns_dir[PATH_MAX];	     /* the namespace's shared maps; "" when the run has none */
	__u64 ns_token;		     /* the run's key in them (sl_ns_runs); 0: none */
	int ns_runs_own;	     /* a spare's own runs map, in its slot since its load; -1 */
	__u32 ns_runs_id;	     /* the id of the runs map in the set's slot; 0: none */
	pthread_mutex_t learn_lock; /* serialises read-merge-write of the learned maps */
	struct loader_caps caps;     /* the sizes its policy and learned maps were loaded with */
	uint32_t learned_full;	     /* the learned maps' size for a policy that learns (opts) */
	struct sl_cfg cfg;	     /* the run's configuration, as in the map (cfg_write) */
	bool configured;	     /* a run's configuration is written: never another's */
	bool frag_check;	     /* the packet layer's sl_cfg_frag_check, as loaded */
	__u32 era_high;		     /* the highest generation a set was loaded with (switch.c) */
	int era_fd;		     /* era_high's pinned copy (ERA_PIN); -1 until pinned */
	/*
	 * A resumed writer's loader has the run's links and pinned maps, not its objects: for a
	 * switch (loader_next_load) the maps every attached program uses, by name, and the
	 * programs the links run (to move them back should a commit fail). See reopen_programs.
	 */
	struct run_map {
		char name[BPF_OBJ_NAME_LEN];
		__u32 id, max_entries;
		int fd;
		int shape_err;		/* shape could not be read: -errno, the map never given out */
		struct map_shape shape; /* as the kernel has it: another build's, maybe (run_map_entry) */
	} run_maps[48];
	int n_run_maps;
	int run_prog_fds[PROG_MAX];  /* -1 where the run has no such link */
	int run_tc_prog_fd;	     /* the host side's program; -1: none */
	bool run_collected;	     /* run_maps and run_*prog_fd hold what they say */
};

static int clsact_lock(void);
static void clsact_unlock(int fd);
static void unpin_name(const struct loader *l, const char *name);
static void run_programs_release(struct loader *l);

/* l->ns_dir: the directory of the shared maps of the namespace run names (NS_DIR_FMT). */
static int ns_dir_set(struct loader *l, const struct sl_run_cfg *run)
{
	return util_fmt(l->ns_dir, sizeof(l->ns_dir), NS_DIR_FMT, LOADER_BPFFS,
			(unsigned long long)run->netns_dev, (unsigned long long)run->netns_ino);
}

/* The run's configuration: what the loader wrote into the map (cfg_write), or read back. */
static const struct sl_cfg *cfg_of(const struct loader *l)
{
	return &l->cfg;
}

/*
 * The configuration into a set's map, whole, before any link runs its programs. Through the
 * map's fd, not the skeleton's mmap() of it: libbpf makes global data mappable only where its
 * process-wide probe said the kernel can, and a probe that met a passing ENOMEM says it cannot
 * for the rest of the process.
 */
static int cfg_write(struct bpf_map *map, const struct sl_cfg *cfg)
{
	__u32 zero = 0;

	return bpf_map_update_elem(bpf_map__fd(map), &zero, cfg, BPF_ANY) ? -errno : 0;
}

/*
 * Before load: the configuration map is read-only to the programs and never mapped into this
 * process (written through its fd, cfg_write), so that cfg_freeze can make it read-only to
 * syscalls too once the run's last word is in: nothing, not even root with the pin, can then
 * turn an enforcing run into a reporting one without a switch that the log records.
 */
static __u32 cfg_map_flags(const struct bpf_map *map)
{
	return (bpf_map__map_flags(map) & ~BPF_F_MMAPABLE) | BPF_F_RDONLY_PROG;
}

static int cfg_map_prepare(struct bpf_map *map)
{
	return bpf_map__set_map_flags(map, cfg_map_flags(map));
}

/* After the last cfg_write of a set, before any of its links exist. */
static int cfg_freeze(struct bpf_map *map)
{
	return bpf_map_freeze(bpf_map__fd(map)) ? -errno : 0;
}

/*
 * This build's shape of each map its objects declare (mapshape.h), by the name the kernel knows
 * it by (BPF_OBJ_NAME_LEN - 1 characters at most): what a map of a run this process did not load
 * must have before it is read (run_map_entry, reopen_map, loader_map_check). Read from the
 * objects as opened, before anything in them changes; the configuration map with the flags every
 * set is loaded with (cfg_map_flags). The objects share a map by its name (next_share): one
 * shape a name. Internal maps other than the configuration are each object's own, never read
 * by name.
 *
 * A loader's own objects give them (build_maps_note, from load_objects): a process that loads
 * a set never opens a skeleton for them, and the attach path never waits for that (ns_sync
 * checks other runs' slots under the host-wide clsact_lock). A process that loads none (a
 * take-over's, a purge's) opens the skeletons once, at its first check (build_maps_fill).
 */
struct build_map {
	char name[BPF_OBJ_NAME_LEN];
	struct map_shape shape;
};

/*
 * The objects whose maps a run holds, through its links and pins: every one but the
 * destroyer's, whose one map (sl_kill) each process loads for itself, never a run's.
 */
enum build_obj { BUILD_SOCK_ADDR, BUILD_SKB, BUILD_SURFACE, BUILD_TC, BUILD_LSM, BUILD_OBJS };
#define BUILD_OBJS_ALL ((1u << BUILD_OBJS) - 1)

static struct build_map *build_maps;
static size_t n_build_maps;
static unsigned int build_objs_in; /* 1 << enum build_obj of each object whose maps are in */
static pthread_mutex_t build_maps_lock = PTHREAD_MUTEX_INITIALIZER;

static struct map_kind kind_of_map(const struct bpf_map *map)
{
	return (struct map_kind){ bpf_map__type(map), bpf_map__key_size(map),
				  bpf_map__value_size(map), bpf_map__map_flags(map) };
}

/* Under build_maps_lock: every build map and object out, to be read again at the next ask. */
static void build_maps_drop(void)
{
	free(build_maps);
	build_maps = NULL;
	n_build_maps = 0;
	build_objs_in = 0;
}

static int selftest_shape_wider(void);

/*
 * Under build_maps_lock: the maps of obj, opened as which and not changed since, in (once);
 * with the last object in, SLUICE_SELFTEST_SHAPE_WIDER applied. A failure (ENOMEM, a
 * SLUICE_SELFTEST_SHAPE_WIDER of no map) leaves none in.
 */
static int build_maps_add(enum build_obj which, struct bpf_object *obj)
{
	struct bpf_map *map, *inner;
	struct build_map *more, *b;
	int err = 0;

	if (build_objs_in & (1u << which))
		return 0;
	bpf_object__for_each_map(map, obj) {
		bool cfg = !strcmp(bpf_map__name(map), CFG_MAP);

		if (bpf_map__is_internal(map) && !cfg)
			continue;
		more = realloc(build_maps, (n_build_maps + 1) * sizeof(*build_maps));
		if (!more) {
			err = -ENOMEM;
			break;
		}
		build_maps = more;
		b = &build_maps[n_build_maps++];
		memset(b, 0, sizeof(*b));
		snprintf(b->name, sizeof(b->name), "%s", bpf_map__name(map));
		b->shape.map = kind_of_map(map);
		if (cfg)
			b->shape.map.map_flags = cfg_map_flags(map);
		inner = bpf_map__inner_map(map);
		if (inner) {
			b->shape.inner_known = true;
			b->shape.inner = kind_of_map(inner);
		}
	}
	if (!err)
		build_objs_in |= 1u << which;
	if (!err && build_objs_in == BUILD_OBJS_ALL)
		err = selftest_shape_wider();
	if (err)
		build_maps_drop();
	return err;
}

/*
 * Selftests only (test_switch_sni.sh), SLUICE_SELFTEST_SHAPE_WIDER=NAME: this process takes its
 * build's map NAME to be 8 bytes wider in value than its objects declare it, for the shape check
 * alone (nothing is loaded so): a run attached by this very build then holds the map as a build
 * that laid it out narrower would, so that a take-over must refuse to read it (run_map_entry).
 * The way to try that on a map userspace reads (SLUICE_SELFTEST_MAP_WIDER widens none). "" is
 * unset.
 */
static int selftest_shape_wider(void)
{
	const char *name = getenv("SLUICE_SELFTEST_SHAPE_WIDER");
	size_t i;

	if (!name || !*name)
		return 0;
	for (i = 0; i < n_build_maps && strcmp(build_maps[i].name, name); i++)
		;
	if (i == n_build_maps) {
		fprintf(stderr, "sluice: SLUICE_SELFTEST_SHAPE_WIDER=%s: this build has no map of "
				"that name\n", name);
		return -EINVAL;
	}
	fprintf(stderr, "sluice: SLUICE_SELFTEST_SHAPE_WIDER is set: a run's map %s is checked "
			"against a value 8 bytes wider than this build's\n", name);
	build_maps[i].shape.map.value_size += 8;
	return 0;
}

/*
 * The shapes of a loader's objects, objs[which] opened as which and nothing in it changed yet
 * (selftest_map_wider widens a map, share_maps gives maps the shape of the fds they reuse):
 * NULL where it has none open.
 */
static int build_maps_note(struct bpf_object *const objs[BUILD_OBJS])
{
	int err = 0, i;

	pthread_mutex_lock(&build_maps_lock);
	for (i = 0; !err && i < BUILD_OBJS; i++)
		if (objs[i])
			err = build_maps_add(i, objs[i]);
	pthread_mutex_unlock(&build_maps_lock);
	return err;
}

static bool build_obj_in(enum build_obj which)
{
	return build_objs_in & (1u << which);
}

/* A skeleton's open failed: its -errno (libbpf may leave none). */
static int open_err(void)
{
	return -(errno ? errno : EINVAL);
}

/*
 * Under build_maps_lock, for a process whose loader opened none of them: each object not in yet,
 * from a skeleton opened for it (never loaded).
 */
static int build_maps_fill(void)
{
	struct sl_sock_addr *addr = NULL;
	struct sl_skb *skb = NULL;
	struct sl_surface *surface = NULL;
	struct sl_tc *tc = NULL;
	struct sl_lsm *lsm = NULL;
	int err = 0;

	if (!build_obj_in(BUILD_SOCK_ADDR)) {
		addr = sl_sock_addr__open();
		err = addr ? build_maps_add(BUILD_SOCK_ADDR, addr->obj) : open_err();
	}
	if (!err && !build_obj_in(BUILD_SKB)) {
		skb = sl_skb__open();
		err = skb ? build_maps_add(BUILD_SKB, skb->obj) : open_err();
	}
	if (!err && !build_obj_in(BUILD_SURFACE)) {
		surface = sl_surface__open();
		err = surface ? build_maps_add(BUILD_SURFACE, surface->obj) : open_err();
	}
	if (!err && !build_obj_in(BUILD_TC)) {
		tc = sl_tc__open();
		err = tc ? build_maps_add(BUILD_TC, tc->obj) : open_err();
	}
	if (!err && !build_obj_in(BUILD_LSM)) {
		lsm = sl_lsm__open();
		err = lsm ? build_maps_add(BUILD_LSM, lsm->obj) : open_err();
	}
	sl_lsm__destroy(lsm);
	sl_tc__destroy(tc);
	sl_surface__destroy(surface);
	sl_skb__destroy(skb);
	sl_sock_addr__destroy(addr);
	return err;
}

int loader_build_map_shape(const char *name, struct map_shape *out)
{
	char want[BPF_OBJ_NAME_LEN];
	int err = 0;
	size_t i;

	snprintf(want, sizeof(want), "%s", name);
	pthread_mutex_lock(&build_maps_lock);
	if (build_objs_in != BUILD_OBJS_ALL)
		err = build_maps_fill();
	for (i = 0; !err && i < n_build_maps && strcmp(build_maps[i].name, want); i++)
		;
	if (!err && i == n_build_maps)
		err = -ENOENT;
	if (!err)
		*out = build_maps[i].shape;
	pthread_mutex_unlock(&build_maps_lock);
	return err;
}

/*
 * The shape of the map fd (mi: its info from the kernel), whoever made it; of a map of maps, also
 * that of the first map it holds among its first SHAPE_INNER_KEYS keys (inner_known false: none
 * there). Its keys are read into a buffer of their own size.
 */
#define SHAPE_INNER_KEYS 64

static int shape_of_info(int fd, const struct bpf_map_info *mi, struct map_shape *out)
{
	struct bpf_map_info inner_info = {}, info = *mi;
	__u32 len, id, key_size;
	void *prev = NULL;
	int inner, n, err = 0;
	char *keys;

	*out = (struct map_shape){ .map = { info.type, info.key_size, info.value_size,
					    info.map_flags } };
	/* (a map of maps gives out its maps' ids: a __u32 each, as its value size says) */
	if ((info.type != BPF_MAP_TYPE_ARRAY_OF_MAPS && info.type != BPF_MAP_TYPE_HASH_OF_MAPS) ||
	    info.value_size != sizeof(id))
		return 0;
	key_size = info.key_size ? info.key_size : 1;
	keys = calloc(2, key_size); /* the key and the next */
	if (!keys)
		return -ENOMEM;
	for (n = 0; n < SHAPE_INNER_KEYS && !bpf_map_get_next_key(fd, prev, keys + key_size); n++) {
		memcpy(keys, keys + key_size, key_size);
		prev = keys;
		/* an empty slot, or one emptied meanwhile: the next */
		if (bpf_map_lookup_elem(fd, keys, &id))
			continue;
		inner = bpf_map_get_fd_by_id(id);
		if (inner < 0)
			continue;
		len = sizeof(inner_info);
		if (bpf_map_get_info_by_fd(inner, &inner_info, &len))
			err = -errno;
		close(inner);
		if (!err) {
			out->inner_known = true;
			out->inner = (struct map_kind){ inner_info.type, inner_info.key_size,
							 inner_info.value_size,
							 inner_info.map_flags };
		}
		break;
	}
	free(keys);
	return err;
}

/* shape_of_info of the map fd, its info asked of the kernel here. */
static int shape_of_fd(int fd, struct map_shape *out)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_map_get_info_by_fd(fd, &info, &len))
		return -errno;
	return shape_of_info(fd, &info, out);
}

/*
 * The map fd, of a run this process did not load, is of this build's shape for the map the
 * kernel names name: 0, or -EPROTO with err (may be NULL) naming it and both shapes (or saying
 * this build has no map of that name), -errno.
 */
int loader_map_check(int fd, const char *name, char *err, size_t err_len)
{
	struct map_shape run, build;
	int ret = loader_build_map_shape(name, &build);

	if (ret && err && err_len)
		util_fmt(err, err_len, "the run's map %s: this build's shape of it: %s", name,
			 ret == -ENOENT ? "this build has no map of that name" : strerror(-ret));
	if (ret == -ENOENT)
		ret = -EPROTO; /* (not the pin's absence) */
	if (!ret)
		ret = shape_of_fd(fd, &run);
	if (!ret)
		ret = map_shape_check(name, &run, &build, err, err_len);
	return ret;
}

static struct bpf_program *prog_of(const struct loader *l, enum loader_prog i)
{
	struct sl_sock_addr *skel = l->skel;
	struct bpf_program *const progs[PROG_MAX] = {
		[PROG_CONNECT4] = skel->progs.sl_connect4,
		[PROG_CONNECT6] = skel->progs.sl_connect6,
		[PROG_SENDMSG4] = skel->progs.sl_sendmsg4,
		[PROG_SENDMSG6] = skel->progs.sl_sendmsg6,
		[PROG_RECVMSG4] = skel->progs.sl_recvmsg4,
		[PROG_RECVMSG6] = skel->progs.sl_recvmsg6,
		[PROG_GETPEERNAME4] = skel->progs.sl_getpeername4,
		[PROG_GETPEERNAME6] = skel->progs.sl_getpeername6,
		[PROG_BACKSTOP] = l->skb->progs.sl_backstop,
		[PROG_EGRESS] = l->skb->progs.sl_egress,
		[PROG_INGRESS] = l->skb->progs.sl_ingress,
		[PROG_SOCK_CREATE] = l->surface->progs.sl_sock_create,
		[PROG_SETSOCKOPT] = l->surface->progs.sl_setsockopt,
		[PROG_SOCK_RELEASE] = skel->progs.sl_sock_release,
	};

	return progs[i];
}

static struct bpf_map *map_of(const struct loader *l, enum loader_map i)
{
	struct sl_sock_addr *skel = l->skel;
	struct bpf_map *const maps[MAP_MAX] = {
		[MAP_EVENTS] = skel->maps.sl_events,
		[MAP_LOST] = skel->maps.sl_lost,
		[MAP_SEQ] = skel->maps.sl_seq,
		[MAP_DNS_CLIENTS] = skel->maps.sl_dns_clients,
		[MAP_LEARNED4] = skel->maps.sl_learned4,
		[MAP_LEARNED6] = skel->maps.sl_learned6,
		[MAP_SNI_OK] = skel->maps.sl_sni_ok,
		[MAP_HOSTS] = skel->maps.sl_hosts,
		[MAP_CFG] = skel->maps.data_cfg,
		[MAP_LOG_STATE] = skel->maps.sl_log_state,
	};

	return maps[i];
}

static bool libbpf_verbose;
/*
 * Around a call whose failure is an expected outcome: only -v shows libbpf's words. Per thread:
 * the daemon loads its spares on a thread of their own while its loop attaches.
 */
static __thread bool libbpf_hushed;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if ((level == LIBBPF_DEBUG || libbpf_hushed) && !libbpf_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* Returns what to put back with libbpf_unhush(). */
static bool libbpf_hush(void)
{
	bool old = libbpf_hushed;

	libbpf_hushed = true;
	return old;
}

static void libbpf_unhush(bool old)
{
	libbpf_hushed = old;
}

const char *loader_explain(int err)
{
	switch (err) {
	case EPERM:
	case EACCES:
		if (geteuid() == 0)
			return "the kernel refused the programs (verifier log above; lockdown or a "
			       "too old kernel also say this)";
		return "loading BPF programs needs root (CAP_BPF, CAP_NET_ADMIN and CAP_SYS_ADMIN)";
	case ENOENT:
		return "the kernel lacks a feature sluice needs (BTF at /sys/kernel/btf/vmlinux, "
		       "cgroup sock_addr hooks, or BPF ring buffers)";
	case ENOSYS:
		return "the kernel was built without BPF syscall support";
	case E2BIG:
		return "the compiled policy does not fit the BPF maps";
	case EOVERFLOW:
		return "the run has used every policy generation (2^32 - 1 switches): start a new "
		       "run";
	}
	return strerror(err);
}

/* bpffs must be mounted for pinning; mount it (mode 0700) if the system has not. */
static int ensure_bpffs(void)
{
	struct statfs st;

	if (!statfs(LOADER_BPFFS, &st) && st.f_type == BPF_FS_MAGIC)
		return 0;
	if (mount("bpf", LOADER_BPFFS, "bpf", 0, "mode=0700"))
		return -errno;
	return 0;
}

/* budgets: each rule's budget id (indexed by rule_id), NULL: its number (sl_rule_budget) */
static int fill_policy_maps(struct loader *l, const struct policy_compiled *c,
			    const uint16_t *budgets)
{
	int fd4 = bpf_map__fd(l->skel->maps.sl_dst4), fd6 = bpf_map__fd(l->skel->maps.sl_dst6);
	int fdr = bpf_map__fd(l->skel->maps.sl_rule_ports);
	int fdc = bpf_map__fd(l->skel->maps.sl_rule_caps);
	int fdb = bpf_map__fd(l->skel->maps.sl_rule_budget);
	size_t i;

	for (i = 0; i < c->n_rule_ports; i++) {
		__u32 key = (__u32)i, budget = budgets ? budgets[i] : (__u32)i;

		if (bpf_map_update_elem(fdr, &key, &c->rule_ports[i], BPF_ANY) ||
		    bpf_map_update_elem(fdc, &key, &c->rule_caps[i], BPF_ANY) ||
		    bpf_map_update_elem(fdb, &key, &budget, BPF_ANY))
			return -errno;
	}

	for (i = 0; i < c->n_v4; i++)
		if (bpf_map_update_elem(fd4, &c->v4[i].key, &c->v4[i].val, BPF_NOEXIST))
			return -errno;
	for (i = 0; i < c->n_v6; i++)
		if (bpf_map_update_elem(fd6, &c->v6[i].key, &c->v6[i].val, BPF_NOEXIST))
			return -errno;
	return 0;
}

/*
 * The per-host byte totals are counted only for rules with max_total_* caps: a policy without
 * any gets a one-entry map (256 KiB of buckets at full size), never written to.
 */
static bool policy_has_totals(const struct policy_compiled *c)
{
	size_t i;

	for (i = 0; i < c->n_rule_ports; i++)
		if (c->rule_caps[i].max_total_req || c->rule_caps[i].max_total_resp)
			return true;
	return false;
}

/*
 * The other layers are objects of their own. Every map they declare under the same name as one
 * of the decision layer's (the evidence maps, the socket storages, the server-name pairs) is
 * made to reuse it, so there is one of each for the run. Their internal maps (.rodata, scratch)
 * have names of their own and stay theirs.
 */
static int share_maps(struct bpf_object *obj, const struct loader *l)
{
	struct bpf_map *map, *ours;
	int err;

	bpf_object__for_each_map(map, obj) {
		ours = bpf_object__find_map_by_name(l->skel->obj, bpf_map__name(map));
		if (!ours)
			continue;
		err = bpf_map__reuse_fd(map, bpf_map__fd(ours));
		if (err)
			return err;
	}
	return 0;
}

/*
 * kernel_has_kfunc's answers: the kernel's BTF does not change while it runs, and parsing it (some
 * MB) at every load cost each spare, attach and switch milliseconds. Loads run on several threads
 * (the daemon's spares and load threads): under the lock, held while the BTF is parsed, so that
 * two first loads parse it once.
 */
#define KFUNC_CACHE_MAX 4
static struct kfunc_known {
	char name[64];
	bool found;
} kfunc_cache[KFUNC_CACHE_MAX];
static size_t kfunc_n_cached;
static pthread_mutex_t kfunc_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * The kernel has this kfunc (its BTF names it). bpf_cast_to_kern_ctx (6.3+) is one every program
 * type may call: where it exists, the TLS check can see a packet whose pages the sender can still
 * change (sendfile, splice, MSG_ZEROCOPY); see frags_mutable in skb.bpf.c and the README. Asked
 * of the BTF once per process and name; a BTF that cannot be read answers false, uncached (asked
 * again at the next load, as when nothing was cached).
 */
static bool kernel_has_kfunc(const char *name)
{
	struct btf *vmlinux;
	bool found = false;
	size_t i;

	pthread_mutex_lock(&kfunc_lock);
	for (i = 0; i < kfunc_n_cached; i++) {
		if (!strcmp(kfunc_cache[i].name, name)) {
			found = kfunc_cache[i].found;
			goto out;
		}
	}
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		goto out;
	found = btf__find_by_name_kind(vmlinux, name, BTF_KIND_FUNC) > 0;
	btf__free(vmlinux);
	if (kfunc_n_cached < KFUNC_CACHE_MAX &&
	    !util_copy(kfunc_cache[kfunc_n_cached].name, sizeof(kfunc_cache[0].name), name))
		kfunc_cache[kfunc_n_cached++].found = found;
out:
	pthread_mutex_unlock(&kfunc_lock);
	return found;
}

static int load_packet_layer(struct loader *l)
{
	int err = share_maps(l->skb->obj, l);

	if (err)
		return err;
	/*
	 * A property of the kernel, the same for every run: a constant of the programs, kept in the
	 * loader for a switch's new set. Never read back from the loaded object: libbpf leaves its
	 * global data unmapped (NULL) for the whole process once its mmap probe failed.
	 */
	l->frag_check = kernel_has_kfunc("bpf_cast_to_kern_ctx");
	l->skb->rodata->sl_cfg_frag_check = l->frag_check;
	return sl_skb__load(l->skb);
}

static int load_tc_layer(struct loader *l)
{
	int err = share_maps(l->tc->obj, l);

	/* the namespace's maps' slots (ns_bind fills them) */
	if (!err)
		err = bpf_map__reuse_fd(l->tc->maps.sl_ns_flows,
					bpf_map__fd(l->skb->maps.sl_ns_flows));
	if (!err)
		err = bpf_map__reuse_fd(l->tc->maps.sl_ns_runs, bpf_map__fd(l->skb->maps.sl_ns_runs));
	return err ? err : sl_tc__load(l->tc);
}

static int load_surface_layer(struct loader *l)
{
	int err = share_maps(l->surface->obj, l);

	return err ? err : sl_surface__load(l->surface);
}

/*
 * Optional: BPF LSM needs CONFIG_BPF_LSM and "bpf" among the active LSMs; lsm_cgroup needs 6.0.
 * Failing here is not an error: the run goes on without the layer, and says so. Loaded with the
 * other layers (a spare's too), opened with them (load_objects); its cgroup is written into the
 * configuration at attach.
 */
static void load_lsm_layer(struct loader *l)
{
	/* a failure is expected where the kernel has no BPF LSM */
	bool old;

	if (!l->lsm)
		return; /* (its open failed: lsm_why says so) */
	old = libbpf_hush();
	if (!share_maps(l->lsm->obj, l) && !sl_lsm__load(l->lsm)) {
		libbpf_unhush(old);
		return;
	}
	sl_lsm__destroy(l->lsm);
	l->lsm = NULL;
	/* EPERM also comes from lockdown or a host policy that forbids LSM programs */
	if (util_fmt(l->lsm_why, sizeof(l->lsm_why), "BPF LSM programs: load failed: %s",
		     strerror(errno ? errno : EINVAL)))
		l->lsm_why[0] = '\0';
	libbpf_unhush(old);
}

/*
 * Optional: bpf_sock_destroy is 6.5+; without it a denied flow's socket is destroyed through
 * sock_diag (loader_kill_socket). SLUICE_SELFTEST_NO_BPF_DESTROY=1 takes that path here too.
 */
static void load_destroyer(struct loader *l)
{
	bool old;

	if (getenv("SLUICE_SELFTEST_NO_BPF_DESTROY"))
		return;
	old = libbpf_hush();

	/* a missing kfunc is an expected outcome here, not a warning to print */
	l->destroy = sl_destroy__open_and_load();
	libbpf_unhush(old);
}

/*
 * The network namespace of process tgid, or -1: through the leader, else through any of its
 * threads (a leader that exited alone is a zombie, whose namespaces cannot be opened).
 */
static int netns_of_tgid(uint32_t tgid)
{
	char path[PATH_MAX];
	struct dirent *e;
	int fd = -1;
	DIR *d;

	if (!util_fmt(path, sizeof(path), "/proc/%u/ns/net", tgid))
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 || util_fmt(path, sizeof(path), "/proc/%u/task", tgid))
		return fd;
	d = opendir(path);
	while (d && fd < 0 && (e = readdir(d)))
		if (e->d_name[0] != '.' &&
		    !util_fmt(path, sizeof(path), "/proc/%u/task/%s/ns/net", tgid, e->d_name))
			fd = open(path, O_RDONLY | O_CLOEXEC);
	if (d)
		closedir(d);
	return fd;
}

static int kill_socket(struct loader *l, uint64_t cookie, int netns_fd, uint32_t pid);
static int link_prog_fd(const struct bpf_link *link);

static int sockdiag_destroy_here(void *arg)
{
	return sockdiag_destroy_tcp(*(const uint64_t *)arg);
}

#define PROG_MAP_IDS_MAX 64 /* sluice's programs use far fewer */

/* The ids of the maps program prog_fd uses: their count (at most PROG_MAP_IDS_MAX), or -errno. */
static int prog_map_ids(int prog_fd, __u32 ids[PROG_MAP_IDS_MAX])
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	info.nr_map_ids = PROG_MAP_IDS_MAX;
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_prog_get_info_by_fd(prog_fd, &info, &len))
		return -errno;
	return info.nr_map_ids < PROG_MAP_IDS_MAX ? (int)info.nr_map_ids : PROG_MAP_IDS_MAX;
}

/*
 * The packet layer's sl_destroying (skb.bpf.c destroy_reset), the one the run's attached egress
 * program uses; its fd, the caller's to close, or -errno if there is none (the destroy's RST is
 * then dropped).
 * - A loader that loaded the run's set (l->skb, at the start or by a switch) holds it. A
 *   switch's new set is made to use the old set's (next_share: sl_destroying is no policy's
 *   map, and the new decision layer declares none, so the old object's is taken), so the egress
 *   link runs a program of that map whichever set it is on: the old one's, the new one's from
 *   the link's move on, and the old one's again after a failed commit moved it back. Between the
 *   move and l->skb's change (loader_next_commit) no kill runs: the daemon's main thread runs
 *   both the commit and the kills; a switch's other thread only loads (loader_next_load).
 * - A writer that took the run over holds no set until its first switch: the map is found
 *   through the egress link's program (its maps walked by id). The links move only by this
 *   loader's commit, after which l->skb is set. (A run loaded by a build without the map has
 *   none: no RST leaves, as there.) That map is another build's, maybe: -EPROTO unless of this
 *   build's type, key and value sizes and flags (loader_map_check), why saying which (may be
 *   NULL).
 */
static int destroying_map(const struct loader *l, char *why, size_t why_len)
{
	__u32 ids[PROG_MAP_IDS_MAX], len;
	int prog, fd = -ENOENT, n, i;

	if (!l->links[PROG_EGRESS])
		return -ENOENT;
	if (l->skb) {
		fd = fcntl(bpf_map__fd(l->skb->maps.sl_destroying), F_DUPFD_CLOEXEC, 0);
		return fd < 0 ? -errno : fd;
	}
	prog = link_prog_fd(l->links[PROG_EGRESS]);
	if (prog < 0)
		return prog;
	n = prog_map_ids(prog, ids);
	if (n < 0)
		fd = n;
	for (i = 0; fd == -ENOENT && i < n; i++) {
		struct bpf_map_info mi = {};
		int m = bpf_map_get_fd_by_id(ids[i]);

		len = sizeof(mi);
		if (m >= 0 && !bpf_map_get_info_by_fd(m, &mi, &len) &&
		    !strcmp(mi.name, "sl_destroying"))
			fd = loader_map_check(m, "sl_destroying", why, why_len);
		if (!fd)
			fd = m;
		else if (m >= 0)
			close(m);
	}
	close(prog);
	return fd;
}

/*
 * A writer killed inside loader_kill_socket left the socket's cookie in sl_destroying: it is
 * taken out when the run is taken over (loader_reopen), so that no RST of that socket is let out
 * later, outside a destroy.
 */
static void destroying_clear(const struct loader *l)
{
	char why[512] = "";
	__u64 key;
	int fd = destroying_map(l, why, sizeof(why));

	if (why[0])
		fprintf(stderr, "sluice: %s: sl_destroying is not emptied: %s\n", l->pin_dir, why);
	if (fd < 0)
		return;
	while (!bpf_map_get_next_key(fd, NULL, &key))
		if (bpf_map_delete_elem(fd, &key)) {
			fprintf(stderr, "sluice: %s: empty sl_destroying: %s\n", l->pin_dir,
				strerror(errno));
			break;
		}
	close(fd);
}

/*
 * Whether the RST of a socket of netns_fd (the namespace loader_kill_socket destroys it in) may
 * leave, which only the host side puts into a fixed form (tc.bpf.c reset_fix):
 * - the workload holds no CAP_NET_ADMIN (sl_run_cfg no_net_admin: not --allow-root). With it,
 *   TCP_REPAIR sets the socket's sequence and acknowledgement numbers (TCP_REPAIR_QUEUE and a
 *   send move rcv_nxt, a send in repair mode snd_nxt, TCP_REPAIR_WINDOW the rest), which no
 *   fixed form can take out of the RST: some 50 bits of its choice to a denied destination at
 *   each kill, which it can bring about at will (a DNAT to a denied host). Nor over the
 *   namespace: one owned by a user namespace below ours (a rootless container's, a remapped
 *   one) is administered by whoever owns that, and a workload with that euid (the confined
 *   root keeps CAP_SETUID) holds CAP_NET_ADMIN over it, whatever its own capabilities;
 * - every link of the namespace but its loopback is a veth whose peer is one of the run's
 *   host-side attachments (the ifindex in that namespace): a macvlan, ipvlan or tunnel beside
 *   them, or a veth added after the attach (no host side on its peer), would carry the RST out
 *   as the kernel wrote it. Asked at each kill, of the namespace's links as they are then: one
 *   rtnetlink dump (no search for the namespace: netns_fd is the one the kill enters).
 * An attachment whose peer is not known (a tcx link a take-over reopened and did not find on a
 * peer: loader_refind_host_side) matches no veth.
 */
static bool resets_fixed(const struct loader *l, int netns_fd)
{
	struct netdev_peer peers[NETDEV_PEERS_MAX];
	int i;

	if (!cfg_of(l)->run.no_net_admin || netns_fd < 0 || !l->n_tc ||
	    netdev_netns_owner_is_ours(netns_fd) != 1)
		return false;
	for (i = 0; i < l->n_tc; i++)
		peers[i] = l->tc_att[i].peer;
	return netdev_only_peers(netns_fd, peers, l->n_tc) == 1;
}

/*
 * The socket is destroyed (below, kill_socket) with its cookie in sl_destroying: the RST the
 * kernel sends its peer meanwhile leaves (skb.bpf.c destroy_reset), if the socket lives in
 * netns_fd's namespace, the one judged (a socket of the run's cgroup in a namespace of its own,
 * which the packet path's kill names the run's, leaves by ways not judged). Only for that call:
 * taken out after it, whatever it did. Only where resets_fixed says the RST leaves in a fixed form
 * that carries nothing the workload chose: no program of a run without a host side can write
 * to a packet, and the kernel's RST carries fields the workload chose (IP_TOS, IP_TTL,
 * SO_RCVBUF, TCP_MD5SIG...; under CAP_NET_ADMIN its sequence numbers too), so there it stays
 * dropped and the peer is not told (sluice.8, Connections made before the attach).
 */
int loader_kill_socket(struct loader *l, uint64_t cookie, int netns_fd, uint32_t pid)
{
	struct sl_reset_note note = {}; /* the rest is destroy_reset's to write */
	char why[512] = "";
	int marks = resets_fixed(l, netns_fd) ? destroying_map(l, why, sizeof(why)) : -ENOENT;
	int err = marks == -EPROTO ? marks : 0;
	struct stat st;

	/*
	 * The namespace judged: the RST leaves only if the socket is in it (destroy_reset). A map
	 * of another build's (a run it loaded) would not compare it: nothing is let out.
	 */
	if (marks >= 0 && fstat(netns_fd, &st))
		err = -errno;
	if (marks >= 0 && !err) {
		note.netns_ino = st.st_ino;
		if (bpf_map_update_elem(marks, &cookie, &note, BPF_ANY))
			err = -errno;
	}
	if (err)
		fprintf(stderr, "sluice: let the RST of socket %llu out: %s; its peer is not told\n",
			(unsigned long long)cookie, util_why(why, err));
	/* selftests only: killed with the cookie marked (a take-over empties sl_destroying) */
	if (marks >= 0)
		loader_selftest_kill("in-destroy");
	err = kill_socket(l, cookie, netns_fd, pid);
	if (marks >= 0) {
		bpf_map_delete_elem(marks, &cookie);
		close(marks);
	}
	/*
	 * Not in the namespace judged: a socket of the run's cgroup may live in one of its own (a
	 * workload's user and network namespace, one it was handed). Looked for again in its
	 * process's, unmarked: its RST stays dropped (destroy_reset), as that namespace's ways out
	 * were never judged. Else the line would say "closed" of a socket still open.
	 */
	if (err == -ENOENT && netns_fd >= 0 && pid) {
		int pid_ns = netns_of_tgid(pid);
		struct stat ps;

		/* (a second walk of the namespace just walked would find nothing either) */
		if (pid_ns >= 0 && !fstat(pid_ns, &ps) && !fstat(netns_fd, &st) &&
		    (ps.st_dev != st.st_dev || ps.st_ino != st.st_ino))
			err = kill_socket(l, cookie, pid_ns, pid);
		if (pid_ns >= 0)
			close(pid_ns);
	}
	return err;
}

static int kill_socket(struct loader *l, uint64_t cookie, int netns_fd, uint32_t pid)
{
	struct bpf_link *link = NULL;
	int self_ns = -1, iter_fd = -1, pid_ns = -1, err = 0, kill_fd;
	__s32 result = SL_KILL_PENDING;
	char buf[64];

	/* Without --netns the run may still have entered a namespace of its own: the process's. */
	if (netns_fd < 0 && pid) {
		pid_ns = netns_of_tgid(pid);
		netns_fd = pid_ns;
	}
	if (!l->destroy) {
		/*
		 * Before 6.5: sock_diag's SOCK_DESTROY (CONFIG_INET_DIAG_DESTROY, in the run's
		 * namespace). A socket left alive would keep its dropped data queued, and send it
		 * once the run's programs are detached: the socket outlives its process.
		 */
		err = netns_fd >= 0 ? netdev_in_netns(netns_fd, sockdiag_destroy_here, &cookie) :
				      sockdiag_destroy_tcp(cookie);
		if (pid_ns >= 0)
			close(pid_ns);
		return err;
	}
	kill_fd = bpf_map__fd(l->destroy->maps.sl_kill);
	if (bpf_map_update_elem(kill_fd, &cookie, &result, BPF_ANY)) {
		err = -errno;
		goto out;
	}
	link = bpf_program__attach_iter(l->destroy->progs.sl_destroy_tcp, NULL);
	if (!link) {
		err = -errno;
		goto out;
	}
	/* A TCP iterator walks the sockets of the namespace it is created in: the run's. */
	if (netns_fd >= 0) {
		self_ns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
		if (self_ns < 0 || setns(netns_fd, CLONE_NEWNET)) {
			err = -errno;
			goto out;
		}
	}
	iter_fd = bpf_iter_create(bpf_link__fd(link));
	if (iter_fd < 0)
		err = -errno;
	if (self_ns >= 0 && setns(self_ns, CLONE_NEWNET)) {
		fprintf(stderr, "sluice: cannot return to own network namespace: %s\n",
			strerror(errno));
		abort();
	}
	while (iter_fd >= 0 && read(iter_fd, buf, sizeof(buf)) > 0)
		;
	/* what the walk did: a cookie no socket had is a socket closed already, not destroyed */
	if (!err && iter_fd >= 0)
		err = bpf_map_lookup_elem(kill_fd, &cookie, &result) ? -errno :
		      result == SL_KILL_PENDING ? -ENOENT : result;
out:
	/* found or long gone, the cookie has had its walk: never let sl_kill fill up */
	bpf_map_delete_elem(kill_fd, &cookie);
	if (iter_fd >= 0)
		close(iter_fd);
	if (self_ns >= 0)
		close(self_ns);
	if (pid_ns >= 0)
		close(pid_ns);
	bpf_link__destroy(link);
	return err;
}

/* The directory of the namespace's shared maps, and a token for the run (random, never 0). */
static int ns_share_init(struct loader *l, const struct sl_run_cfg *cfg)
{
	char path[PATH_MAX];
	int err = ensure_bpffs();

	if (err)
		return err;
	if (util_fmt(path, sizeof(path), "%s/sluice", LOADER_BPFFS) || ns_dir_set(l, cfg))
		return -ENAMETOOLONG;
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	while (!l->ns_token)
		if (getrandom(&l->ns_token, sizeof(l->ns_token), 0) != sizeof(l->ns_token))
			return -errno;
	return 0;
}

/*
 * The shape of the namespace's maps: their slots' templates' (bpf/nsflows.bpf.h; libbpf frees
 * the templates once the outer maps exist, so they cannot be asked after load).
 */
struct ns_map_shape {
	const char *name; /* its pin under the namespace's directory */
	enum bpf_map_type type;
	__u32 key_size, value_size, max_entries;
};

enum { NS_FLOWS, NS_RUNS };

static const struct ns_map_shape ns_shapes[2] = {
	[NS_FLOWS] = { "flows", BPF_MAP_TYPE_LRU_HASH, sizeof(struct sl_ns_flow_key),
		       sizeof(__u64), SL_NS_FLOWS_MAX },
	[NS_RUNS] = { "runs", BPF_MAP_TYPE_HASH, sizeof(__u64), sizeof(__u8), SL_NS_RUNS_MAX },
};

/* A map of the namespace's shape, not pinned yet. */
static int ns_map_create(const struct ns_map_shape *shape)
{
	char map_name[BPF_OBJ_NAME_LEN];
	int fd;

	if (util_fmt(map_name, sizeof(map_name), "sl_ns_%s", shape->name))
		return -ENAMETOOLONG;
	fd = bpf_map_create(shape->type, map_name, shape->key_size, shape->value_size,
			    shape->max_entries, NULL);
	return fd < 0 ? -errno : fd;
}

/* fd pinned as the namespace's map of that shape (its directory made if need be). */
static int ns_map_pin(const char *dir, const struct ns_map_shape *shape, int fd)
{
	char path[PATH_MAX];

	if (util_fmt(path, sizeof(path), "%s/%s", dir, shape->name))
		return -ENAMETOOLONG;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	return bpf_obj_pin(fd, path) ? -errno : 0;
}

/*
 * One of the namespace's maps: its pin, or (create) a new map pinned there; -ENOENT when it is
 * not pinned and create is false. A pin of another shape (a build whose sizes differ) is
 * refused: the slot would not take it.
 */
static int ns_map_get(const char *dir, const struct ns_map_shape *shape, bool create)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	char path[PATH_MAX];
	int fd, err = 0;

	if (util_fmt(path, sizeof(path), "%s/%s", dir, shape->name))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		if (bpf_map_get_info_by_fd(fd, &info, &len))
			err = -errno;
		else if (info.type != shape->type || info.key_size != shape->key_size ||
			 info.value_size != shape->value_size ||
			 info.max_entries != shape->max_entries || info.map_flags)
			err = -EPROTO;
		if (err) {
			close(fd);
			return err;
		}
		return fd;
	}
	if (errno != ENOENT || !create)
		return -errno;
	fd = ns_map_create(shape);
	if (fd < 0)
		return fd;
	err = ns_map_pin(dir, shape, fd);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

static int map_id_of(int fd, __u32 *id)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_map_get_info_by_fd(fd, &info, &len))
		return -errno;
	*id = info.id;
	return 0;
}

/*
 * Whether a slot (a one-slot map of maps) holds the map of that id already. (Asking waits for
 * nothing since Linux 6.8; before, it waited for a grace period when the slot was not empty,
 * which the update it spares would have waited for too.)
 */
static bool slot_holds(int slot_fd, __u32 id)
{
	__u32 zero = 0, held = 0;

	return !bpf_map_lookup_elem(slot_fd, &zero, &held) && held == id;
}

/*
 * The namespace's runs map into the set's slot, unless it holds that map already: each update
 * of a map of maps waits for an RCU grace period (the kernel's, for the programs that might
 * still read the old value), milliseconds to tens of them on a busy host, on the attach's path.
 * (A map's id names it while it lives, and the slot keeps the one it holds alive.)
 */
static int ns_runs_slot(struct loader *l, int slot, int runs)
{
	__u32 zero = 0, id = 0;
	int err = map_id_of(runs, &id);

	if (err || id == l->ns_runs_id)
		return err;
	if (bpf_map_update_elem(slot, &zero, &runs, BPF_ANY))
		return -errno;
	l->ns_runs_id = id;
	return 0;
}

/*
 * A spare's own runs map, put into its slot as it is loaded (off any attach's path): the first
 * run of a namespace that takes the spare pins it as the namespace's (ns_bind), with no update
 * of the slot, so that with ns_join's none a run alone in its namespace waits for no grace
 * period of its own but its host side's (tcx). A spare taken by a run with no host side keeps
 * it unread: the programs ask the runs map only about a frame the flows map holds.
 */
static int ns_runs_prefill(struct loader *l)
{
	int fd = ns_map_create(&ns_shapes[NS_RUNS]), err;

	if (fd < 0)
		return fd;
	err = ns_runs_slot(l, bpf_map__fd(l->skb->maps.sl_ns_runs), fd);
	if (err) {
		close(fd);
		return err;
	}
	l->ns_runs_own = fd;
	return 0;
}

/* The tokens of the runs alive in the namespace (its runs map), at most SL_NS_RUNS_MAX. */
static int ns_tokens(int runs_fd, __u64 tokens[SL_NS_RUNS_MAX])
{
	__u64 key, *prev = NULL;
	int n = 0;

	while (n < SL_NS_RUNS_MAX && !bpf_map_get_next_key(runs_fd, prev, &key)) {
		tokens[n] = key;
		prev = &tokens[n++];
	}
	return n;
}

/* A slot pin of the namespace's directory: its run's token and its map's id. */
struct ns_slot {
	__u64 token;
	__u32 map_id;
	bool held; /* some loaded program uses it: its run still has a layer */
};

/* Mark the slots some loaded program uses (one walk over every program). -errno on failure. */
static int ns_slots_held(struct ns_slot *slots, int n)
{
	__u32 id = 0, nids, *ids = NULL, cap = 0, i;
	int fd, err = 0, j;

	while (!err && !bpf_prog_get_next_id(id, &id)) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);

		fd = bpf_prog_get_fd_by_id(id);
		if (fd < 0) {
			if (errno == ENOENT)
				continue; /* gone since */
			err = -errno;
			break;
		}
		/* first its map count, then the ids (a program loaded with more than cap) */
		if (bpf_prog_get_info_by_fd(fd, &info, &len)) {
			err = -errno;
		} else if ((nids = info.nr_map_ids) > 0) {
			if (nids > cap) {
				__u32 *more = realloc(ids, nids * sizeof(*ids));

				if (!more)
					err = -ENOMEM;
				else
					ids = more, cap = nids;
			}
			memset(&info, 0, sizeof(info));
			info.nr_map_ids = nids;
			info.map_ids = (__u64)(unsigned long)ids;
			if (!err && bpf_prog_get_info_by_fd(fd, &info, &len))
				err = -errno;
			for (i = 0; !err && i < nids && i < info.nr_map_ids; i++)
				for (j = 0; j < n; j++)
					if (slots[j].map_id == ids[i])
						slots[j].held = true;
		}
		close(fd);
	}
	if (!err && errno != ENOENT)
		err = -errno;
	free(ids);
	return err;
}

/*
 * The tokens and slot pins of runs that are gone, collected when a run joins or leaves (under
 * clsact_lock): a token whose slot pin is gone, or whose slot no loaded program uses (neither
 * the run's packet layer nor its host side is left: its writer was killed inside ns_leave, its
 * links were removed since), would have the other runs' host sides pass the 5-tuples its cgroup
 * once recorded to a run that judges nothing. A slot no program uses is a dead run's too: its pin
 * would keep the namespace's directory. own: the caller's token, never collected. A token
 * wrongly collected only has every run's host side judge that run's frames (fails closed); on an
 * error nothing is collected (said so).
 */
static void ns_collect(const char *dir, int runs_fd, __u64 own)
{
	__u64 tokens[SL_NS_RUNS_MAX], token;
	struct ns_slot *slots = NULL, *more;
	int n_tokens = ns_tokens(runs_fd, tokens), n = 0, cap = 0, fd, err = 0, i, j;
	char path[PATH_MAX], end;
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while (!err && (e = readdir(d))) {
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);

		if (sscanf(e->d_name, "slot-%16llx%c", (unsigned long long *)&token, &end) != 1 ||
		    token == own || util_fmt(path, sizeof(path), "%s/%s", dir, e->d_name))
			continue;
		/* a slot that cannot be read (EMFILE, ENOMEM) collects nothing: its token would go */
		fd = bpf_obj_get(path);
		if (fd < 0) {
			if (errno != ENOENT) /* (gone meanwhile: a run that left) */
				err = -errno;
			continue;
		}
		if (n == cap) {
			more = realloc(slots, (cap + 16) * sizeof(*slots));
			if (!more)
				err = -ENOMEM;
			else
				slots = more, cap += 16;
		}
		if (!err && bpf_map_get_info_by_fd(fd, &info, &len))
			err = -errno;
		else if (!err)
			slots[n++] = (struct ns_slot){ .token = token, .map_id = info.id };
		close(fd);
	}
	closedir(d);
	if (!err && n)
		err = ns_slots_held(slots, n);
	if (err) {
		fprintf(stderr, "sluice: collect the tokens of runs gone from %s: %s; none "
				"collected\n", dir, strerror(-err));
		free(slots);
		return;
	}
	for (i = 0; i < n; i++) {
		if (slots[i].held)
			continue;
		bpf_map_delete_elem(runs_fd, &slots[i].token);
		if (!util_fmt(path, sizeof(path), NS_SLOT_FMT, dir,
			      (unsigned long long)slots[i].token))
			unlink(path);
	}
	for (i = 0; i < n_tokens; i++) {
		for (j = 0; j < n && slots[j].token != tokens[i]; j++)
			;
		if (j == n && tokens[i] != own)
			bpf_map_delete_elem(runs_fd, &tokens[i]); /* no slot pin: no run */
	}
	free(slots);
}

/* The directory holds a slot pin (a run's, alive or not yet collected). */
static bool ns_has_slots(const char *dir)
{
	struct dirent *e;
	bool found = false;
	DIR *d = opendir(dir);

	while (d && !found && (e = readdir(d)))
		found = !strncmp(e->d_name, "slot-", 5);
	if (d)
		closedir(d);
	return found;
}

void loader_ns_collect_all(void)
{
	char base[PATH_MAX], dir[PATH_MAX], runs[PATH_MAX], flows[PATH_MAX];
	struct dirent *e;
	int lock, fd;
	__u64 key;
	DIR *d;

	if (util_fmt(base, sizeof(base), "%s/sluice", LOADER_BPFFS))
		return;
	d = opendir(base);
	if (!d)
		return;
	lock = clsact_lock();
	if (lock < 0) {
		fprintf(stderr, "sluice: lock %s to collect the namespaces' runs: %s; none "
				"collected\n", base, strerror(errno));
		closedir(d);
		return;
	}
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "netns@", 6) ||
		    util_fmt(dir, sizeof(dir), "%s/%s", base, e->d_name) ||
		    util_fmt(runs, sizeof(runs), "%s/%s", dir, ns_shapes[NS_RUNS].name) ||
		    util_fmt(flows, sizeof(flows), "%s/%s", dir, ns_shapes[NS_FLOWS].name))
			continue;
		/*
		 * (ns_map_get's shape check: a runs map another build pinned, its keys of another
		 * size, is not read into this build's; its namespace is left to that build)
		 */
		fd = ns_map_get(dir, &ns_shapes[NS_RUNS], false);
		if (fd < 0) {
			if (fd == -EPROTO)
				fprintf(stderr, "sluice: %s: a runs map of another build's shape: "
						"not collected\n", dir);
			continue;
		}
		ns_collect(dir, fd, 0);
		/* no run left there (nor one on its way: its slot would be pinned) */
		if (bpf_map_get_next_key(fd, NULL, &key) && errno == ENOENT && !ns_has_slots(dir)) {
			unlink(flows);
			unlink(runs);
			rmdir(dir);
		}
		close(fd);
	}
	clsact_unlock(lock);
	closedir(d);
}

/*
 * Whether the namespace's runs attribute their frames to each other: with two runs or more the
 * flows map (made here if need be) goes into every run's flows slot; with one run or none, its
 * slot is emptied and the map's pin removed (the slots that still hold it free it once they
 * go). Under clsact_lock, after each change to the runs map, before the host side of a run that
 * joins is attached (joining: that run counts, but its token and slot are not in yet, see
 * ns_join) and after that of a run that leaves is detached. A run whose slot has no pin (a run
 * of a build that kept the flows map always, which its slot holds) keeps the pin.
 */
static int ns_sync(const char *dir, int runs_fd, bool joining)
{
	__u64 tokens[SL_NS_RUNS_MAX];
	int n = ns_tokens(runs_fd, tokens), flows = -1, slots[SL_NS_RUNS_MAX], err = 0, i;
	bool unpinned_slot = false;
	char path[PATH_MAX], why[512] = "";
	__u32 zero = 0, flows_id = 0;

	/*
	 * Every slot opened and checked before anything is changed: one of another build refuses
	 * the sync with the slots as they were, never some holding the flows map and some not.
	 * Another run's slot, maybe another build's, is read (slot_holds) only once of this build's
	 * kind; else refused, as the update would be (the kernel's template check).
	 */
	for (i = 0; i < n; i++)
		slots[i] = -1;
	for (i = 0; !err && i < n; i++) {
		if (util_fmt(path, sizeof(path), NS_SLOT_FMT, dir,
			     (unsigned long long)tokens[i])) {
			err = -ENAMETOOLONG;
			break;
		}
		slots[i] = bpf_obj_get(path);
		if (slots[i] < 0) {
			unpinned_slot = true;
			continue;
		}
		err = loader_map_check(slots[i], "sl_ns_flows", why, sizeof(why));
		if (err)
			fprintf(stderr, "sluice: %s: %s\n", path, util_why(why, err));
	}
	if (!err && n + joining >= 2) {
		flows = ns_map_get(dir, &ns_shapes[NS_FLOWS], true);
		err = flows < 0 ? flows : map_id_of(flows, &flows_id);
	}
	for (i = 0; !err && i < n; i++) {
		if (slots[i] < 0)
			continue;
		if (flows >= 0) {
			/* (a slot that holds it already: the update would only wait, see ns_runs_slot) */
			if (!slot_holds(slots[i], flows_id) &&
			    bpf_map_update_elem(slots[i], &zero, &flows, BPF_ANY))
				err = -errno;
		} else if (bpf_map_delete_elem(slots[i], &zero) && errno != ENOENT) {
			err = -errno; /* (ENOENT: the slot was empty) */
		}
	}
	for (i = 0; i < n; i++)
		if (slots[i] >= 0)
			close(slots[i]);
	if (flows >= 0)
		close(flows);
	else if (!err && !unpinned_slot && !util_fmt(path, sizeof(path), "%s/flows", dir))
		unlink(path);
	return err;
}

/*
 * The run leaves its namespace: its frames, if any were still to come, would be judged by every
 * run's host side. The last run out removes the pins; the last but one takes the flows away
 * from the one that stays (ns_sync). lock: clsact_lock() is held already (-2: take it here).
 */
static void ns_leave(struct loader *l, int lock)
{
	char runs[PATH_MAX], flows[PATH_MAX], slot[PATH_MAX];
	bool empty = false;
	__u64 key;
	int fd;

	if (!l->ns_dir[0])
		return;
	if (!util_fmt(runs, sizeof(runs), "%s/runs", l->ns_dir) &&
	    !util_fmt(flows, sizeof(flows), "%s/flows", l->ns_dir) &&
	    !util_fmt(slot, sizeof(slot), NS_SLOT_FMT, l->ns_dir,
		      (unsigned long long)l->ns_token)) {
		bool taken = lock == -2;
		__u32 zero = 0;

		if (taken)
			lock = clsact_lock();
		if (lock < 0) {
			/*
			 * Unlocked, a run joining now could be left out of the sync, and the pins
			 * stay; the token goes all the same: without it the other runs judge this
			 * run's frames again, which only fails closed, whereas a token left behind
			 * would have them pass the 5-tuples its cgroup recorded, judged by no one.
			 */
			int lock_errno = errno;

			fd = ns_map_get(l->ns_dir, &ns_shapes[NS_RUNS], false);
			if (fd >= 0) {
				bpf_map_delete_elem(fd, &l->ns_token);
				close(fd);
			}
			fprintf(stderr, "sluice: lock %s/sluice to leave the namespace's maps: %s; %s\n",
				LOADER_BPFFS, strerror(lock_errno),
				fd >= 0 ? "only the run's token removed"
				: fd == -EPROTO ? "nothing removed: the runs map is another build's"
						: "nothing removed");
			goto out;
		}
		/*
		 * The token goes first, then the sync, then the run's own slot: killed in between, a
		 * slot pin without a token is only left over, whereas a token without its slot pin
		 * would keep the flows pin for good (ns_sync keeps it for a slot it cannot see).
		 */
		/*
		 * A runs pin of another shape (another build's) is neither changed nor removed: its
		 * keys are not tokens of this build's size.
		 */
		fd = ns_map_get(l->ns_dir, &ns_shapes[NS_RUNS], false);
		if (fd >= 0) {
			bpf_map_delete_elem(fd, &l->ns_token);
			ns_collect(l->ns_dir, fd, l->ns_token);
			empty = bpf_map_get_next_key(fd, NULL, &key) && errno == ENOENT;
			/* best effort: a run left holding the flows records into a map no one reads */
			if (!empty)
				ns_sync(l->ns_dir, fd, false);
			close(fd);
		} else {
			empty = fd == -ENOENT;
			if (!empty)
				fprintf(stderr, "sluice: leave the namespace's runs map %s: %s; the run's "
						"own slot pin removed, the rest left as they are\n", runs,
					fd == -EPROTO ? "another build's (its shape differs)"
						      : strerror(-fd));
		}
		fd = bpf_obj_get(slot);
		if (fd >= 0) {
			bpf_map_delete_elem(fd, &zero); /* (ENOENT: it was empty) */
			close(fd);
		}
		unlink(slot);
		if (empty) {
			unlink(flows);
			unlink(runs);
			rmdir(l->ns_dir);
		}
		if (taken)
			clsact_unlock(lock);
	}
out:
	l->ns_dir[0] = '\0';
	l->ns_token = 0;
}

/*
 * The run comes to its namespace (a set loaded for it, or a spare it takes): the namespace's
 * runs map, pinned by the first run there (a spare's own, in its slot already: ns_runs_prefill),
 * goes into the set's slot, the set's flows slot is pinned for the runs to come, and the other
 * runs get the flows if the run will not be alone (ns_sync): they record what they send before
 * the run's host side judges it. Before the configuration (its ns_token) is written and before
 * any link exists: a program never sees a token without the maps. The run's token and its own
 * flows come later (ns_join), once its host side is attached. Under clsact_lock, which ns_leave
 * takes to remove them.
 */
static int ns_bind(struct loader *l)
{
	int runs = -1, lock, err = 0;
	char slot[PATH_MAX];

	lock = clsact_lock();
	if (lock < 0)
		return -errno;
	runs = ns_map_get(l->ns_dir, &ns_shapes[NS_RUNS], l->ns_runs_own < 0);
	/* the namespace's first run, from a spare: the spare's own runs map is the namespace's */
	if (runs == -ENOENT && l->ns_runs_own >= 0) {
		runs = ns_map_pin(l->ns_dir, &ns_shapes[NS_RUNS], l->ns_runs_own);
		if (!runs) {
			runs = l->ns_runs_own;
			l->ns_runs_own = -1;
		}
	}
	if (runs < 0)
		err = runs;
	else
		err = ns_runs_slot(l, bpf_map__fd(l->skb->maps.sl_ns_runs), runs);
	if (!err && util_fmt(slot, sizeof(slot), NS_SLOT_FMT, l->ns_dir,
			     (unsigned long long)l->ns_token))
		err = -ENAMETOOLONG;
	if (!err && bpf_obj_pin(bpf_map__fd(l->skb->maps.sl_ns_flows), slot))
		err = -errno;
	if (!err)
		err = ns_sync(l->ns_dir, runs, true);
	if (runs >= 0)
		close(runs);
	if (l->ns_runs_own >= 0) /* out of the slot now: the namespace's is there */
		close(l->ns_runs_own);
	l->ns_runs_own = -1;
	if (err)
		ns_leave(l, lock);
	clsact_unlock(lock);
	return err;
}

/*
 * The run is alive in its namespace, its host side attached: its token goes into the runs map
 * (from now on the other runs' host sides leave the frames its cgroup records to it) and the
 * flows into its own slot (ns_sync). Not before: a run killed before its host side exists must
 * not have its frames passed by the others unjudged, so until here its packet layer records
 * nothing (its slot is empty) and its token is no one's. The runs map goes into the set's slot
 * (runs_slot: the host side's sl_ns_runs) again: the last run out may have removed the pin that
 * ns_bind found. The tokens of runs that are gone are collected first (ns_collect). again: a
 * take-over finishing the join, which its dead writer may have done (its token in the map
 * already: joined); a new run's token found there is refused (-EEXIST).
 */
static int ns_join(struct loader *l, int runs_slot, bool again)
{
	int runs, lock, err;
	__u8 one = 1;

	lock = clsact_lock();
	if (lock < 0)
		return -errno;
	runs = ns_map_get(l->ns_dir, &ns_shapes[NS_RUNS], true);
	if (runs < 0) {
		clsact_unlock(lock);
		return runs;
	}
	ns_collect(l->ns_dir, runs, l->ns_token);
	err = ns_runs_slot(l, runs_slot, runs);
	if (err)
		goto out;
	if (bpf_map_update_elem(runs, &l->ns_token, &one, BPF_NOEXIST) &&
	    (errno != EEXIST || !again))
		err = errno == E2BIG ? -EUSERS : -errno;
	else if ((err = ns_sync(l->ns_dir, runs, false)))
		bpf_map_delete_elem(runs, &l->ns_token);
out:
	close(runs);
	clsact_unlock(lock);
	return err;
}

/*
 * A run adopted with no host side (NS_MARK_NOHOST) never counts in its namespace: its token is
 * taken out of the runs map should it be there (a mark or token not the loader's doing), under
 * the lock. -errno if that cannot be made sure of.
 */
static int ns_stay_out(struct loader *l)
{
	int runs, lock, err = 0;

	lock = clsact_lock();
	if (lock < 0)
		return -errno;
	runs = ns_map_get(l->ns_dir, &ns_shapes[NS_RUNS], false);
	if (runs < 0) {
		err = runs == -ENOENT ? 0 : runs;
	} else {
		if (bpf_map_delete_elem(runs, &l->ns_token) && errno != ENOENT)
			err = -errno;
		close(runs);
	}
	clsact_unlock(lock);
	return err;
}

/*
 * Pin a join mark (NS_MARK_*) of the run: its event ring under another name (the one map every
 * program set of the run shares: a switch replaces the configuration and policy maps).
 */
static int ns_mark(const struct loader *l, const char *name)
{
	char path[PATH_MAX];

	if (util_fmt(path, sizeof(path), "%s/%s", l->pin_dir, name))
		return -ENAMETOOLONG;
	return bpf_obj_pin(bpf_map__fd(map_of(l, MAP_EVENTS)), path) ? -errno : 0;
}

/* A join mark of the run: 1 pinned (the run's own event ring), 0 absent, -EPROTO another. */
static int ns_marked(const struct loader *l, const char *name)
{
	struct bpf_map_info mine = {}, mark = {};
	__u32 len = sizeof(mine);
	char path[PATH_MAX];
	int fd, err = 0;

	if (util_fmt(path, sizeof(path), "%s/%s", l->pin_dir, name))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(path);
	if (fd < 0) /* there but no map: not a mark the loader pinned */
		return errno == ENOENT ? 0 : -EPROTO;
	if (bpf_map_get_info_by_fd(bpf_map__fd(map_of(l, MAP_EVENTS)), &mine, &len))
		err = -errno;
	len = sizeof(mark);
	if (!err && (bpf_map_get_info_by_fd(fd, &mark, &len) || mark.id != mine.id))
		err = -EPROTO;
	close(fd);
	return err ? err : 1;
}

/* An empty loader, before any object is opened: every descriptor -1 (none). */
static struct loader *loader_alloc(void)
{
	struct loader *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	pthread_mutex_init(&l->learn_lock, NULL);
	l->pin_lock = -1;
	l->era_fd = -1;
	l->ns_runs_own = -1;
	l->ncpus = libbpf_num_possible_cpus();
	if (l->ncpus <= 0) {
		errno = l->ncpus ? -l->ncpus : EINVAL;
		pthread_mutex_destroy(&l->learn_lock);
		free(l);
		return NULL;
	}
	return l;
}

static struct loader *loader_new(bool verbose)
{
	libbpf_verbose = verbose;
	libbpf_set_print(libbpf_print);
	return loader_alloc();
}

/*
 * An empty loader of the run pinned as run_id, holding its pin directory's lock (flock, until
 * loader_destroy): the run's loader, or another take-over or purge, is not alive. NULL with
 * errno: EBUSY, it is (two writers must never share a log); ENOENT, nothing pinned as run_id.
 */
static struct loader *loader_of_pins(const char *run_id)
{
	struct loader *l = loader_alloc();
	int err = 0;

	if (!l)
		return NULL;
	if (util_fmt(l->pin_dir, sizeof(l->pin_dir), "%s/sluice/%s", LOADER_BPFFS, run_id))
		err = -ENAMETOOLONG;
	else if ((l->pin_lock = open(l->pin_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		err = -errno;
	else if (flock(l->pin_lock, LOCK_EX | LOCK_NB))
		err = errno == EWOULDBLOCK ? -EBUSY : -errno;
	if (err) {
		l->pin_dir[0] = '\0';
		loader_destroy(l);
		errno = -err;
		return NULL;
	}
	return l;
}

/*
 * Selftests only (test_switch_sni.sh), SLUICE_SELFTEST_MAP_WIDER=NAME: the set's map NAME is
 * made 8 bytes wider in value than this build's programs declare it, as a build that lays it
 * out otherwise would have it, so that a switch of the run by this build must refuse it
 * (run_map_entry). Its programs are verified against the wider map (each reads and writes the
 * part it knows of); libbpf makes it without the BTF, which describes the narrower value.
 * Only a map the programs alone touch: one this process reads or writes (sl_rule_budget,
 * sl_host_bytes, the pinned ones...) would have its own userspace copy past its variables, and
 * an internal map is the programs' global data, laid out by their code. "" is unset.
 */
static const char *const selftest_widenable[] = {
	"sl_flow_scratch", /* the packet layer's per-CPU scratch (the only one tried) */
};

static int selftest_map_wider(struct loader *l)
{
	static bool said;
	const char *name = getenv("SLUICE_SELFTEST_MAP_WIDER");
	struct bpf_object *objs[] = { l->skel->obj, l->skb->obj, l->surface->obj, l->tc->obj };
	struct bpf_map *map = NULL;
	bool widenable = false;
	size_t i;

	if (!name || !*name)
		return 0;
	for (i = 0; !map && i < sizeof(objs) / sizeof(objs[0]); i++)
		map = bpf_object__find_map_by_name(objs[i], name);
	for (i = 0; i < sizeof(selftest_widenable) / sizeof(selftest_widenable[0]); i++)
		widenable |= !strcmp(name, selftest_widenable[i]);
	if (!map) {
		fprintf(stderr, "sluice: SLUICE_SELFTEST_MAP_WIDER=%s: this build has no map of "
				"that name\n", name);
		return -EINVAL;
	}
	if (bpf_map__is_internal(map) || !widenable) {
		fprintf(stderr, "sluice: SLUICE_SELFTEST_MAP_WIDER=%s: %s: only a map the programs "
				"alone touch is widened (",
			name, bpf_map__is_internal(map) ? "an internal map (the programs' global data)" :
			"not one the programs alone touch (sluice's userspace reads or writes it, or "
			"may)");
		for (i = 0; i < sizeof(selftest_widenable) / sizeof(selftest_widenable[0]); i++)
			fprintf(stderr, "%s%s", i ? ", " : "", selftest_widenable[i]);
		fprintf(stderr, ")\n");
		return -EINVAL;
	}
	if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
		fprintf(stderr, "sluice: SLUICE_SELFTEST_MAP_WIDER is set: map %s is loaded 8 bytes "
				"wider in value than this build's programs declare it\n", name);
	return bpf_map__set_value_size(map, bpf_map__value_size(map) + 8);
}

/*
 * Open every layer, size the maps for caps and load (verify) the programs: the slow part of a
 * start, and nothing in it is a run's. The namespace's maps (ns_bind), the run's configuration
 * and policy come after (configure), the links after that (loader_attach).
 */
static int load_objects(struct loader *l, const struct loader_caps *caps)
{
	int err;

	if (access("/sys/kernel/btf/vmlinux", R_OK))
		return -ENOENT;
	l->caps = *caps;
	l->skel = sl_sock_addr__open();
	l->skb = l->skel ? sl_skb__open() : NULL;
	l->surface = l->skb ? sl_surface__open() : NULL;
	l->tc = l->surface ? sl_tc__open() : NULL;
	if (!l->tc)
		return -errno;
	/* (optional, as its load: load_lsm_layer) */
	l->lsm = sl_lsm__open();
	if (!l->lsm && util_fmt(l->lsm_why, sizeof(l->lsm_why), "BPF LSM programs: open failed: %s",
				strerror(-open_err())))
		l->lsm_why[0] = '\0';
	err = build_maps_note((struct bpf_object *const[BUILD_OBJS]){
		[BUILD_SOCK_ADDR] = l->skel->obj, [BUILD_SKB] = l->skb->obj,
		[BUILD_SURFACE] = l->surface->obj, [BUILD_TC] = l->tc->obj,
		[BUILD_LSM] = l->lsm ? l->lsm->obj : NULL });
	if (!err)
		err = cfg_map_prepare(l->skel->maps.data_cfg);
	/* An LPM trie must have max_entries >= 1, even for a policy with no CIDR rules. */
	if (!err)
		err = bpf_map__set_max_entries(l->skel->maps.sl_dst4, caps->v4 ? caps->v4 : 1);
	if (!err)
		err = bpf_map__set_max_entries(l->skel->maps.sl_dst6, caps->v6 ? caps->v6 : 1);
	if (!err)
		err = bpf_map__set_max_entries(l->skel->maps.sl_events, caps->ringbuf_bytes);
	if (!err)
		err = bpf_map__set_max_entries(l->skel->maps.sl_rule_ports, caps->rules);
	if (!err)
		err = bpf_map__set_max_entries(l->skel->maps.sl_rule_caps, caps->rules);
	if (!err)
		err = bpf_map__set_max_entries(l->skel->maps.sl_rule_budget, caps->rules);
	if (!err)
		err = bpf_map__set_max_entries(l->skel->maps.sl_learned4,
					       caps->learned_max ? caps->learned_max : 1);
	if (!err)
		err = bpf_map__set_max_entries(l->skel->maps.sl_learned6,
					       caps->learned_max ? caps->learned_max : 1);
	/* (address, name) pairs: an address may serve several names */
	if (!err)
		err = bpf_map__set_max_entries(l->skel->maps.sl_sni_ok,
					       caps->learned_max ? 2 * caps->learned_max : 1);
	if (!err && !caps->host_totals)
		err = bpf_map__set_max_entries(l->skel->maps.sl_host_bytes, 1);
	if (!err)
		err = selftest_map_wider(l);
	if (!err)
		err = sl_sock_addr__load(l->skel);
	if (!err)
		err = load_packet_layer(l);
	if (!err)
		err = load_surface_layer(l);
	if (!err)
		err = load_tc_layer(l);
	if (!err) {
		load_lsm_layer(l);
		load_destroyer(l);
	}
	return err;
}

/*
 * The run's configuration (struct sl_cfg, one map every layer shares) and its policy, into a
 * loaded set no link runs yet: what the programs will judge with from their first instruction.
 * Once per set: a set that served a run is never configured for another.
 */
static int configure(struct loader *l, const struct policy *p, const struct policy_compiled *c,
		     const struct loader_opts *opts)
{
	int err;

	if (l->configured)
		return -EBUSY;
	l->configured = true;
	l->cfg = (struct sl_cfg){
		.version = SL_CFG_VERSION,
		.wakeup_bytes = opts->wakeup_bytes,
		.deny_errno = p->deny_errno,
		.dns_port = opts->dns_port,
		.mode = (__u8)p->mode,
		.default_allow = p->default_verdict == POLICY_DEFAULT_ALLOW,
		.strict = opts->strict_evidence,
		.sockets = (__u8)p->sockets,
		.backstop = !opts->no_backstop,
		.era = 1,
		.ns_token = l->ns_token,
		.run = opts->run_cfg,
	};
	l->no_backstop = opts->no_backstop;
	l->tc_clsact = opts->tc_clsact;
	err = cfg_write(l->skel->maps.data_cfg, &l->cfg);
	return err ? err : fill_policy_maps(l, c, NULL);
}

static void loader_free_objects(struct loader *l)
{
	if (l->ns_runs_own >= 0)
		close(l->ns_runs_own);
	sl_destroy__destroy(l->destroy);
	sl_lsm__destroy(l->lsm);
	sl_tc__destroy(l->tc);
	sl_surface__destroy(l->surface);
	sl_skb__destroy(l->skb);
	sl_sock_addr__destroy(l->skel);
	pthread_mutex_destroy(&l->learn_lock);
	free(l);
}

/*
 * Whether a policy in a mode can learn an address: one of its rules lists a name (the resolver
 * learns the answers for it), or report mode (the resolver answers every name and learns it).
 * Enforcing a policy of CIDRs only, the resolver answers NXDOMAIN to every name and learns none.
 */
static bool policy_learns(const struct policy *p, int mode)
{
	size_t i;

	if (mode == SL_MODE_REPORT)
		return true;
	for (i = 0; i < p->n_rules; i++)
		if (p->rules[i].n_hosts)
			return true;
	return false;
}

/*
 * The sizes a run's maps need: its policy's, its ring buffer and learned-address maps (full, or
 * one entry for a policy that learns nothing: their buckets alone are 4 MiB at full size).
 */
static void caps_of(const struct policy *p, const struct policy_compiled *c,
		    const struct loader_opts *opts, struct loader_caps *caps)
{
	*caps = (struct loader_caps){
		.v4 = (uint32_t)c->n_v4,
		.v6 = (uint32_t)c->n_v6,
		.rules = (uint32_t)c->n_rule_ports,
		.ringbuf_bytes = opts->ringbuf_bytes,
		.learned_max = policy_learns(p, p->mode) ? opts->learned_max : 1,
		.host_totals = policy_has_totals(c),
	};
}

struct loader *loader_load(const struct policy *p, const struct policy_compiled *c,
			   const struct loader_opts *opts)
{
	struct loader_caps caps;
	struct loader *l = loader_new(opts->verbose);
	int err;

	if (!l)
		return NULL;
	caps_of(p, c, opts, &caps);
	l->learned_full = opts->learned_max;
	err = load_objects(l, &caps);
	if (!err && opts->ns_share) {
		err = ns_share_init(l, &opts->run_cfg);
		if (!err)
			err = ns_bind(l);
	}
	if (!err)
		err = configure(l, p, c, opts);
	if (err) {
		ns_leave(l, -2);
		loader_free_objects(l);
		/* a libbpf call may fail without an errno: never report success as the reason */
		errno = err < 0 ? -err : EINVAL;
		return NULL;
	}
	return l;
}

struct loader *loader_load_spare(const struct loader_caps *caps, bool verbose)
{
	struct loader *l = loader_new(verbose);
	bool old;
	int err;

	if (!l)
		return NULL;
	/* the caller says why a spare failed (once): libbpf's own words only with -v */
	old = libbpf_hush();
	err = load_objects(l, caps);
	libbpf_unhush(old);
	if (!err)
		err = ns_runs_prefill(l);
	if (err) {
		loader_free_objects(l);
		errno = err < 0 ? -err : EINVAL;
		return NULL;
	}
	return l;
}

bool loader_fits(const struct loader *l, const struct policy *p, const struct policy_compiled *c,
		 const struct loader_opts *opts)
{
	struct loader_caps want;

	caps_of(p, c, opts, &want);
	/*
	 * The ring buffer and learned-address maps as the run would have had them (a larger map
	 * would change when the run sees E2BIG; a policy that learns nothing never sees it); the
	 * policy's may be larger than it needs. A run with a host side gets its namespace's maps
	 * at take (ns_bind).
	 */
	return !l->configured && want.v4 <= l->caps.v4 &&
	       want.v6 <= l->caps.v6 && want.rules <= l->caps.rules &&
	       want.ringbuf_bytes == l->caps.ringbuf_bytes &&
	       (want.learned_max == l->caps.learned_max || want.learned_max == 1) &&
	       (!want.host_totals || l->caps.host_totals);
}

int loader_take(struct loader *l, const struct policy *p, const struct policy_compiled *c,
		const struct loader_opts *opts)
{
	int err;

	if (!loader_fits(l, p, c, opts))
		return -E2BIG;
	l->learned_full = opts->learned_max;
	if (!opts->ns_share && l->ns_runs_own >= 0) { /* (its slot keeps it, unread) */
		close(l->ns_runs_own);
		l->ns_runs_own = -1;
	}
	if (opts->ns_share) {
		err = ns_share_init(l, &opts->run_cfg);
		if (!err)
			err = ns_bind(l);
		if (err)
			return err;
	}
	err = configure(l, p, c, opts);
	if (err)
		ns_leave(l, -2); /* the set is never anyone's: nor is its place in the namespace */
	return err;
}

static const char *const lsm_link_names[3] = { "lsm-socket-create", "lsm-connect",
						 "lsm-sendmsg" };

/* the run has a BPF LSM layer: loaded by this loader, or reopened whole (loader_reopen) */
static bool lsm_layer(const struct loader *l)
{
	return l->lsm || l->lsm_links[1];
}

/*
 * One pinned map of a run into the unloaded skeleton's map: the shape must be this build's, or
 * the records and values would be read with another layout.
 */
static int reopen_map(struct loader *l, enum loader_map i)
{
	struct bpf_map *map = map_of(l, i);
	char path[PATH_MAX], why[512] = "";
	int fd, err;

	if (util_fmt(path, sizeof(path), "%s/%s", l->pin_dir, map_pin_names[i]))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	err = loader_map_check(fd, bpf_map__name(map), why, sizeof(why));
	if (why[0])
		fprintf(stderr, "sluice: %s: %s\n", path, why);
	if (!err)
		err = bpf_map__reuse_fd(map, fd);
	close(fd);
	return err;
}

/* A pin of a dead writer's clsact filter (struct clsact_pin), and its program's id. */
static int reopen_clsact_pin(struct loader *l, const char *name)
{
	struct clsact_pin *p = &l->clsact_pins[l->n_clsact_pins];
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	char path[PATH_MAX], *end;
	int fd, err = 0;

	if (l->n_clsact_pins >= NETDEV_PEERS_MAX)
		return -E2BIG;
	strtol(name + strlen(TC_CLSACT_PIN), &end, 10);
	if (end == name + strlen(TC_CLSACT_PIN) || *end != '-')
		return -EPROTO;
	p->ifindex = (int)strtol(end + 1, &end, 10);
	if (*end != '-')
		return -EPROTO;
	p->handle = (__u32)strtoul(end + 1, &end, 10);
	p->qdisc = !strcmp(end, "-qdisc");
	if (p->ifindex <= 0 || p->handle < TC_HANDLE || p->handle >= TC_HANDLE + TC_HANDLES ||
	    (*end && !p->qdisc) || util_copy(p->name, sizeof(p->name), name) ||
	    util_fmt(path, sizeof(path), "%s/%s", l->pin_dir, name))
		return -EPROTO;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	if (bpf_prog_get_info_by_fd(fd, &info, &len))
		err = -errno;
	else if (info.type != BPF_PROG_TYPE_SCHED_CLS)
		err = -EPROTO;
	close(fd);
	if (err)
		return err;
	p->prog_id = info.id;
	l->n_clsact_pins++;
	return 0;
}

static int reopen_clsact_pins(struct loader *l)
{
	DIR *d = opendir(l->pin_dir);
	struct dirent *e;
	int err = 0;

	if (!d)
		return -errno;
	while (!err && (e = readdir(d)))
		if (!strncmp(e->d_name, TC_CLSACT_PIN, strlen(TC_CLSACT_PIN)))
			err = reopen_clsact_pin(l, e->d_name);
	closedir(d);
	return err;
}

/*
 * The highest generation ever handed out to a set of the run (era_high), pinned beside the
 * run's maps as "era-high" (an array of one __u32 no program reads): a writer that takes the run
 * over goes on from it exactly, so that no generation is handed out twice, not even a failed
 * commit's, whose programs may have stamped flows before its links moved back.
 */
#define ERA_PIN "era-high"

static int era_store(struct loader *l, __u32 era)
{
	__u32 zero = 0;

	if (l->era_fd < 0)
		return 0; /* not pinned (a run never attached): no writer can take it over */
	return bpf_map_update_elem(l->era_fd, &zero, &era, BPF_ANY) ? -errno : 0;
}

/* The pin at path (fd) is of era_pin's shape: 0, or -EPROTO, said on stderr. */
static int era_pin_check(int fd, const char *path)
{
	const struct map_shape want = { .map = { BPF_MAP_TYPE_ARRAY, sizeof(__u32), sizeof(__u32),
						 0 } };
	struct map_shape run;
	char why[512];
	int err = shape_of_fd(fd, &run);

	if (!err)
		err = map_shape_check("sl_era_high", &run, &want, why, sizeof(why));
	if (err == -EPROTO)
		fprintf(stderr, "sluice: %s: %s\n", path, why);
	return err;
}

/* Make era_high's pin, holding high. */
static int era_pin(struct loader *l, __u32 high)
{
	char path[PATH_MAX];
	int fd, err;

	if (util_fmt(path, sizeof(path), "%s/%s", l->pin_dir, ERA_PIN))
		return -ENAMETOOLONG;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "sl_era_high", sizeof(__u32), sizeof(__u32), 1,
			    NULL);
	if (fd < 0)
		return -errno;
	l->era_fd = fd;
	err = era_store(l, high);
	if (!err && bpf_obj_pin(fd, path))
		err = -errno;
	if (err) {
		close(fd);
		l->era_fd = -1;
	}
	return err;
}

/*
 * A taken-over run's era_high: the pinned one. A run pinned without it (an older sluice's) gets
 * a gap above the generation in force, past whatever its writer may have loaded, and the pin.
 */
static int era_reopen(struct loader *l)
{
	char path[PATH_MAX];
	__u32 zero = 0, high;
	int fd, err;

	if (util_fmt(path, sizeof(path), "%s/%s", l->pin_dir, ERA_PIN))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(path);
	if (fd < 0 && errno == ENOENT) {
		/* (no further than the last generation: past it, the next switch is refused) */
		l->era_high = l->cfg.era > UINT32_MAX - LOADER_ERA_RESUME_GAP ?
				      UINT32_MAX :
				      l->cfg.era + LOADER_ERA_RESUME_GAP;
		return era_pin(l, l->era_high);
	}
	if (fd < 0)
		return -errno;
	/* a pin of another shape (another build's) would be copied past high */
	err = era_pin_check(fd, path);
	if (!err && bpf_map_lookup_elem(fd, &zero, &high))
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	l->era_fd = fd;
	l->era_high = high > l->cfg.era ? high : l->cfg.era;
	return 0;
}

static int reopen_settle_pins(struct loader *l);
static int reopen_finish_commit(struct loader *l, const struct loader_open_switch *sw);
static void unstage(const struct loader *l);

static int reopen_link(const char *dir, const char *name, struct bpf_link **out)
{
	char path[PATH_MAX];
	bool hushed;
	int err;

	if (util_fmt(path, sizeof(path), "%s/%s", dir, name))
		return -ENAMETOOLONG;
	/*
	 * Opened once (bpf_obj_get inside), -ENOENT meaning absent: optional pins (tc-N, lsm-*)
	 * are not looked for first (a pin removed in between would turn absent into an error).
	 * libbpf would warn about each absent one: hushed, any other failure said here.
	 */
	hushed = libbpf_hush();
	*out = bpf_link__open(path);
	err = *out ? 0 : -errno;
	libbpf_unhush(hushed);
	if (err && err != -ENOENT)
		fprintf(stderr, "sluice: open the link pinned at %s: %s\n", path, strerror(-err));
	return err;
}

static int run_maps_add(struct loader *l, int prog_fd);
static int run_map(const struct loader *l, const char *name, char *err, size_t err_len);
static int collect_run_programs(struct loader *l);

/*
 * The run's place in its namespace, taken over (its token and ns_dir set), by its join marks
 * (NS_MARK_*) and its host side:
 * - no host side and NS_MARK_NOHOST: attached where there was no veth peer, never joined;
 *   adopted, its token made sure to be out of the runs map (ns_stay_out);
 * - no host side otherwise: killed between its cgroup links and its host side: -ENOLINK. Taken
 *   over, it would run on without the check it was started with: refused, its cgroup links go
 *   on enforcing and the other runs judge its frames;
 * - a host side and NS_MARK_PENDING: killed before its join, which is finished here (else its
 *   host side, with its flows slot empty, drops every frame of the other runs);
 * - a host side and no mark: joined (or left, inside loader_detach), as it is.
 * A mark that is not the run's own, or that contradicts its links, is -ENOLINK: a stale or
 * forged mark never has a run adopted as something it is not.
 */
enum reopen_ns_do { NS_AS_IS, NS_STAY_OUT, NS_FINISH_JOIN };

/* Which of those the run is (before anything of it is touched); -ENOLINK: refused. */
static int reopen_ns_check(const struct loader *l)
{
	bool host = l->n_tc || l->n_clsact_pins;
	int nohost = ns_marked(l, NS_MARK_NOHOST), pending = ns_marked(l, NS_MARK_PENDING);

	if (nohost < 0 || pending < 0 || (nohost && pending) || (host && nohost) ||
	    (!host && !nohost))
		return -ENOLINK;
	return nohost ? NS_STAY_OUT : pending ? NS_FINISH_JOIN : NS_AS_IS;
}

/* What reopen_ns_check said, done once the run's programs are collected. */
static int reopen_ns(struct loader *l, int what)
{
	char why[512] = "";
	int slot, err;

	if (what == NS_STAY_OUT)
		return ns_stay_out(l);
	if (what != NS_FINISH_JOIN)
		return 0;
	/*
	 * the host side's sl_ns_runs: a tcx link's program is collected (reopen_settle_pins did,
	 * this finds it done), a clsact filter's not
	 */
	err = collect_run_programs(l);
	slot = err ? err : run_map(l, "sl_ns_runs", why, sizeof(why));
	if (slot == -ENOENT && !err && l->n_clsact_pins) {
		char path[PATH_MAX];
		int fd;

		if (util_fmt(path, sizeof(path), "%s/%s", l->pin_dir, l->clsact_pins[0].name))
			err = -ENAMETOOLONG;
		else if ((fd = bpf_obj_get(path)) < 0)
			err = -errno;
		else {
			err = run_maps_add(l, fd);
			close(fd);
		}
		slot = err ? err : run_map(l, "sl_ns_runs", why, sizeof(why));
	}
	if (why[0])
		fprintf(stderr, "sluice: %s: finish its join of its namespace's runs: %s\n",
			l->pin_dir, why);
	err = slot < 0 ? slot : ns_join(l, slot, true);
	if (err)
		return err;
	fprintf(stderr, "sluice: %s: its writer died before the run joined its namespace's runs: "
			"joined now\n", l->pin_dir);
	unpin_name(l, NS_MARK_PENDING);
	return 0;
}

struct loader *loader_reopen(const char *run_id, const struct loader_open_switch *sw,
			     bool verbose)
{
	char name[16], path[PATH_MAX];
	struct loader *l;
	__u32 zero = 0;
	int i, err, ns_do = NS_AS_IS;

	libbpf_verbose = verbose;
	libbpf_set_print(libbpf_print);
	l = loader_of_pins(run_id);
	if (!l)
		return NULL;
	l->skel = sl_sock_addr__open();
	err = l->skel ? 0 : -errno;
	/* (before its maps take the pins' shapes; the other objects' are opened for the first check) */
	if (!err)
		err = build_maps_note((struct bpf_object *const[BUILD_OBJS]){
			[BUILD_SOCK_ADDR] = l->skel->obj });
	for (i = 0; !err && i < MAP_MAX; i++)
		err = reopen_map(l, i);
	/* a run of a build that kept its configuration in .rodata ("map-rodata"): another layout */
	if (err == -ENOENT && i - 1 == MAP_CFG && !util_fmt(path, sizeof(path), "%s/map-rodata",
							     l->pin_dir) && !access(path, F_OK))
		err = -EPROTO;
	l->maps_pinned = !err;
	/* the configuration the programs run with: what the resumed writer must match */
	if (!err && bpf_map_lookup_elem(bpf_map__fd(l->skel->maps.data_cfg), &zero, &l->cfg))
		err = -errno;
	if (!err && l->cfg.version != SL_CFG_VERSION)
		err = -EPROTO;
	for (i = 0; !err && i < PROG_MAX; i++)
		err = reopen_link(l->pin_dir, prog_names[i], &l->links[i]);
	/* the host side's tcx links and the LSM layer's, where the run had them */
	for (i = 0; !err && i < NETDEV_PEERS_MAX; i++) {
		int e;

		err = util_fmt(name, sizeof(name), "tc-%d", i);
		/*
		 * absent ends the list; any other failure is the run's: a host-side link it has but
		 * this loader does not know would keep the old policy through a later switch
		 */
		e = err ? 0 : reopen_link(l->pin_dir, name, &l->tc_att[i].link);
		if (e == -ENOENT)
			break;
		if (e || err) {
			err = err ?: e;
			break;
		}
		l->tc_att[i].peer.netns_fd = -1;
		l->n_tc++;
	}
	/*
	 * The LSM layer's three links, each looked for: a run has all of them or none. Some only
	 * (a writer killed between two pins at attach, a commit's rename that failed) is refused:
	 * a switch would leave the ones not known on the old policy, and a detach leave them.
	 */
	for (i = 0; !err && i < 3; i++) {
		int e = reopen_link(l->pin_dir, lsm_link_names[i], &l->lsm_links[i]);

		if (e && e != -ENOENT)
			err = e;
	}
	if (!err && (!l->lsm_links[0] != !l->lsm_links[1] || !l->lsm_links[1] != !l->lsm_links[2])) {
		for (i = 0; i < 3; i++)
			if (!l->lsm_links[i])
				fprintf(stderr, "sluice: %s: the BPF-LSM layer's pin %s is missing where "
						"the others are: not a whole run\n", l->pin_dir,
					lsm_link_names[i]);
		err = -EXDEV;
	}
	if (!err)
		err = reopen_clsact_pins(l);
	/* the namespace's shared maps, which the run joins (or stays out of) and leaves at its end */
	if (!err && cfg_of(l)->ns_token) {
		l->ns_token = cfg_of(l)->ns_token;
		if (ns_dir_set(l, &cfg_of(l)->run))
			err = -ENAMETOOLONG;
		else
			err = ns_do = reopen_ns_check(l);
		if (err > 0)
			err = 0;
	}
	if (!err)
		err = reopen_finish_commit(l, sw);
	if (!err)
		err = reopen_settle_pins(l);
	if (!err)
		err = era_reopen(l);
	if (!err)
		err = reopen_ns(l, ns_do);
	/*
	 * The programs reopen_settle_pins collected (and reopen_ns used): a switch collects them
	 * again, from the links as they are then (a clsact host side's filters are found after
	 * this, loader_refind_host_side).
	 */
	run_programs_release(l);
	if (err) {
		/* not a run of this build (or not a whole run): touch nothing of it */
		l->maps_pinned = false;
		l->pin_dir[0] = '\0';
		l->ns_dir[0] = '\0';
		loader_destroy(l);
		errno = -err;
		return NULL;
	}
	snprintf(l->lsm_why, sizeof(l->lsm_why), "%s",
		 lsm_layer(l) ? "" : "the run has no BPF LSM layer");
	/*
	 * Every hook runs one set now: what a switch's commit staged is no one's to finish with
	 * (its new LSM hooks, attached beside the old ones, go with their pins).
	 */
	unstage(l);
	destroying_clear(l);
	load_destroyer(l);
	return l;
}

static void tc_detach(struct tc_attachment *a);

/* Each clsact pin no filter was found for, named: if the filter is anywhere, it stays there. */
static void say_clsact_unfound(const struct loader *l, const char *where)
{
	int i;

	for (i = 0; i < l->n_clsact_pins; i++)
		if (!l->clsact_pins[i].found)
			fprintf(stderr, "sluice: %s: the host-side clsact filter %s is not found on "
					"the run's veths%s: it stays until its veth goes\n", l->pin_dir,
				l->clsact_pins[i].name, where);
}

/*
 * The run's clsact filters (a tcx link goes with its pin), found on its namespace's veth peers
 * as a take-over finds them (loader_refind_host_side: the filter at the pin's handle running the
 * pinned program) and removed, with the qdisc sluice made once it is empty. run: the pinned
 * configuration's (NULL: another build's, its namespace unknown). One not found is said so: it
 * stays until its veth goes.
 */
static void purge_clsact(struct loader *l, const struct sl_run_cfg *run)
{
	int netns = -1, i;

	if (reopen_clsact_pins(l) || !l->n_clsact_pins)
		return;
	if (run)
		netns = netdev_netns_find(run->netns_dev, run->netns_ino);
	if (netns < 0 || loader_refind_host_side(l, netns) < 0)
		/* (what it found before an error is removed too) */
		say_clsact_unfound(l, netns < 0 ? " (its namespace is gone)" : "");
	for (i = 0; i < l->n_tc; i++)
		tc_detach(&l->tc_att[i]);
	if (netns >= 0)
		close(netns);
}

int loader_purge(const char *run_id)
{
	bool token_known, have_cfg = false;
	__u32 zero = 0;
	char path[PATH_MAX];
	struct sl_cfg cfg = {};
	struct dirent *e;
	struct loader *l;
	int fd, err = 0;
	DIR *d;

	l = loader_of_pins(run_id);
	if (!l)
		return -errno;
	/* its token, from its configuration (of this build's layout only) */
	if (!util_fmt(path, sizeof(path), "%s/%s", l->pin_dir, map_pin_names[MAP_CFG]) &&
	    (fd = bpf_obj_get(path)) >= 0) {
		char why[512] = "";
		int ret = loader_map_check(fd, CFG_MAP, why, sizeof(why));

		if (!ret && bpf_map_lookup_elem(fd, &zero, &cfg))
			ret = -errno;
		if (!ret && cfg.version != SL_CFG_VERSION)
			ret = -EPROTO; /* (its layout's size, another layout) */
		have_cfg = !ret;
		if (have_cfg && cfg.ns_token && !ns_dir_set(l, &cfg.run))
			l->ns_token = cfg.ns_token;
		/* only -EPROTO is another build's: any other failure is said as it is */
		else if (ret)
			fprintf(stderr, "sluice: %s: %s%s: its place in a namespace's maps, if any, "
					"is left to the next run there to collect\n", l->pin_dir,
				ret == -EPROTO ? "a configuration of another build" :
				"its configuration is not read: ",
				ret == -EPROTO ? "" : util_why(why, ret));
		close(fd);
	}
	if (!l->ns_token)
		l->ns_dir[0] = '\0';
	token_known = l->ns_token != 0;
	/* the namespace first, while its layers still judge (as loader_detach) */
	ns_leave(l, -2);
	purge_clsact(l, have_cfg ? &cfg.run : NULL);
	d = opendir(l->pin_dir);
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		unpin_name(l, e->d_name);
	}
	if (d)
		closedir(d);
	if (rmdir(l->pin_dir) && errno != ENOENT)
		err = -errno;
	/*
	 * A run killed before its configuration was pinned had a place in a namespace's maps that
	 * its token could not name: its slot, no longer held by its programs, is collected now.
	 */
	if (!token_known)
		loader_ns_collect_all();
	l->pin_dir[0] = '\0';
	loader_destroy(l);
	return err;
}

uint16_t loader_dns_port(const struct loader *l)
{
	return cfg_of(l)->dns_port;
}

bool loader_strict(const struct loader *l)
{
	return cfg_of(l)->strict;
}

int loader_mode(const struct loader *l)
{
	return cfg_of(l)->mode;
}

const struct sl_run_cfg *loader_run_cfg(const struct loader *l)
{
	return &cfg_of(l)->run;
}

int loader_cgroup_id(const struct loader *l, uint64_t *id)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	if (!l->links[PROG_CONNECT4])
		return -ENOENT;
	if (bpf_link_get_info_by_fd(bpf_link__fd(l->links[PROG_CONNECT4]), &info, &len))
		return -errno;
	if (info.type != BPF_LINK_TYPE_CGROUP)
		return -EPROTO;
	*id = info.cgroup.cgroup_id;
	return 0;
}

int loader_host_name(struct loader *l, uint32_t host_id, const char *name)
{
	struct sl_hosts_key key = { .prefixlen = 32, .host_id = host_id };
	struct sl_host_name v = {};

	if (util_copy((char *)v.name, sizeof(v.name), name))
		return -ENAMETOOLONG;
	if (bpf_map_update_elem(bpf_map__fd(l->skel->maps.sl_hosts), &key, &v, BPF_NOEXIST))
		return -errno;
	return 0;
}

int loader_host_names(const struct loader *l,
		      int (*fn)(uint32_t host_id, const char *name, void *ctx), void *ctx)
{
	int fd = bpf_map__fd(l->skel->maps.sl_hosts), err;
	struct sl_hosts_key key, next;
	struct sl_host_name v;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &v))
			continue; /* deleted meanwhile: sluice never deletes, so never */
		v.name[sizeof(v.name) - 1] = '\0';
		err = fn(key.host_id, (const char *)v.name, ctx);
		if (err)
			return err;
	}
	return errno == ENOENT ? 0 : -errno;
}

/* The LSM layer's links, once the configuration names the run's cgroup. */
static void attach_lsm_layer(struct loader *l, int cgroup_fd)
{
	bool old = libbpf_hush();
	__u32 zero = 0, fd = (__u32)cgroup_fd;
	struct bpf_link *links[3] = {};
	int i;

	if (!l->lsm)
		return;
	if (bpf_map_update_elem(bpf_map__fd(l->lsm->maps.sl_run_cgroup), &zero, &fd, BPF_ANY))
		goto fail;
	links[0] = bpf_program__attach_cgroup(l->lsm->progs.sl_lsm_socket_create, cgroup_fd);
	links[1] = bpf_program__attach_lsm(l->lsm->progs.sl_lsm_connect);
	links[2] = bpf_program__attach_lsm(l->lsm->progs.sl_lsm_sendmsg);
	for (i = 0; i < 3; i++)
		if (!links[i])
			goto fail;
	memcpy(l->lsm_links, links, sizeof(links));
	libbpf_unhush(old);
	return;
fail:
	for (i = 0; i < 3; i++)
		bpf_link__destroy(links[i]);
	sl_lsm__destroy(l->lsm);
	l->lsm = NULL;
	if (util_fmt(l->lsm_why, sizeof(l->lsm_why), "BPF LSM programs: attach failed: %s",
		     strerror(errno ? errno : EINVAL)))
		l->lsm_why[0] = '\0';
	libbpf_unhush(old);
}

/*
 * The run has a BPF-LSM layer: loaded by this writer, or found pinned by one that took the run
 * over (its links only: a switch loads a new layer all the same, sharing the old one's maps).
 */
bool loader_lsm_active(const struct loader *l, const char **why)
{
	*why = l->lsm_why;
	return lsm_layer(l);
}

int loader_attach(struct loader *l, int cgroup_fd, uint64_t cgroup_id, int cgroup_level,
		  const char *run_id)
{
	char path[PATH_MAX];
	int i, err;

	err = ensure_bpffs();
	if (err) {
		fprintf(stderr, "sluice: mount bpffs at %s: %s\n", LOADER_BPFFS, strerror(-err));
		return err;
	}
	if (util_fmt(path, sizeof(path), "%s/sluice", LOADER_BPFFS) ||
	    util_fmt(l->pin_dir, sizeof(l->pin_dir), "%s/sluice/%s", LOADER_BPFFS, run_id))
		return -ENAMETOOLONG;
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	if (mkdir(l->pin_dir, 0700)) {
		err = -errno;
		l->pin_dir[0] = '\0';
		fprintf(stderr, "sluice: create pin directory for run %s: %s\n", run_id,
			strerror(-err));
		return err;
	}
	/* held for this process's life: a sluice resume of the run waits for its death */
	l->pin_lock = open(l->pin_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (l->pin_lock < 0 || flock(l->pin_lock, LOCK_EX | LOCK_NB))
		return -errno;

	/* what the LSM layer checks a task against: written before any link of the run exists */
	l->cfg.cgroup_id = cgroup_id;
	l->cfg.cgroup_level = cgroup_level;
	err = cfg_write(l->skel->maps.data_cfg, &l->cfg);
	if (!err)
		err = cfg_freeze(l->skel->maps.data_cfg);
	if (err)
		return err;
	for (i = 0; i < PROG_MAX; i++) {
		/* bpf_link attachment only: it cannot be replaced or detached by legacy attach. */
		l->links[i] = bpf_program__attach_cgroup(prog_of(l, i), cgroup_fd);
		if (!l->links[i]) {
			err = -errno;
			fprintf(stderr, "sluice: attach %s to the run's cgroup: %s\n", prog_names[i],
				strerror(-err));
			return err;
		}
		if (util_fmt(path, sizeof(path), "%s/%s", l->pin_dir, prog_names[i]))
			return -ENAMETOOLONG;
		err = bpf_link__pin(l->links[i], path);
		if (err) {
			fprintf(stderr, "sluice: pin %s at %s: %s\n", prog_names[i], path,
				strerror(-err));
			return err;
		}
	}
	/*
	 * selftests only: a run killed with its cgroup links pinned and not its configuration (a
	 * purge cannot tell its token: loader_ns_collect_all finds its place in the namespace)
	 */
	loader_selftest_kill("before-maps");
	for (i = 0; i < MAP_MAX; i++) {
		if (util_fmt(path, sizeof(path), "%s/%s", l->pin_dir, map_pin_names[i]))
			return -ENAMETOOLONG;
		err = bpf_map__pin(map_of(l, i), path);
		if (err) {
			fprintf(stderr, "sluice: pin %s at %s: %s\n", bpf_map__name(map_of(l, i)),
				path, strerror(-err));
			return err;
		}
		l->maps_pinned = true;
	}
	err = era_pin(l, l->cfg.era > l->era_high ? l->cfg.era : l->era_high);
	if (err) {
		fprintf(stderr, "sluice: pin %s/%s: %s\n", l->pin_dir, ERA_PIN, strerror(-err));
		return err;
	}
	attach_lsm_layer(l, cgroup_fd);
	for (i = 0; l->lsm && i < 3; i++) {
		if (util_fmt(path, sizeof(path), "%s/%s", l->pin_dir, lsm_link_names[i]))
			return -ENAMETOOLONG;
		err = bpf_link__pin(l->lsm_links[i], path);
		if (err) {
			fprintf(stderr, "sluice: pin %s at %s: %s\n", lsm_link_names[i], path,
				strerror(-err));
			return err;
		}
	}
	return 0;
}

struct bpf_object *loader_object(const struct loader *l, const char *layer)
{
	/* (each layer is there once loader_load() has returned) */
	if (!strcmp(layer, "sock_addr") && l->skel)
		return l->skel->obj;
	if (!strcmp(layer, "skb") && l->skb)
		return l->skb->obj;
	if (!strcmp(layer, "tc") && l->tc)
		return l->tc->obj;
	return NULL;
}

int loader_events_fd(const struct loader *l)
{
	return bpf_map__fd(l->skel->maps.sl_events);
}

int loader_lost_counts(const struct loader *l, uint64_t lost[SL_HOOK_MAX])
{
	int fd = bpf_map__fd(l->skel->maps.sl_lost);
	uint64_t *percpu;
	__u32 hook;
	int cpu, err = 0;

	percpu = calloc(l->ncpus, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	for (hook = 0; hook < SL_HOOK_MAX; hook++) {
		lost[hook] = 0;
		if (bpf_map_lookup_elem(fd, &hook, percpu)) {
			err = -errno;
			break;
		}
		for (cpu = 0; cpu < l->ncpus; cpu++)
			lost[hook] += percpu[cpu];
	}
	free(percpu);
	return err;
}

int loader_dns_client(const struct loader *l, uint64_t cookie, struct sl_dns_client *out)
{
	if (bpf_map_lookup_elem(bpf_map__fd(l->skel->maps.sl_dns_clients), &cookie, out))
		return -errno;
	return 0;
}

int loader_log_unwritable(const struct loader *l)
{
	__u32 zero = 0, down = 1;

	if (bpf_map_update_elem(bpf_map__fd(l->skel->maps.sl_log_state), &zero, &down, BPF_ANY))
		return -errno;
	return 0;
}

bool loader_log_down(const struct loader *l)
{
	__u32 zero = 0, down = 0;

	/* a map that cannot be read says nothing either way: the kernel's copy is what refuses */
	if (bpf_map_lookup_elem(bpf_map__fd(l->skel->maps.sl_log_state), &zero, &down))
		return false;
	return down;
}

uint64_t loader_next_seq(const struct loader *l)
{
	__u32 zero = 0;
	__u64 seq = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(l->skel->maps.sl_seq), &zero, &seq))
		return 0;
	return seq;
}

/*
 * rule_ids (an sl_learned entry's, an sl_sni_name's) strictest first, by the caps a set's
 * sl_rule_caps (caps_fd) holds: the programs take the first that allows a flow's port. A rule
 * the map cannot give (it has every rule of its policy) counts as uncapped.
 */
static int rules_strictest_fd(int caps_fd, __u16 rule_ids[SL_LEARNED_RULES])
{
	struct sl_rule_caps caps[SL_LEARNED_RULES] = {};
	__u32 rid;
	int i;

	for (i = 0; i < SL_LEARNED_RULES && rule_ids[i]; i++) {
		rid = rule_ids[i];
		/* past the map's end (ENOENT): a rule without caps */
		if (bpf_map_lookup_elem(caps_fd, &rid, &caps[i]) && errno != ENOENT)
			return -errno;
	}
	policy_rules_strictest(rule_ids, caps);
	return 0;
}

/*
 * The run's sl_rule_caps wherever this loader finds it: a resumed or taken-over run's skeleton
 * is only opened (its maps are the run's pinned ones, and sl_rule_caps is not pinned), so its own
 * map has no fd. Ordering by a map that cannot be read would leave every rule "uncapped" and the
 * order the answers came in: the caller refuses instead.
 */
static int rule_caps_fd(const struct loader *l)
{
	return run_map(l, "sl_rule_caps", NULL, 0);
}

static int rules_strictest(const struct loader *l, __u16 rule_ids[SL_LEARNED_RULES])
{
	int fd;

	/* one rule or none: nothing to order, and no map to find (an answer per address) */
	if (!rule_ids[0] || !rule_ids[1])
		return 0;
	fd = rule_caps_fd(l);
	return fd < 0 ? fd : rules_strictest_fd(fd, rule_ids);
}

/*
 * Merge rule_ids into an address's entry (a CDN address may serve several allowed names), all
 * or none: -EXFULL when they do not all fit in its SL_LEARNED_RULES slots, cur untouched (an
 * answer refused must leave none of its rules behind). An expired entry starts afresh, under
 * host_id (its old rules must not revive). -E2BIG stays the map's own "full".
 */
static int learned_merge(struct sl_learned *cur, const uint16_t *rule_ids, size_t n_rules,
			 uint32_t host_id, uint64_t expires_ns, uint64_t now_ns)
{
	struct sl_learned m = *cur;
	size_t j;
	int i;

	if (m.expires_ns && m.expires_ns < now_ns)
		m = (struct sl_learned){ .host_id = host_id, .expires_ns = expires_ns };
	for (j = 0; j < n_rules; j++) {
		if (rule_ids[j] == SL_RULE_DEFAULT)
			continue; /* under no rule: an empty slot stands for it */
		for (i = 0; i < SL_LEARNED_RULES; i++) {
			if (m.rule_ids[i] == rule_ids[j])
				break;
			if (!m.rule_ids[i]) {
				m.rule_ids[i] = rule_ids[j];
				break;
			}
		}
		if (i == SL_LEARNED_RULES)
			return -EXFULL;
	}
	/* A TTL-bound entry takes the later expiry; a run-long one stays run-long. */
	if (m.expires_ns && (!expires_ns || expires_ns > m.expires_ns))
		m.expires_ns = expires_ns;
	*cur = m;
	return 0;
}

/* An address's sl_learned map and key. */
static int learned_fd(const struct loader *l, const struct loader_learn_addr *a, uint8_t key[16])
{
	struct bpf_map *map = a->family == AF_INET ? l->skel->maps.sl_learned4 :
						      l->skel->maps.sl_learned6;

	memset(key, 0, 16);
	memcpy(key, a->addr, a->family == AF_INET ? 4 : 16);
	return bpf_map__fd(map);
}

/*
 * loader_learn_answer, or with write false its check alone. Under learn_lock: the resolver's
 * workers learn concurrently, so every address's lookup, merge and update (and the undoing of
 * those written when a later one fails) is one step that no other answer can come between.
 */
static int learn_rules(struct loader *l, const struct loader_learn_addr *addrs, size_t n,
		       const uint16_t *rule_ids, size_t n_rules, uint32_t host_id, size_t *failed,
		       bool write)
{
	struct sl_learned *merged, *old;
	bool *had, *written;
	char a[INET6_ADDRSTRLEN];
	uint64_t now_ns;
	uint8_t key[16];
	size_t i, k;
	int err = 0, pass;

	*failed = 0;
	merged = calloc(n ? n : 1, sizeof(*merged));
	old = calloc(n ? n : 1, sizeof(*old));
	had = calloc(n ? n : 1, sizeof(*had));
	written = calloc(n ? n : 1, sizeof(*written));
	if (!merged || !old || !had || !written) {
		err = -ENOMEM;
		goto out_free;
	}
	now_ns = (uint64_t)util_clock_ns(CLOCK_BOOTTIME);
	pthread_mutex_lock(&l->learn_lock);
	/* every address checked before any is written: all of the answer or none of it */
	for (i = 0; i < n && !err; i++) {
		int fd = learned_fd(l, &addrs[i], key);

		had[i] = !bpf_map_lookup_elem(fd, key, &old[i]);
		merged[i] = had[i] ? old[i] :
				     (struct sl_learned){ .host_id = host_id,
							  .expires_ns = addrs[i].expires_ns };
		err = learned_merge(&merged[i], rule_ids, n_rules, host_id, addrs[i].expires_ns,
				    now_ns);
		/* an entry whose rules the answer left as they were is in order already */
		if (!err && (!had[i] || memcmp(merged[i].rule_ids, old[i].rule_ids,
					      sizeof(merged[i].rule_ids))))
			err = rules_strictest(l, merged[i].rule_ids);
		if (err)
			*failed = i;
	}
	/*
	 * The new addresses first, those an earlier answer learned last: only an insert finds the
	 * map full (-E2BIG), so that failure comes before any address a client was given changed,
	 * and its undo only deletes addresses no client has.
	 */
	for (pass = 0; pass < 2 && !err && write; pass++) {
		for (i = 0; i < n && !err; i++) {
			int fd = learned_fd(l, &addrs[i], key);

			if (had[i] != (pass == 1))
				continue;
			if (!bpf_map_update_elem(fd, key, &merged[i], BPF_ANY)) {
				written[i] = true;
				continue;
			}
			err = -errno;
			*failed = i;
		}
	}
	/* a map full (or failing) half-way: the addresses written go back to what they were */
	for (k = 0; err && k < n; k++) {
		int fd = learned_fd(l, &addrs[k], key), undo_err = 0;

		if (!written[k])
			continue;
		if (had[k] ? bpf_map_update_elem(fd, key, &old[k], BPF_ANY) :
			     bpf_map_delete_elem(fd, key))
			undo_err = -errno;
		if (undo_err && undo_err != -ENOENT)
			fprintf(stderr, "sluice: cannot %s learned address %s after %s: %s\n",
				had[k] ? "restore" : "delete",
				inet_ntop(addrs[k].family, addrs[k].addr, a, sizeof(a)) ?: "?",
				strerror(-err), strerror(-undo_err));
	}
	pthread_mutex_unlock(&l->learn_lock);
out_free:
	free(merged);
	free(old);
	free(had);
	free(written);
	return err;
}

int loader_learn_answer(struct loader *l, const struct loader_learn_addr *addrs, size_t n,
			const uint16_t *rule_ids, size_t n_rules, uint32_t host_id,
			size_t *failed)
{
	return learn_rules(l, addrs, n, rule_ids, n_rules, host_id, failed, true);
}

int loader_learn(struct loader *l, int family, const uint8_t *addr, const uint16_t *rule_ids,
		 size_t n_rules, uint32_t host_id, uint64_t expires_ns)
{
	struct loader_learn_addr a = { .family = family, .addr = addr, .expires_ns = expires_ns };
	size_t failed;

	return learn_rules(l, &a, 1, rule_ids, n_rules, host_id, &failed, true);
}

int loader_learn_fits(struct loader *l, const struct loader_learn_addr *addrs, size_t n,
		      const uint16_t *rule_ids, size_t n_rules, size_t *failed)
{
	return learn_rules(l, addrs, n, rule_ids, n_rules, 0, failed, false);
}

int loader_learned(const struct loader *l, int family, const uint8_t *addr,
		   struct sl_learned *out)
{
	struct bpf_map *map = family == AF_INET ? l->skel->maps.sl_learned4 :
						   l->skel->maps.sl_learned6;
	uint8_t key[16] = {};

	memcpy(key, addr, family == AF_INET ? 4 : 16);
	return bpf_map_lookup_elem(bpf_map__fd(map), key, out) ? -errno : 0;
}

bool loader_host_spent(const struct loader *l, uint16_t rule_id, const struct sl_host_key *k)
{
	struct sl_rule_caps caps;
	struct sl_host_bytes b;
	__u32 rid = rule_id;

	if (bpf_map_lookup_elem(rule_caps_fd(l), &rid, &caps) ||
	    (!caps.max_total_req && !caps.max_total_resp) ||
	    bpf_map_lookup_elem(bpf_map__fd(l->skel->maps.sl_host_bytes), k, &b))
		return false;
	/* the connect hooks' own rule (bpf/addr.bpf.h) */
	return host_bytes_spent(&caps, &b);
}

/* The sl_sni_ok key of (addr, name): every byte, padding included, as the egress program's. */
static int sni_key(struct sl_sni_key *key, int family, const uint8_t *addr, const char *name)
{
	size_t i, len = strlen(name);

	/* no server name can be longer; DNS names are at most 253 bytes anyway */
	if (!len || len > SL_SNI_MAX)
		return -ENAMETOOLONG;
	memset(key, 0, sizeof(*key));
	memcpy(key->addr, addr, family == AF_INET ? 4 : 16);
	key->name_len = (__u16)len;
	for (i = 0; i < len; i++)
		key->name[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + ('a' - 'A') :
					 name[i]);
	return 0;
}

int loader_sni_name(const struct loader *l, struct sl_sni_name *v, uint32_t host_id,
		    const uint16_t *rule_ids, size_t n_rules)
{
	size_t i, n = 0;

	*v = (struct sl_sni_name){ .host_id = host_id };
	for (i = 0; i < n_rules; i++) {
		if (rule_ids[i] == SL_RULE_DEFAULT)
			continue; /* under no rule: an empty slot stands for it */
		if (n == SL_LEARNED_RULES)
			return -EXFULL;
		v->rule_ids[n++] = rule_ids[i];
	}
	return rules_strictest(l, v->rule_ids);
}

int loader_sni_learn(struct loader *l, int family, const uint8_t *addr, const char *name,
		     const struct sl_sni_name *v)
{
	struct sl_sni_key key;
	int err = sni_key(&key, family, addr, name);

	if (err)
		return err;
	if (bpf_map_update_elem(bpf_map__fd(l->skel->maps.sl_sni_ok), &key, v, BPF_ANY))
		return -errno;
	return 0;
}

int loader_sni_forget(struct loader *l, int family, const uint8_t *addr, const char *name)
{
	struct sl_sni_key key;
	int err = sni_key(&key, family, addr, name);

	if (err)
		return err;
	if (bpf_map_delete_elem(bpf_map__fd(l->skel->maps.sl_sni_ok), &key))
		return -errno;
	return 0;
}

int loader_sni_get(const struct loader *l, int family, const uint8_t *addr, const char *name,
		   struct sl_sni_name *out)
{
	struct sl_sni_key key;
	int err = sni_key(&key, family, addr, name);

	if (err)
		return err;
	if (bpf_map_lookup_elem(bpf_map__fd(l->skel->maps.sl_sni_ok), &key, out))
		return -errno;
	return 0;
}

bool loader_sni_ok(const struct loader *l, int family, const uint8_t *addr, const char *name)
{
	struct sl_sni_name v;

	return !loader_sni_get(l, family, addr, name, &v);
}

static int run_map_fd(const struct loader *l, struct bpf_object *old, const char *name,
		      __u32 *max_entries, char *err, size_t err_len);
static int reopen_programs(struct loader *l);

int loader_run_maps(struct loader *l)
{
	return l->skb ? 0 : reopen_programs(l);
}

/*
 * A map of the run's decision layer, wherever this loader finds it (run_map_fd): fd, -ENOENT,
 * -EPROTO (another build's: err says so, may be NULL), -errno
 */
static int run_map(const struct loader *l, const char *name, char *err, size_t err_len)
{
	return run_map_fd(l, l->skb ? l->skel->obj : NULL, name, NULL, err, err_len);
}

int loader_rule_budget(const struct loader *l, uint16_t rule_id, uint16_t *id, char *err,
		       size_t err_len)
{
	int fd = run_map(l, "sl_rule_budget", err, err_len);
	__u32 rid = rule_id, v = 0;

	if (fd < 0)
		return fd;
	/* past the map's end (ENOENT): a rule no switch gave a budget id, as 0 */
	if (bpf_map_lookup_elem(fd, &rid, &v) && errno != ENOENT)
		return -errno;
	*id = v ? (uint16_t)v : rule_id;
	return 0;
}

int loader_host_budgets_max(const struct loader *l, uint16_t *max, char *err, size_t err_len)
{
	int fd = run_map(l, "sl_host_bytes", err, err_len);
	struct sl_host_key key, next;
	void *prev = NULL;

	if (fd < 0)
		return fd;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (key.rule_id > *max)
			*max = key.rule_id;
	}
	return errno == ENOENT ? 0 : -errno;
}

int loader_rule_caps(const struct loader *l, uint16_t rule_id, struct sl_rule_caps *out)
{
	int fd = rule_caps_fd(l);
	__u32 rid = rule_id;

	if (fd < 0)
		return fd;
	return bpf_map_lookup_elem(fd, &rid, out) ? -errno : 0;
}

int loader_sock_state(const struct loader *l, int sock_fd, struct sl_flow *flow,
		      struct sl_sk_tls *tls)
{
	int ret = 0;

	if (!bpf_map_lookup_elem(bpf_map__fd(l->skel->maps.sl_sk_flow), &sock_fd, flow))
		ret |= LOADER_SOCK_FLOW;
	else if (errno != ENOENT)
		return -errno;
	if (!bpf_map_lookup_elem(bpf_map__fd(l->skel->maps.sl_sk_tls), &sock_fd, tls))
		ret |= LOADER_SOCK_TLS;
	else if (errno != ENOENT)
		return -errno;
	return ret;
}

int loader_sock_tls_deny(const struct loader *l, int sock_fd)
{
	int fd = bpf_map__fd(l->skel->maps.sl_sk_tls);
	struct sl_sk_tls t = {};

	if (bpf_map_lookup_elem(fd, &sock_fd, &t) && errno != ENOENT)
		return -errno;
	t.state = SL_TLS_DENIED;
	return bpf_map_update_elem(fd, &sock_fd, &t, BPF_ANY) ? -errno : 0;
}

int loader_sock_tls_set(const struct loader *l, int sock_fd, const struct sl_sk_tls *t)
{
	return bpf_map_update_elem(bpf_map__fd(l->skel->maps.sl_sk_tls), &sock_fd, t, BPF_ANY) ?
		       -errno :
		       0;
}

uint32_t loader_era(const struct loader *l)
{
	return cfg_of(l)->era;
}

int loader_sock_flow_set(const struct loader *l, int sock_fd, const struct sl_flow *flow)
{
	return bpf_map_update_elem(bpf_map__fd(l->skel->maps.sl_sk_flow), &sock_fd, flow,
				   BPF_EXIST) ? -errno : 0;
}

struct tc_op {
	struct loader *l;
	struct tc_attachment *a;
};

/*
 * Runs sharing a namespace share its clsact qdisc: adding a filter and removing the qdisc once
 * it holds none are done under one lock (bpffs's sluice directory, flock()ed), so a run's
 * removal never takes another run's new filter with it. -1 if it cannot be had (then unlocked).
 */
static int clsact_lock(void)
{
	int fd = open(LOADER_BPFFS "/sluice", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0 && flock(fd, LOCK_EX)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void clsact_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}

/* The clsact qdisc sluice made, once no filter is left on it (both attach points named). */
static void clsact_remove_if_empty(struct bpf_tc_hook *hook)
{
	if (netdev_clsact_filters(hook->ifindex) == 0) {
		hook->attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
		bpf_tc_hook_destroy(hook);
	}
}

/* In the peer's namespace: tcx first; clsact only where the kernel has no tcx (before 6.6). */
static int tc_attach_here(void *arg)
{
	struct tc_op *op = arg;
	struct tc_attachment *a = op->a;
	int prog_fd = bpf_program__fd(op->l->tc->progs.sl_tc_ingress), err;
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = a->peer.ifindex, .attach_point = BPF_TC_INGRESS);
	bool old;
	int lock;
	__u32 h;

	if (!op->l->tc_clsact) {
		/* first: a program before sluice that passes or redirects would skip it */
		LIBBPF_OPTS(bpf_tcx_opts, first, .flags = BPF_F_BEFORE);
		/* before 6.6 this fails (EINVAL): expected, not a warning to print */
		old = libbpf_hush();
		a->link = bpf_program__attach_tcx(op->l->tc->progs.sl_tc_ingress, a->peer.ifindex,
						   &first);
		err = a->link ? 0 : -errno;
		libbpf_unhush(old);
		if (a->link)
			return 0;
		if (err != -EINVAL && err != -EOPNOTSUPP)
			return err;
	}
	/*
	 * Another run's qdisc and filters are expected: the kernel's "exists" (for the qdisc,
	 * "Exclusivity flag on, cannot modify") is no warning.
	 */
	old = libbpf_hush();
	lock = clsact_lock();
	err = bpf_tc_hook_create(&hook);
	if (err && err != -EEXIST) {
		clsact_unlock(lock);
		libbpf_unhush(old);
		return err;
	}
	a->clsact_created = !err;
	for (h = TC_HANDLE, err = -EEXIST; err == -EEXIST && h < TC_HANDLE + TC_HANDLES; h++) {
		LIBBPF_OPTS(bpf_tc_opts, topts, .prog_fd = prog_fd, .handle = h,
			    .priority = TC_PRIORITY);

		err = bpf_tc_attach(&hook, &topts);
		a->handle = h;
	}
	libbpf_unhush(old);
	if (err && a->clsact_created)
		clsact_remove_if_empty(&hook);
	clsact_unlock(lock);
	if (err)
		return err == -EEXIST ? -EBUSY : err;
	a->clsact = true;
	return 0;
}

static int tc_detach_here(void *arg)
{
	struct tc_attachment *a = arg;
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = a->peer.ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, topts, .handle = a->handle, .priority = TC_PRIORITY);
	int lock = clsact_lock(), err = bpf_tc_detach(&hook, &topts);

	/*
	 * The qdisc goes only if it was ours, and only once it is empty: another run in the
	 * namespace (or the host) may have a filter there since. (Then it stays: nothing says
	 * whether the last filter's owner would have made it.)
	 */
	if (a->clsact_created)
		clsact_remove_if_empty(&hook);
	clsact_unlock(lock);
	return err;
}

static void tc_detach(struct tc_attachment *a)
{
	if (a->link) {
		bpf_link__unpin(a->link);
		bpf_link__destroy(a->link);
		a->link = NULL;
	} else if (a->clsact) {
		/* the peer (and with it the filter) may be gone with the sandbox already */
		netdev_in_netns(a->peer.netns_fd, tc_detach_here, a);
		a->clsact = false;
	}
}

/* The clsact filter on peer N: its program pinned under a name that says where (struct clsact_pin). */
static int pin_clsact(struct loader *l, int n, const struct tc_attachment *a)
{
	struct clsact_pin *p = &l->clsact_pins[l->n_clsact_pins];
	char path[PATH_MAX];
	int err;

	if (util_fmt(p->name, sizeof(p->name), TC_CLSACT_PIN "%d-%d-%u%s", n, a->peer.ifindex,
		     a->handle, a->clsact_created ? "-qdisc" : "") ||
	    util_fmt(path, sizeof(path), "%s/%s", l->pin_dir, p->name))
		return -ENAMETOOLONG;
	err = bpf_program__pin(l->tc->progs.sl_tc_ingress, path);
	if (err)
		return err;
	p->ifindex = a->peer.ifindex;
	p->handle = a->handle;
	p->qdisc = a->clsact_created;
	l->n_clsact_pins++;
	return 0;
}

struct tc_query {
	struct tc_attachment *a;
	__u32 prog_id; /* out: the program at sluice's handle, 0 if none */
};

static int tc_query_here(void *arg)
{
	struct tc_query *q = arg;
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = q->a->peer.ifindex,
		    .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, topts, .handle = q->a->handle, .priority = TC_PRIORITY);
	int err = bpf_tc_query(&hook, &topts);

	q->prog_id = err ? 0 : topts.prog_id;
	return err == -ENOENT || err == -EINVAL ? 0 : err;
}

static int repin(const struct loader *l, const char *name, int (*pin)(void *obj, const char *path),
		 void *obj);
static int pin_fd(void *fd, const char *path);
static __u32 prog_cfg_id(const struct loader *l, int prog_fd);
static int tc_move(struct tc_attachment *a, int prog_fd);

/*
 * The filter at a's handle still runs the host side's program from before a switch whose commit
 * the take-over finished (reopen_finish_commit, l->clsact_stale_id): moved to p's, the pinned one.
 */
static int clsact_finish(struct loader *l, struct tc_attachment *a, const struct clsact_pin *p)
{
	char path[PATH_MAX];
	int fd, err;

	if (util_fmt(path, sizeof(path), "%s/%s", l->pin_dir, p->name))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	a->clsact = true;
	err = tc_move(a, fd);
	a->clsact = false;
	close(fd);
	if (err)
		fprintf(stderr, "sluice: %s: move the host-side filter on ifindex %d to the "
				"switch's new program: %s; left as it is, it stays until its veth "
				"goes\n", l->pin_dir, p->ifindex, strerror(-err));
	return err;
}

/*
 * The filter at p's ifindex and handle runs prog_id, not the pinned program: a writer killed
 * inside a switch's commit moved it and died before it pinned the new one. It is the run's when
 * its program reads the run's pinned configuration (reopen_settle_pins made the pins those of
 * the programs the links run): then p is pinned from it (0). Otherwise -ESRCH: another's filter,
 * or one of the run's other set, left as it is (said so: it stays until its veth goes).
 */
static int clsact_adopt(struct loader *l, struct clsact_pin *p, __u32 prog_id)
{
	struct bpf_prog_info pi = {};
	struct bpf_map_info mi = {};
	__u32 len = sizeof(mi), plen = sizeof(pi);
	int fd, err = -ESRCH;

	if (!l->skel)
		return -ESRCH; /* a purge's loader: it removes only the filters that run its pins */
	fd = bpf_prog_get_fd_by_id(prog_id);
	if (fd < 0)
		return -errno;
	if (bpf_map_get_info_by_fd(bpf_map__fd(l->skel->maps.data_cfg), &mi, &len))
		err = -errno;
	else if (prog_cfg_id(l, fd) == mi.id)
		err = repin(l, p->name, pin_fd, &fd);
	else if (!bpf_prog_get_info_by_fd(fd, &pi, &plen) &&
		 !strncmp(pi.name, "sl_tc_ingress", sizeof(pi.name) - 1))
		fprintf(stderr, "sluice: %s: the host-side filter on ifindex %d runs a program of "
				"another policy generation than the run's links: left as it is, it "
				"stays until its veth goes\n", l->pin_dir, p->ifindex);
	if (!err) {
		fprintf(stderr, "sluice: %s: its writer died inside a switch's commit: the program "
				"the host-side filter on ifindex %d runs is pinned now\n", l->pin_dir,
			p->ifindex);
		p->prog_id = prog_id;
	}
	close(fd);
	return err;
}

struct tcx_query {
	int ifindex;
	__u32 link_id;
	bool found; /* out: the link is at the ifindex's tcx ingress */
};

static int tcx_query_here(void *arg)
{
	struct tcx_query *q = arg;
	__u32 progs[64], links[64], i;
	LIBBPF_OPTS(bpf_prog_query_opts, o, .prog_ids = progs, .link_ids = links, .count = 64);

	if (bpf_prog_query_opts(q->ifindex, BPF_TCX_INGRESS, &o))
		return errno == ENOENT || errno == ENODEV ? 0 : -errno;
	for (i = 0; i < o.count && i < 64; i++)
		q->found |= links[i] == q->link_id;
	return 0;
}

/*
 * The peer each reopened tcx link (its pin has no peer: loader_reopen) is attached to: the veth
 * peer of run_netns_fd with the link's ifindex whose namespace has that link at its ingress.
 * A link not found keeps no peer (resets_fixed then lets no RST out through it).
 */
static void refind_tcx_peers(struct loader *l, struct netdev_peer *peers, int n)
{
	int i, j;

	for (i = 0; i < l->n_tc; i++) {
		struct tc_attachment *a = &l->tc_att[i];
		struct bpf_link_info info = {};
		__u32 len = sizeof(info);

		if (!a->link || a->peer.netns_fd >= 0 ||
		    bpf_link_get_info_by_fd(bpf_link__fd(a->link), &info, &len) ||
		    info.type != BPF_LINK_TYPE_TCX)
			continue;
		for (j = 0; j < n; j++) {
			struct tcx_query q = { .ifindex = (int)info.tcx.ifindex,
					       .link_id = info.id };

			if (peers[j].netns_fd < 0 || peers[j].ifindex != q.ifindex ||
			    netdev_in_netns(peers[j].netns_fd, tcx_query_here, &q) || !q.found)
				continue;
			a->peer = peers[j];
			peers[j].netns_fd = -1; /* a's now */
			break;
		}
	}
}

int loader_refind_host_side(struct loader *l, int run_netns_fd)
{
	struct netdev_peer peers[NETDEV_PEERS_MAX];
	int n, i, j, found = 0, err = 0;

	if (!l->n_clsact_pins && !l->n_tc)
		return 0;
	n = netdev_veth_peers(run_netns_fd, peers, NETDEV_PEERS_MAX);
	if (n < 0)
		return n;
	refind_tcx_peers(l, peers, n);
	if (!l->n_clsact_pins) {
		netdev_peers_free(peers, n);
		return 0;
	}
	for (i = 0; i < n && l->n_tc < NETDEV_PEERS_MAX; i++) {
		struct tc_attachment *a = &l->tc_att[l->n_tc];
		struct tc_query q = { .a = a };

		if (peers[i].netns_fd < 0)
			continue; /* a tcx link's */
		memset(a, 0, sizeof(*a));
		a->peer = peers[i];
		peers[i].netns_fd = -1;
		for (j = 0; j < l->n_clsact_pins; j++) {
			struct clsact_pin *p = &l->clsact_pins[j];

			if (p->found || p->ifindex != a->peer.ifindex)
				continue;
			/* the same ifindex in another namespace runs another program (or none) */
			a->handle = p->handle;
			err = netdev_in_netns(a->peer.netns_fd, tc_query_here, &q);
			if (err || !q.prog_id)
				continue;
			if (q.prog_id != p->prog_id &&
			    (q.prog_id == l->clsact_stale_id ? clsact_finish(l, a, p) :
							       clsact_adopt(l, p, q.prog_id)))
				continue;
			p->found = true;
			a->clsact = true;
			a->clsact_created = p->qdisc;
			break;
		}
		if (!a->clsact) {
			netdev_peers_free(&a->peer, 1);
			continue;
		}
		l->n_tc++;
		found++;
	}
	netdev_peers_free(peers + i, n - i);
	say_clsact_unfound(l, "");
	return found;
}

int loader_attach_tc(struct loader *l, int run_netns_fd, char *desc, size_t desc_size)
{
	struct netdev_peer peers[NETDEV_PEERS_MAX];
	char path[PATH_MAX];
	size_t used = 0;
	int n, i, err;

	desc[0] = '\0';
	/* selftests only: a run killed with its cgroup links pinned and no host side yet */
	loader_selftest_kill("before-tc");
	n = netdev_veth_peers(run_netns_fd, peers, NETDEV_PEERS_MAX);
	if (n < 0)
		return n;
	/*
	 * A run that shares its namespace's maps marks what a take-over (loader_reopen) finds:
	 * no veth peer, NS_MARK_NOHOST: not joined on purpose (a veth added later, and a run
	 * attached to it, would leave this run's frames to a host side it does not have; unjoined,
	 * every other run's host side judges them); else NS_MARK_PENDING before the first peer's
	 * host side, so that a kill anywhere from here to the join has the join finished, never a
	 * run taken for joined that is not. One killed before this is refused.
	 */
	if (l->ns_dir[0]) {
		err = ns_mark(l, n ? NS_MARK_PENDING : NS_MARK_NOHOST);
		if (err) {
			fprintf(stderr, "sluice: mark %s %s: %s\n", l->pin_dir,
				n ? "as joining" : "as having no host side", strerror(-err));
			netdev_peers_free(peers, n);
			return err;
		}
		if (!n)
			return 0;
	}
	for (i = 0; i < n; i++) {
		struct tc_attachment *a = &l->tc_att[l->n_tc];
		struct tc_op op = { .l = l, .a = a };

		memset(a, 0, sizeof(*a));
		a->peer = peers[i];
		peers[i].netns_fd = -1;
		l->n_tc++;
		err = netdev_in_netns(a->peer.netns_fd, tc_attach_here, &op);
		if (err) {
			fprintf(stderr, "sluice: attach tc to %s%s%s: %s\n", a->peer.ifname,
				a->peer.netns[0] ? "@" : "", a->peer.netns, strerror(-err));
			netdev_peers_free(peers + i + 1, n - i - 1);
			return err;
		}
		if (a->link) {
			if (util_fmt(path, sizeof(path), "%s/tc-%d", l->pin_dir, i))
				return -ENAMETOOLONG;
			err = bpf_link__pin(a->link, path);
			if (err)
				return err;
		} else {
			err = pin_clsact(l, i, a);
			if (err)
				return err;
		}
		if (util_fmt(desc + used, desc_size - used, "%s%s%s%s%s", used ? "," : "",
			     a->peer.ifname, a->peer.netns[0] ? "@" : "", a->peer.netns,
			     a->clsact ? " (clsact)" : ""))
			return -ENAMETOOLONG;
		used = strlen(desc);
	}
	if (!l->ns_dir[0])
		return n;
	/* selftests only: a run killed with its host side pinned and its join not done */
	loader_selftest_kill("before-join");
	err = ns_join(l, bpf_map__fd(l->skb->maps.sl_ns_runs), false);
	if (err) {
		fprintf(stderr, "sluice: join the namespace's runs at %s: %s\n", l->ns_dir,
			strerror(-err));
		return err;
	}
	unpin_name(l, NS_MARK_PENDING);
	return n;
}

/*
 * Remove a pin of the run's directory by name (gone already is fine). A loader without a pin
 * directory (never pinned, or detached already: loader_detach empties it) has none: the name
 * alone would be a path in the root directory.
 */
static void unpin_name(const struct loader *l, const char *name)
{
	char path[PATH_MAX];

	if (l->pin_dir[0] && !util_fmt(path, sizeof(path), "%s/%s", l->pin_dir, name) && unlink(path) &&
	    errno != ENOENT)
		fprintf(stderr, "sluice: unpin %s: %s\n", path, strerror(errno));
}

void loader_detach(struct loader *l)
{
	int i;

	if (!l)
		return;
	/*
	 * The namespace first, while both layers still judge: left after them, a kill in between
	 * would leave a token whose 5-tuples the other runs pass to a run with neither layer.
	 */
	ns_leave(l, -2);
	for (i = 0; i < PROG_MAX; i++) {
		if (!l->links[i])
			continue;
		bpf_link__unpin(l->links[i]);
		bpf_link__destroy(l->links[i]);
		l->links[i] = NULL;
	}
	for (i = 0; i < l->n_tc; i++)
		tc_detach(&l->tc_att[i]);
	/* every clsact pin, found again or not (its veth gone with the sandbox) */
	for (i = 0; i < l->n_clsact_pins; i++)
		unpin_name(l, l->clsact_pins[i].name);
	l->n_clsact_pins = 0;
	for (i = 0; i < 3; i++) {
		if (!l->lsm_links[i])
			continue;
		bpf_link__unpin(l->lsm_links[i]);
		bpf_link__destroy(l->lsm_links[i]);
		l->lsm_links[i] = NULL;
	}
	/* the maps stay alive while sluice holds them: only their names go */
	for (i = 0; l->maps_pinned && i < MAP_MAX; i++)
		unpin_name(l, map_pin_names[i]);
	l->maps_pinned = false;
	if (l->era_fd >= 0)
		unpin_name(l, ERA_PIN);
	unpin_name(l, NS_MARK_NOHOST);
	unpin_name(l, NS_MARK_PENDING);
	unstage(l); /* a switch's that could go neither back nor forward */
	if (l->pin_dir[0] && rmdir(l->pin_dir) && errno != ENOENT)
		fprintf(stderr, "sluice: remove %s: %s\n", l->pin_dir, strerror(errno));
	l->pin_dir[0] = '\0';
}

void loader_destroy(struct loader *l)
{
	int i;

	if (!l)
		return;
	/* Links still here are pinned: closing our fds leaves them attached. */
	for (i = 0; i < PROG_MAX; i++)
		if (l->links[i])
			bpf_link__destroy(l->links[i]);
	for (i = 0; i < l->n_tc; i++)
		if (l->tc_att[i].link)
			bpf_link__destroy(l->tc_att[i].link);
	for (i = 0; i < l->n_tc; i++)
		netdev_peers_free(&l->tc_att[i].peer, 1);
	for (i = 0; i < 3; i++)
		if (l->lsm_links[i])
			bpf_link__destroy(l->lsm_links[i]);
	sl_lsm__destroy(l->lsm);
	sl_destroy__destroy(l->destroy);
	sl_tc__destroy(l->tc);
	sl_surface__destroy(l->surface);
	sl_skb__destroy(l->skb);
	sl_sock_addr__destroy(l->skel);
	run_programs_release(l);
	if (l->era_fd >= 0)
		close(l->era_fd);
	if (l->pin_lock >= 0)
		close(l->pin_lock);
	if (l->ns_runs_own >= 0)
		close(l->ns_runs_own);
	pthread_mutex_destroy(&l->learn_lock);
	free(l);
}

/*
 * --- Switching a live run to another policy or mode (sluice set-mode, replace-policy) ----------
 *
 * A switch loads a second set of the run's programs, with a configuration of its own (struct
 * sl_cfg: mode, default, errno, socket kinds, the policy's hash), verified while the first goes
 * on judging with its own. The second set reuses every map that
 * holds the run's state (the ring buffer, sequence and loss counters, socket storages, DNS
 * clients, host names and totals, the log's state, the namespace's attribution maps) and gets
 * maps of its own for what the policy decides: the CIDR tries, each rule's ports and caps, and
 * the learned addresses and server names, which the caller re-fills under the new rule ids
 * (loader_next_learn, loader_next_sni) before loader_next_commit moves every link of the run
 * (cgroup and tcx) to the new programs with bpf_link_update. That is atomic per hook: each hook
 * runs either the old or the new programs, never neither; a failure moves back the links already
 * moved and leaves the old programs in place. (Writing the mode into the attached set's
 * configuration would be one store, but not the rest: a policy's rule numbering is its maps'.)
 */
struct loader_next {
	struct sl_cfg cfg; /* the new set's configuration */
	struct sl_sock_addr *skel;
	struct sl_skb *skb;
	struct sl_surface *surface;
	struct sl_tc *tc;
	struct sl_lsm *lsm;
	/*
	 * The new LSM connect and sendmsg links ([1], [2]; lsm_link_names), attached beside the
	 * old ones by stage() before the commit's first move: hooks that are not cgroup links,
	 * which no writer could move.
	 */
	struct bpf_link *lsm_staged[3];
};

/* The maps a policy decides: the new programs get their own (all in the decision layer). */
static bool policy_map(const char *name)
{
	static const char *const names[] = { "sl_dst4", "sl_dst6", "sl_rule_ports",
					     "sl_rule_caps", "sl_rule_budget", "sl_learned4",
					     "sl_learned6",
					     "sl_sni_ok" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

/*
 * The map name among those collected from the run's programs (l->run_maps), once found of this
 * build's shape: its index; -ENOENT where the programs use none of that name; -EPROTO where it
 * is another build's (a run a daemon upgraded under it started), err (may be NULL) naming it and
 * both shapes; -errno. Every collected map is handed out through here (run_map_fd,
 * reopen_settle_pins): none is read into this build's structs, or shared with its programs,
 * while another build's layout is in it.
 */
static int run_map_entry(const struct loader *l, const char *name, char *err, size_t err_len)
{
	const struct run_map *m;
	struct map_shape build;
	int i, ret;

	for (i = 0; l->run_collected && i < l->n_run_maps; i++) {
		m = &l->run_maps[i];
		if (strcmp(m->name, name))
			continue;
		if (m->shape_err) {
			if (err && err_len)
				util_fmt(err, err_len, "the run's map %s: read its shape: %s", name,
					 strerror(-m->shape_err));
			return m->shape_err == -ENOENT ? -EIO : m->shape_err;
		}
		ret = loader_build_map_shape(name, &build);
		if (ret) {
			if (err && err_len)
				util_fmt(err, err_len, "the run's map %s: this build's shape of it: %s",
					 name, ret == -ENOENT ? "this build has no map of that name" :
					 strerror(-ret));
			/* (not -ENOENT: that is the run's having none, which a caller may pass over) */
			return ret == -ENOENT ? -EPROTO : ret;
		}
		ret = map_shape_check(name, &m->shape, &build, err, err_len);
		return ret ? ret : i;
	}
	return -ENOENT;
}

/*
 * A map of the run by name: the old object's (a loader that loaded the run's objects), else the
 * one of that name that the run's attached programs use (a resumed writer's, reopen_programs;
 * refused unless of this build's shape, run_map_entry), else its pin (of this build's shape,
 * reopen_map).
 * Its fd (the caller's to dup, not to close) and size, or -ENOENT, -EPROTO (err says which map
 * and why; err may be NULL), -errno.
 */
static int run_map_fd(const struct loader *l, struct bpf_object *old, const char *name,
		      __u32 *max_entries, char *err, size_t err_len)
{
	struct bpf_map *map;
	int i;

	if (old) {
		map = bpf_object__find_map_by_name(old, name);
		if (!map || bpf_map__fd(map) < 0)
			return -ENOENT;
		if (max_entries)
			*max_entries = bpf_map__max_entries(map);
		return bpf_map__fd(map);
	}
	i = run_map_entry(l, name, err, err_len);
	if (i >= 0) {
		if (max_entries)
			*max_entries = l->run_maps[i].max_entries;
		return l->run_maps[i].fd;
	}
	if (i != -ENOENT)
		return i;
	/* one no program uses (the host names): pinned, and reopened from its pin */
	map = l->skb ? NULL : bpf_object__find_map_by_name(l->skel->obj, name);
	if (!map || bpf_map__fd(map) < 0)
		return -ENOENT;
	if (max_entries)
		*max_entries = bpf_map__max_entries(map);
	return bpf_map__fd(map);
}

/*
 * Every map of obj that is not internal: the one of the same name in the new decision layer
 * (first, when it is loaded), else the old one's own (per-object state: the host side's report
 * cache, the namespace's maps, the LSM layer's cgroup): in old, or for a resumed writer (old
 * NULL) among the maps the run's programs use.
 */
static int next_share(struct bpf_object *obj, struct bpf_object *first, struct bpf_object *old,
		      const struct loader *l, char *err_buf, size_t err_len)
{
	struct bpf_map *map, *src;
	int err, fd;

	bpf_object__for_each_map(map, obj) {
		/* internal maps are the object's own, but for the new set's configuration */
		if (bpf_map__is_internal(map) && strcmp(bpf_map__name(map), CFG_MAP))
			continue;
		src = first ? bpf_object__find_map_by_name(first, bpf_map__name(map)) : NULL;
		fd = src ? bpf_map__fd(src) :
			   bpf_map__is_internal(map) ? -ENOENT :
			   run_map_fd(l, old, bpf_map__name(map), NULL, err_buf, err_len);
		if (fd < 0 && fd != -ENOENT)
			return fd; /* another build's (err_buf says which), or unreadable */
		/*
		 * The LSM layer's cgroup is whom its hooks judge: a new one, empty, would judge no
		 * one while the layer counts as on. Not found, the switch fails.
		 */
		if (fd < 0 && !strcmp(bpf_map__name(map), "sl_run_cgroup")) {
			util_fmt(err_buf, err_len, "the run's map sl_run_cgroup is not found");
			return -ENOENT;
		}
		if (fd < 0)
			continue;
		err = bpf_map__reuse_fd(map, fd);
		if (err)
			return err;
	}
	return 0;
}

/*
 * The decision layer: the run's state maps reused, the policy's sized for the new one. The
 * learned maps: full size for a policy and mode that learn; else the old size (the switch copies
 * every learned address before it prunes those no rule keeps: never fewer slots than before).
 */
static int next_share_decision(struct loader_next *n, const struct loader *l,
			       const struct policy *p, const struct policy_compiled *c, int mode,
			       char *err_buf, size_t err_len)
{
	struct bpf_object *old_obj = l->skb ? l->skel->obj : NULL;
	/* a resumed writer's loader has no options: a run's size */
	__u32 full = l->learned_full ? l->learned_full : LOADER_LEARNED_MAX;
	struct bpf_map *map;
	__u32 old_max = 0, learned = 0;
	int err = 0, fd;

	fd = run_map_fd(l, old_obj, "sl_learned4", &learned, err_buf, err_len);
	if (fd == -ENOENT)
		util_fmt(err_buf, err_len, "the run's map sl_learned4 is not found (its size is "
					   "the new learned maps' least)");
	if (fd < 0)
		return fd;

	if (policy_learns(p, mode) && full > learned)
		learned = full;

	bpf_object__for_each_map(map, n->skel->obj) {
		if (bpf_map__is_internal(map) || policy_map(bpf_map__name(map)))
			continue;
		fd = run_map_fd(l, old_obj, bpf_map__name(map), &old_max, err_buf, err_len);
		if (fd == -ENOENT)
			util_fmt(err_buf, err_len, "the run's map %s is not found", bpf_map__name(map));
		if (fd < 0)
			return fd;
		/* the first policy with totals: a map of its full size (the old one is empty) */
		if (map == n->skel->maps.sl_host_bytes && old_max == 1 && policy_has_totals(c))
			continue;
		err = bpf_map__reuse_fd(map, fd);
		if (err)
			return err;
	}
	err = bpf_map__set_max_entries(n->skel->maps.sl_dst4, c->n_v4 ? c->n_v4 : 1);
	if (!err)
		err = bpf_map__set_max_entries(n->skel->maps.sl_dst6, c->n_v6 ? c->n_v6 : 1);
	if (!err)
		err = bpf_map__set_max_entries(n->skel->maps.sl_rule_ports, (__u32)c->n_rule_ports);
	if (!err)
		err = bpf_map__set_max_entries(n->skel->maps.sl_rule_caps, (__u32)c->n_rule_ports);
	if (!err)
		err = bpf_map__set_max_entries(n->skel->maps.sl_rule_budget, (__u32)c->n_rule_ports);
	if (!err)
		err = bpf_map__set_max_entries(n->skel->maps.sl_learned4, learned);
	if (!err)
		err = bpf_map__set_max_entries(n->skel->maps.sl_learned6, learned);
	/* (address, name) pairs: an address may serve several names (load_objects) */
	if (!err)
		err = bpf_map__set_max_entries(n->skel->maps.sl_sni_ok,
					       learned > 1 ? 2 * learned : 1);
	return err;
}

/* The maps program prog_fd uses into l->run_maps, each once. */
static int run_maps_add(struct loader *l, int prog_fd)
{
	__u32 ids[PROG_MAP_IDS_MAX], len;
	int n_ids = prog_map_ids(prog_fd, ids), i, j, fd;
	struct bpf_map_info mi;
	struct run_map *m;

	if (n_ids < 0)
		return n_ids;
	for (i = 0; i < n_ids; i++) {
		for (j = 0; j < l->n_run_maps && l->run_maps[j].id != ids[i]; j++)
			;
		if (j < l->n_run_maps)
			continue;
		if (l->n_run_maps == (int)(sizeof(l->run_maps) / sizeof(l->run_maps[0])))
			return -E2BIG;
		fd = bpf_map_get_fd_by_id(ids[i]);
		if (fd < 0)
			return -errno;
		memset(&mi, 0, sizeof(mi));
		len = sizeof(mi);
		if (bpf_map_get_info_by_fd(fd, &mi, &len)) {
			close(fd);
			return -errno;
		}
		m = &l->run_maps[l->n_run_maps++];
		m->fd = fd;
		m->id = ids[i];
		m->max_entries = mi.max_entries;
		memcpy(m->name, mi.name, sizeof(m->name));
		m->name[sizeof(m->name) - 1] = '\0';
		/* (compared with this build's only when given out: the run may hold maps no one reads) */
		m->shape_err = shape_of_info(fd, &mi, &m->shape);
	}
	return 0;
}

/* The program a link runs, by its id. */
static int link_prog_fd(const struct bpf_link *link)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	int fd;

	if (bpf_link_get_info_by_fd(bpf_link__fd(link), &info, &len))
		return -errno;
	fd = bpf_prog_get_fd_by_id(info.prog_id);
	return fd < 0 ? -errno : fd;
}

static void run_programs_release(struct loader *l)
{
	int i;

	if (!l->run_collected)
		return;
	for (i = 0; i < l->n_run_maps; i++)
		close(l->run_maps[i].fd);
	for (i = 0; i < PROG_MAX; i++)
		if (l->run_prog_fds[i] >= 0)
			close(l->run_prog_fds[i]);
	if (l->run_tc_prog_fd >= 0)
		close(l->run_tc_prog_fd);
	l->n_run_maps = 0;
	l->run_collected = false;
}

/*
 * A resumed writer's loader (loader_reopen) holds the run's links and pinned maps, not the
 * objects that loaded them: what a switch needs of the old set comes from the kernel instead.
 * Each link's program, and every map those programs use (the socket storages, the host side's
 * report cache, the namespace's maps: state the new set must share, not start afresh). A run of
 * this build has the same map names in its objects as this build's skeletons.
 */
static int collect_run_programs(struct loader *l)
{
	int i, fd, err = 0;

	if (l->run_collected)
		return 0;
	for (i = 0; i < PROG_MAX; i++)
		l->run_prog_fds[i] = -1;
	l->run_tc_prog_fd = -1;
	l->n_run_maps = 0;
	l->run_collected = true;
	for (i = 0; !err && i < PROG_MAX; i++) {
		if (!l->links[i])
			continue;
		fd = link_prog_fd(l->links[i]);
		if (fd < 0)
			err = fd;
		else
			l->run_prog_fds[i] = fd;
		if (!err)
			err = run_maps_add(l, fd);
	}
	for (i = 0; !err && i < l->n_tc && l->run_tc_prog_fd < 0; i++) {
		char path[PATH_MAX];

		if (l->tc_att[i].link) {
			fd = link_prog_fd(l->tc_att[i].link);
		} else if (l->tc_att[i].clsact && l->n_clsact_pins &&
			   !util_fmt(path, sizeof(path), "%s/%s", l->pin_dir,
				     l->clsact_pins[0].name)) {
			fd = bpf_obj_get(path); /* every clsact filter runs the same program */
			fd = fd < 0 ? -errno : fd;
		} else {
			continue;
		}
		if (fd < 0)
			err = fd;
		else
			l->run_tc_prog_fd = fd;
		if (!err)
			err = run_maps_add(l, fd);
	}
	if (err)
		run_programs_release(l);
	return err;
}

/*
 * The run's programs and maps (collect_run_programs), the LSM layer's own (its sl_run_cgroup,
 * which the new layer shares), and what the kernel can (for a switch).
 */
static int reopen_programs(struct loader *l)
{
	int err, fd;

	if (l->run_collected)
		return 0;
	err = collect_run_programs(l);
	if (!err && l->lsm_links[1]) {
		fd = link_prog_fd(l->lsm_links[1]);
		err = fd < 0 ? fd : run_maps_add(l, fd);
		if (fd >= 0)
			close(fd);
	}
	if (!err)
		l->frag_check = kernel_has_kfunc("bpf_cast_to_kern_ctx");
	if (err)
		run_programs_release(l);
	return err;
}

/* The id of the configuration map (CFG_MAP) among l->run_maps the program prog_fd uses; 0: none. */
static __u32 prog_cfg_id(const struct loader *l, int prog_fd)
{
	char want[BPF_OBJ_NAME_LEN];
	__u32 ids[PROG_MAP_IDS_MAX];
	int n = prog_map_ids(prog_fd, ids), i, j;

	snprintf(want, sizeof(want), "%s", bpf_map__name(l->skel->maps.data_cfg));
	for (i = 0; i < n; i++) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi);
		int fd;

		for (j = 0; j < l->n_run_maps && l->run_maps[j].id != ids[i]; j++)
			;
		if (j < l->n_run_maps) {
			if (!strcmp(l->run_maps[j].name, want))
				return ids[i];
			continue;
		}
		/* a program collect_run_programs did not collect (a second tc link, the LSM's) */
		fd = bpf_map_get_fd_by_id(ids[i]);
		if (fd < 0)
			continue;
		if (!bpf_map_get_info_by_fd(fd, &mi, &mlen) && !strcmp(mi.name, want)) {
			close(fd);
			return ids[i];
		}
		close(fd);
	}
	return 0;
}

/* prog_fd's configuration map is *cfg_id's (set where 0), or -EXDEV (see reopen_settle_pins). */
static int settle_same_set(const struct loader *l, int prog_fd, __u32 *cfg_id)
{
	/* (a program that reads no configuration cannot tell) */
	__u32 id = prog_cfg_id(l, prog_fd);

	if (id && *cfg_id && id != *cfg_id)
		return -EXDEV;
	if (id)
		*cfg_id = id;
	return 0;
}

/* A link's program is of *cfg_id's set (settle_same_set); 0 where there is no link. */
static int settle_link(const struct loader *l, const struct bpf_link *link, __u32 *cfg_id)
{
	int fd, err;

	if (!link)
		return 0;
	fd = link_prog_fd(link);
	if (fd < 0)
		return fd;
	err = settle_same_set(l, fd, cfg_id);
	close(fd);
	return err;
}

/*
 * The pins name the set whose maps and configuration a writer taking the run over uses; the
 * links say which programs judge. A writer killed inside loader_next_commit after it moved the
 * links and before it re-pinned the maps left the pins of the set before: the links win, and the
 * pins are made theirs (as the commit would have) before anything is read from them. Every link
 * must run programs of one set: a writer killed while it moved them left each hook enforcing one
 * of two policies, which no one writer can name (-EXDEV). Every link: the cgroup ones, each
 * host-side tcx link (a kill between two veths' moves), and the LSM layer's (moved last, its
 * new connect and sendmsg links pinned after: a kill before that leaves the old ones judging
 * with the old set's maps while the cgroup links run the new). (Host-side clsact filters are
 * found later, loader_refind_host_side, which checks theirs.)
 */
static int reopen_settle_pins(struct loader *l)
{
	struct bpf_map_info mi = {};
	__u32 len = sizeof(mi), cfg_id = 0, zero = 0;
	int i, err, fd, entry[MAP_MAX]; /* each pin's map among l->run_maps; -1: none to pin */

	if (bpf_map_get_info_by_fd(bpf_map__fd(l->skel->maps.data_cfg), &mi, &len))
		return -errno;
	err = collect_run_programs(l);
	if (err)
		return err;
	for (i = 0; !err && i < PROG_MAX; i++)
		if (l->run_prog_fds[i] >= 0)
			err = settle_same_set(l, l->run_prog_fds[i], &cfg_id);
	for (i = 0; !err && i < l->n_tc; i++)
		err = settle_link(l, l->tc_att[i].link, &cfg_id);
	for (i = 0; !err && i < 3; i++)
		err = settle_link(l, l->lsm_links[i], &cfg_id);
	if (err)
		goto out;
	if (!cfg_id || cfg_id == mi.id)
		goto out;
	/*
	 * Every map found and checked before any is pinned: another build's is not pinned, the
	 * take-over is refused with the pins all as they were (never some re-pinned, some not).
	 */
	for (i = 0; !err && i < MAP_MAX; i++) {
		const char *name = bpf_map__name(map_of(l, i));
		char want[BPF_OBJ_NAME_LEN], why[512] = "";

		entry[i] = -1;
		if (i != MAP_CFG && !policy_map(name))
			continue;
		snprintf(want, sizeof(want), "%s", name);
		entry[i] = run_map_entry(l, want, why, sizeof(why));
		if (entry[i] < 0) {
			err = entry[i];
			fprintf(stderr, "sluice: %s: its writer died inside a switch's commit; %s\n",
				l->pin_dir, why[0] ? why : "the run's programs use no map of the name");
		}
	}
	for (i = 0; !err && i < MAP_MAX; i++) {
		if (entry[i] < 0)
			continue;
		fd = l->run_maps[entry[i]].fd;
		err = repin(l, map_pin_names[i], pin_fd, &fd);
		if (!err)
			err = reopen_map(l, i);
	}
	if (!err && bpf_map_lookup_elem(bpf_map__fd(l->skel->maps.data_cfg), &zero, &l->cfg))
		err = -errno;
	if (!err)
		fprintf(stderr, "sluice: %s: its writer died inside a switch's commit: the "
				"maps of the programs its links run are pinned now\n", l->pin_dir);
out:
	/* (kept for reopen_ns, then released by loader_reopen) */
	return err;
}

/* The program a hook of the run runs now (to move a link back to it). */
static int run_prog_fd(const struct loader *l, enum loader_prog i)
{
	return l->skb ? bpf_program__fd(prog_of(l, i)) : l->run_prog_fds[i];
}

static int run_tc_fd(const struct loader *l)
{
	return l->tc ? bpf_program__fd(l->tc->progs.sl_tc_ingress) : l->run_tc_prog_fd;
}

uint32_t loader_next_era(const struct loader_next *n)
{
	return n->cfg.era;
}

void loader_next_free(struct loader_next *n)
{
	int i;

	if (!n)
		return;
	/* (one still pinned, a commit's that could go neither way, stays attached) */
	for (i = 0; i < 3; i++)
		bpf_link__destroy(n->lsm_staged[i]);
	sl_lsm__destroy(n->lsm);
	sl_tc__destroy(n->tc);
	sl_surface__destroy(n->surface);
	sl_skb__destroy(n->skb);
	sl_sock_addr__destroy(n->skel);
	free(n);
}

int loader_next_load(struct loader *l, const struct policy *p, const struct policy_compiled *c,
		     int mode, const uint16_t *budgets, struct loader_next **out, char *err_buf,
		     size_t err_len)
{
	struct loader shadow = {};
	struct loader_next *n;
	int err;

	*out = NULL;
	if (!l->skb) {
		/* a resumed writer: the run's programs and their maps from the kernel */
		err = reopen_programs(l);
		if (err) {
			util_fmt(err_buf, err_len, "find the run's programs and their maps through "
						   "its links: %s", strerror(-err));
			return err;
		}
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->skel = sl_sock_addr__open();
	n->skb = n->skel ? sl_skb__open() : NULL;
	n->surface = n->skb ? sl_surface__open() : NULL;
	n->tc = n->surface ? sl_tc__open() : NULL;
	if (!n->tc) {
		err = -errno;
		goto fail;
	}
	err = cfg_map_prepare(n->skel->maps.data_cfg);
	if (err)
		goto fail;
	err = next_share_decision(n, l, p, c, mode, err_buf, err_len);
	if (!err)
		err = sl_sock_addr__load(n->skel);
	if (err)
		goto fail;
	/*
	 * The new set's own configuration, which its other layers share: what the run was loaded
	 * with (ports, tokens, the resume configuration), then the policy and mode.
	 */
	n->cfg = l->cfg;
	n->cfg.mode = (__u8)mode;
	n->cfg.default_allow = p->default_verdict == POLICY_DEFAULT_ALLOW;
	n->cfg.deny_errno = p->deny_errno;
	n->cfg.sockets = (__u8)p->sockets;
	memcpy(n->cfg.run.policy_sha256, p->sha256, sizeof(p->sha256));
	/*
	 * A new generation: the new set's programs, from their first instruction, trust no flow
	 * state the old policy or mode wrote until the flow is judged again. A set-mode too: a
	 * flow report mode let through carries a report-mode judgment (a server-name denial that
	 * did not drop, a would-be denial's missing caps), and one the switch's scan cannot see
	 * would otherwise keep it under enforce.
	 */
	n->cfg.era = loader_era_next(l->cfg.era, l->era_high);
	if (!n->cfg.era) {
		err = -EOVERFLOW; /* (loader_explain) */
		goto fail;
	}
	l->era_high = n->cfg.era; /* never again, whatever becomes of this set */
	/* kept with the run before any program carries it: a writer taking over goes on above */
	err = era_store(l, n->cfg.era);
	if (!err)
		err = cfg_write(n->skel->maps.data_cfg, &n->cfg);
	if (!err)
		err = cfg_freeze(n->skel->maps.data_cfg);
	if (err)
		goto fail;
	/* fill_policy_maps, share_maps and the layers' loaders work on a loader: the new one's */
	shadow.skel = n->skel;
	err = fill_policy_maps(&shadow, c, budgets);
	if (err)
		goto fail;

	n->skb->rodata->sl_cfg_frag_check = l->frag_check; /* before load: the object's image */
	err = next_share(n->skb->obj, n->skel->obj, l->skb ? l->skb->obj : NULL, l, err_buf,
			 err_len);
	if (!err)
		err = sl_skb__load(n->skb);
	if (err)
		goto fail;
	err = next_share(n->surface->obj, n->skel->obj, l->surface ? l->surface->obj : NULL, l,
			 err_buf, err_len);
	if (!err)
		err = sl_surface__load(n->surface);
	if (err)
		goto fail;
	/*
	 * The new decision layer's maps (its policy), else the old host side's own (its report
	 * cache, and the namespace's attribution maps, which it shares with the old packet layer).
	 * One pass: a second one keyed on the old object alone would point the new program back at
	 * the old policy's maps (the host side then judged by the old policy).
	 */
	err = next_share(n->tc->obj, n->skel->obj, l->tc ? l->tc->obj : NULL, l, err_buf,
			 err_len);
	if (!err)
		err = sl_tc__load(n->tc);
	if (err)
		goto fail;
	if (lsm_layer(l)) {
		n->lsm = sl_lsm__open();
		/*
		 * (its cgroup is in the configuration the new set copied, and in the old layer's
		 * sl_run_cgroup, which a resumed writer finds through the connect link's program)
		 */
		err = n->lsm ? next_share(n->lsm->obj, n->skel->obj, l->lsm ? l->lsm->obj : NULL, l,
					  err_buf, err_len) :
			       -errno;
		if (!err)
			err = sl_lsm__load(n->lsm);
		if (err)
			goto fail;
	}
	*out = n;
	return 0;
fail:
	loader_next_free(n);
	return err ? err : -EINVAL;
}

int loader_learned_walk(const struct loader *l, int family,
			int (*fn)(const uint8_t *addr, const struct sl_learned *e, void *ctx),
			void *ctx)
{
	int fd = bpf_map__fd(family == AF_INET ? l->skel->maps.sl_learned4 :
						  l->skel->maps.sl_learned6), err;
	uint8_t key[16], next[16];
	struct sl_learned e;
	void *prev = NULL;

	memset(next, 0, sizeof(next));
	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, sizeof(key));
		prev = key;
		if (bpf_map_lookup_elem(fd, key, &e))
			continue; /* expired and replaced meanwhile */
		err = fn(key, &e, ctx);
		if (err)
			return err;
	}
	return errno == ENOENT ? 0 : -errno;
}

int loader_sni_walk(const struct loader *l,
		    int (*fn)(const uint8_t addr[16], const char *name,
			      const struct sl_sni_name *v, void *ctx),
		    void *ctx)
{
	int fd = bpf_map__fd(l->skel->maps.sl_sni_ok), err;
	struct sl_sni_key key, next;
	char name[SL_SNI_MAX + 1];
	struct sl_sni_name v;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &v) || !key.name_len ||
		    key.name_len > SL_SNI_MAX)
			continue;
		memcpy(name, key.name, key.name_len);
		name[key.name_len] = '\0';
		err = fn(key.addr, name, &v, ctx);
		if (err)
			return err;
	}
	return errno == ENOENT ? 0 : -errno;
}

static struct bpf_map *next_learned(struct loader_next *n, int family)
{
	return family == AF_INET ? n->skel->maps.sl_learned4 : n->skel->maps.sl_learned6;
}

int loader_next_learned_get(struct loader_next *n, int family, const uint8_t *addr,
			    struct sl_learned *e)
{
	uint8_t key[16] = {};

	memcpy(key, addr, family == AF_INET ? 4 : 16);
	if (bpf_map_lookup_elem(bpf_map__fd(next_learned(n, family)), key, e))
		return -errno;
	return 0;
}

int loader_next_learned_put(struct loader_next *n, int family, const uint8_t *addr,
			    const struct sl_learned *e)
{
	struct sl_learned ordered = *e;
	uint8_t key[16] = {};

	/* the switch merges the new policy's rules in: in the new set's order of strictness */
	int err = rules_strictest_fd(bpf_map__fd(n->skel->maps.sl_rule_caps), ordered.rule_ids);

	if (err)
		return err;
	memcpy(key, addr, family == AF_INET ? 4 : 16);
	if (bpf_map_update_elem(bpf_map__fd(next_learned(n, family)), key, &ordered, BPF_ANY))
		return -errno;
	return 0;
}

int loader_next_learned_del(struct loader_next *n, int family, const uint8_t *addr)
{
	uint8_t key[16] = {};

	memcpy(key, addr, family == AF_INET ? 4 : 16);
	if (bpf_map_delete_elem(bpf_map__fd(next_learned(n, family)), key) && errno != ENOENT)
		return -errno;
	return 0;
}

int loader_next_learned_walk(struct loader_next *n, int family,
			     int (*fn)(const uint8_t *addr, const struct sl_learned *e, void *ctx),
			     void *ctx)
{
	struct loader shadow = { .skel = n->skel };

	return loader_learned_walk(&shadow, family, fn, ctx);
}

int loader_next_sni(struct loader_next *n, const uint8_t addr[16], const char *name,
		    const struct sl_sni_name *v)
{
	struct sl_sni_name ordered = *v;
	struct sl_sni_key key;
	size_t len = strlen(name);
	int err;

	if (!len || len > SL_SNI_MAX)
		return -ENAMETOOLONG;
	memset(&key, 0, sizeof(key));
	memcpy(key.addr, addr, sizeof(key.addr));
	key.name_len = (__u16)len;
	memcpy(key.name, name, len); /* as the old map held it: lower-cased already */
	err = rules_strictest_fd(bpf_map__fd(n->skel->maps.sl_rule_caps), ordered.rule_ids);
	if (err)
		return err;
	if (bpf_map_update_elem(bpf_map__fd(n->skel->maps.sl_sni_ok), &key, &ordered, BPF_ANY))
		return -errno;
	return 0;
}

/* The program of the new set at hook i (prog_of's table, for the new skeletons). */
static struct bpf_program *next_prog(const struct loader_next *n, enum loader_prog i)
{
	struct loader shadow = { .skel = n->skel, .skb = n->skb, .surface = n->surface };

	return prog_of(&shadow, i);
}

struct tc_replace {
	struct tc_attachment *a;
	int prog_fd;
};

/* A clsact filter has no link: replace it in place, at its handle (the kernel swaps it). */
static int tc_replace_here(void *arg)
{
	struct tc_replace *t = arg;
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = t->a->peer.ifindex,
		    .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, topts, .prog_fd = t->prog_fd, .handle = t->a->handle,
		    .priority = TC_PRIORITY, .flags = BPF_TC_F_REPLACE);

	return bpf_tc_attach(&hook, &topts);
}

static int tc_move(struct tc_attachment *a, int prog_fd)
{
	struct tc_replace t = { .a = a, .prog_fd = prog_fd };

	if (a->link)
		return bpf_link_update(bpf_link__fd(a->link), prog_fd, NULL) ? -errno : 0;
	if (a->clsact)
		return netdev_in_netns(a->peer.netns_fd, tc_replace_here, &t);
	return 0;
}

/* Pin obj under name in the run's directory in place of what is there (rename is atomic). */
static int repin(const struct loader *l, const char *name, int (*pin)(void *obj, const char *path),
		 void *obj)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	int err;

	if (util_fmt(path, sizeof(path), "%s/%s", l->pin_dir, name) ||
	    util_fmt(tmp, sizeof(tmp), "%s/next-%s", l->pin_dir, name))
		return -ENAMETOOLONG;
	unlink(tmp);
	err = pin(obj, tmp);
	if (err)
		return err;
	if (rename(tmp, path)) {
		err = -errno;
		unlink(tmp);
		return err;
	}
	return 0;
}

static int pin_map(void *obj, const char *path)
{
	return bpf_obj_pin(bpf_map__fd(obj), path) ? -errno : 0;
}

/* (any object's descriptor: a map's, a program's) */
static int pin_fd(void *fd, const char *path)
{
	return bpf_obj_pin(*(int *)fd, path) ? -errno : 0;
}

static int pin_prog(void *obj, const char *path)
{
	return bpf_obj_pin(bpf_program__fd(obj), path) ? -errno : 0;
}

static int pin_link(void *obj, const char *path)
{
	return bpf_link__pin(obj, path);
}

/*
 * The order a switch moves the run's links in: the packet layer first. A flow the new connect
 * programs judged carries the new policy's generation; meeting the old backstop it would be
 * judged in full under the old policy, which could cut a connection the new one allows. The
 * other way round, an old flow meeting the new backstop is judged under the incoming policy.
 */
static const enum loader_prog commit_order[PROG_MAX] = {
	PROG_BACKSTOP,	   PROG_EGRESS,	      PROG_INGRESS,	 PROG_CONNECT4,
	PROG_CONNECT6,	   PROG_SENDMSG4,     PROG_SENDMSG6,	 PROG_RECVMSG4,
	PROG_RECVMSG6,	   PROG_GETPEERNAME4, PROG_GETPEERNAME6, PROG_SOCK_CREATE,
	PROG_SETSOCKOPT,   PROG_SOCK_RELEASE,
};

/*
 * Selftests only (test_switch_kill.sh), SLUICE_SELFTEST_SWITCH_FAIL: "undo" fails the commit's
 * third link move once and the move back of its first one (the commit finishes forward);
 * "stuck" fails that third move every time (the commit can go neither way). What = 'f' (a move
 * forward, the nth in commit_order) or 'b' (a move back).
 */
static bool selftest_move_fails(char what, int nth)
{
	static bool failed_once;
	const char *how = getenv("SLUICE_SELFTEST_SWITCH_FAIL");

	if (!how || (strcmp(how, "undo") && strcmp(how, "stuck")))
		return false;
	errno = EIO;
	if (what == 'b')
		return nth == 0;
	if (nth != 2 || (!strcmp(how, "undo") && failed_once))
		return false;
	failed_once = true;
	return true;
}

void loader_selftest_kill(const char *point)
{
	const char *at = getenv("SLUICE_SELFTEST_KILL");

	if (at && !strcmp(at, point))
		raise(SIGKILL);
}

/*
 * The set a switch's commit moves the run's links to, pinned in the run's directory before the
 * first link moves, as "staged-<name>": each hook's new program under its link's name, the host
 * side's as "staged-tc", the BPF-LSM layer's (its socket-create program; its new connect and
 * sendmsg links, attached beside the old ones from here on: both judge, the stricter wins), and
 * last the new set's configuration, "staged-cfg" (its generation, policy digest and mode; a set
 * staged without it is none). A writer killed while it moved the links leaves each hook running
 * one of two sets; a writer taking the run over finds here the one it was moving to, and
 * finishes the move when that set is the switch the log's open policy_switch_begin announced
 * (reopen_finish_commit). Every end of the commit removes them (unstage): done, undone, the run
 * detached or taken over; but for a commit that could move the links neither back nor forward,
 * which leaves them for the next writer to finish the move with.
 */
#define STAGED_PIN "staged-"

/* The path of the run's staged pin of name (a hook's link name, "tc" or "cfg"). */
static int staged_path(const struct loader *l, const char *name, char path[PATH_MAX])
{
	return util_fmt(path, PATH_MAX, "%s/" STAGED_PIN "%s", l->pin_dir, name);
}

static int stage_one(const struct loader *l, const char *name,
		     int (*pin)(void *obj, const char *path), void *obj)
{
	char path[PATH_MAX];

	if (staged_path(l, name, path))
		return -ENAMETOOLONG;
	return pin(obj, path);
}

/* Every staged pin of the run gone (a set staged whole, in part, or by anyone else). */
static void unstage(const struct loader *l)
{
	struct dirent *e;
	DIR *d;

	if (!l->pin_dir[0] || !(d = opendir(l->pin_dir)))
		return;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, STAGED_PIN, strlen(STAGED_PIN)))
			unpin_name(l, e->d_name);
	closedir(d);
}

/* The new set n staged, before any link of the run moves to it. */
static int stage(const struct loader *l, struct loader_next *n)
{
	int i, err = 0;

	if (n->lsm) {
		n->lsm_staged[1] = bpf_program__attach_lsm(n->lsm->progs.sl_lsm_connect);
		n->lsm_staged[2] = n->lsm_staged[1] ?
					   bpf_program__attach_lsm(n->lsm->progs.sl_lsm_sendmsg) :
					   NULL;
		if (!n->lsm_staged[2])
			return errno ? -errno : -EINVAL; /* (loader_next_free detaches [1]) */
	}
	if (!l->pin_dir[0])
		return 0; /* a run no writer can take over */
	unstage(l); /* one no link runs: a take-over removes it, but it costs nothing */
	for (i = 0; !err && i < PROG_MAX; i++)
		if (l->links[i])
			err = stage_one(l, prog_names[i], pin_prog, next_prog(n, i));
	if (!err && (l->n_tc || l->n_clsact_pins))
		err = stage_one(l, "tc", pin_prog, n->tc->progs.sl_tc_ingress);
	if (!err && n->lsm_staged[1])
		err = stage_one(l, lsm_link_names[0], pin_prog, n->lsm->progs.sl_lsm_socket_create);
	for (i = 1; !err && i < 3 && n->lsm_staged[i]; i++)
		err = stage_one(l, lsm_link_names[i], pin_link, n->lsm_staged[i]);
	if (!err)
		err = stage_one(l, "cfg", pin_map, n->skel->maps.data_cfg);
	if (err)
		unstage(l);
	return err;
}

/*
 * A set staged by a dead writer, opened (fd -1 and id 0 where a pin is absent). The LSM layer's:
 * [0] its socket-create program (a link a writer moves), [1] and [2] its connect and sendmsg
 * links (lsm_fd: the link's; lsm_id, lsm_prog_id: the link's and its program's).
 */
struct staged_set {
	int prog_fd[PROG_MAX], tc_fd, cfg_fd, lsm_fd[3];
	__u32 prog_id[PROG_MAX], tc_id, cfg_id, lsm_id[3], lsm_prog_id[3];
	struct sl_cfg cfg;
};

enum staged_kind { STAGED_PROG, STAGED_MAP, STAGED_LINK };

/* *fd and *id (and a link's program's *prog_id) of staged pin name; 0 with *fd -1 if absent. */
static int staged_open_one(const struct loader *l, const char *name, enum staged_kind kind,
			   int *fd, __u32 *id, __u32 *prog_id)
{
	struct bpf_prog_info pi = {};
	struct bpf_map_info mi = {};
	struct bpf_link_info li = {};
	__u32 len;
	char path[PATH_MAX];
	int err;

	if (staged_path(l, name, path))
		return -ENAMETOOLONG;
	*fd = bpf_obj_get(path);
	if (*fd < 0) {
		*fd = -1;
		return errno == ENOENT ? 0 : -errno;
	}
	switch (kind) {
	case STAGED_MAP:
		len = sizeof(mi);
		err = bpf_map_get_info_by_fd(*fd, &mi, &len);
		*id = mi.id;
		break;
	case STAGED_LINK:
		len = sizeof(li);
		err = bpf_link_get_info_by_fd(*fd, &li, &len);
		*id = li.id;
		*prog_id = li.prog_id;
		break;
	default:
		len = sizeof(pi);
		err = bpf_prog_get_info_by_fd(*fd, &pi, &len);
		*id = pi.id;
	}
	return err ? -errno : 0;
}

static void staged_close(struct staged_set *st)
{
	int i;

	for (i = 0; i < PROG_MAX; i++)
		if (st->prog_fd[i] >= 0)
			close(st->prog_fd[i]);
	for (i = 0; i < 3; i++)
		if (st->lsm_fd[i] >= 0)
			close(st->lsm_fd[i]);
	if (st->tc_fd >= 0)
		close(st->tc_fd);
	if (st->cfg_fd >= 0)
		close(st->cfg_fd);
}

/* The staged set, if there is one (st->cfg_fd < 0: none). */
static int staged_open(const struct loader *l, struct staged_set *st)
{
	char why[512] = "";
	__u32 zero = 0;
	int i, err;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < PROG_MAX; i++)
		st->prog_fd[i] = -1;
	for (i = 0; i < 3; i++)
		st->lsm_fd[i] = -1;
	st->tc_fd = st->cfg_fd = -1;
	err = staged_open_one(l, "cfg", STAGED_MAP, &st->cfg_fd, &st->cfg_id, NULL);
	if (err || st->cfg_fd < 0)
		return err;
	/* a staged configuration of another build would be copied past st->cfg */
	err = loader_map_check(st->cfg_fd, CFG_MAP, why, sizeof(why));
	if (err) {
		fprintf(stderr, "sluice: %s: the staged set's configuration: %s\n", l->pin_dir,
			util_why(why, err));
		return err;
	}
	if (bpf_map_lookup_elem(st->cfg_fd, &zero, &st->cfg))
		return -errno;
	for (i = 0; !err && i < PROG_MAX; i++)
		err = staged_open_one(l, prog_names[i], STAGED_PROG, &st->prog_fd[i],
				      &st->prog_id[i], NULL);
	if (!err)
		err = staged_open_one(l, "tc", STAGED_PROG, &st->tc_fd, &st->tc_id, NULL);
	for (i = 0; !err && i < 3; i++)
		err = staged_open_one(l, lsm_link_names[i], i ? STAGED_LINK : STAGED_PROG,
				      &st->lsm_fd[i], &st->lsm_id[i], &st->lsm_prog_id[i]);
	return err;
}

/* The id of the program a link runs (0: unknown). */
static __u32 link_prog_id(const struct bpf_link *link)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	return bpf_link_get_info_by_fd(bpf_link__fd(link), &info, &len) ? 0 : info.prog_id;
}

/*
 * The set a hook runs program prog_id of: the pinned one (0: a program that reads the pinned
 * configuration, cfg_id, or none), the staged one st (1: the program staged for that hook,
 * staged_id, or one that reads st's configuration), or another (-EXDEV).
 */
static int hook_set(const struct loader *l, __u32 prog_id, __u32 staged_id,
		    const struct staged_set *st, __u32 cfg_id)
{
	__u32 id;
	int fd;

	if (staged_id && prog_id == staged_id)
		return 1;
	fd = bpf_prog_get_fd_by_id(prog_id);
	if (fd < 0)
		return -errno;
	id = prog_cfg_id(l, fd);
	close(fd);
	if (!id || id == cfg_id)
		return 0;
	return id == st->cfg_id ? 1 : -EXDEV;
}

/*
 * Why the staged set st is not the one the log's open switch sw announced, for the run whose
 * pinned configuration is l's; NULL when it is. Only then may a take-over finish moving the
 * links to it: the set must be whole (a program for every hook of the run, one configuration
 * every one of them reads), of this run, and carry the begin line's generation, policy and
 * mode, over the generation the begin line says was in force before.
 */
static const char *staged_mismatch(const struct loader *l, const struct staged_set *st,
				   const struct loader_open_switch *sw)
{
	char sha[65];
	int i;

	if (!sw)
		return "the log announces no switch (no open policy_switch_begin)";
	if (st->cfg.version != SL_CFG_VERSION)
		return "its configuration is not this build's";
	if (st->cfg.era != sw->era)
		return "its generation is not the one the log's policy_switch_begin announced";
	if (l->cfg.era != sw->prev_era)
		return "the generation in force is not the one the policy_switch_begin replaces";
	if (util_hex(st->cfg.run.policy_sha256, sizeof(st->cfg.run.policy_sha256), sha,
		     sizeof(sha)) || strcmp(sha, sw->policy_sha256))
		return "its policy is not the one the log's policy_switch_begin names";
	if (st->cfg.mode != sw->mode)
		return "its mode is not the one the log's policy_switch_begin names";
	if (st->cfg.cgroup_id != l->cfg.cgroup_id || st->cfg.ns_token != l->cfg.ns_token)
		return "it is another run's";
	for (i = 0; i < PROG_MAX; i++)
		if (l->links[i] && (st->prog_fd[i] < 0 || prog_cfg_id(l, st->prog_fd[i]) != st->cfg_id))
			return "its programs are not one set with its configuration";
	if ((l->n_tc || l->n_clsact_pins) &&
	    (st->tc_fd < 0 || prog_cfg_id(l, st->tc_fd) != st->cfg_id))
		return "its host-side program is not one set with its configuration";
	/*
	 * A connect or sendmsg link with no staged pin may be the staged one already: the commit
	 * renames their staged pins over the run's before it re-pins the maps (a writer killed in
	 * between, "in-commit"), and that link then runs a program of the staged set.
	 */
	for (i = 0; i < 3; i++) {
		bool moved = false;
		int fd;
		__u32 id;

		if (!l->lsm_links[i])
			continue;
		if (st->lsm_fd[i] >= 0)
			fd = i ? bpf_prog_get_fd_by_id(st->lsm_prog_id[i]) : dup(st->lsm_fd[0]);
		else if (i)
			fd = link_prog_fd(l->lsm_links[i]), moved = true;
		else
			return "its BPF-LSM layer is not staged";
		id = fd < 0 ? 0 : prog_cfg_id(l, fd);
		if (fd >= 0)
			close(fd);
		if (id != st->cfg_id)
			return moved ? "its BPF-LSM layer is not staged" :
				       "its BPF-LSM programs are not one set with its configuration";
	}
	return NULL;
}

/*
 * The staged connect or sendmsg link i (pinned as STAGED_PIN "lsm-...") takes the run's pin of
 * that hook: the rename replaces the old link's pin at once, and the old link, pinned no more,
 * is detached with its last descriptor (l->lsm_links[i], closed here). The new link is then held
 * through its pin (a handle that names the pin, which loader_detach unpins); *staged, the
 * committing writer's handle of it (NULL: none), is closed. A rename is the only way: libbpf
 * pins a link once (bpf_link__pin of a link it pinned before is -EBUSY), and a second pin made
 * beside the staged one would leave the old link pinned, judging under the old policy for as
 * long as the run lives, and every writer taking the run over refusing it as of two sets.
 */
static int lsm_take_staged(struct loader *l, int i, struct bpf_link **staged)
{
	char from[PATH_MAX], to[PATH_MAX];
	struct bpf_link *link;
	int err;

	if (staged_path(l, lsm_link_names[i], from) ||
	    util_fmt(to, sizeof(to), "%s/%s", l->pin_dir, lsm_link_names[i]))
		return -ENAMETOOLONG;
	if (rename(from, to))
		return -errno;
	err = reopen_link(l->pin_dir, lsm_link_names[i], &link);
	if (err)
		return err;
	bpf_link__destroy(l->lsm_links[i]);
	l->lsm_links[i] = link;
	if (staged) {
		bpf_link__destroy(*staged);
		*staged = NULL;
	}
	return 0;
}

/* Whether reopen_settle_pins pins the run's map the kernel names name (and so checks it). */
static bool settle_pinned(const struct loader *l, const char *name)
{
	char want[BPF_OBJ_NAME_LEN];
	int i;

	for (i = 0; i < MAP_MAX; i++) {
		const char *pinned = bpf_map__name(map_of(l, i));

		if (i != MAP_CFG && !policy_map(pinned))
			continue;
		snprintf(want, sizeof(want), "%s", pinned);
		if (!strcmp(want, name))
			return true;
	}
	return false;
}

/*
 * The maps of the staged program prog_fd (-1: none) that reopen_settle_pins pins once the links
 * run it (settle_pinned) are of this build's shape (loader_map_check): 0, -EPROTO said on stderr
 * (which map, both shapes), -errno. Only those: a map of another build that no pin names is
 * refused where it is read (run_map_entry), and a take-over is not refused for it.
 */
static int staged_maps_check(const struct loader *l, int prog_fd)
{
	__u32 ids[PROG_MAP_IDS_MAX], len;
	char why[512];
	int err = 0, n, i;

	if (prog_fd < 0)
		return 0;
	n = prog_map_ids(prog_fd, ids);
	if (n < 0)
		return n;
	for (i = 0; !err && i < n; i++) {
		struct bpf_map_info mi = {};
		int m = bpf_map_get_fd_by_id(ids[i]);

		len = sizeof(mi);
		if (m < 0)
			continue; /* (gone: nothing of it is pinned) */
		if (bpf_map_get_info_by_fd(m, &mi, &len))
			err = -errno;
		else if (settle_pinned(l, mi.name)) {
			why[0] = '\0';
			err = loader_map_check(m, mi.name, why, sizeof(why));
			if (err)
				fprintf(stderr, "sluice: %s: the staged set's programs: %s\n",
					l->pin_dir, util_why(why, err));
		}
		close(m);
	}
	return err;
}

/*
 * A writer killed inside a switch's commit, while it moved the run's links (loader_next_commit):
 * some hooks run the new set's programs, some the old one's, each enforcing one of two policies.
 * When the new set is staged (see STAGED_PIN) and is the switch the log's open policy_switch_begin
 * announced (sw), every hook still on the old set is moved to it, in the commit's order, and the
 * host side's clsact pins name its program (loader_refind_host_side moves the filters): the commit
 * finished forward, as the dead writer would have, and reopen_settle_pins then makes the pins
 * those of the set the links run. Nothing is done when every hook runs one set (the writer died
 * before its first move, after its undo, or after its last move; or staged nothing whole): the
 * staged pins go once the run is taken (loader_reopen). A staged set that is not sw's is refused
 * (-EXDEV, the run left as it is): a stale or tampered set never decides which policy a run
 * enforces. With none staged, reopen_settle_pins judges the hooks as before.
 */
static int reopen_finish_commit(struct loader *l, const struct loader_open_switch *sw)
{
	struct bpf_map_info mi = {};
	struct staged_set st;
	__u32 len = sizeof(mi);
	/* the hooks on the old set: each cgroup link, each tcx link, the LSM layer's (and clsact) */
	bool old[PROG_MAX] = {}, tc_old[NETDEV_PEERS_MAX] = {}, lsm_old[3] = {};
	const char *why;
	int i, p, set, n_new = 0, n_old = 0, err;

	err = staged_open(l, &st);
	if (err || st.cfg_fd < 0)
		goto out;
	if (bpf_map_get_info_by_fd(bpf_map__fd(l->skel->maps.data_cfg), &mi, &len)) {
		err = -errno;
		goto out;
	}
	for (i = 0; i < PROG_MAX + l->n_tc; i++) {
		bool tc = i >= PROG_MAX;
		struct bpf_link *link = tc ? l->tc_att[i - PROG_MAX].link : l->links[i];

		if (!link)
			continue;
		set = hook_set(l, link_prog_id(link), tc ? st.tc_id : st.prog_id[i], &st, mi.id);
		if (set < 0) {
			err = set;
			goto out;
		}
		*(tc ? &tc_old[i - PROG_MAX] : &old[i]) = !set;
		n_new += set;
		n_old += !set;
	}
	/*
	 * A host side without tcx: a clsact filter runs the program its pin names (the commit
	 * moves the filter, then re-pins), so the pin says its set. Uncounted, a kill before the
	 * filters moved left every counted hook on the new set, and the veth's filter judging under
	 * the old policy while the log said the new one.
	 */
	for (i = 0; i < l->n_clsact_pins; i++) {
		set = hook_set(l, l->clsact_pins[i].prog_id, st.tc_id, &st, mi.id);
		if (set < 0) {
			err = set;
			goto out;
		}
		n_new += set;
		n_old += !set;
	}
	/*
	 * The LSM layer: its socket-create link as a cgroup one; its connect and sendmsg links are
	 * the new set's when their pins are the staged ones (the commit re-pinned them), else the
	 * old ones, the staged new ones judging beside them.
	 */
	for (i = 0; i < 3; i++) {
		struct bpf_link_info li = {};
		__u32 llen = sizeof(li);

		if (!l->lsm_links[i])
			continue;
		if (bpf_link_get_info_by_fd(bpf_link__fd(l->lsm_links[i]), &li, &llen)) {
			err = -errno;
			goto out;
		}
		if (i && st.lsm_id[i] && li.id == st.lsm_id[i])
			set = 1;
		else
			set = hook_set(l, li.prog_id, i ? 0 : st.lsm_id[0], &st, mi.id);
		if (set < 0) {
			err = set;
			goto out;
		}
		lsm_old[i] = !set;
		n_new += set;
		n_old += !set;
	}
	if (!n_new || !n_old)
		goto out; /* every hook on one set: nothing to finish (reopen_settle_pins) */
	why = staged_mismatch(l, &st, sw);
	if (why) {
		fprintf(stderr, "sluice: %s: its writer died while it moved the run's links to a "
				"switch's new programs, and the set it staged cannot be the one to "
				"finish with: %s\n", l->pin_dir, why);
		err = -EXDEV;
		goto out;
	}
	/*
	 * The maps reopen_settle_pins pins from the links' programs, checked before any link
	 * moves: a set of another build's maps is refused with every link as it was found.
	 * (Every layer shares each of those maps by name, next_share: the cgroup programs' and
	 * the host side's cover them.)
	 */
	for (i = 0; !err && i < PROG_MAX; i++)
		err = staged_maps_check(l, st.prog_fd[i]);
	if (!err)
		err = staged_maps_check(l, st.tc_fd);
	if (err)
		goto out;
	for (i = 0; !err && i < PROG_MAX; i++) {
		p = commit_order[i];
		if (old[p] &&
		    bpf_link_update(bpf_link__fd(l->links[p]), st.prog_fd[p], NULL))
			err = -errno;
	}
	for (i = 0; !err && i < l->n_tc; i++)
		if (tc_old[i] &&
		    bpf_link_update(bpf_link__fd(l->tc_att[i].link), st.tc_fd, NULL))
			err = -errno;
	if (!err && lsm_old[0] &&
	    bpf_link_update(bpf_link__fd(l->lsm_links[0]), st.lsm_fd[0], NULL))
		err = -errno;
	/* the staged connect and sendmsg links take the pins: the old ones, unpinned, go */
	for (i = 1; !err && i < 3; i++)
		if (lsm_old[i])
			err = lsm_take_staged(l, i, NULL);
	for (i = 0; !err && i < l->n_clsact_pins; i++) {
		struct clsact_pin *c = &l->clsact_pins[i];

		if (c->prog_id == st.tc_id)
			continue;
		err = repin(l, c->name, pin_fd, &st.tc_fd);
		if (!err) {
			l->clsact_stale_id = c->prog_id;
			c->prog_id = st.tc_id;
		}
	}
	if (err) {
		/* the staged set stays: the next writer to take the run over goes on with it */
		fprintf(stderr, "sluice: %s: finish moving the run's links to the staged programs: "
				"%s\n", l->pin_dir, strerror(-err));
		goto out;
	}
	fprintf(stderr, "sluice: %s: its writer died while it moved the run's links to a switch's "
			"new programs (generation %u): every link is moved to them now\n",
		l->pin_dir, st.cfg.era);
out:
	staged_close(&st);
	return err;
}

/* Links 0..n_links-1 and tc attachments 0..n_tc-1 back to the old programs; how many did not. */
static int commit_undo(struct loader *l, int n_links, int n_tc)
{
	int i, p, failed = 0;

	for (i = n_tc - 1; i >= 0; i--)
		if (tc_move(&l->tc_att[i], run_tc_fd(l))) {
			fprintf(stderr, "sluice: move tc on %s back: %s\n", l->tc_att[i].peer.ifname,
				strerror(errno));
			failed++;
		}
	for (i = n_links - 1; i >= 0; i--) {
		p = commit_order[i];
		if (l->links[p] && (selftest_move_fails('b', i) ||
				    bpf_link_update(bpf_link__fd(l->links[p]), run_prog_fd(l, p),
						    NULL))) {
			fprintf(stderr, "sluice: move %s back: %s\n", prog_names[p],
				strerror(errno));
			failed++;
		}
	}
	return failed;
}

/*
 * Every cgroup link and tc attachment to the new programs, then the LSM layer's socket-create
 * link (its new connect and sendmsg hooks judge beside the old ones since stage()). On a failure
 * *n_links, *n_tc say how far it came (for commit_undo), and the LSM layer is as it was.
 */
static int commit_moves(struct loader *l, struct loader_next *n, int *n_links, int *n_tc,
			char *err_msg, size_t err_len)
{
	int i, p, t = 0, err = 0;

	*n_links = *n_tc = 0;
	for (i = 0; i < PROG_MAX; i++, *n_links = i) {
		p = commit_order[i];
		if (l->links[p] && (selftest_move_fails('f', i) ||
				    bpf_link_update(bpf_link__fd(l->links[p]),
						    bpf_program__fd(next_prog(n, p)), NULL))) {
			err = -errno;
			util_fmt(err_msg, err_len, "update the %s link: %s", prog_names[p],
				 strerror(-err));
			return err;
		}
		/* selftests only (test_switch_kill.sh): killed with four links moved, ten not */
		if (i == 3)
			loader_selftest_kill("in-links");
	}
	/* selftests only: killed with every cgroup link moved, no host side yet */
	loader_selftest_kill("links-moved");
	for (t = 0; t < l->n_tc; t++, *n_tc = t) {
		err = tc_move(&l->tc_att[t], bpf_program__fd(n->tc->progs.sl_tc_ingress));
		if (err) {
			util_fmt(err_msg, err_len, "update the host side on %s: %s",
				 l->tc_att[t].peer.ifname, strerror(-err));
			return err;
		}
		/* selftests only (test_switch_kill.sh): killed with one veth moved, one not */
		if (t == 0 && l->n_tc > 1)
			loader_selftest_kill("in-tc");
	}
	if (n->lsm && l->lsm_links[0] &&
	    bpf_link_update(bpf_link__fd(l->lsm_links[0]),
			    bpf_program__fd(n->lsm->progs.sl_lsm_socket_create), NULL)) {
		err = -errno;
		util_fmt(err_msg, err_len, "update the LSM socket link: %s", strerror(-err));
		return err;
	}
	return 0;
}

/*
 * Every link of the run to the new programs; on a failure, those moved back. The new set is
 * staged first (stage()): a writer killed half-way leaves what a take-over finishes the move
 * with. The LSM layer's hooks that are not cgroup links (connect, sendmsg) cannot be updated:
 * the new ones are attached beside the old ones then (both judge, the stricter wins), and the
 * old ones go once every link is moved.
 * A move back that fails leaves hooks on the new programs: the commit is then finished forward
 * (0), or, failing that too, -ENOTRECOVERABLE: the hooks run programs of both sets, which no
 * log line can name.
 */
int loader_next_commit(struct loader *l, struct loader_next *n, char *err_msg, size_t err_len)
{
	char again[256];
	int i, t, err;

	err = stage(l, n);
	if (err) {
		util_fmt(err_msg, err_len, "stage the new programs (pinned where a writer taking the "
				"run over would finish the commit with them; the new LSM hooks "
				"attached): %s", strerror(-err));
		return err;
	}
	/* selftests only (test_switch_kill.sh): killed with the new set staged, no link moved */
	loader_selftest_kill("staged");
	err = commit_moves(l, n, &i, &t, err_msg, err_len);
	if (err && commit_undo(l, i, t)) {
		fprintf(stderr, "sluice: %s: %s; moving the links back failed: the switch is "
				"finished forward instead\n", l->pin_dir[0] ? l->pin_dir : "switch",
			err_msg);
		if (commit_moves(l, n, &i, &t, again, sizeof(again))) {
			size_t len = strlen(err_msg);

			util_fmt(err_msg + len, err_len - len, "; moving the links back failed, and "
					"forward again too (%s): the run's hooks run programs of both "
					"policies", again);
			/* the staged set stays: the next writer finishes the move with it */
			return -ENOTRECOVERABLE;
		}
		err = 0;
	}
	if (err) {
		unstage(l); /* (the new LSM hooks go with n: loader_next_free) */
		return err;
	}
	/* the new LSM hooks judge alone now: the old ones go, the new ones take their pins */
	for (i = 1; i < 3 && n->lsm_staged[i]; i++) {
		if (l->pin_dir[0]) {
			err = lsm_take_staged(l, i, &n->lsm_staged[i]);
			if (!err)
				continue;
			/*
			 * (not seen: a rename within bpffs) the old link must not judge on, pinned:
			 * the new one, held by this writer only, judges alone
			 */
			fprintf(stderr, "sluice: %s: pin the new %s link: %s; a writer taking the "
					"run over will find no BPF-LSM layer\n", l->pin_dir,
				lsm_link_names[i], strerror(-err));
			bpf_link__unpin(l->lsm_links[i]);
		}
		bpf_link__destroy(l->lsm_links[i]);
		l->lsm_links[i] = n->lsm_staged[i];
		n->lsm_staged[i] = NULL;
	}
	/*
	 * Selftests only (test_switch_kill.sh): killed here, the writer leaves the links on the new
	 * programs and the pins on the old set's maps, for loader_reopen to settle.
	 */
	loader_selftest_kill("in-commit");
	/* a resumed writer reopens the run with the new maps and configuration */
	if (l->maps_pinned) {
		struct loader shadow = { .skel = n->skel };

		for (i = 0; i < MAP_MAX; i++)
			if (policy_map(bpf_map__name(map_of(&shadow, i))) || i == MAP_CFG)
				if (repin(l, map_pin_names[i], pin_map, map_of(&shadow, i)))
					fprintf(stderr, "sluice: pin %s: %s\n", map_pin_names[i],
						strerror(errno));
	}
	for (i = 0; i < l->n_clsact_pins; i++)
		if (repin(l, l->clsact_pins[i].name, pin_prog, n->tc->progs.sl_tc_ingress))
			fprintf(stderr, "sluice: pin %s: %s\n", l->clsact_pins[i].name,
				strerror(errno));
	/* the pins name the new set now: what a take-over would finish the commit with goes */
	unstage(l);

	/* the old programs are freed with their objects: no link holds them any more */
	sl_lsm__destroy(l->lsm);
	sl_tc__destroy(l->tc);
	sl_surface__destroy(l->surface);
	sl_skb__destroy(l->skb);
	sl_sock_addr__destroy(l->skel);
	l->skel = n->skel;
	l->cfg = n->cfg;
	l->skb = n->skb;
	l->surface = n->surface;
	l->tc = n->tc;
	l->lsm = n->lsm;
	free(n);
	/* a resumed writer's view of the old set (reopen_programs): the set it loaded replaces it */
	run_programs_release(l);
	return 0;
}
