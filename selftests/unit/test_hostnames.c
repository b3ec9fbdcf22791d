// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of userspace/hostnames.c, the run's host-name registry: ids are dense from 1, a name
 * keeps its id, names that collide in the index stay apart (a hash is not a name), lookups of
 * unknown ids and names say so, and the registry stops at SL_HOSTS_MAX names instead of reusing
 * an id. Four threads interning the same names at once get the same ids. Which names an address
 * was answered for, by a given time, and what a refused answer takes back of it.
 *
 * Usage: test_hostnames   TAP 13; exits 1 if any test failed. Needs no root.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/types.h>

#include "bpf/sluice.h"
#include "userspace/hostnames.h"
#include "tap.h"

static bool t_dense(char *why)
{
	struct hostnames *h = hostnames_new();
	char buf[64];
	uint32_t a = hostnames_intern(h, NULL, "a.example"), b = hostnames_intern(h, NULL, "b.example");
	uint32_t a2 = hostnames_intern(h, NULL, "a.example");
	const char *n = hostnames_name(h, 2, buf, sizeof(buf));
	bool ok = a == 1 && b == 2 && a2 == 1 && n && !strcmp(n, "b.example") &&
		  hostnames_id(h, "b.example") == 2;

	snprintf(why, WHY_LEN, "expected ids 1, 2, 1 and name 2 b.example; got %u, %u, %u, %s",
		 a, b, a2, n ? n : "(none)");
	hostnames_free(h);
	return ok;
}

static bool t_unknown(char *why)
{
	struct hostnames *h = hostnames_new();
	char buf[64];
	bool ok;

	hostnames_intern(h, NULL, "a.example");
	ok = !hostnames_name(h, 0, buf, sizeof(buf)) && !hostnames_name(h, 2, buf, sizeof(buf)) &&
	     !hostnames_id(h, "b.example") && !hostnames_name(NULL, 1, buf, sizeof(buf)) &&
	     !hostnames_id(NULL, "a.example");
	snprintf(why, WHY_LEN, "expected no name for ids 0 and 2, no id for b.example");
	hostnames_free(h);
	return ok;
}

/* 20,000 names: the index grows many times, and every name keeps its own id. */
static bool t_many(char *why)
{
	struct hostnames *h = hostnames_new();
	char name[64], buf[64];
	uint32_t i;
	bool ok = true;

	for (i = 1; ok && i <= 20000; i++) {
		snprintf(name, sizeof(name), "h%u.example", i);
		ok = hostnames_intern(h, NULL, name) == i;
	}
	for (i = 1; ok && i <= 20000; i++) {
		snprintf(name, sizeof(name), "h%u.example", i);
		ok = hostnames_id(h, name) == i && hostnames_name(h, i, buf, sizeof(buf)) &&
		     !strcmp(buf, name);
	}
	snprintf(why, WHY_LEN, "name h%u.example lost its id or name", i - 1);
	hostnames_free(h);
	return ok;
}

/* 676 two-letter names: many share index slots (linear probing), none may take another's id. */
static bool t_collisions(char *why)
{
	struct hostnames *h = hostnames_new();
	char name[8];
	uint32_t i, id;
	bool ok = true;

	/* 2-letter names fill a 128-slot index half full before it grows: probes chain */
	for (i = 0; i < 26 * 26 && ok; i++) {
		snprintf(name, sizeof(name), "%c%c", 'a' + i / 26, 'a' + i % 26);
		ok = hostnames_intern(h, NULL, name) == i + 1;
	}
	for (i = 0; i < 26 * 26 && ok; i++) {
		snprintf(name, sizeof(name), "%c%c", 'a' + i / 26, 'a' + i % 26);
		id = hostnames_id(h, name);
		ok = id == i + 1;
	}
	snprintf(why, WHY_LEN, "name %s: expected id %u", name, i);
	hostnames_free(h);
	return ok;
}

static bool t_full(char *why)
{
	struct hostnames *h = hostnames_new();
	char name[64];
	uint32_t i, last = 0, over;
	int over_errno;

	for (i = 1; i <= SL_HOSTS_MAX; i++) {
		snprintf(name, sizeof(name), "n%u", i);
		last = hostnames_intern(h, NULL, name);
	}
	errno = 0;
	over = hostnames_intern(h, NULL, "one-too-many.example");
	over_errno = errno;
	snprintf(why, WHY_LEN, "expected the %dth name id %d and none after (ENOSPC); got %u and %u "
		 "(%s)", SL_HOSTS_MAX, SL_HOSTS_MAX, last, over, strerror(over_errno));
	i = hostnames_intern(h, NULL, "n1");
	hostnames_free(h);
	return last == SL_HOSTS_MAX && over == 0 && over_errno == ENOSPC && i == 1;
}

