// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "events.h"

struct events {
	struct ring_buffer *rb;
	struct events_handlers h;
	void *ctx;
	struct events_stats stats;
	size_t budget, taken; /* events_consume_max: records this call may take, and took */
	bool paused;	      /* the budget ran out: on_record stopped libbpf's loop */
};

static int malformed(struct events *e, const char *why, size_t size)
{
	e->stats.malformed++;
	if (e->h.malformed)
		e->h.malformed(why, size, e->ctx);
	return 0;
}

/* The oldest and newest layout of each record type this writer reads (see SL_ABI_VERSION). */
static bool version_known(__u16 type, __u8 version)
{
	if (type == SL_EV_FLOW)
		return version == SL_FLOW_VERSION; /* older ones: another layout, another build */
	return version == SL_ABI_VERSION;
}

const char *events_check(const void *data, size_t size)
{
	struct sl_event_hdr hdr;
	struct sl_tls_event tls;

	if (size < sizeof(hdr))
		return "shorter than the record header";
	/* Ring-buffer data is only 8-byte aligned; copy before reading fields. */
	memcpy(&hdr, data, sizeof(hdr));
	if (hdr.type != SL_EV_DECISION && hdr.type != SL_EV_TLS && hdr.type != SL_EV_FLOW)
		return "unknown record type";
	if (!version_known(hdr.type, hdr.version))
		return "unknown ABI version";
	if (hdr.size != size)
		return "header size differs from the record size";
	switch (hdr.type) {
	case SL_EV_DECISION:
		if (size != sizeof(struct sl_decision_event))
			return "decision record of the wrong size";
		break;
	case SL_EV_TLS:
		if (size != sizeof(tls))
			return "TLS record of the wrong size";
		memcpy(&tls, data, sizeof(tls));
		if (tls.sni_len > SL_SNI_MAX)
			return "TLS record with a server name longer than 255";
		break;
	default:
		if (size != sizeof(struct sl_flow_event))
			return "flow record of the wrong size";
		break;
	}
	return NULL;
}

static int on_record_one(void *ctx, void *data, size_t size)
{
	struct events *e = ctx;
	struct sl_decision_event ev;
	struct sl_tls_event tls;
	struct sl_flow_event flow;
	struct sl_event_hdr hdr;
	const char *why = events_check(data, size);

	if (why)
		return malformed(e, why, size);
	memcpy(&hdr, data, sizeof(hdr));
	e->stats.received++;
	if (hdr.type == SL_EV_TLS) {
		memcpy(&tls, data, sizeof(tls));
		return e->h.tls(&tls, e->ctx);
	}
	if (hdr.type == SL_EV_FLOW) {
		memcpy(&flow, data, sizeof(flow));
		return e->h.flow(&flow, e->ctx);
	}
	memcpy(&ev, data, sizeof(ev));
	return e->h.decision(&ev, e->ctx);
}

/*
 * libbpf consumes as long as records keep arriving: a producer as fast as the handlers would
 * keep one consume going for ever. A negative return stops it after this record (consumed).
 */
static int on_record(void *ctx, void *data, size_t size)
{
	struct events *e = ctx;
	int ret = on_record_one(ctx, data, size);

	if (ret >= 0 && e->budget && ++e->taken >= e->budget) {
		e->paused = true;
		return -EAGAIN;
	}
	return ret;
}

struct events *events_new(int ringbuf_fd, const struct events_handlers *h, void *ctx)
{
	struct events *e;
	int err;

	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->h = *h;
	e->ctx = ctx;
	e->rb = ring_buffer__new(ringbuf_fd, on_record, e, NULL);
	if (!e->rb) {
		err = errno;
		free(e);
		errno = err;
		return NULL;
	}
	return e;
}

int events_fd(const struct events *e)
{
	return ring_buffer__epoll_fd(e->rb);
}

int events_consume(struct events *e)
{
	return ring_buffer__consume(e->rb);
}

int events_consume_max(struct events *e, size_t max)
{
	int ret;

	e->budget = max;
	e->taken = 0;
	e->paused = false;
	ret = ring_buffer__consume(e->rb);
	if (e->paused)
		ret = (int)e->taken;
	e->budget = 0;
	return ret;
}

const struct events_stats *events_stats(const struct events *e)
{
	return &e->stats;
}

void events_free(struct events *e)
{
	if (!e)
		return;
	ring_buffer__free(e->rb);
	free(e);
}
