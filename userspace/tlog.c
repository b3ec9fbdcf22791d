// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The log's Merkle tree (RFC 9162 section 2.1), kept as the roots of its perfect subtrees.
 *
 * Appending leaf n merges it with the subtrees whose bits are set in n, lowest first, exactly as a
 * binary counter carries; the root of a tree of any size folds the remaining subtrees from the
 * smallest (rightmost) up, which is MTH's split at the largest power of two below the size.
 */
/* SHA256_Init and friends: see sha256_parts */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <stdbool.h>
#include <string.h>

#include <openssl/sha.h>

#include "tlog.h"

struct part {
	const void *data;
	size_t len;
};

/*
 * SHA-256 over the concatenation of parts, through OpenSSL's SHA256_* functions: the writer
 * hashes every line once (its leaf hash, also the next line's prev in format 2) and merges a
 * node per line on average, and through EVP each digest also paid a provider call, an
 * allocation and a cleanse — a sixth of the hashing's time on a 450-byte line, half of it on a
 * node (make bench measures the writer). These functions are deprecated in OpenSSL 3 in favour
 * of EVP, not removed, and use the same SHA extensions; they cannot fail on a context on the
 * stack. (Their one-shot SHA256() goes through EVP again.)
 */
static void sha256_parts(const struct part *parts, size_t n, uint8_t out[TLOG_HASH_SIZE])
{
	SHA256_CTX ctx;
	size_t i;

	SHA256_Init(&ctx);
	for (i = 0; i < n; i++)
		SHA256_Update(&ctx, parts[i].data, parts[i].len);
	SHA256_Final(out, &ctx);
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

void tlog_leaf_hash(const void *line, size_t len, uint8_t out[TLOG_HASH_SIZE])
{
	static const uint8_t prefix = 0x00;
	struct part p[] = {
		{&prefix, 1},
		{line, len},
	};

	sha256_parts(p, 2, out);
}

void tlog_append_leaf(struct tlog_tree *t, const uint8_t leaf[TLOG_HASH_SIZE])
{
	uint8_t h[TLOG_HASH_SIZE];
	unsigned int level = 0;

	memcpy(h, leaf, TLOG_HASH_SIZE);
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

void tlog_append(struct tlog_tree *t, const void *line, size_t len)
{
	uint8_t h[TLOG_HASH_SIZE];

	tlog_leaf_hash(line, len, h);
	tlog_append_leaf(t, h);
}

void tlog_append_line(struct tlog_tree *t, const void *line, size_t len, uint64_t format,
		      uint8_t prev[TLOG_HASH_SIZE])
{
	uint8_t h[TLOG_HASH_SIZE];

	tlog_leaf_hash(line, len, h);
	tlog_append_leaf(t, h);
	if (format == 2)
		memcpy(prev, h, TLOG_HASH_SIZE);
	else
		tlog_sha256(line, len, prev);
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