/*
 * Which names an address was answered for, by the time of a record: a name answered after it
 * is not one the record's connection could have been for; a name answered again keeps its first
 * time; addresses are whole 16-byte keys (an IPv4 one is not an IPv6 one that starts alike).
 */
static bool t_sharing(char *why)
{
	struct hostnames *h = hostnames_new();
	uint8_t x[16] = { 198, 51, 100, 16 }, y[16] = { 198, 51, 100, 17 };
	uint8_t x6[16] = { 198, 51, 100, 16, 1 };
	uint32_t a = hostnames_intern(h, NULL, "a.example");
	uint32_t b = hostnames_intern(h, NULL, "b.example");
	uint32_t ids[4] = {}, one[1] = {};
	size_t before, at_b, later, capped, other, none, listed;

	int new_a, new_b, again_a;

	new_a = hostnames_answered(h, x, a, 10, false);
	new_b = hostnames_answered(h, x, b, 20, false);
	again_a = hostnames_answered(h, x, a, 30, true);
	hostnames_answered(h, y, b, 5, false);
	before = hostnames_sharing(h, x, 15, ids, 4, &listed);
	at_b = hostnames_sharing(h, x, 20, ids, 4, &listed);
	later = hostnames_sharing(h, x, 100, ids, 4, &listed);
	capped = hostnames_sharing(h, x, 100, one, 1, &listed);
	other = hostnames_sharing(h, y, 100, ids + 2, 2, &listed);
	none = hostnames_sharing(h, x6, 100, ids + 3, 1, &listed);
	snprintf(why, WHY_LEN,
		 "expected 1, 2, 2 names (a then b), 2 counted with 1 listed (a), y: 1 (b), x6: 0; "
		 "got %zu, %zu, %zu (%u %u), %zu (%u), %zu (%u), %zu",
		 before, at_b, later, ids[0], ids[1], capped, one[0], other, ids[2], none);
	hostnames_free(h);
	return new_a == 1 && new_b == 1 && again_a == 0 &&
	       before == 1 && at_b == 2 && later == 2 && ids[0] == a && ids[1] == b &&
	       capped == 2 && one[0] == a && other == 1 && ids[2] == b && none == 0 &&
	       !hostnames_sharing(NULL, x, 100, ids, 4, &listed);
}

/*
 * An address keeps its first HOSTNAMES_KEPT names and counts the rest, each once (a pair the
 * run kept already is not counted again), so that many names on one address cost a record no
 * more than HOSTNAMES_KEPT; the counted ones count from when the first of them was answered.
 */
static bool t_kept(char *why)
{
	struct hostnames *h = hostnames_new();
	uint8_t x[16] = { 198, 51, 100, 18 };
	uint32_t ids[HOSTNAMES_KEPT + 4] = {}, id[HOSTNAMES_KEPT + 3];
	size_t i, kept = 0, counted = 0, all, early, again, listed;
	char name[32];

	for (i = 0; i < HOSTNAMES_KEPT + 3; i++) {
		snprintf(name, sizeof(name), "n%zu.example", i);
		id[i] = hostnames_intern(h, NULL, name);
		switch (hostnames_answered(h, x, id[i], 10 + i, false)) {
		case 1:
			kept++;
			break;
		case 2:
			counted++;
			break;
		}
	}
	/* answered again: the kept one is known, a counted one's pair was kept already */
	again = (size_t)hostnames_answered(h, x, id[0], 100, true) +
		(size_t)hostnames_answered(h, x, id[HOSTNAMES_KEPT + 1], 100, true);
	all = hostnames_sharing(h, x, 1000, ids, HOSTNAMES_KEPT + 4, &listed);
	early = hostnames_sharing(h, x, 10 + HOSTNAMES_KEPT - 1, ids, HOSTNAMES_KEPT + 4, &listed);
	snprintf(why, WHY_LEN,
		 "expected %d kept, 3 counted, nothing again, %d in all, %d before the counted; "
		 "got %zu, %zu, %zu, %zu, %zu (last id listed %u, want %u)",
		 HOSTNAMES_KEPT, HOSTNAMES_KEPT + 3, HOSTNAMES_KEPT, kept, counted, again, all,
		 early, ids[HOSTNAMES_KEPT - 1], id[HOSTNAMES_KEPT - 1]);
	hostnames_free(h);
	return kept == HOSTNAMES_KEPT && counted == 3 && again == 0 &&
	       all == HOSTNAMES_KEPT + 3 && early == HOSTNAMES_KEPT &&
	       ids[HOSTNAMES_KEPT - 1] == id[HOSTNAMES_KEPT - 1] && !ids[HOSTNAMES_KEPT];
}

