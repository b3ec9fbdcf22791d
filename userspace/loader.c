// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <time.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "loader.h"
#include "util.h"
#include "sock_addr.skel.h"
#include "skb.skel.h"
#include "surface.skel.h"
#include "destroy.skel.h"
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
	[PROG_EGRESS] = "egress",
	[PROG_INGRESS] = "ingress",
	[PROG_SOCK_CREATE] = "sock_create",
	[PROG_SETSOCKOPT] = "setsockopt",
	[PROG_SOCK_RELEASE] = "sock_release",
};

struct loader {
	struct sl_sock_addr *skel;
	struct sl_skb *skb;	     /* the packet layer; shares the evidence and TLS maps */
	struct sl_surface *surface;  /* socket kinds and options; shares the evidence maps */
	struct sl_destroy *destroy; /* NULL where the kernel lacks bpf_sock_destroy */
	struct bpf_link *links[PROG_MAX];
	char pin_dir[PATH_MAX];
	int ncpus;
	pthread_mutex_t learn_lock; /* serialises read-merge-write of the learned maps */
};

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
		[PROG_EGRESS] = l->skb->progs.sl_egress,
		[PROG_INGRESS] = l->skb->progs.sl_ingress,
		[PROG_SOCK_CREATE] = l->surface->progs.sl_sock_create,
		[PROG_SETSOCKOPT] = l->surface->progs.sl_setsockopt,
		[PROG_SOCK_RELEASE] = skel->progs.sl_sock_release,
	};

	return progs[i];
}

static bool libbpf_verbose;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !libbpf_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
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

