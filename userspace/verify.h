/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Verification of a run's log (evidence spec section 7), streaming: the log's rotated segments
 * (segment k is LOG.k.gz, else the plain LOG.k that a crash before its compression leaves; k =
 * 000001, 000002, … as long as one of them exists) and then LOG are read line by line, and memory
 * stays constant apart from the Merkle tree's O(log n) state, the exported checkpoints given, a
 * fixed window of kernel sequence numbers, and the run keys of at most VERIFY_RESTARTS_MAX
 * writer restarts.
 *
 * Every check stops at the first bad line and names it; see verify_log() for the outcomes.
 */
#ifndef SLUICE_VERIFY_H
#define SLUICE_VERIFY_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "jsonline.h"
#include "note.h"
#include "seqset.h"
#include "tlog.h"

/* The exit codes of sluice verify. */
enum verify_status {
	VERIFY_OK = 0,	     /* intact, sealed, no loss */
	VERIFY_INVALID = 1,  /* tampered or invalid: err_* name the first bad line */
	VERIFY_UNSEALED = 2, /* intact, but lines after the last checkpoint are not signed */
	VERIFY_LOSS = 3,     /* intact, sealed, kernel records lost and every one declared */
	VERIFY_ERROR = 4,    /* could not verify: unreadable file, bad host key, no memory */
};

/*
 * Kernel sequence numbers may arrive out of order (one ring buffer per CPU in the future, the
 * resolver's thread today); this many past the lowest one not yet seen are tracked. A record that
 * arrives further behind than this is refused, as a repeat would be.
 */
#define VERIFY_KSEQ_WINDOW SEQSET_WINDOW
/* How many missing kseq ranges the result lists (all are counted). */
#define VERIFY_RANGES_MAX 16
#define VERIFY_WHY_MAX 512
/* The longest run id a log_start may name: the writer's RUN_ID_MAX (resume.c holds them equal). */
#define VERIFY_RUN_ID_MAX 72
/*
 * The most writer_restart records one log may hold. Verify keeps every run key of the log (36
 * bytes each: a restart must not reuse one, and none may sign after its successor took over), so
 * the number is bounded to keep memory flat; a writer that died this often has no log worth
 * resuming.
 */
#define VERIFY_RESTARTS_MAX 1024

/*
 * What sluice resume needs to append to the log of a writer that died (verify_opts.resume): the
 * state of the lines read, the torn one included, as a writer that had written them would hold it.
 */
struct verify_state {
	uint64_t format;	      /* log_start's: the log goes on in it */
	struct tlog_tree tree;	      /* the tree of every line read, the torn one included */
	uint8_t prev[TLOG_HASH_SIZE]; /* the next line's prev (by format), after the last line */
	uint64_t lines;		      /* lines read, torn included: the next seq */
	unsigned int segments;	      /* rotated segments read: the next one is segments + 1 */
	bool log_missing;	      /* segments, but no LOG */
	bool newline_missing;	      /* LOG's last line is whole but has no "\n" */
	uint64_t torn;		      /* bytes of a torn last line, 0: none */
	uint64_t unsealed;	      /* as writer_restart.unsealed would be for the next line */
	uint64_t kseq_high;	      /* 1 + the largest kseq read, 0: none */
	/* LOG as it was read (st_dev, st_ino, bytes): the file a writer may append to */
	uint64_t log_dev, log_ino, log_size;
};

struct verify_opts {
	const char *log;
	const char *host_vkey;		/* the host's verifier key, as in its .pub file */
	const char *const *checkpoints; /* exported checkpoint files (sidecar format) */
	size_t n_checkpoints;
	/* the run expected (NULL: any run the host key certified): another run's log is invalid */
	const char *run_id; /* log_start.run_id */
	const char *origin; /* log_start.origin ("sluice/" run_id) */
	/*
	 * The log of a writer that died, for sluice resume: LOG's last bytes without a "\n" are
	 * checked as a line when they parse (state->newline_missing), else they are its torn line
	 * (state->torn: hashed into prev and the tree, counted in lines). Everything else is
	 * verified as without it; the outcome expected is VERIFY_UNSEALED (a sealed log, or one
	 * with run_end, is the caller's to refuse).
	 */
	bool resume;
	/*
	 * Called with every line that passed its checks (not a torn one), with or without resume;
	 * jl and the line it points into are valid during the call only. NULL: none.
	 */
	void (*on_line)(const struct jsonline *jl, void *ctx);
	void *ctx;
	struct verify_state *state; /* filled when resume and status is VERIFY_UNSEALED */
};

