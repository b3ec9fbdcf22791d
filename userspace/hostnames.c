// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/types.h>

#include "../bpf/addr.bpf.h"
#include "hostnames.h"
#include "loader.h"
#include "util.h"

/* One name an address was answered for, and when (CLOCK_BOOTTIME ns; 0: before the writer). */
struct answered {
	uint32_t host_id;
	uint64_t at_ns;
};

/*
 * An address the resolver answered (its index key, hostnames_addr_key) and its names, in order:
 * the first HOSTNAMES_KEPT, and a count of those past them (a record lists at most
 * HOSTNAMES_KEPT - 1 besides the kernel's, and says how many more: many names on one address
 * cost no memory or time per record beyond that).
 */
struct shared_addr {
	uint8_t addr[16];
	struct answered *names;
	size_t n, cap;
	size_t more;		/* names answered past the first HOSTNAMES_KEPT, counted only */
	uint64_t more_since_ns; /* when the first of those was */
	struct shared_addr *next; /* in its bucket */
};

#define ADDR_BUCKETS 4096

struct hostnames {
	pthread_mutex_t lock;
	char **names;	 /* host_id - 1 → name */
	size_t n, cap;
	uint32_t *index; /* hash of names → host_id, 0 empty; capacity a power of two */
	size_t cap_index;
	struct shared_addr **addrs; /* ADDR_BUCKETS chains, made at the first address */
};

struct hostnames *hostnames_new(void)
{
	struct hostnames *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	pthread_mutex_init(&h->lock, NULL);
	return h;
}

void hostnames_free(struct hostnames *h)
{
	size_t i;

	if (!h)
		return;
	for (i = 0; i < h->n; i++)
		free(h->names[i]);
	free(h->names);
	free(h->index);
	for (i = 0; h->addrs && i < ADDR_BUCKETS; i++) {
		struct shared_addr *a = h->addrs[i], *next;

		for (; a; a = next) {
			next = a->next;
			free(a->names);
			free(a);
		}
	}
	free(h->addrs);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

/*
 * FNV-1a of len bytes, for both indexes: names and addresses come from the run, so lookups must
 * not be linear.
 */
static uint64_t fnv1a(const void *p, size_t len)
{
	const unsigned char *b = p;
	uint64_t x = 0xcbf29ce484222325ULL;

	while (len--) {
		x ^= *b++;
		x *= 0x100000001b3ULL;
	}
	return x;
}

static uint64_t name_hash(const char *name)
{
	return fnv1a(name, strlen(name));
}

/* The index slot (open addressing, linear probing) holding name's id, or the empty one for it. */
static size_t index_slot(const struct hostnames *h, const char *name)
{
	size_t mask = h->cap_index - 1, i = (size_t)name_hash(name) & mask;

	while (h->index[i] && strcmp(h->names[h->index[i] - 1], name))
		i = (i + 1) & mask;
	return i;
}

/* Keep the index at most half full; ids are stable, so it is rebuilt from the names. */
static int grow_index(struct hostnames *h)
{
	size_t cap = h->cap_index ? h->cap_index * 2 : 128, i;
	uint32_t *idx = calloc(cap, sizeof(*idx));

	if (!idx)
		return -ENOMEM;
	free(h->index);
	h->index = idx;
	h->cap_index = cap;
	for (i = 0; i < h->n; i++)
		h->index[index_slot(h, h->names[i])] = (uint32_t)i + 1;
	return 0;
}

uint32_t hostnames_intern(struct hostnames *h, struct loader *loader, const char *name)
{
	uint32_t id = 0;
	size_t slot;
	int err = 0;

	pthread_mutex_lock(&h->lock);
	if ((h->n + 1) * 2 > h->cap_index && (err = grow_index(h)))
		goto out;
	slot = index_slot(h, name);
	if (h->index[slot]) {
		id = h->index[slot];
		goto out;
	}
	if (h->n >= SL_HOSTS_MAX) {
		err = -ENOSPC;
		goto out;
	}
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 64;
		char **nn = realloc(h->names, cap * sizeof(*nn));

		if (!nn) {
			err = -ENOMEM;
			goto out;
		}
		h->names = nn;
		h->cap = cap;
	}
	h->names[h->n] = strdup(name);
	if (!h->names[h->n]) {
		err = -ENOMEM;
		goto out;
	}
	/*
	 * With the run before the id is used: a writer resuming after us must name what this id
	 * learns. Last, so that a failure before it leaves the id free to be tried again.
	 */
	if (loader && (err = loader_host_name(loader, (uint32_t)h->n + 1, name))) {
		free(h->names[h->n]);
		h->names[h->n] = NULL;
		goto out;
	}
	id = (uint32_t)++h->n;
	h->index[slot] = id;
out:
	pthread_mutex_unlock(&h->lock);
	if (!id)
		errno = -err;
	return id;
}