static int fill_policy_maps(struct loader *l, const struct policy_compiled *c)
{
	int fd4 = bpf_map__fd(l->skel->maps.sl_dst4), fd6 = bpf_map__fd(l->skel->maps.sl_dst6);
	int fdr = bpf_map__fd(l->skel->maps.sl_rule_ports);
	int fdc = bpf_map__fd(l->skel->maps.sl_rule_caps);
	size_t i;

	for (i = 0; i < c->n_rule_ports; i++) {
		__u32 key = (__u32)i;

		if (bpf_map_update_elem(fdr, &key, &c->rule_ports[i], BPF_ANY) ||
		    bpf_map_update_elem(fdc, &key, &c->rule_caps[i], BPF_ANY))
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

static int load_packet_layer(struct loader *l, const struct policy *p)
{
	int err = share_maps(l->skb->obj, l);

	if (err)
		return err;
	l->skb->rodata->sl_cfg_mode = p->mode;
	l->skb->rodata->sl_cfg_tls_port = l->skel->rodata->sl_cfg_tls_port;
	return sl_skb__load(l->skb);
}

static int load_surface_layer(struct loader *l)
{
	int err = share_maps(l->surface->obj, l);

	return err ? err : sl_surface__load(l->surface);
}

/* Optional: socket destruction needs bpf_sock_destroy (6.5+); without it denied flows only drop. */
static void load_destroyer(struct loader *l)
{
	libbpf_print_fn_t old = libbpf_set_print(NULL);

	/* a missing kfunc is an expected outcome here, not a warning to print */
	l->destroy = sl_destroy__open_and_load();
	libbpf_set_print(old);
}

int loader_kill_socket(struct loader *l, uint64_t cookie, int netns_fd, uint32_t pid)
{
	struct bpf_link *link = NULL;
	int self_ns = -1, iter_fd = -1, pid_ns = -1, err = 0;
	__u8 one = 1;
	char buf[64];

	if (!l->destroy)
		return -EOPNOTSUPP;
	/* Without --netns the run may still have entered a namespace of its own: the process's. */
	if (netns_fd < 0 && pid && !util_fmt(buf, sizeof(buf), "/proc/%u/ns/net", pid)) {
		pid_ns = open(buf, O_RDONLY | O_CLOEXEC);
		netns_fd = pid_ns;
	}
	if (bpf_map_update_elem(bpf_map__fd(l->destroy->maps.sl_kill), &cookie, &one, BPF_ANY))
		return -errno;
	link = bpf_program__attach_iter(l->destroy->progs.sl_destroy_tcp, NULL);
	if (!link)
		return -errno;
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
out:
	/* found or long gone, the cookie has had its walk: never let sl_kill fill up */
	bpf_map_delete_elem(bpf_map__fd(l->destroy->maps.sl_kill), &cookie);
	if (iter_fd >= 0)
		close(iter_fd);
	if (self_ns >= 0)
		close(self_ns);
	if (pid_ns >= 0)
		close(pid_ns);
	bpf_link__destroy(link);
	return err;
}

struct loader *loader_load(const struct policy *p, const struct policy_compiled *c,
			   const struct loader_opts *opts)
{
	struct loader *l;
	int err;

	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		errno = ENOENT;
		return NULL;
	}
	libbpf_verbose = opts->verbose;
	libbpf_set_print(libbpf_print);

	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	pthread_mutex_init(&l->learn_lock, NULL);
	l->ncpus = libbpf_num_possible_cpus();
	if (l->ncpus <= 0) {
		err = l->ncpus ? l->ncpus : -EINVAL;
		goto err_free;
	}
	l->skel = sl_sock_addr__open();
	if (!l->skel) {
		err = -errno;
		goto err_free;
	}
	l->skb = sl_skb__open();
	l->surface = l->skb ? sl_surface__open() : NULL;
	if (!l->surface) {
		err = -errno;
		sl_skb__destroy(l->skb);
		sl_sock_addr__destroy(l->skel);
		goto err_free;
	}
	l->skel->rodata->sl_cfg_mode = p->mode;
	l->skel->rodata->sl_cfg_default_allow = p->default_verdict == POLICY_DEFAULT_ALLOW;
	l->skel->rodata->sl_cfg_deny_errno = p->deny_errno;
	l->skel->rodata->sl_cfg_wakeup_bytes = opts->wakeup_bytes;
	l->skel->rodata->sl_cfg_dns_port = opts->dns_port;

	/* An LPM trie must have max_entries >= 1, even for a policy with no CIDR rules. */
	err = bpf_map__set_max_entries(l->skel->maps.sl_dst4, c->n_v4 ? c->n_v4 : 1);
	if (!err)
		err = bpf_map__set_max_entries(l->skel->maps.sl_dst6, c->n_v6 ? c->n_v6 : 1);
	if (!err)
		err = bpf_map__set_max_entries(l->skel->maps.sl_events, opts->ringbuf_bytes);
	if (!err)
		err = bpf_map__set_max_entries(l->skel->maps.sl_rule_ports,
					       (__u32)c->n_rule_ports);
	if (!err)
		err = bpf_map__set_max_entries(l->skel->maps.sl_rule_caps,
					       (__u32)c->n_rule_ports);
	if (!err)
		err = bpf_map__set_max_entries(l->skel->maps.sl_learned4,
					       opts->learned_max ? opts->learned_max : 1);
	if (!err)
		err = bpf_map__set_max_entries(l->skel->maps.sl_learned6,
					       opts->learned_max ? opts->learned_max : 1);
	/* (address, name) pairs: an address may serve several names */
	if (!err)
		err = bpf_map__set_max_entries(l->skel->maps.sl_sni_ok,
					       opts->learned_max ? 2 * opts->learned_max : 1);
	if (err)
		goto err_destroy;

	err = sl_sock_addr__load(l->skel);
	if (err)
		goto err_destroy;
	err = fill_policy_maps(l, c);
	if (!err)
		err = load_packet_layer(l, p);
	if (!err)
		err = load_surface_layer(l);
	if (err)
		goto err_destroy;
	load_destroyer(l);
	return l;

err_destroy:
	sl_surface__destroy(l->surface);
	sl_skb__destroy(l->skb);
	sl_sock_addr__destroy(l->skel);
err_free:
	pthread_mutex_destroy(&l->learn_lock);
	free(l);
	/* a libbpf call may fail without an errno: never report success as the reason */
	errno = err ? -err : EINVAL;
	return NULL;
}

int loader_attach(struct loader *l, int cgroup_fd, const char *run_id)
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
	return 0;
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

uint64_t loader_next_seq(const struct loader *l)
{
	__u32 zero = 0;
	__u64 seq = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(l->skel->maps.sl_seq), &zero, &seq))
		return 0;
	return seq;
}

