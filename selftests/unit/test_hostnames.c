// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of userspace/hostnames.c, the run's host-name registry: ids are dense from 1, a name
 * keeps its id, names that collide in the index stay apart (a hash is not a name), lookups of
 * unknown ids and names say so, and the registry stops at SL_HOSTS_MAX names instead of reusing
 * an id. Four threads interning the same names at once get the same ids. Which names an address
 * was answered for, by a given time.
 *
 * Usage: test_hostnames   TAP 13; exits 1 if any test failed. Needs no root.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
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

	for (i = 1; i <= SL_HOSTS_MAX; i++) {
		snprintf(name, sizeof(name), "n%u", i);
		last = hostnames_intern(h, NULL, name);
	}
	over = hostnames_intern(h, NULL, "one-too-many.example");
	snprintf(why, WHY_LEN, "expected the %dth name id %d and none after; got %u and %u",
		 SL_HOSTS_MAX, SL_HOSTS_MAX, last, over);
	i = hostnames_intern(h, NULL, "n1");
	hostnames_free(h);
	return last == SL_HOSTS_MAX && over == 0 && i == 1;
}

/*
 * Which names an address was answered for, by the time of a record: a name answered after it
 * is not one the record's connection could have been for; a name answered again keeps its first
 * time; one taken back is not listed; addresses are whole 16-byte keys (an IPv4 one is not an
 * IPv6 one that starts alike).
 */
static bool t_sharing(char *why)
{
	struct hostnames *h = hostnames_new();
	uint8_t x[16] = { 198, 51, 100, 16 }, y[16] = { 198, 51, 100, 17 };
	uint8_t x6[16] = { 198, 51, 100, 16, 1 };
	uint32_t a = hostnames_intern(h, NULL, "a.example");
	uint32_t b = hostnames_intern(h, NULL, "b.example");
	uint32_t ids[4] = {}, one[1] = {};
	size_t before, at_b, later, capped, other, none;

	uint32_t c = hostnames_intern(h, NULL, "c.example");
	int new_a, new_b, again_a, new_c;

	new_a = hostnames_answered(h, x, a, 10);
	new_b = hostnames_answered(h, x, b, 20);
	again_a = hostnames_answered(h, x, a, 30);
	new_c = hostnames_answered(h, x, c, 15);
	hostnames_unanswered(h, x, c); /* the run could not keep the pair: taken back */
	hostnames_answered(h, y, b, 5);
	before = hostnames_sharing(h, x, 15, ids, 4);
	at_b = hostnames_sharing(h, x, 20, ids, 4);
	later = hostnames_sharing(h, x, 100, ids, 4);
	capped = hostnames_sharing(h, x, 100, one, 1);
	other = hostnames_sharing(h, y, 100, ids + 2, 2);
	none = hostnames_sharing(h, x6, 100, ids + 3, 1);
	snprintf(why, WHY_LEN,
		 "expected 1, 2, 2 names (a then b), 2 counted with 1 listed (a), y: 1 (b), x6: 0; "
		 "got %zu, %zu, %zu (%u %u), %zu (%u), %zu (%u), %zu",
		 before, at_b, later, ids[0], ids[1], capped, one[0], other, ids[2], none);
	hostnames_free(h);
	return new_a == 1 && new_b == 1 && again_a == 0 && new_c == 1 &&
	       before == 1 && at_b == 2 && later == 2 && ids[0] == a && ids[1] == b &&
	       capped == 2 && one[0] == a && other == 1 && ids[2] == b && none == 0 &&
	       !hostnames_sharing(NULL, x, 100, ids, 4);
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
	};
	char why[WHY_LEN];

	printf("TAP version 13\n1..%zu\n", ARRAY_SIZE(tests));
	for (size_t i = 0; i < ARRAY_SIZE(tests); i++) {
		why[0] = '\0';
		report(tests[i].fn(why), tests[i].name, why);
	}
	return tap_status();
}