/*
 * An answer refused after its pairs were written takes back the names it added (a kept one, a
 * counted one), and only those: a record must not list a name the address was never given for.
 */
static bool t_unanswer(char *why)
{
	struct hostnames *h = hostnames_new();
	uint8_t x[16] = { 198, 51, 100, 19 };
	uint32_t ids[HOSTNAMES_KEPT + 2] = {}, id[HOSTNAMES_KEPT + 1];
	struct hostnames_added kept = { .index = 1 }, counted = { .index = 2 }, none = {};
	size_t i, before, after_counted, after_kept, after_none, listed;
	char name[32];
	int err;

	for (i = 0; i < HOSTNAMES_KEPT + 1; i++) {
		snprintf(name, sizeof(name), "u%zu.example", i);
		id[i] = hostnames_intern(h, NULL, name);
		hostnames_answered(h, x, id[i], 10, false);
	}
	before = hostnames_sharing(h, x, 100, ids, HOSTNAMES_KEPT + 2, &listed);
	err = hostnames_unanswer_pair(h, NULL, AF_INET, x, "u17.example", id[HOSTNAMES_KEPT],
				      &counted);
	after_counted = hostnames_sharing(h, x, 100, ids, HOSTNAMES_KEPT + 2, &listed);
	err |= hostnames_unanswer_pair(h, NULL, AF_INET, x, "u1.example", id[1], &kept);
	after_kept = hostnames_sharing(h, x, 100, ids, HOSTNAMES_KEPT + 2, &listed);
	/* an answer that added nothing (the name was there before it) takes nothing back */
	err |= hostnames_unanswer_pair(h, NULL, AF_INET, x, "u0.example", id[0], &none);
	after_none = hostnames_sharing(h, x, 100, ids, HOSTNAMES_KEPT + 2, &listed);
	snprintf(why, WHY_LEN,
		 "expected %d names, then %d, %d, %d with u0 and u2 first, err 0; got %zu, %zu, %zu, "
		 "%zu (%u %u, want %u %u), err %d",
		 HOSTNAMES_KEPT + 1, HOSTNAMES_KEPT, HOSTNAMES_KEPT - 1, HOSTNAMES_KEPT - 1, before,
		 after_counted, after_kept, after_none, ids[0], ids[1], id[0], id[2], err);
	hostnames_free(h);
	return !err && before == HOSTNAMES_KEPT + 1 && after_counted == HOSTNAMES_KEPT &&
	       after_kept == HOSTNAMES_KEPT - 1 && after_none == HOSTNAMES_KEPT - 1 &&
	       ids[0] == id[0] && ids[1] == id[2];
}

/*
 * A kept name answered after a record's time is not listed, though a counted one before it is
 * counted (a kept name taken back made room for a later one): the count says how many were
 * answered by then, listed how many ids it wrote, and a record reads only those.
 */
static bool t_listed(char *why)
{
	struct hostnames *h = hostnames_new();
	uint8_t x[16] = { 198, 51, 100, 20 };
	uint32_t ids[HOSTNAMES_KEPT + 1], id[HOSTNAMES_KEPT + 1];
	size_t i, n, listed = 99;
	char name[32];

	for (i = 0; i < HOSTNAMES_KEPT + 1; i++) {
		snprintf(name, sizeof(name), "l%zu.example", i);
		id[i] = hostnames_intern(h, NULL, name);
	}
	for (i = 0; i < HOSTNAMES_KEPT - 1; i++)
		hostnames_answered(h, x, id[i], 10 + i, false);
	hostnames_answered(h, x, id[HOSTNAMES_KEPT - 1], 100, false); /* kept, after the record */
	hostnames_answered(h, x, id[HOSTNAMES_KEPT], 50, false);      /* counted, before it */
	memset(ids, 0, sizeof(ids));
	n = hostnames_sharing(h, x, 60, ids, HOSTNAMES_KEPT + 1, &listed);
	snprintf(why, WHY_LEN, "expected %d names, %d listed (last %u); got %zu, %zu (last %u)",
		 HOSTNAMES_KEPT, HOSTNAMES_KEPT - 1, id[HOSTNAMES_KEPT - 2], n, listed,
		 listed ? ids[listed - 1] : 0);
	hostnames_free(h);
	return n == HOSTNAMES_KEPT && listed == HOSTNAMES_KEPT - 1 &&
	       ids[HOSTNAMES_KEPT - 2] == id[HOSTNAMES_KEPT - 2] && !ids[HOSTNAMES_KEPT - 1];
}

