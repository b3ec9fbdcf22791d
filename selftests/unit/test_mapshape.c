// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A map of a run another build started is refused before anything of it is read into this
 * build's structs (map_shape_check, against loader_build_map_shape: this build's declared
 * shapes): another value or key size (sl_rule_budget's value read into a __u32, sl_host_bytes'
 * keys into a struct sl_host_key), another type, other flags, and for a map of maps the maps it
 * holds (sl_ns_runs). The refusal names the map and both shapes. A run's map of maps that holds
 * none is taken (nothing of it to read; the kernel checks what is put in).
 */
#include <errno.h>
#include <string.h>
#include <linux/bpf.h>

#include "tap.h"
#include "../../userspace/loader.h"
#include "../../userspace/mapshape.h"

/* this build's shape of name, or the test fails */
#define BUILD(name, s)                                                                             \
	do {                                                                                       \
		int ret_ = loader_build_map_shape(name, &(s));                                     \
		EXPECT(!ret_, "this build's shape of %s: %s", name, strerror(-ret_));               \
	} while (0)

static bool t_same(char *why)
{
	static const char *const names[] = { "sl_rule_budget", "sl_host_bytes", "sl_ns_runs",
					     "sl_ns_flows", ".data.cfg", "sl_sk_flow" };
	struct map_shape b;
	char err[512] = "";

	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		BUILD(names[i], b);
		EXPECT(!map_shape_check(names[i], &b, &b, err, sizeof(err)) && !err[0],
		       "%s of this build's shape is taken; got: %s", names[i], err);
	}
	return true;
}

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
	/* the configuration's as loaded: read-only to the programs, never mapped (cfg_map_prepare) */
	BUILD(".data.cfg", b);
	EXPECT((b.map.map_flags & BPF_F_RDONLY_PROG) && !(b.map.map_flags & BPF_F_MMAPABLE),
	       "this build's .data.cfg flags are those it is loaded with: got %#x",
	       b.map.map_flags);
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

static const struct {
	bool (*fn)(char *why);
	const char *name;
} cases[] = {
	{t_same, "a run's map of this build's shape is taken"},
	{t_value_wider, "sl_rule_budget 8 bytes wider in value: refused, named, both shapes said"},
	{t_key_wider, "sl_host_bytes 8 bytes wider in key: refused, named"},
	{t_type, "another type: refused"},
	{t_flags, "other flags: refused; .data.cfg's are those it is loaded with"},
	{t_inner, "sl_ns_runs holding maps of another shape or flags: refused; holding none: taken"},
	{t_unknown, "a name this build has no map of: -ENOENT"},
};

int main(void)
{
	char why[WHY_LEN];

	printf("TAP version 13\n1..%zu\n", ARRAY_SIZE(cases));
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		why[0] = '\0';
		report(cases[i].fn(why), cases[i].name, why);
	}
	return tap_status();
}
