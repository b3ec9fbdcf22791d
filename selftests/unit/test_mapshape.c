// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A map of a run another build started is refused before anything of it is read into this
 * build's structs (map_shape_check, against loader_build_map_shape: this build's declared
 * shapes): another value or key size (sl_rule_budget's value read into a __u32, sl_host_bytes'
 * keys into a struct sl_host_key), another type, other flags, and for a map of maps the maps it
 * holds (sl_ns_runs). The refusal names the map and both shapes. A run's map of maps that holds
 * none is taken (nothing of it to read; the kernel checks what is put in). Maps made in the kernel
 * as such a run would hold them are refused the same (loader_map_check), and every map of a set
 * this build loads (a spare) is taken by it: the case that fails if this build's recorded
 * shapes are not those the kernel gives its maps.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tap.h"
#include "../../userspace/loader.h"
#include "../../userspace/mapshape.h"

/* the configuration map's name in the objects (the kernel's ends with it) */
#define CFG_NAME ".data.cfg"

/* this build's shape of name, or the test fails */
#define BUILD(name, s)                                                                             \
	do {                                                                                       \
		int ret_ = loader_build_map_shape(name, &(s));                                     \
		EXPECT(!ret_, "this build's shape of %s: %s", name, strerror(-ret_));               \
	} while (0)

static bool t_value_wider(char *why)
{
	struct map_shape b, r;
	char err[512] = "", want[256];
	int ret;

	BUILD("sl_rule_budget", b);
	EXPECT(b.map.value_size == sizeof(__u32), "sl_rule_budget's value is a __u32: got %u",
	       b.map.value_size);
	r = b;
	r.map.value_size += 8;
	ret = map_shape_check("sl_rule_budget", &r, &b, err, sizeof(err));
	snprintf(want, sizeof(want), "the run's map sl_rule_budget is of another build (type %u, "
		 "key %u, value %u bytes, flags %#x; this build's %u, %u, %u, %#x)", r.map.type,
		 r.map.key_size, r.map.value_size, r.map.map_flags, b.map.type, b.map.key_size,
		 b.map.value_size, b.map.map_flags);
	EXPECT(ret == -EPROTO && strstr(err, want), "refused (-EPROTO), err saying \"%s\"; got %d, "
	       "\"%s\"", want, ret, err);
	return true;
}

/*
 * sl_sni_ok's value was a __u32 (the host id) before it held the name's rules too: a run of
 * such a build is another build's, refused with both shapes said, never read into the struct.
 */
static bool t_sni_value_of_old_build(char *why)
{
	struct map_shape b, r;
	char err[512] = "", want[256];
	int ret;

	BUILD("sl_sni_ok", b);
	EXPECT(b.map.value_size == sizeof(struct sl_sni_name),
	       "sl_sni_ok's value is a struct sl_sni_name (%zu bytes): got %u",
	       sizeof(struct sl_sni_name), b.map.value_size);
	r = b;
	r.map.value_size = sizeof(__u32);
	ret = map_shape_check("sl_sni_ok", &r, &b, err, sizeof(err));
	snprintf(want, sizeof(want), "the run's map sl_sni_ok is of another build (type %u, "
		 "key %u, value 4 bytes, flags %#x; this build's %u, %u, %u, %#x)", r.map.type,
		 r.map.key_size, r.map.map_flags, b.map.type, b.map.key_size, b.map.value_size,
		 b.map.map_flags);
	EXPECT(ret == -EPROTO && strstr(err, want), "refused (-EPROTO), err saying \"%s\"; got %d, "
	       "\"%s\"", want, ret, err);
	return true;
}

static bool t_key_wider(char *why)
{
	struct map_shape b, r;
	char err[512] = "";

	BUILD("sl_host_bytes", b);
	r = b;
	r.map.key_size += 8;
	EXPECT(map_shape_check("sl_host_bytes", &r, &b, err, sizeof(err)) == -EPROTO &&
	       strstr(err, "sl_host_bytes"),
	       "a key 8 bytes wider is refused, naming sl_host_bytes; got \"%s\"", err);
	return true;
}

static bool t_type(char *why)
{
	struct map_shape b, r;
	char err[512] = "";

	BUILD("sl_host_bytes", b);
	r = b;
	r.map.type = b.map.type == BPF_MAP_TYPE_HASH ? BPF_MAP_TYPE_LRU_HASH : BPF_MAP_TYPE_HASH;
	EXPECT(map_shape_check("sl_host_bytes", &r, &b, err, sizeof(err)) == -EPROTO,
	       "another type is refused; got \"%s\"", err);
	return true;
}

static bool t_flags(char *why)
{
	struct map_shape b, r;
	char err[512] = "";

	BUILD("sl_host_bytes", b);
	r = b;
	r.map.map_flags ^= BPF_F_NO_PREALLOC;
	EXPECT(map_shape_check("sl_host_bytes", &r, &b, err, sizeof(err)) == -EPROTO &&
	       strstr(err, "flags"), "other flags are refused, saying so; got \"%s\"", err);
	return true;
}

