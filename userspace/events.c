// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
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

static int on_record_one(void *ctx, void *data, size_t size)
{
	struct events *e = ctx;
	struct sl_decision_event ev;
	struct sl_tls_event tls;
	struct sl_flow_event flow;
	struct sl_event_hdr hdr;

	if (size < sizeof(hdr))
		return malformed(e, "shorter than the record header", size);
	/* Ring-buffer data is only 8-byte aligned; copy before reading fields. */
	memcpy(&hdr, data, sizeof(hdr));
	if (hdr.version != SL_ABI_VERSION)
		return malformed(e, "unknown ABI version", size);
	if (hdr.size != size)
		return malformed(e, "header size differs from the record size", size);

	switch (hdr.type) {
	case SL_EV_DECISION:
		if (size != sizeof(ev))
			return malformed(e, "decision record of the wrong size", size);
		memcpy(&ev, data, sizeof(ev));
		break;
	case SL_EV_TLS:
		if (size != sizeof(tls))
			return malformed(e, "TLS record of the wrong size", size);
		memcpy(&tls, data, sizeof(tls));
		if (tls.sni_len > SL_SNI_MAX)
			return malformed(e, "TLS record with a server name longer than 255", size);
		break;
	case SL_EV_FLOW:
		if (size != sizeof(flow))
			return malformed(e, "flow record of the wrong size", size);
		memcpy(&flow, data, sizeof(flow));
		break;
	default:
		return malformed(e, "unknown record type", size);
	}

	e->stats.received++;
	if (hdr.type == SL_EV_TLS)
		return e->h.tls(&tls, e->ctx);
	if (hdr.type == SL_EV_FLOW)
		return e->h.flow(&flow, e->ctx);
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