uint32_t hostnames_id(struct hostnames *h, const char *name)
{
	uint32_t id = 0;

	if (!h)
		return 0;
	pthread_mutex_lock(&h->lock);
	if (h->cap_index)
		id = h->index[index_slot(h, name)];
	pthread_mutex_unlock(&h->lock);
	return id;
}

const char *hostnames_name(struct hostnames *h, uint32_t host_id, char *buf, size_t len)
{
	const char *ret = NULL;

	if (!h || !host_id)
		return NULL;
	pthread_mutex_lock(&h->lock);
	if (host_id <= h->n && !util_copy(buf, len, h->names[host_id - 1]))
		ret = buf;
	pthread_mutex_unlock(&h->lock);
	return ret;
}

/* One name the run kept (loader_host_names): host_id - 1 is its place in names. */
static int adopt_one(uint32_t host_id, const char *name, void *ctx)
{
	struct hostnames *h = ctx;

	if (!host_id || host_id > SL_HOSTS_MAX || host_id > h->cap || h->names[host_id - 1])
		return -EPROTO;
	h->names[host_id - 1] = strdup(name);
	if (!h->names[host_id - 1])
		return -ENOMEM;
	if (host_id > h->n)
		h->n = host_id;
	return 0;
}

int hostnames_adopt(struct hostnames *h, const struct loader *loader)
{
	size_t i;
	int err;

	pthread_mutex_lock(&h->lock);
	if (h->n) {
		err = -EEXIST;
		goto out;
	}
	free(h->names);
	h->names = calloc(SL_HOSTS_MAX, sizeof(*h->names));
	h->cap = h->names ? SL_HOSTS_MAX : 0;
	err = h->names ? loader_host_names(loader, adopt_one, h) : -ENOMEM;
	/* ids are handed out densely, each kept before it is used: a hole is not sluice's doing */
	for (i = 0; !err && i < h->n; i++)
		if (!h->names[i])
			err = -EPROTO;
	while (!err && h->cap_index < (h->n + 1) * 2)
		err = grow_index(h);
out:
	pthread_mutex_unlock(&h->lock);
	return err;
}

static size_t addr_bucket(const uint8_t addr[16])
{
	return (size_t)(fnv1a(addr, 16) % ADDR_BUCKETS);
}

/* addr's entry, made if make and new; NULL if none (or no memory). Under h->lock. */
static struct shared_addr *addr_entry(struct hostnames *h, const uint8_t addr[16], bool make)
{
	struct shared_addr *a;
	size_t b = addr_bucket(addr);

	if (!h->addrs) {
		if (!make)
			return NULL;
		h->addrs = calloc(ADDR_BUCKETS, sizeof(*h->addrs));
		if (!h->addrs)
			return NULL;
	}
	for (a = h->addrs[b]; a; a = a->next)
		if (!memcmp(a->addr, addr, sizeof(a->addr)))
			return a;
	if (!make)
		return NULL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	memcpy(a->addr, addr, sizeof(a->addr));
	a->next = h->addrs[b];
	h->addrs[b] = a;
	return a;
}

void hostnames_addr_key(int family, const uint8_t *addr, uint8_t key[16])
{
	__u32 w[4], v4;

	memset(key, 0, 16);
	if (family == AF_INET) {
		memcpy(key, addr, 4);
		return;
	}
	memcpy(w, addr, sizeof(w));
	/* judged as the IPv4 address it carries (decide_v6): records are looked up by that one */
	if (v6_embeds_v4_for_policy(w, &v4))
		memcpy(key, &v4, 4);
	else
		memcpy(key, addr, 16);
}

/* hostnames_answered, under h->lock. */
static int answered_locked(struct hostnames *h, const uint8_t key[16], uint32_t host_id,
			   uint64_t at_ns, bool pair_known)
{
	struct shared_addr *a = addr_entry(h, key, true);
	size_t i;

	if (!a)
		return -ENOMEM;
	for (i = 0; i < a->n; i++)
		if (a->names[i].host_id == host_id)
			return 0; /* the first answer is the one that counts */
	if (a->n == HOSTNAMES_KEPT) {
		/* its pair kept already: counted when it was first answered */
		if (pair_known)
			return 0;
		if (!a->more++)
			a->more_since_ns = at_ns;
		return 2;
	}
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 2;
		struct answered *nn;

		if (cap > HOSTNAMES_KEPT)
			cap = HOSTNAMES_KEPT;
		nn = realloc(a->names, cap * sizeof(*nn));
		if (!nn)
			return -ENOMEM;
		a->names = nn;
		a->cap = cap;
	}
	a->names[a->n++] = (struct answered){ .host_id = host_id, .at_ns = at_ns };
	return 1;
}

int hostnames_answered(struct hostnames *h, const uint8_t key[16], uint32_t host_id,
		       uint64_t at_ns, bool pair_known)
{
	int err;

	if (!h || !host_id)
		return 0;
	pthread_mutex_lock(&h->lock);
	err = answered_locked(h, key, host_id, at_ns, pair_known);
	pthread_mutex_unlock(&h->lock);
	return err;
}