static bool t_inner(char *why)
{
	struct map_shape b, r;
	char err[512] = "";

	BUILD("sl_ns_runs", b);
	EXPECT(b.inner_known && b.inner.type == BPF_MAP_TYPE_HASH,
	       "this build's sl_ns_runs holds hash maps (its inner map's shape known)");
	r = b;
	r.inner.value_size += 8;
	EXPECT(map_shape_check("sl_ns_runs", &r, &b, err, sizeof(err)) == -EPROTO &&
	       strstr(err, "the run's map sl_ns_runs holds maps of another build"),
	       "a held map of another shape is refused, named so; got \"%s\"", err);
	r = b;
	r.inner.map_flags |= BPF_F_NO_PREALLOC;
	EXPECT(map_shape_check("sl_ns_runs", &r, &b, err, sizeof(err)) == -EPROTO,
	       "a held map of other flags is refused; got \"%s\"", err);
	r.inner_known = false; /* the run's holds none */
	err[0] = '\0';
	EXPECT(!map_shape_check("sl_ns_runs", &r, &b, err, sizeof(err)),
	       "a run's map of maps that holds none is taken; got \"%s\"", err);
	return true;
}

static bool t_unknown(char *why)
{
	struct map_shape b;
	int ret = loader_build_map_shape("sl_no_such_map", &b);

	EXPECT(ret == -ENOENT, "a name this build has no map of is -ENOENT: got %d", ret);
	return true;
}

/*
 * Maps the kernel holds, made as another build's run would have them, through loader_map_check
 * (what every reader of a run's pins and collected maps goes through): the shapes are read from
 * the kernel, a map of maps' from the map it holds. Needs CAP_BPF: a TAP SKIP without (skipped
 * says why).
 */
static bool privileged = true;
static const char *skipped;

static int made(enum bpf_map_type type, const char *name, __u32 key, __u32 value, int inner)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .inner_map_fd = inner >= 0 ? (__u32)inner : 0);
	int fd = bpf_map_create(type, name, key, value, 1, inner >= 0 ? &opts : NULL);

	if (fd < 0 && (errno == EPERM || errno == EACCES))
		privileged = false;
	return fd;
}

static bool t_kernel_maps(char *why)
{
	struct map_shape b;
	char err[512] = "";
	int fd, inner, outer, ret;
	__u32 zero = 0;

	BUILD("sl_rule_budget", b);
	fd = made(b.map.type, "sl_rule_budget", b.map.key_size, b.map.value_size + 8, -1);
	if (fd < 0 && !privileged) {
		skipped = "making a map needs CAP_BPF";
		return true;
	}
	EXPECT(fd >= 0, "make a map: %s", strerror(errno));
	ret = loader_map_check(fd, "sl_rule_budget", err, sizeof(err));
	close(fd);
	EXPECT(ret == -EPROTO && strstr(err, "sl_rule_budget is of another build"),
	       "a kernel's sl_rule_budget 8 bytes wider is refused: got %d, \"%s\"", ret, err);
	fd = made(b.map.type, "sl_rule_budget", b.map.key_size, b.map.value_size, -1);
	EXPECT(fd >= 0, "make a map: %s", strerror(errno));
	ret = loader_map_check(fd, "sl_rule_budget", err, sizeof(err));
	close(fd);
	EXPECT(!ret, "a kernel's sl_rule_budget of this build's shape is taken: got %d, \"%s\"",
	       ret, err);

	/* sl_ns_runs holding a runs map 8 bytes wider in value, then holding none */
	BUILD("sl_ns_runs", b);
	inner = made(b.inner.type, "sl_ns_runs", b.inner.key_size, b.inner.value_size + 8, -1);
	EXPECT(inner >= 0, "make a map: %s", strerror(errno));
	outer = made(b.map.type, "sl_ns_runs", b.map.key_size, b.map.value_size, inner);
	EXPECT(outer >= 0, "make a map of maps: %s", strerror(errno));
	ret = bpf_map_update_elem(outer, &zero, &inner, BPF_ANY) ? -errno : 0;
	EXPECT(!ret, "put the map into the map of maps: %s", strerror(-ret));
	ret = loader_map_check(outer, "sl_ns_runs", err, sizeof(err));
	EXPECT(ret == -EPROTO && strstr(err, "sl_ns_runs holds maps of another build"),
	       "sl_ns_runs holding a wider map is refused: got %d, \"%s\"", ret, err);
	bpf_map_delete_elem(outer, &zero);
	ret = loader_map_check(outer, "sl_ns_runs", err, sizeof(err));
	close(outer);
	close(inner);
	EXPECT(!ret, "sl_ns_runs holding none is taken: got %d, \"%s\"", ret, err);
	return true;
}