/*
 * Merge rule_id into an address's entry: a CDN address may serve several allowed names. An
 * expired entry starts afresh (its old rules must not revive). -E2BIG when every slot is taken.
 */
static int learned_merge(struct sl_learned *cur, const struct sl_learned *add, uint64_t now_ns)
{
	int i;

	if (cur->expires_ns && cur->expires_ns < now_ns) {
		*cur = *add;
		return 0;
	}
	for (i = 0; i < SL_LEARNED_RULES; i++) {
		if (cur->rule_ids[i] == add->rule_ids[0])
			break;
		if (!cur->rule_ids[i]) {
			cur->rule_ids[i] = add->rule_ids[0];
			break;
		}
	}
	if (i == SL_LEARNED_RULES)
		return -E2BIG;
	/* A TTL-bound entry takes the later expiry; a run-long one stays run-long. */
	if (cur->expires_ns && (!add->expires_ns || add->expires_ns > cur->expires_ns))
		cur->expires_ns = add->expires_ns;
	return 0;
}

int loader_learn(struct loader *l, int family, const uint8_t *addr, uint16_t rule_id,
		 uint32_t host_id, uint64_t expires_ns)
{
	struct bpf_map *map = family == AF_INET ? l->skel->maps.sl_learned4 :
						   l->skel->maps.sl_learned6;
	struct sl_learned add = { .rule_ids = { rule_id }, .host_id = host_id,
				  .expires_ns = expires_ns }, cur;
	uint8_t key[16];
	size_t klen = family == AF_INET ? 4 : 16;
	int fd = bpf_map__fd(map);

	struct timespec now;
	int err = 0;

	memset(key, 0, sizeof(key));
	memcpy(key, addr, klen);
	clock_gettime(CLOCK_BOOTTIME, &now);
	/* The resolver's workers learn concurrently: lookup, merge and update as one step. */
	pthread_mutex_lock(&l->learn_lock);
	if (!bpf_map_lookup_elem(fd, key, &cur)) {
		err = learned_merge(&cur, &add,
				    (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec);
		add = cur;
	}
	if (!err && bpf_map_update_elem(fd, key, &add, BPF_ANY))
		err = -errno;
	pthread_mutex_unlock(&l->learn_lock);
	return err;
}

int loader_sni_learn(struct loader *l, int family, const uint8_t *addr, const char *name,
		     uint32_t host_id)
{
	struct sl_sni_key key = { .name_hash = SL_FNV_OFFSET };
	const unsigned char *c;

	memcpy(key.addr, addr, family == AF_INET ? 4 : 16);
	/* the same FNV-1a 64 over the lower-case name as the egress program */
	for (c = (const unsigned char *)name; *c; c++) {
		key.name_hash ^= (uint64_t)(*c >= 'A' && *c <= 'Z' ? *c + ('a' - 'A') : *c);
		key.name_hash *= SL_FNV_PRIME;
	}
	if (bpf_map_update_elem(bpf_map__fd(l->skel->maps.sl_sni_ok), &key, &host_id, BPF_ANY))
		return -errno;
	return 0;
}

void loader_detach(struct loader *l)
{
	int i;

	if (!l)
		return;
	for (i = 0; i < PROG_MAX; i++) {
		if (!l->links[i])
			continue;
		bpf_link__unpin(l->links[i]);
		bpf_link__destroy(l->links[i]);
		l->links[i] = NULL;
	}
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
	sl_destroy__destroy(l->destroy);
	sl_surface__destroy(l->surface);
	sl_skb__destroy(l->skb);
	sl_sock_addr__destroy(l->skel);
	pthread_mutex_destroy(&l->learn_lock);
	free(l);
}