int hostnames_answer_pair(struct hostnames *h, struct loader *loader, int family,
			  const uint8_t *addr, const char *name, const struct sl_sni_name *v,
			  struct hostnames_added *added)
{
	uint32_t host_id = v->host_id;
	uint64_t now_ns;
	uint8_t key[16];
	bool known;
	int err;

	*added = (struct hostnames_added){ .pair = false };
	if (!h || !host_id) {
		known = loader_sni_ok(loader, family, addr, name);
		err = loader_sni_learn(loader, family, addr, name, v);
		added->pair = !err && !known;
		return err;
	}
	hostnames_addr_key(family, addr, key);
	/*
	 * One step under the lock: a pair in the map is a name in the index (or counted there,
	 * once), and a name the map refused is in neither, whatever other workers answer for the
	 * address meanwhile. The index is written before the caller writes the learned address,
	 * so before the kernel can judge a connect() by it.
	 */
	pthread_mutex_lock(&h->lock);
	/*
	 * The time too, under the lock: an address's names are then in the order of their times,
	 * its kept ones before its counted ones, as hostnames_sharing's filter by time needs.
	 */
	now_ns = (uint64_t)util_clock_ns(CLOCK_BOOTTIME);
	known = loader_sni_ok(loader, family, addr, name);
	err = loader_sni_learn(loader, family, addr, name, v);
	if (!err) {
		err = answered_locked(h, key, host_id, now_ns, known);
		/* no room to note the name: nor may the map keep a pair this answer added */
		if (err < 0 && !known)
			loader_sni_forget(loader, family, addr, name);
		added->pair = err >= 0 && !known;
		added->index = err > 0 ? err : 0;
	}
	pthread_mutex_unlock(&h->lock);
	return err < 0 ? err : 0;
}

/* Take back what answered_locked added for host_id (its 1: kept, 2: counted), under h->lock. */
static void unanswered_locked(struct hostnames *h, const uint8_t key[16], uint32_t host_id,
			      int added)
{
	struct shared_addr *a = addr_entry(h, key, false);
	size_t i;

	if (!a)
		return;
	if (added == 2 && a->more) {
		a->more--;
		return;
	}
	if (added != 1)
		return;
	for (i = 0; i < a->n; i++) {
		if (a->names[i].host_id != host_id)
			continue;
		memmove(&a->names[i], &a->names[i + 1], (a->n - i - 1) * sizeof(a->names[i]));
		a->n--;
		return;
	}
}

int hostnames_unanswer_pair(struct hostnames *h, struct loader *loader, int family,
			    const uint8_t *addr, const char *name, uint32_t host_id,
			    const struct hostnames_added *added)
{
	uint8_t key[16];
	int err = 0;

	if (!h || !host_id)
		return added->pair ? loader_sni_forget(loader, family, addr, name) : 0;
	hostnames_addr_key(family, addr, key);
	/* under the lock, as it was added: no other answer sees the pair without the name */
	pthread_mutex_lock(&h->lock);
	if (added->pair)
		err = loader_sni_forget(loader, family, addr, name);
	if (added->index)
		unanswered_locked(h, key, host_id, added->index);
	pthread_mutex_unlock(&h->lock);
	return err;
}

size_t hostnames_sharing(struct hostnames *h, const uint8_t key[16], uint64_t at_ns,
			 uint32_t *ids, size_t max, size_t *listed)
{
	struct shared_addr *a;
	size_t i, n = 0;

	*listed = 0;
	if (!h)
		return 0;
	pthread_mutex_lock(&h->lock);
	a = addr_entry(h, key, false);
	for (i = 0; a && i < a->n; i++) {
		if (a->names[i].at_ns > at_ns)
			continue; /* answered after the event: not a name it could have been for */
		if (n < max)
			ids[(*listed)++] = a->names[i].host_id;
		n++;
	}
	/* the names only counted: all of them once the first was answered (at most that many) */
	if (a && a->more && a->more_since_ns <= at_ns)
		n += a->more;
	pthread_mutex_unlock(&h->lock);
	return n;
}

/* One (address, name) pair the run's resolver wrote (sl_sni_ok), for hostnames_adopt_answers. */
static int adopt_answer(const uint8_t addr[16], const char *name, const struct sl_sni_name *v,
			void *ctx)
{
	static const uint8_t zero[12];
	uint8_t key[16];
	int err;

	(void)name;
	/* an sl_sni_key holds an IPv4 address in its first 4 bytes, the rest zero */
	hostnames_addr_key(memcmp(addr + 4, zero, sizeof(zero)) ? AF_INET6 : AF_INET, addr, key);
	/* when is not known: before anything the new writer reads, so it counts for every record */
	err = hostnames_answered(ctx, key, v->host_id, 0, false);
	return err < 0 ? err : 0;
}

int hostnames_adopt_answers(struct hostnames *h, const struct loader *loader)
{
	return loader_sni_walk(loader, adopt_answer, h);
}