/*
 * An address's index key is the one the kernel judges: an IPv6 form that carries an IPv4
 * address for the policy (::ffff:, 64:ff9b::/96, ::a.b.c.d) is that IPv4 address, so that an
 * AAAA answer and an A answer for one host are one address; any other IPv6 address is itself.
 */
static bool t_addr_key(char *why)
{
	static const uint8_t v4[4] = { 198, 51, 100, 16 };
	static const uint8_t mapped[16] = { [10] = 0xff, 0xff, 198, 51, 100, 16 };
	static const uint8_t nat64[16] = { 0, 0x64, 0xff, 0x9b, [12] = 198, 51, 100, 16 };
	static const uint8_t native[16] = { 0x20, 0x01, 0x0d, 0xb8, [12] = 198, 51, 100, 16 };
	uint8_t k4[16], km[16], kn[16], kv[16];

	hostnames_addr_key(AF_INET, v4, k4);
	hostnames_addr_key(AF_INET6, mapped, km);
	hostnames_addr_key(AF_INET6, nat64, kn);
	hostnames_addr_key(AF_INET6, native, kv);
	snprintf(why, WHY_LEN, "mapped %s, nat64 %s the IPv4 key; native %s itself",
		 memcmp(km, k4, 16) ? "is not" : "is", memcmp(kn, k4, 16) ? "is not" : "is",
		 memcmp(kv, native, 16) ? "is not" : "is");
	return !memcmp(k4, (uint8_t[16]){ 198, 51, 100, 16 }, 16) && !memcmp(km, k4, 16) &&
	       !memcmp(kn, k4, 16) && !memcmp(kv, native, 16);
}

static struct hostnames *shared;
static uint32_t seen[4][100];

static void *intern_all(void *arg)
{
	long t = (long)arg;
	char name[32];
	int i;

	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "t%d.example", (i * 7 + (int)t * 13) % 100);
		seen[t][(i * 7 + (int)t * 13) % 100] = hostnames_intern(shared, NULL, name);
	}
	return NULL;
}

static bool t_threads(char *why)
{
	pthread_t th[4];
	long t;
	int i;
	bool ok = true;

	shared = hostnames_new();
	for (t = 0; t < 4; t++)
		pthread_create(&th[t], NULL, intern_all, (void *)t);
	for (t = 0; t < 4; t++)
		pthread_join(th[t], NULL);
	for (i = 0; i < 100 && ok; i++)
		ok = seen[0][i] && seen[0][i] == seen[1][i] && seen[1][i] == seen[2][i] &&
		     seen[2][i] == seen[3][i] && seen[0][i] <= 100;
	snprintf(why, WHY_LEN, "name t%d.example: ids %u %u %u %u", i - 1, seen[0][i - 1],
		 seen[1][i - 1], seen[2][i - 1], seen[3][i - 1]);
	hostnames_free(shared);
	return ok;
}

int main(void)
{
	static const struct {
		const char *name;
		bool (*fn)(char *why);
	} tests[] = {
		{ "ids are dense from 1 and a name keeps its id", t_dense },
		{ "unknown ids and names have none", t_unknown },
		{ "20,000 names keep their ids as the index grows", t_many },
		{ "names sharing index slots stay apart", t_collisions },
		{ "full at SL_HOSTS_MAX: no id is reused, known names still answer", t_full },
		{ "threads interning the same names get the same ids", t_threads },
		{ "an address's names, as answered by a record's time", t_sharing },
		{ "an address keeps 17 names and counts the rest once", t_kept },
		{ "an IPv6 form carrying an IPv4 address is keyed as that address", t_addr_key },
		{ "a refused answer takes back the names it added, only those", t_unanswer },
		{ "a record reads only the ids the index listed by its time", t_listed },
	};
	char why[WHY_LEN];

	printf("TAP version 13\n1..%zu\n", ARRAY_SIZE(tests));
	for (size_t i = 0; i < ARRAY_SIZE(tests); i++) {
		why[0] = '\0';
		report(tests[i].fn(why), tests[i].name, why);
	}
	return tap_status();
}
