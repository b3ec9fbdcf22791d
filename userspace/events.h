/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reader of the run's ring buffer. Every record is checked against the ABI before anything reads
 * it (exact size for its type, version, header size field); a record that fails is counted and
 * reported, never interpreted.
 */
#ifndef SLUICE_EVENTS_H
#define SLUICE_EVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "../bpf/sluice.h"

struct events;

struct events_handlers {
	/* A valid decision record; a negative return stops the current poll. */
	int (*decision)(const struct sl_decision_event *ev, void *ctx);
	/* A valid TLS server-name record. */
	int (*tls)(const struct sl_tls_event *ev, void *ctx);
	/* A valid record of a finished flow. */
	int (*flow)(const struct sl_flow_event *ev, void *ctx);
	/* A record that does not match the ABI; why says how. */
	void (*malformed)(const char *why, size_t size, void *ctx);
};

struct events_stats {
	uint64_t received;  /* valid records */
	uint64_t malformed; /* records refused by the ABI checks */
};

/*
 * NULL when data (size bytes, as the ring buffer gave them) is a record this writer reads: a
 * known type, a version of its layout this writer knows, the exact size; else why it is not.
 */
const char *events_check(const void *data, size_t size);

struct events *events_new(int ringbuf_fd, const struct events_handlers *h, void *ctx);
/* An fd that polls readable when records wait (the ring buffer's epoll fd). */
int events_fd(const struct events *e);
/* Consume everything available now; returns records consumed or -errno. */
int events_consume(struct events *e);
/*
 * The same, stopping after max records (0: no bound), the rest left for the next call: a loop
 * that serves more than this ring buffer must not be held by its producer.
 */
int events_consume_max(struct events *e, size_t max);
const struct events_stats *events_stats(const struct events *e);
void events_free(struct events *e);

#endif /* SLUICE_EVENTS_H */
