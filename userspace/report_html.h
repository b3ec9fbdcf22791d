/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The pieces of sluice report's HTML page: text escaping, an inline SVG bar chart and timeline,
 * and the verification verdict. Every string a log holds (host names, comm, SNI, run ids,
 * reasons) is an attacker's bytes: it reaches the page only through report_html_text(), whose
 * output is valid UTF-8 holding no markup, no character reference that decodes to markup, no
 * control byte and no bidirectional override, so the page means what the writer wrote whatever
 * the log holds.
 */
#ifndef SLUICE_REPORT_HTML_H
#define SLUICE_REPORT_HTML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "verify.h"

/*
 * s as HTML text, safe both between tags and inside a double- or single-quoted attribute value:
 * & < > " ' as character references; printable ASCII and well-formed UTF-8 as they are; control
 * bytes, DEL, bytes of invalid UTF-8 and the code points that change how a line reads (C1
 * controls, bidirectional overrides and isolates, line and paragraph separators, BOM) as a
 * visible \xNN per byte, and the backslash as \\ so that the two cannot be confused.
 */
void report_html_text(FILE *f, const char *s);
/* The same for n bytes of s (NUL bytes included, as \x00). */
void report_html_textn(FILE *f, const char *s, size_t n);
/* The same, but "\n" kept as it is: for text sluice wrote itself, shown in a <pre>. */
void report_html_lines(FILE *f, const char *s, size_t n);

/* Geometry of the charts, in SVG user units (pixels at 100 %). */
#define REPORT_BAR_WIDTH 360   /* the longest bar */
#define REPORT_BAR_HEIGHT 12   /* one bar; a host has two: sent above, received below */
#define REPORT_BAR_LABEL 220   /* the host names' column */
#define REPORT_TL_WIDTH 640    /* the timeline's time axis */
#define REPORT_TL_ROW 14       /* one connection */
#define REPORT_TL_MAX_ROWS 400 /* more are counted in a caption, not drawn */

/*
 * The length of value's bar where max gets width: rounded to nearest, never 0 for a value that
 * is not 0 (a small flow must stay visible), never more than width; 0 when max is 0.
 */
unsigned int report_bar_len(uint64_t value, uint64_t max, unsigned int width);

/*
 * Where t falls on an axis of width from t0 to t1 (microseconds): clamped to [0, width]; 0
 * when the run has no duration (t1 <= t0).
 */
unsigned int report_time_x(int64_t t, int64_t t0, int64_t t1, unsigned int width);

struct report_bar {
	const char *label; /* a host name or an address: the log's bytes */
	uint64_t sent, received;
};

/* An SVG chart of bars: for each, sent and received bytes side by side, to the same scale. */
void report_bar_chart(FILE *f, const struct report_bar *bars, size_t n);

enum report_span_kind {
	REPORT_SPAN_ALLOWED,
	REPORT_SPAN_DENIED, /* a denial, enforced or reported: a point in time */
	REPORT_SPAN_CUT,    /* a flow cut at its byte cap */
	REPORT_SPAN_WOULD_DENY, /* a flow report mode let through that the policy denies */
};

struct report_span {
	const char *label;  /* host or address and port: the log's bytes */
	int64_t start, end; /* microseconds since the epoch; end == start for a point */
	int kind;	    /* enum report_span_kind */
};

/* An SVG timeline of spans over [t0, t1]; at most REPORT_TL_MAX_ROWS are drawn. */
void report_timeline(FILE *f, const struct report_span *spans, size_t n, int64_t t0, int64_t t1);

/*
 * The verdict of a log, as the page's header shows it. TAMPERED covers every log that
 * verify_log() refused (status 1) and ERROR every one it could not read (status 4); with
 * --unverified, no log is verified and every one is UNVERIFIED.
 */
enum report_verdict {
	REPORT_VERIFIED,   /* intact and sealed, no loss */
	REPORT_LOSS,	   /* intact and sealed, loss declared */
	REPORT_UNSEALED,   /* intact, the tail unsigned */
	REPORT_TAMPERED,   /* the log does not verify */
	REPORT_ERROR,	   /* it could not be verified */
	REPORT_UNVERIFIED, /* --unverified: not checked */
	REPORT_FORMAT,	   /* refused for a log format this sluice does not read */
};

int report_verdict_of(const struct verify_result *r, bool unverified);
/* "VERIFIED", "LOSS DECLARED", "UNSEALED", "TAMPERED", "NOT VERIFIED", "UNVERIFIED",
   "UNKNOWN FORMAT" */
const char *report_verdict_word(int verdict);
/* The CSS class of the verdict: "ok", "warn" or "bad". */
const char *report_verdict_class(int verdict);

/* The head of the page up to and including <body>: CSP, inline CSS, the title (escaped). */
void report_page_head(FILE *f, const char *title);
void report_page_tail(FILE *f);

/* The local time of us as UTC for the page: "2026-12-02 04:31:04.123 UTC". */
void report_time(int64_t us, char *buf, size_t size);

#endif /* SLUICE_REPORT_HTML_H */
