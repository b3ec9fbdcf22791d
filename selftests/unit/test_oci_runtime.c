// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of userspace/oci_runtime.c's reading of runc's arguments: the command behind global
 * options with values (one or two dashes, '=' or the next argument), the bundle in each form
 * (--bundle X, --bundle=X, -b X, -b=X, -bundle X, after the container id), none (the working
 * directory), commands that create nothing, and what it refuses because it cannot tell which
 * bundle runc would use; and runc's log (--log, --log-format), where a refusal is written for
 * Docker to show, known even when a later argument is refused. The expected results are runc 1.1.5's, checked by hand against it.
 *
 * Usage: test_oci_runtime        TAP 13; exits 1 if any test failed, 0 otherwise
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "userspace/oci_runtime.h"
#include "tap.h"

static char why[WHY_LEN];

#define ARGS_MAX 16

struct parse_case {
	const char *name;
	const char *argv[ARGS_MAX]; /* NULL-terminated */
	int err;		    /* 0 or -EINVAL */
	int cmd;
	bool creates;
	const char *bundle;
	const char *why_has; /* when refused: in the reason */
};

static const struct parse_case cases[] = {
	{ "Docker's shim: global options with values, then create --bundle X",
	  { "--root", "/run/docker/runtime-runc/moby", "--log", "/b/log.json", "--log-format",
	    "json", "create", "--bundle", "/b", "--pid-file", "/b/init.pid", "c1" },
	  0, 6, true, "/b", NULL },
	{ "--bundle=X", { "create", "--bundle=/b", "c1" }, 0, 0, true, "/b", NULL },
	{ "-b X", { "create", "-b", "/b", "c1" }, 0, 0, true, "/b", NULL },
	{ "-b=X", { "create", "-b=/b", "c1" }, 0, 0, true, "/b", NULL },
	{ "-bundle X (Go's one dash)", { "create", "-bundle", "/b", "c1" }, 0, 0, true, "/b", NULL },
	{ "the bundle after the container id (urfave/cli reorders)",
	  { "create", "--pid-file", "/p", "c1", "--bundle", "/b", "--no-pivot" }, 0, 0, true, "/b",
	  NULL },
	{ "no bundle: the working directory", { "create", "c1" }, 0, 0, true, NULL, NULL },
	{ "global options: -opt=value, -opt value, booleans, --debug=false",
	  { "-root=/r", "-log", "/l", "--systemd-cgroup", "--debug=false", "--rootless", "auto",
	    "run", "-d", "-b", "/b", "c1" },
	  0, 7, true, "/b", NULL },
	{ "a global option's value that names a command is its value",
	  { "--root", "create", "state", "c1" }, 0, 2, false, NULL, NULL },
	{ "\"--\" before the command", { "--debug", "--", "create", "-b", "/b", "c1" }, 0, 2, true,
	  "/b", NULL },
	{ "restore -b X", { "restore", "--image-path", "/i", "--tcp-established", "-b", "/b", "c1" },
	  0, 0, true, "/b", NULL },
	{ "delete creates nothing", { "--root", "/r", "delete", "--force", "c1" }, 0, 2, false,
	  NULL, NULL },
	{ "features creates nothing", { "features" }, 0, 0, false, NULL, NULL },
	{ "an unknown command's options are not read", { "exec", "--bogus", "c1" }, 0, 0, false,
	  NULL, NULL },
	{ "--version: no command", { "--version" }, 0, -1, false, NULL, NULL },
	{ "a value-taking global option at the end: no command", { "--root" }, 0, -1, false, NULL,
	  NULL },
	{ "options after \"--\" in create are arguments (runc refuses them)",
	  { "create", "c1", "--", "--bundle", "/b" }, 0, 0, true, NULL, NULL },
	{ "refused: a global option runc 1.1 lacks", { "--new", "x", "create", "c1" }, -EINVAL, -1,
	  false, NULL, "\"--new\": not one of runc 1.1's" },
	{ "refused: ---root", { "---root", "/r", "create", "c1" }, -EINVAL, -1, false, NULL,
	  "bad flag syntax" },
	{ "refused: a create option runc 1.1 lacks", { "create", "--new", "c1" }, -EINVAL, 0, true,
	  NULL, "create \"--new\": not one of runc 1.1's" },
	{ "refused: two bundles (runc refuses -b with --bundle, takes the last of one form)",
	  { "create", "-b", "/a", "-b", "/b", "c1" }, -EINVAL, 0, true, NULL,
	  "more than one --bundle" },
	{ "refused: a bundle option with no value", { "create", "c1", "--bundle" }, -EINVAL, 0, true,
	  NULL, "expected a value, got nothing" },
	{ "refused: a value that looks like an option",
	  { "create", "--pid-file", "--bundle", "/b", "c1" }, -EINVAL, 0, true, NULL,
	  "\"--pid-file\": expected a value, got \"--bundle\"" },
	{ "refused: an empty bundle", { "create", "--bundle=", "c1" }, -EINVAL, 0, true, NULL,
	  "an empty bundle path" },
};

