// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The spares' thread loads one set at a time, at nice 19, when the loop asks (a byte on req);
 * each finished load comes back to the loop as a struct pool_result on done, which the loop
 * polls. The loop never waits for the thread but at the daemon's end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pool.h"
#include "util.h"

#define POOL_MAX 16

struct pool_result {
	struct loader *l;
	int err; /* errno of a failed load */
};

struct pool {
	unsigned int want;
	struct loader_caps caps;
	bool verbose;
	struct loader *ready[POOL_MAX];
	size_t n_ready;
	unsigned int pending; /* asked of the thread, not yet back */
	int req[2];	      /* loop -> thread: a byte per spare to load; closed: stop */
	int done[2];	      /* thread -> loop: a struct pool_result per load */
	pthread_t thread;
	bool thread_up;
	bool failing; /* the last load failed: said once, and no more asked until a take */
	bool stopping; /* pool_free: the requests still in req are not loaded (atomic access) */
};

static void *pool_thread(void *arg)
{
	struct pool *p = arg;
	struct pool_result r;
	char c;
	ssize_t n;

	/* spares are for later: the runs' writers and resolvers come first */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
	for (;;) {
		n = read(p->req[0], &c, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != 1 || __atomic_load_n(&p->stopping, __ATOMIC_ACQUIRE))
			break;
		r.l = loader_load_spare(&p->caps, p->verbose);
		r.err = r.l ? 0 : errno;
		/* the loop reads every result (or, at its end, after the join) */
		while ((n = write(p->done[1], &r, sizeof(r))) < 0 && errno == EINTR)
			;
		if (n != sizeof(r)) {
			loader_destroy(r.l);
			break;
		}
	}
	return NULL;
}

/* Ask for as many loads as spares are missing. */
static void refill(struct pool *p)
{
	while (p->n_ready + p->pending < p->want) {
		if (write(p->req[1], "", 1) != 1)
			return;
		p->pending++;
	}
}

int pool_new(unsigned int want, const struct loader_caps *caps, bool verbose, struct pool **out)
{
	struct pool *p;
	int err;

	*out = NULL;
	if (!want)
		return 0;
	if (want > POOL_MAX)
		return -ERANGE;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->want = want;
	p->caps = *caps;
	p->verbose = verbose;
	p->req[0] = p->req[1] = p->done[0] = p->done[1] = -1;
	if (pipe2(p->req, O_CLOEXEC) || pipe2(p->done, O_CLOEXEC)) {
		err = -errno;
		goto fail;
	}
	/* the loop's ends never block it: POOL_MAX requests and results fit any pipe */
	if (fcntl(p->done[0], F_SETFL, O_NONBLOCK) || fcntl(p->req[1], F_SETFL, O_NONBLOCK)) {
		err = -errno;
		goto fail;
	}
	err = util_thread_create(&p->thread, pool_thread, p);
	if (err)
		goto fail;
	p->thread_up = true;
	refill(p);
	*out = p;
	return 0;
fail:
	pool_free(p);
	return err;
}

int pool_fd(const struct pool *p)
{
	return p ? p->done[0] : -1;
}

void pool_collect(struct pool *p)
{
	struct pool_result r;

	if (!p)
		return;
	while (read(p->done[0], &r, sizeof(r)) == sizeof(r)) {
		if (p->pending)
			p->pending--;
		if (!r.l) {
			if (!p->failing)
				fprintf(stderr, "sluice daemon: cannot load a spare set of "
						"programs (%s): attaches load their own until one "
						"can be\n",
					loader_explain(r.err));
			p->failing = true;
			continue;
		}
		if (p->failing)
			fprintf(stderr, "sluice daemon: spare sets of programs load again\n");
		p->failing = false;
		if (p->n_ready < p->want)
			p->ready[p->n_ready++] = r.l;
		else
			loader_destroy(r.l);
	}
	if (!p->failing)
		refill(p);
}

struct loader *pool_take(struct pool *p, const struct policy *pol,
			 const struct policy_compiled *c, const struct loader_opts *opts,
			 const char **why)
{
	struct loader *l;
	int err;

	*why = "no spares (--spares 0)";
	if (!p)
		return NULL;
	pool_collect(p);
	if (!p->n_ready) {
		*why = p->failing ? "spares cannot be loaded" : "no spare is ready yet";
		/* after a failure, each attach that finds none tries again, once */
		refill(p);
		return NULL;
	}
	/* every spare has the same sizes: the last fits if any does */
	l = p->ready[p->n_ready - 1];
	if (!loader_fits(l, pol, c, opts)) {
		*why = "the policy or options exceed a spare's map sizes";
		return NULL;
	}
	p->ready[--p->n_ready] = NULL;
	refill(p);
	err = loader_take(l, pol, c, opts);
	if (err) {
		/* half-written: never anyone's */
		loader_destroy(l);
		*why = "writing the run's configuration into a spare failed";
		return NULL;
	}
	return l;
}

size_t pool_ready(const struct pool *p)
{
	return p ? p->n_ready : 0;
}

unsigned int pool_want(const struct pool *p)
{
	return p ? p->want : 0;
}

void pool_free(struct pool *p)
{
	struct pool_result r;

	if (!p)
		return;
	/* requests already queued are dropped, not loaded: a stop waits for one load at most */
	__atomic_store_n(&p->stopping, true, __ATOMIC_RELEASE);
	if (p->req[1] >= 0)
		close(p->req[1]);
	/* a load under way finishes first: libbpf gives no way to stop it */
	if (p->thread_up)
		pthread_join(p->thread, NULL);
	while (p->done[0] >= 0 && read(p->done[0], &r, sizeof(r)) == sizeof(r))
		loader_destroy(r.l);
	while (p->n_ready)
		loader_destroy(p->ready[--p->n_ready]);
	if (p->req[0] >= 0)
		close(p->req[0]);
	if (p->done[0] >= 0)
		close(p->done[0]);
	if (p->done[1] >= 0)
		close(p->done[1]);
	free(p);
}
