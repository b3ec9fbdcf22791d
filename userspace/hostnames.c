// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>

#include "hostnames.h"
#include "loader.h"
#include "util.h"

struct hostnames {
	pthread_mutex_t lock;
	char **names;	 /* host_id - 1 → name */
	size_t n, cap;
	uint32_t *index; /* hash of names → host_id, 0 empty; capacity a power of two */
	size_t cap_index;
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
	pthread_mutex_destroy(&h->lock);
	free(h);
}

/* FNV-1a, for the name index: names come from the run, so lookups must not be linear. */
static uint64_t name_hash(const char *name)
{
	uint64_t x = 0xcbf29ce484222325ULL;

	for (; *name; name++) {
		x ^= (unsigned char)*name;
		x *= 0x100000001b3ULL;
	}
	return x;
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

	pthread_mutex_lock(&h->lock);
	if ((h->n + 1) * 2 > h->cap_index && grow_index(h))
		goto out;
	slot = index_slot(h, name);
	if (h->index[slot]) {
		id = h->index[slot];
		goto out;
	}
	if (h->n >= SL_HOSTS_MAX)
		goto out;
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 64;
		char **nn = realloc(h->names, cap * sizeof(*nn));

		if (!nn)
			goto out;
		h->names = nn;
		h->cap = cap;
	}
	h->names[h->n] = strdup(name);
	if (!h->names[h->n])
		goto out;
	/*
	 * With the run before the id is used: a writer resuming after us must name what this id
	 * learns. Last, so that a failure before it leaves the id free to be tried again.
	 */
	if (loader && loader_host_name(loader, (uint32_t)h->n + 1, name)) {
		free(h->names[h->n]);
		h->names[h->n] = NULL;
		goto out;
	}
	id = (uint32_t)++h->n;
	h->index[slot] = id;
out:
	pthread_mutex_unlock(&h->lock);
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