struct log_case {
	const char *name;
	const char *argv[ARGS_MAX]; /* NULL-terminated */
	const char *log;	    /* NULL: none */
	bool json;
};

static const struct log_case log_cases[] = {
	{ "log: Docker's shim (--log X --log-format json)",
	  { "--root", "/r", "--log", "/b/log.json", "--log-format", "json", "create", "c1" },
	  "/b/log.json", true },
	{ "log: -log=X, no format: text", { "-log=/l", "create", "c1" }, "/l", false },
	{ "log: given twice, the last of each (Go's flag)",
	  { "--log=/a", "--log-format=json", "--log=/l", "--log-format=text", "state", "c1" }, "/l",
	  false },
	{ "log: none", { "--root", "/r", "create", "c1" }, NULL, false },
	{ "log: known when a later global option is refused",
	  { "--log", "/l", "--log-format", "json", "--new", "create", "c1" }, "/l", true },
	{ "log: known when a create option is refused",
	  { "--log", "/l", "create", "--new", "c1" }, "/l", false },
};

static bool log_case(const struct log_case *c)
{
	struct oci_runtime_args a;
	char msg[512] = "";
	int argc = 0;

	while (c->argv[argc])
		argc++;
	oci_runtime_parse(argc, (char *const *)c->argv, &a, msg, sizeof(msg));
	EXPECT(c->log ? a.log && !strcmp(a.log, c->log) && a.log_json == c->json : !a.log,
	       "log %s (json %d), got %s (json %d)", c->log ? c->log : "(none)", c->json,
	       a.log ? a.log : "(none)", a.log_json);
	return true;
}

static bool parse_case(const struct parse_case *c)
{
	struct oci_runtime_args a;
	char msg[512] = "";
	int argc = 0, err;

	while (c->argv[argc])
		argc++;
	err = oci_runtime_parse(argc, (char *const *)c->argv, &a, msg, sizeof(msg));
	EXPECT(err == c->err, "return %d, got %d (%s)", c->err, err, msg);
	if (err) {
		EXPECT(strstr(msg, c->why_has), "a reason holding \"%s\", got \"%s\"", c->why_has,
		       msg);
		return true;
	}
	EXPECT(a.cmd == c->cmd && a.creates == c->creates,
	       "command at %d (creates %d), got %d (creates %d)", c->cmd, c->creates, a.cmd,
	       a.creates);
	EXPECT(c->bundle ? a.bundle && !strcmp(a.bundle, c->bundle) : !a.bundle,
	       "bundle %s, got %s", c->bundle ? c->bundle : "(none)",
	       a.bundle ? a.bundle : "(none)");
	return true;
}

int main(void)
{
	size_t i;

	printf("TAP version 13\n1..%zu\n", ARRAY_SIZE(cases) + ARRAY_SIZE(log_cases));
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		report(parse_case(&cases[i]), cases[i].name, why);
	for (i = 0; i < ARRAY_SIZE(log_cases); i++)
		report(log_case(&log_cases[i]), log_cases[i].name, why);
	return tap_status();
}