/*
 * A spare (a whole set, loaded as for a run: loader_load_spare) holds maps as the kernel made
 * them from this build's objects, flags it adds or changes at creation included: each one of a
 * name this build's shapes know is taken by loader_map_check, as a take-over by this same build
 * must take it; the namespace's runs map it made (named as the slot that holds it) is of the
 * shape of the maps that slot holds. The spare's maps are found as this process's descriptors.
 * Each map userspace reads from a run of another process must be among them.
 */
static bool t_spare_maps(char *why)
{
	static const char *const must[] = { "sl_rule_budget", "sl_host_bytes", "sl_ns_runs",
					    "sl_ns_flows", "sl_learned4", "sl_learned6",
					    "sl_destroying", "sl_dns_clients", "sl_log_state",
					    CFG_NAME };
	const struct loader_caps caps = { .v4 = 4, .v6 = 4, .rules = 4, .ringbuf_bytes = 1 << 16,
					  .learned_max = 16, .host_totals = true };
	bool checked[ARRAY_SIZE(must)] = {};
	char err[512], path[300], link[64];
	struct loader *l = loader_load_spare(&caps, false);
	struct map_shape b;
	const char *name;
	struct dirent *e;
	int n = 0, ret;
	size_t nl;
	DIR *d;

	if (!l && (errno == EPERM || errno == EACCES)) {
		skipped = "loading a set needs CAP_BPF";
		return true;
	}
	EXPECT(l, "load a spare: %s", strerror(errno));
	d = opendir("/proc/self/fd");
	EXPECT(d, "open /proc/self/fd: %s", strerror(errno));
	while ((e = readdir(d))) {
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);
		int fd = atoi(e->d_name);
		ssize_t m;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		m = readlink(path, link, sizeof(link) - 1);
		if (m < 0 || e->d_name[0] == '.')
			continue;
		link[m] = '\0';
		if (strcmp(link, "anon_inode:bpf-map") || bpf_map_get_info_by_fd(fd, &info, &len))
			continue;
		name = info.name;
		/*
		 * the configuration, which the kernel names "<object>.data.cfg" cut to 15 bytes:
		 * its flags are the ones cfg_map_prepare loads it with (read-only to the programs,
		 * never mapped), which a take-over's staged configuration must match
		 */
		nl = strlen(name);
		if (nl >= strlen(CFG_NAME) && !strcmp(name + nl - strlen(CFG_NAME), CFG_NAME))
			name = CFG_NAME;
		if (loader_build_map_shape(name, &b))
			continue;
		err[0] = '\0';
		if (b.inner_known && info.type == b.inner.type) {
			/*
			 * the namespace's own runs map (ns_map_create), named as the slot made to
			 * hold it: of the build's held-map shape
			 */
			struct map_shape held = { .map = { info.type, info.key_size,
							   info.value_size, info.map_flags } };

			b.map = b.inner;
			b.inner_known = false;
			ret = map_shape_check(name, &held, &b, err, sizeof(err));
		} else {
			ret = loader_map_check(fd, name, err, sizeof(err));
		}
		if (ret) {
			closedir(d);
			loader_destroy(l);
		}
		EXPECT(!ret, "the spare's %s is taken: got %d, \"%s\"", info.name, ret, err);
		for (size_t i = 0; i < ARRAY_SIZE(must); i++)
			checked[i] |= !strcmp(name, must[i]);
		n++;
	}
	closedir(d);
	loader_destroy(l);
	for (size_t i = 0; i < ARRAY_SIZE(must); i++)
		EXPECT(checked[i], "the spare's %s among the maps checked (%d checked)", must[i], n);
	return true;
}

static const struct {
	bool (*fn)(char *why);
	const char *name;
} cases[] = {
	{t_spare_maps, "a spare's maps, as the kernel made them from this build's objects: taken"},
	{t_value_wider, "sl_rule_budget 8 bytes wider in value: refused, named, both shapes said"},
	{t_sni_value_of_old_build, "sl_sni_ok of a build whose value was the host id alone: refused, "
				   "both shapes said"},
	{t_key_wider, "sl_host_bytes 8 bytes wider in key: refused, named"},
	{t_type, "another type: refused"},
	{t_flags, "other flags: refused, saying so"},
	{t_inner, "sl_ns_runs holding maps of another shape or flags: refused; holding none: taken"},
	{t_unknown, "a name this build has no map of: -ENOENT"},
	{t_kernel_maps, "maps in the kernel: sl_rule_budget wider refused, of this build's shape "
			"taken; sl_ns_runs holding a wider map refused, holding none taken"},
};

int main(void)
{
	char why[WHY_LEN];

	printf("TAP version 13\n1..%zu\n", ARRAY_SIZE(cases));
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		bool ok;

		why[0] = '\0';
		skipped = NULL;
		ok = cases[i].fn(why);
		if (ok && skipped)
			report_skip(cases[i].name, skipped);
		else
			report(ok, cases[i].name, why);
	}
	return tap_status();
}
