// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "journal.h"
#include "report_html.h"

/*
 * The length of the well-formed UTF-8 sequence at s, within n bytes; 0 if none. journal_utf8_len
 * reads a NUL-terminated string: a copy bounded by n (at most 4 bytes) keeps it inside.
 */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	char buf[5] = {0};

	memcpy(buf, s, n < 4 ? n : 4);
	return journal_utf8_len(buf);
}

static void escape(FILE *f, const char *str, size_t len, bool lines)
{
	const unsigned char *s = (const unsigned char *)str, *end = s + len;

	while (s < end) {
		size_t n = *s >= 0x80 ? utf8_len(s, (size_t)(end - s)) : 0, i;

		if (lines && *s == '\n') {
			fputc('\n', f);
			s++;
			continue;
		}
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&#39;", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		default:
			if (*s >= 0x20 && *s < 0x7f) {
				fputc(*s, f);
				break;
			}
			if (n && !journal_cp_misleads(journal_utf8_cp((const char *)s, n))) {
				fwrite(s, 1, n, f);
				s += n;
				continue;
			}
			for (i = 0; i < (n ? n : 1); i++)
				fprintf(f, "\\x%02x", s[i]);
			s += n ? n : 1;
			continue;
		}
		s++;
	}
}

void report_html_textn(FILE *f, const char *s, size_t n)
{
	escape(f, s, n, false);
}

void report_html_lines(FILE *f, const char *s, size_t n)
{
	escape(f, s, n, true);
}

void report_html_text(FILE *f, const char *s)
{
	report_html_textn(f, s, strlen(s));
}

unsigned int report_bar_len(uint64_t value, uint64_t max, unsigned int width)
{
	unsigned __int128 len;

	if (!max || !value)
		return 0;
	if (value >= max)
		return width;
	len = ((unsigned __int128)value * width + max / 2) / max;
	if (!len)
		len = 1;
	return (unsigned int)len;
}

unsigned int report_time_x(int64_t t, int64_t t0, int64_t t1, unsigned int width)
{
	unsigned __int128 x;

	if (t1 <= t0 || t <= t0)
		return 0;
	if (t >= t1)
		return width;
	/* differences of int64 can pass INT64_MAX: as unsigned, they cannot overflow */
	x = (unsigned __int128)((uint64_t)t - (uint64_t)t0) * width;
	return (unsigned int)(x / ((uint64_t)t1 - (uint64_t)t0));
}

/* Bytes for a person: "1234 B", "12.1 KiB", "3.4 MiB", "2.0 GiB". */
static void bytes_text(FILE *f, uint64_t b)
{
	static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v = (double)b;
	int u = -1;

	if (b < 1024) {
		fprintf(f, "%" PRIu64 " B", b);
		return;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	fprintf(f, "%.1f %s", v, unit[u]);
}

void report_bar_chart(FILE *f, const struct report_bar *bars, size_t n)
{
	unsigned int w = REPORT_BAR_LABEL + REPORT_BAR_WIDTH + 100, row = 2 * REPORT_BAR_HEIGHT + 8;
	uint64_t max = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (bars[i].sent > max)
			max = bars[i].sent;
		if (bars[i].received > max)
			max = bars[i].received;
	}
	fprintf(f,
		"<svg class=\"bars\" width=\"%u\" "
		"height=\"%zu\" viewBox=\"0 0 %u %zu\" role=\"img\">\n",
		w, n * row + 4, w, n * row + 4);
	for (i = 0; i < n; i++) {
		unsigned int y = (unsigned int)i * row + 2;
		unsigned int ls = report_bar_len(bars[i].sent, max, REPORT_BAR_WIDTH);
		unsigned int lr = report_bar_len(bars[i].received, max, REPORT_BAR_WIDTH);

		fprintf(f, "<text x=\"0\" y=\"%u\" class=\"lbl\">", y + REPORT_BAR_HEIGHT + 4);
		report_html_text(f, bars[i].label);
		fprintf(f, "</text>\n");
		fprintf(f,
			"<rect class=\"sent\" x=\"%u\" y=\"%u\" width=\"%u\" height=\"%u\"/>"
			"<text x=\"%u\" y=\"%u\" class=\"num\">",
			REPORT_BAR_LABEL, y, ls, REPORT_BAR_HEIGHT, REPORT_BAR_LABEL + ls + 4,
			y + REPORT_BAR_HEIGHT - 2);
		bytes_text(f, bars[i].sent);
		fprintf(f,
			" sent</text>\n<rect class=\"recv\" x=\"%u\" y=\"%u\" width=\"%u\" "
			"height=\"%u\"/><text x=\"%u\" y=\"%u\" class=\"num\">",
			REPORT_BAR_LABEL, y + REPORT_BAR_HEIGHT, lr, REPORT_BAR_HEIGHT,
			REPORT_BAR_LABEL + lr + 4, y + 2 * REPORT_BAR_HEIGHT - 2);
		bytes_text(f, bars[i].received);
		fprintf(f, " received</text>\n");
	}
	fprintf(f, "</svg>\n");
}

