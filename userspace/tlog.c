// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The log's Merkle tree (RFC 9162 section 2.1), kept as the roots of its perfect subtrees.
 *
 * Appending leaf n merges it with the subtrees whose bits are set in n, lowest first, exactly as a
 * binary counter carries; the root of a tree of any size folds the remaining subtrees from the
 * smallest (rightmost) up, which is MTH's split at the largest power of two below the size.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "tlog.h"

struct part {
	const void *data;
	size_t len;
};

/*
 * SHA-256 over the concatenation of parts. SHA-256 through the default provider fails only when
 * OpenSSL cannot allocate; a tree that silently skipped a hash would sign a wrong root, so that
 * is fatal rather than an error the void API could lose.
 */
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

/*
 * Fetched once: EVP_sha256() makes OpenSSL 3 look the algorithm up in its provider store, under
 * a lock, at every digest, and the writer hashes each line two or three times.
 */
static void sha256_fetch(void)
{
	sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

/*
 * One digest context per thread, made once and reset by each EVP_DigestInit_ex2: allocating,
 * cleansing and freeing one per hash cost more than the hash of a log line. (It lives as long as
 * its thread: the writer's and the resolver's few threads.)
 */
static __thread EVP_MD_CTX *sha256_ctx;

static void sha256_parts(const struct part *parts, size_t n, uint8_t out[TLOG_HASH_SIZE])
{
	unsigned int out_len = 0;
	EVP_MD_CTX *ctx;
	bool ok;

	pthread_once(&sha256_once, sha256_fetch);
	if (!sha256_ctx)
		sha256_ctx = EVP_MD_CTX_new();
	ctx = sha256_ctx;
	ok = ctx && sha256_md && EVP_DigestInit_ex2(ctx, sha256_md, NULL) == 1;
	for (size_t i = 0; ok && i < n; i++)
		ok = EVP_DigestUpdate(ctx, parts[i].data, parts[i].len) == 1;
	ok = ok && EVP_DigestFinal_ex(ctx, out, &out_len) == 1 && out_len == TLOG_HASH_SIZE;
	if (!ok) {
		fprintf(stderr, "sluice: SHA-256 failed in OpenSSL (out of memory?)\n");
		abort();
	}
}

void tlog_sha256(const void *data, size_t len, uint8_t out[TLOG_HASH_SIZE])
{
	struct part p = {data, len};

	sha256_parts(&p, 1, out);
}

static void node_hash(const uint8_t left[TLOG_HASH_SIZE], const uint8_t right[TLOG_HASH_SIZE],
		      uint8_t out[TLOG_HASH_SIZE])
{
	static const uint8_t prefix = 0x01;
	struct part p[] = {
		{&prefix, 1},
		{left, TLOG_HASH_SIZE},
		{right, TLOG_HASH_SIZE},
	};

	sha256_parts(p, 3, out);
}

void tlog_init(struct tlog_tree *t)
{
	memset(t, 0, sizeof(*t));
}

void tlog_append(struct tlog_tree *t, const void *line, size_t len)
{
	static const uint8_t prefix = 0x00;
	struct part p[] = {
		{&prefix, 1},
		{line, len},
	};
	uint8_t h[TLOG_HASH_SIZE];
	unsigned int level = 0;

	sha256_parts(p, 2, h);
	/* Carry: every set low bit is a perfect subtree of the same height to merge with. */
	while (level < 64 && (t->size >> level) & 1) {
		node_hash(t->subtree[level], h, h);
		level++;
	}
	/* level == 64 would need 2^64 leaves; size cannot count them anyway. */
	if (level < 64)
		memcpy(t->subtree[level], h, TLOG_HASH_SIZE);
	t->size++;
}

void tlog_root(const struct tlog_tree *t, uint8_t out[TLOG_HASH_SIZE])
{
	uint8_t h[TLOG_HASH_SIZE];
	bool have = false;

	if (!t->size) {
		tlog_sha256("", 0, out);
		return;
	}
	for (unsigned int level = 0; level < 64; level++) {
		if (!((t->size >> level) & 1))
			continue;
		if (have) {
			node_hash(t->subtree[level], h, h);
		} else {
			memcpy(h, t->subtree[level], TLOG_HASH_SIZE);
			have = true;
		}
	}
	memcpy(out, h, TLOG_HASH_SIZE);
}
