// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of the command line a handed run sends the daemon (userspace/handoff.c): every
 * argument comes back byte for byte through the encoding and the control protocol's JSON line
 * (empty arguments, ':' and digits, control characters, bytes above 0x7f); what is not such a
 * list is refused; a command line too long for the buffer is refused, not cut. Expectations are
 * written out by hand.
 *
 * Usage: test_handoff        TAP; exits 1 if any test failed, 0 otherwise
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/control.h"
#include "userspace/handoff.h"
#include "tap.h"

static char why[WHY_LEN];

/* argv through encode, a control line and its parse, and decode: the same strings. */
static bool round_trip(char *const *argv, int n)
{
	static struct control_msg m;
	static struct control_obj o;
	static char enc[CONTROL_LINE_MAX];
	char **got = NULL, *buf = NULL, perr[256];
	const char *s;
	int got_n = 0, i;
	bool ok = false;

	EXPECT(!handoff_argv_encode(argv, n, enc, sizeof(enc)), "encode failed");
	control_msg_begin(&m);
	control_msg_str(&m, "argv", enc);
	EXPECT(!control_msg_end(&m), "the line did not fit");
	EXPECT(!control_parse(&o, m.buf, m.len, perr, sizeof(perr)), "parse: %s", perr);
	s = control_str(&o, "argv", NULL);
	EXPECT(s && !strcmp(s, enc), "the string changed on the way");
	EXPECT(!handoff_argv_decode(s, &got, &got_n, &buf), "decode refused \"%s\"", s);
	if (got_n != n) {
		snprintf(why, WHY_LEN, "expected %d arguments, got %d", n, got_n);
		goto out;
	}
	for (i = 0; i < n; i++)
		if (strcmp(got[i], argv[i])) {
			snprintf(why, WHY_LEN, "argument %d: expected \"%s\", got \"%s\"", i, argv[i],
				 got[i]);
			goto out;
		}
	if (got[n]) {
		snprintf(why, WHY_LEN, "the vector is not NULL-terminated");
		goto out;
	}
	ok = true;
out:
	free(got);
	free(buf);
	return ok;
}

static bool refused(const char *s)
{
	char **v = NULL, *b = NULL;
	int n;

	if (!handoff_argv_decode(s, &v, &n, &b)) {
		snprintf(why, WHY_LEN, "\"%s\" decoded into %d arguments", s, n);
		free(v);
		free(b);
		return false;
	}
	return true;
}

int main(void)
{
	static char high[256];
	char *simple[] = { "true" };
	char *tricky[] = { "sh", "", "-c", "3:abc", "12:", ":", "a\nb\tc\x01", "end" };
	char *bytes[] = { high, "x" };
	char small[8], *two[] = { "abc", "def" };
	int i;

	printf("TAP version 13\n");
	for (i = 1; i < 256; i++)
		high[i - 1] = (char)i;
	report(round_trip(simple, 1), "one argument comes back", why);
	report(round_trip(tricky, (int)ARRAY_SIZE(tricky)),
	       "empty arguments, colons, digits, control characters come back", why);
	report(round_trip(bytes, 2), "every byte 0x01-0xff comes back", why);
	report(refused("") && refused("3:ab") && refused("x:a") && refused("1:ab") &&
		       refused("-1:a") && refused("1a") && refused("2"),
	       "decode refuses what is not LEN:BYTES… (empty, short, trailing, signs)", why);
	report(handoff_argv_encode(two, 2, small, sizeof(small)) == -ENOSPC,
	       "a command line longer than the buffer is refused, not cut", why);
	printf("1..%d\n", n_test);
	return tap_status();
}