void report_timeline(FILE *f, const struct report_span *spans, size_t n, int64_t t0, int64_t t1)
{
	static const char *const cls[] = {"allow", "deny", "cut", "would"};
	size_t rows = n < REPORT_TL_MAX_ROWS ? n : REPORT_TL_MAX_ROWS, i;
	unsigned int w = REPORT_BAR_LABEL + REPORT_TL_WIDTH + 10;
	char a[64], b[64];

	fprintf(f,
		"<svg class=\"tl\" width=\"%u\" "
		"height=\"%zu\" "
		"viewBox=\"0 0 %u %zu\" role=\"img\">\n",
		w, rows * REPORT_TL_ROW + 20, w, rows * REPORT_TL_ROW + 20);
	for (i = 0; i < rows; i++) {
		const struct report_span *s = &spans[i];
		unsigned int y = (unsigned int)i * REPORT_TL_ROW;
		unsigned int x0 = report_time_x(s->start, t0, t1, REPORT_TL_WIDTH);
		unsigned int x1 = report_time_x(s->end, t0, t1, REPORT_TL_WIDTH);
		int k = s->kind >= 0 && s->kind <= REPORT_SPAN_WOULD_DENY ? s->kind : 0;

		/* a point, or a flow too short to see, still gets a mark wide enough to see */
		if (x1 < x0 + 3)
			x1 = x0 + 3;
		fprintf(f, "<text x=\"0\" y=\"%u\" class=\"lbl\">", y + REPORT_TL_ROW - 3);
		report_html_text(f, s->label);
		fprintf(f,
			"</text><rect class=\"%s\" x=\"%u\" y=\"%u\" width=\"%u\" "
			"height=\"%u\"/>\n",
			cls[k], REPORT_BAR_LABEL + x0, y + 2, x1 - x0, REPORT_TL_ROW - 4);
	}
	report_time(t0, a, sizeof(a));
	report_time(t1, b, sizeof(b));
	fprintf(f,
		"<line x1=\"%u\" y1=\"%zu\" x2=\"%u\" y2=\"%zu\" class=\"axis\"/>"
		"<text x=\"%u\" y=\"%zu\" class=\"num\">%s</text>"
		"<text x=\"%u\" y=\"%zu\" class=\"num\" text-anchor=\"end\">%s</text>\n</svg>\n",
		REPORT_BAR_LABEL, rows * REPORT_TL_ROW + 2, REPORT_BAR_LABEL + REPORT_TL_WIDTH,
		rows * REPORT_TL_ROW + 2, REPORT_BAR_LABEL, rows * REPORT_TL_ROW + 16, a,
		REPORT_BAR_LABEL + REPORT_TL_WIDTH, rows * REPORT_TL_ROW + 16, b);
	if (n > rows)
		fprintf(f, "<p class=\"note\">%zu more connections are not drawn.</p>\n", n - rows);
}