struct verify_range {
	uint64_t first, last;
};

struct verify_result {
	int status;		       /* enum verify_status */
	uint64_t lines;		       /* complete lines read */
	unsigned int segments;	       /* files read: rotated segments + LOG */
	uint64_t checkpoints;	       /* checkpoint lines verified */
	uint64_t last_checkpoint_size; /* 0 if none */
	bool sealed;		       /* ends with the final checkpoint (covered, see below) */
	uint64_t unsealed_lines;       /* lines after the last checkpoint */
	bool partial_line;	       /* the log ends inside a line (counted unsealed) */
	/* rotated segments, but no LOG: unsealed (a crash between rotation's rename and create) */
	bool log_missing;
	/*
	 * The log ends with its final seal, but exported checkpoints were given and none covers
	 * the seal line (the writer exports one of size lines): unsealed, the seal line unsigned.
	 */
	bool seal_uncovered;
	uint64_t ext_checkpoints; /* exported checkpoints verified */
	/* the writer's first "sluice: log write failed at seq N: …" in the exported stream */
	char ext_write_failure[VERIFY_WHY_MAX];
	uint64_t anomalies;	/* anomaly records */
	uint64_t declared_loss; /* sum of the loss records' counts */
	/*
	 * The loss records of hook "log": the log could not be written for a while (a full
	 * disk). Kernel records read but never written (their counts, part of declared_loss),
	 * and every line it did not get (their "lines", kernel records included).
	 */
	uint64_t unwritten;
	uint64_t unwritten_lines;
	uint64_t log_failures; /* such records */
	uint64_t missing_kseq;	/* kernel sequence numbers absent from the log */
	uint64_t unlogged;	/* run_end.unlogged: records not logged by policy */
	struct verify_range missing[VERIFY_RANGES_MAX];
	size_t n_missing; /* ranges listed; more exist if more_missing */
	bool more_missing;
	/* the log's loss_ranges record, when it lists exactly the missing ranges; else 0 */
	uint64_t loss_ranges_line;
	/* writer restarts: writer_restart records */
	uint64_t restarts;
	uint64_t restart_unsealed; /* the sum of their unsealed: lines first signed at a restart */
	uint64_t restart_torn;	   /* torn lines (each followed by its writer_restart) */
	uint64_t restart_gap;	   /* run_end.restart_gap, 0 if absent */
	uint64_t first_restart_line; /* 1-based; 0: none */
	/* the longest time between a restart checkpoint and the checkpoint before it */
	uint64_t restart_downtime_us;
	bool has_run_end;
	uint64_t kseq_next;		/* from run_end */
	char origin[NOTE_NAME_MAX + 1]; /* log_start's; trust it only if cert_verified */
	char host_key_name[NOTE_NAME_MAX + 1];
	/* log_start's run key certificate verified under the host key (origin, key, ts below) */
	bool cert_verified;
	int64_t start_ts;      /* log_start.ts: microseconds since the epoch */
	uint32_t run_key_hash; /* the run key's hash (as in its verifier key) */
	uint32_t last_key_hash; /* the key in force at the end: the last writer_restart's, if any */
	/* log_start's format, once read (0: not reached); a log refused for another one is of a
	   sluice this one cannot check, not necessarily changed */
	uint64_t format;
	/* for tests: words the kseq window examined (a crafted log must not make this explode) */
	uint64_t kseq_words_scanned;

	/* The first error (status 1, and 4 when it is about a file). */
	uint64_t err_line; /* 1-based over the whole log; 0: not a log line */
	bool err_has_seq;
	uint64_t err_seq;	 /* the seq the bad line should have had */
	char err_file[PATH_MAX]; /* the segment or checkpoint file */
	uint64_t err_file_line;	 /* 1-based line within err_file; 0 if none */
	char why[VERIFY_WHY_MAX];
};

/*
 * Verify o->log; fills *r and returns r->status. Exit 2 (unsealed) wins over 3 (declared loss):
 * loss in an unsealed tail cannot be told from records in flight when the writer died.
 */
int verify_log(const struct verify_opts *o, struct verify_result *r);

/*
 * The segment paths verify_log reads: "LOG.%06u.gz" (gz) or "LOG.%06u" for k >= 1;
 * -ENAMETOOLONG if too long.
 */
int verify_segment_path(const char *log, unsigned int k, bool gz, char *buf, size_t size);

/* What a file that is not a regular one is, for an error: "a FIFO", "a directory", … */
const char *verify_file_kind(mode_t mode);

#endif /* SLUICE_VERIFY_H */
