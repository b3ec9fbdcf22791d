/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The log's Merkle tree (RFC 9162 section 2.1): leaves are the log's lines, hashed as
 * SHA-256(0x00 || line), interior nodes as SHA-256(0x01 || left || right). The tree is kept as
 * the roots of its perfect subtrees, one per set bit of its size, so appending and computing the
 * root of a tree of any size takes O(log n) memory and time.
 */
#ifndef SLUICE_TLOG_H
#define SLUICE_TLOG_H

#include <stddef.h>
#include <stdint.h>

#define TLOG_HASH_SIZE 32

struct tlog_tree {
	uint64_t size;				/* leaves appended */
	uint8_t subtree[64][TLOG_HASH_SIZE];	/* subtree[h]: root of the perfect subtree of
						 * 2^h leaves, valid when bit h of size is set */
};

void tlog_sha256(const void *data, size_t len, uint8_t out[TLOG_HASH_SIZE]);
void tlog_init(struct tlog_tree *t);
/* The leaf hash of line (its bytes without the newline): SHA-256(0x00 || line). */
void tlog_leaf_hash(const void *line, size_t len, uint8_t out[TLOG_HASH_SIZE]);
/* Append one leaf by its leaf hash (tlog_leaf_hash). */
void tlog_append_leaf(struct tlog_tree *t, const uint8_t leaf[TLOG_HASH_SIZE]);
/* Append one leaf: line is the line's bytes without its newline. */
void tlog_append(struct tlog_tree *t, const void *line, size_t len);
/*
 * Append a log line (its bytes without the newline) and set prev to what the next line names as
 * its "prev", by the log's format (log_start's "format"): in format 1 the line's SHA-256, from
 * format 2 on its leaf hash, so that the line is hashed once.
 */
void tlog_append_line(struct tlog_tree *t, const void *line, size_t len, uint64_t format,
		      uint8_t prev[TLOG_HASH_SIZE]);
/* The root of the tree of t->size leaves (SHA-256 of the empty string for size 0). */
void tlog_root(const struct tlog_tree *t, uint8_t out[TLOG_HASH_SIZE]);

#endif /* SLUICE_TLOG_H */