int report_verdict_of(const struct verify_result *r, bool unverified)
{
	if (unverified)
		return REPORT_UNVERIFIED;
	switch (r->status) {
	case VERIFY_OK:
		return REPORT_VERIFIED;
	case VERIFY_LOSS:
		return REPORT_LOSS;
	case VERIFY_UNSEALED:
		return REPORT_UNSEALED;
	case VERIFY_INVALID:
		/* a newer sluice's log: this one cannot check it, which is not proof of a change */
		return r->format > JOURNAL_FORMAT ? REPORT_FORMAT : REPORT_TAMPERED;
	default:
		return REPORT_ERROR;
	}
}

const char *report_verdict_word(int verdict)
{
	switch (verdict) {
	case REPORT_VERIFIED:
		return "VERIFIED";
	case REPORT_LOSS:
		return "LOSS DECLARED";
	case REPORT_UNSEALED:
		return "UNSEALED";
	case REPORT_TAMPERED:
		return "TAMPERED";
	case REPORT_UNVERIFIED:
		return "UNVERIFIED";
	case REPORT_FORMAT:
		return "UNKNOWN FORMAT";
	default:
		return "NOT VERIFIED";
	}
}

const char *report_verdict_class(int verdict)
{
	switch (verdict) {
	case REPORT_VERIFIED:
		return "ok";
	case REPORT_LOSS:
	case REPORT_UNSEALED:
		return "warn";
	default:
		return "bad";
	}
}

void report_time(int64_t us, char *buf, size_t size)
{
	int64_t ms = us % 1000000 / 1000;
	time_t sec = (time_t)(us / 1000000);
	struct tm tm;
	size_t n;

	if (ms < 0) {
		ms += 1000;
		sec--;
	}
	if (!gmtime_r(&sec, &tm) || !(n = strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm))) {
		snprintf(buf, size, "%" PRId64 " us", us);
		return;
	}
	snprintf(buf + n, size - n, ".%03" PRId64 " UTC", ms);
}

/*
 * No script and nothing fetched: the policy forbids every source but inline style and data:
 * images, so a page that a bug let markup into still runs nothing and calls no one.
 */
static const char page_css[] =
	"body{font:14px/1.4 sans-serif;margin:1.5em;color:#111;background:#fff}"
	"h1{font-size:1.4em;margin:.2em 0}h2{font-size:1.15em;margin:1.4em 0 .4em;"
	"border-bottom:1px solid #ccc}h3{font-size:1em;margin:1em 0 .3em}"
	"table{border-collapse:collapse;margin:.3em 0}td,th{border:1px solid #ccc;"
	"padding:.2em .5em;text-align:left;vertical-align:top}th{background:#f3f3f3}"
	"td.n{text-align:right;font-variant-numeric:tabular-nums}"
	"code,pre,.mono{font-family:monospace;overflow-wrap:anywhere}"
	"pre{background:#f6f6f6;padding:.6em;white-space:pre-wrap;border:1px solid #ddd}"
	".verdict{padding:.6em 1em;margin:.6em 0;font-size:1.15em;border:3px solid}"
	".verdict b{font-size:1.4em;letter-spacing:.05em}"
	".verdict.ok{background:#e5f6e5;border-color:#2a7a2a;color:#124d12}"
	".verdict.warn{background:#fff3d6;border-color:#b07800;color:#5a3d00}"
	".verdict.bad{background:#c00000;border-color:#700;color:#fff}"
	"tr.bad td.v{background:#c00000;color:#fff;font-weight:bold}"
	"tr.warn td.v{background:#fff3d6}tr.ok td.v{background:#e5f6e5}"
	".deny{fill:#c00000}.allow{fill:#3572b0}.cut{fill:#e08a00}.would{fill:#8e44ad}"
	".sent{fill:#3572b0}.recv{fill:#7fb24a}.axis{stroke:#555}"
	"svg text{font:11px sans-serif;fill:#222}.note{color:#555;font-size:.9em}"
	".add{color:#124d12}.del{color:#a00}";

void report_page_head(FILE *f, const char *title)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "style-src 'unsafe-inline'; img-src data:\">\n"
	      "<meta name=\"referrer\" content=\"no-referrer\">\n<title>",
	      f);
	report_html_text(f, title);
	fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n", page_css);
}

void report_page_tail(FILE *f)
{
	fputs("</body>\n</html>\n", f);
}
