// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sluice oci-runtime [--runc PATH] [--policy FILE] [--policy-dir DIR] [--mode MODE]
 *                    [--socket PATH] [--trust-run-id] -- RUNC-ARGS…
 *
 * Docker runs no OCI hooks of its own, but it runs whatever runtime it is told to, exactly as it
 * runs runc (containerd's runc shim calls it with runc's arguments). This is that runtime: for
 * the commands that create a container (create, run, restore) it adds a createRuntime hook that
 * runs "sluice oci-hook" with the options it was given to the bundle's config.json, written
 * back whole or not at all, then execs runc with the arguments it got; every other command is
 * runc's alone. The hook attaches the container before its first instruction, or fails its
 * start (oci_hook.c). When the wrapper itself cannot add the hook (no bundle, a config.json it
 * cannot read, parse or replace, arguments it cannot read as runc would, no runc) it says why
 * and exits non-zero without running runc: the container is not created, so never unconfined;
 * the reason also goes to runc's log, the only place Docker looks. Its --policy and --mode bind:
 * the hook refuses a container whose annotations ask for another policy or mode.
 */
#define _GNU_SOURCE /* strchrnul */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cjson.h"
#include "json.h"
#include "oci_runtime.h"
#include "util.h"

#define WRAPPER "sluice oci-runtime"
/*
 * Seconds runc gives the hook: a daemon that hangs fails the start. More than the hook's own wait
 * for the daemon's reply (CONTROL_REPLY_TIMEOUT_MS, 60 s), so that it is the hook that gives up
 * first and says so, not runc with only "timeout".
 */
#define HOOK_TIMEOUT "75"
#define HOOK_ARGS_MAX 16
#define WHY_MAX 512

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sluice oci-runtime [--runc PATH] [--policy FILE] [--policy-dir DIR]\n"
		"                          [--mode MODE] [--socket PATH] [--trust-run-id]\n"
		"                          -- RUNC-ARGS...\n"
		"\n"
		"An OCI runtime in front of runc, for engines that run no hooks (Docker:\n"
		"daemon.json \"runtimes\", its \"runtimeArgs\" ending in \"--\"). On runc's create,\n"
		"run and restore it adds a createRuntime hook running \"sluice oci-hook\" with\n"
		"these options to the bundle's config.json, then execs runc with RUNC-ARGS\n"
		"unchanged; every other command is runc's alone. When it cannot add the hook it\n"
		"exits non-zero, runc never runs and the container is not created.\n"
		"  --runc PATH        the runc to exec (default: the first runc in $PATH that\n"
		"                     is not this program)\n"
		"  --policy FILE      every container's policy: the hook refuses a container\n"
		"                     whose io.sluice.policy names another (oci-hook's\n"
		"                     --policy-fixed)\n"
		"  --policy-dir DIR, --mode MODE, --socket PATH, --trust-run-id\n"
		"                     given to the hook (sluice oci-hook --help); paths absolute\n"
		"A refusal is written to runc's --log too (as runc does: --log-format json or\n"
		"text), where Docker looks for the runtime's error.\n"
		"Exit status: runc's; 2 bad arguments or bundle; 127 no runc to exec.\n");
}

/* s quoted as logrus's text format quotes a value (Go's %q, its common escapes) */
static void put_text_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/*
 * Why the wrapper refuses: on stderr, and appended to runc's log when runc's arguments name one
 * (ra; NULL before they are read), as runc writes its own errors there (--log-format json:
 * {"level":"error","msg":…,"time":…}, else logrus's text). Docker's shim reports the log's last
 * error and never the runtime's stderr: without this line its user sees only an exit status.
 */
static void __attribute__((format(printf, 2, 3)))
refuse(const struct oci_runtime_args *ra, const char *fmt, ...)
{
	char msg[WHY_MAX + PATH_MAX], when[32];
	char *line = NULL;
	size_t len = 0;
	struct tm tm;
	time_t now;
	va_list ap;
	FILE *f;
	int fd;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", msg);
	if (!ra || !ra->log)
		return;
	now = time(NULL);
	if (!gmtime_r(&now, &tm) || !strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm))
		return;
	f = open_memstream(&line, &len);
	if (!f)
		return;
	if (ra->log_json) {
		fputs("{\"level\":\"error\",\"msg\":", f);
		cjson_fput_string(f, msg);
		fprintf(f, ",\"time\":\"%s\"}\n", when);
	} else {
		fprintf(f, "time=\"%s\" level=error msg=", when);
		put_text_quoted(f, msg);
		fputc('\n', f);
	}
	if (ferror(f) | fclose(f)) {
		free(line);
		return;
	}
	/* (one write with O_APPEND: whole after whatever runc or the shim wrote before) */
	fd = util_open_regular(ra->log, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0)
		fprintf(stderr, WRAPPER ": runc's log %s: %s\n", ra->log, strerror(-fd));
	else if (write(fd, line, len) != (ssize_t)len)
		fprintf(stderr, WRAPPER ": runc's log %s: a short write\n", ra->log);
	if (fd >= 0)
		close(fd);
	free(line);
}

struct runc_flag {
	const char *name;
	bool value; /* takes a value (else a boolean: a value only after '=') */
};

/* runc 1.1's global options, and those of its commands that create a container */
static const struct runc_flag global_flags[] = {
	{ "debug", false },  { "log", true },		 { "log-format", true },
	{ "root", true },    { "criu", true },		 { "systemd-cgroup", false },
	{ "rootless", true }, { "help", false },	 { "h", false },
	{ "version", false }, { "v", false },		 {},
};
/* (pidfd-socket: runc 1.2's, so that its shims' arguments are read too) */
static const struct runc_flag create_flags[] = {
	{ "bundle", true },	    { "b", true },	       { "console-socket", true },
	{ "pidfd-socket", true },   { "pid-file", true },      { "no-pivot", false },
	{ "no-new-keyring", false }, { "preserve-fds", true }, { "help", false },
	{ "h", false },		    {},
};
static const struct runc_flag run_flags[] = {
	{ "bundle", true },	     { "b", true },	       { "console-socket", true },
	{ "pidfd-socket", true },    { "detach", false },      { "d", false },
	{ "keep", false },	     { "pid-file", true },     { "no-subreaper", false },
	{ "no-pivot", false },	     { "no-new-keyring", false }, { "preserve-fds", true },
	{ "help", false },	     { "h", false },	       {},
};
static const struct runc_flag restore_flags[] = {
	{ "console-socket", true },  { "image-path", true },	 { "work-path", true },
	{ "tcp-established", false }, { "ext-unix-sk", false },	 { "shell-job", false },
	{ "file-locks", false },      { "manage-cgroups-mode", true }, { "bundle", true },
	{ "b", true },		      { "detach", false },	 { "d", false },
	{ "pid-file", true },	      { "no-subreaper", false },	 { "no-pivot", false },
	{ "empty-ns", true },	      { "auto-dedup", false },	 { "lazy-pages", false },
	{ "lsm-profile", true },      { "lsm-mount-context", true }, { "help", false },
	{ "h", false },		      {},
};

/*
 * The flag in arg ("-x", "--x", "-x=v", "--x=v", as Go's flag package reads them) from table:
 * its entry, *inline_value set when the value came after '='. NULL with why when arg is
 * malformed or unknown.
 */
static const struct runc_flag *flag_of(const char *arg, const struct runc_flag *table,
				       const char *where, const char **inline_value, char *why,
				       size_t why_len)
{
	const char *name = arg + 1, *eq;
	size_t n;
	int i;

	if (*name == '-')
		name++;
	if (!*name || *name == '-' || *name == '=') {
		util_fmt(why, why_len, "%s \"%s\": bad flag syntax (runc refuses it)", where, arg);
		return NULL;
	}
	eq = strchr(name, '=');
	n = eq ? (size_t)(eq - name) : strlen(name);
	*inline_value = eq ? eq + 1 : NULL;
	for (i = 0; table[i].name; i++)
		if (strlen(table[i].name) == n && !strncmp(table[i].name, name, n))
			return &table[i];
	util_fmt(why, why_len, "%s \"%s\": not one of runc 1.1's, so which argument it leaves "
			       "for the command (and the bundle) cannot be told", where, arg);
	return NULL;
}

int oci_runtime_parse(int argc, char *const *argv, struct oci_runtime_args *out, char *why,
		      size_t why_len)
{
	const struct runc_flag *table = NULL, *f;
	const char *value, *cmd;
	int i, bundles = 0;

	*out = (struct oci_runtime_args){ .cmd = -1 };
	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		f = flag_of(a, global_flags, "runc's global option", &value, why, why_len);
		if (!f)
			return -EINVAL;
		if (f->value && !value && ++i < argc)
			value = argv[i];
		/* (past the end: runc gets no command; a second one is the one Go's flag keeps) */
		if (value && !strcmp(f->name, "log"))
			out->log = *value ? value : NULL;
		if (value && !strcmp(f->name, "log-format"))
			out->log_json = !strcmp(value, "json");
	}
	if (i >= argc)
		return 0;
	out->cmd = i;
	cmd = argv[i];
	if (!strcmp(cmd, "create"))
		table = create_flags;
	else if (!strcmp(cmd, "run"))
		table = run_flags;
	else if (!strcmp(cmd, "restore"))
		table = restore_flags;
	if (!table)
		return 0;
	out->creates = true;
	/* urfave/cli moves a command's options from after its arguments to before them */
	for (i++; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--"))
			break;
		if (a[0] != '-' || !a[1])
			continue;
		f = flag_of(a, table, cmd, &value, why, why_len);
		if (!f)
			return -EINVAL;
		if (f->value && !value) {
			value = i + 1 < argc ? argv[++i] : NULL;
			/* where a value that looks like an option goes, runc's two parsers differ */
			if (!value || value[0] == '-') {
				util_fmt(why, why_len, "%s \"%s\": expected a value, got %s%s%s", cmd,
					 a, value ? "\"" : "nothing", value ? value : "",
					 value ? "\"" : "");
				return -EINVAL;
			}
		}
		if (!strcmp(f->name, "bundle") || !strcmp(f->name, "b")) {
			if (++bundles > 1) {
				util_fmt(why, why_len, "%s: more than one --bundle/-b", cmd);
				return -EINVAL;
			}
			if (!*value) {
				util_fmt(why, why_len, "%s \"%s\": an empty bundle path", cmd, a);
				return -EINVAL;
			}
			out->bundle = value;
		}
	}
	return 0;
}

/* The runc to exec: explicit (absolute), else the first "runc" in $PATH that is not us. */
static int find_runc(const struct oci_runtime_args *ra, const char *explicit, char *out,
		     size_t size)
{
	const char *path = getenv("PATH"), *p, *end;
	struct stat self, st;
	char cand[PATH_MAX];

	if (explicit) {
		if (explicit[0] != '/') {
			refuse(ra, WRAPPER ": --runc %s: expected an absolute path", explicit);
			return -EINVAL;
		}
		if (access(explicit, X_OK)) {
			int err = -errno;

			refuse(ra, WRAPPER ": --runc %s: %s", explicit, strerror(-err));
			return err;
		}
		return util_copy(out, size, explicit);
	}
	if (stat("/proc/self/exe", &self))
		memset(&self, 0, sizeof(self));
	if (!path || !*path)
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	for (p = path; *p; p = *end ? end + 1 : end) {
		end = strchrnul(p, ':');
		/* an empty entry, or a relative one, would be the working directory: the bundle's */
		if (*p != '/' || util_fmt(cand, sizeof(cand), "%.*s/runc", (int)(end - p), p))
			continue;
		if (stat(cand, &st) || !S_ISREG(st.st_mode) || access(cand, X_OK))
			continue;
		/* a link named runc to this program would exec itself for ever */
		if (st.st_dev == self.st_dev && st.st_ino == self.st_ino)
			continue;
		return util_copy(out, size, cand);
	}
	refuse(ra, WRAPPER ": no runc in $PATH (%s) other than this program: give --runc", path);
	return -ENOENT;
}

/* A new array of hook_argv's strings, or NULL. */
static struct json *string_array(char *const *strs, int n)
{
	struct json *a = json_new(JSON_ARRAY, NULL), *s;
	int i;

	for (i = 0; a && i < n; i++) {
		s = json_new(JSON_STRING, strs[i]);
		if (!s || json_add(a, NULL, s, false)) {
			json_free(s);
			json_free(a);
			a = NULL;
		}
	}
	return a;
}

/*
 * The member key of object obj, made an empty value of type when absent. NULL with why (where:
 * its name there) when it is there with another type, or on no memory.
 */
static struct json *member(struct json *obj, const char *key, enum json_type type,
			   const char *where, char *why, size_t why_len)
{
	struct json *m = (struct json *)json_get(obj, key); /* the tree is ours to change */

	if (m && m->type != type) {
		util_fmt(why, why_len, "%s: expected %s", where,
			 type == JSON_OBJECT ? "an object" : "an array");
		return NULL;
	}
	if (m)
		return m;
	m = json_new(type, NULL);
	if (!m || json_add(obj, key, m, false)) {
		json_free(m);
		util_fmt(why, why_len, "out of memory");
		return NULL;
	}
	return m;
}

/* Whether hook runs this program with exactly hook_argv. */
static bool is_our_hook(const struct json *hook, const char *self, char *const *hook_argv, int n)
{
	const struct json *args = json_get(hook, "args");
	const char *path = json_str(json_get(hook, "path"));
	int i;

	if (!path || strcmp(path, self) || !args || args->type != JSON_ARRAY || args->n != (size_t)n)
		return false;
	for (i = 0; i < n; i++) {
		const char *a = json_str(json_at(args, (size_t)i));

		if (!a || strcmp(a, hook_argv[i]))
			return false;
	}
	return true;
}

/*
 * Put the hook {path: self, args: hook_argv, timeout} first among config's createRuntime hooks
 * (before any other hook could act on the container), made where absent. 0, 1 when that very
 * hook is there already (a bundle created again: a second one would attach twice, and the
 * daemon refuses the second), or -errno with why. A hook of this program with other options is
 * not ours to judge: ours is added, and the start then fails (closed) rather than runs with them.
 */
static int add_hook(struct json *config, const char *self, char *const *hook_argv, int n,
		    char *why, size_t why_len)
{
	struct json *hooks, *create_runtime, *hook, *v;
	size_t i;

	if (config->type != JSON_OBJECT) {
		util_fmt(why, why_len, "expected a JSON object");
		return -EINVAL;
	}
	hooks = member(config, "hooks", JSON_OBJECT, "hooks", why, why_len);
	create_runtime = hooks ? member(hooks, "createRuntime", JSON_ARRAY, "hooks.createRuntime",
					why, why_len) :
				 NULL;
	if (!create_runtime)
		return -EINVAL;
	for (i = 0; i < create_runtime->n; i++)
		if (is_our_hook(json_at(create_runtime, i), self, hook_argv, n))
			return 1;
	hook = json_new(JSON_OBJECT, NULL);
	if (!hook)
		goto oom;
	v = json_new(JSON_STRING, self);
	if (!v || json_add(hook, "path", v, false)) {
		json_free(v);
		goto oom;
	}
	v = string_array(hook_argv, n);
	if (!v || json_add(hook, "args", v, false)) {
		json_free(v);
		goto oom;
	}
	v = json_new(JSON_NUMBER, HOOK_TIMEOUT);
	if (!v || json_add(hook, "timeout", v, false)) {
		json_free(v);
		goto oom;
	}
	if (json_add(create_runtime, NULL, hook, true))
		goto oom;
	return 0;
oom:
	json_free(hook);
	util_fmt(why, why_len, "out of memory");
	return -ENOMEM;
}

/*
 * bundle's config.json, with the hook added, written back in its place with its mode (a symlink
 * there is replaced by the file, its target left as it was). Left alone when the hook is there.
 */
static int edit_config(const struct oci_runtime_args *ra, const char *self,
		       char *const *hook_argv, int n)
{
	const char *bundle = ra->bundle;
	char path[PATH_MAX], why[WHY_MAX];
	struct json *config = NULL;
	char *text = NULL;
	size_t len = 0;
	struct stat st;
	FILE *f;
	int err;

	if (util_fmt(path, sizeof(path), "%s/config.json", bundle ? bundle : ".")) {
		refuse(ra, WRAPPER ": the bundle %s: path too long", bundle);
		return -ENAMETOOLONG;
	}
	err = json_read_file(path, &config, why, sizeof(why));
	if (!err && stat(path, &st)) {
		err = -errno;
		util_fmt(why, sizeof(why), "%s", strerror(errno));
	}
	if (!err)
		err = add_hook(config, self, hook_argv, n, why, sizeof(why));
	if (err == 1) {
		err = 0;
		goto out;
	}
	if (!err) {
		f = open_memstream(&text, &len);
		if (f) {
			json_write(f, config);
			fputc('\n', f);
		}
		if (!f || ferror(f) | fclose(f)) {
			err = -ENOMEM;
			util_fmt(why, sizeof(why), "out of memory");
		}
	}
	if (!err) {
		err = util_replace_file(path, text, len, st.st_mode & 07777);
		if (err)
			util_fmt(why, sizeof(why), "cannot replace it: %s", strerror(-err));
	}
	if (err)
		refuse(ra, WRAPPER ": %s: %s: refusing to create the container without its sluice "
			   "hook", path, why);
out:
	json_free(config);
	free(text);
	return err;
}

/*
 * This program's path, which the hook names: runc execs it only later, so it must still be this
 * program's file. After an upgrade that removed or replaced it, the kernel's name for it ends in
 * " (deleted)", or the path holds another file: the hook would run another binary, or none.
 */
static int self_path(const struct oci_runtime_args *ra, char *out, size_t size)
{
	static const char deleted[] = " (deleted)";
	struct stat exe, st;
	ssize_t len;

	len = readlink("/proc/self/exe", out, size - 1);
	if (len < 0 || (size_t)len == size - 1) {
		refuse(ra, WRAPPER ": /proc/self/exe: %s", len < 0 ? strerror(errno) :
								    "path too long");
		return -EINVAL;
	}
	out[len] = '\0';
	if ((size_t)len >= sizeof(deleted) &&
	    !strcmp(out + len - (sizeof(deleted) - 1), deleted)) {
		refuse(ra, WRAPPER ": this program's file %.*s was removed since it started (an "
			   "upgrade?): the hook could not run it; refusing to create the container",
		       (int)(len - (ssize_t)sizeof(deleted) + 1), out);
		return -ENOENT;
	}
	if (stat("/proc/self/exe", &exe) || stat(out, &st) || exe.st_dev != st.st_dev ||
	    exe.st_ino != st.st_ino) {
		refuse(ra, WRAPPER ": %s is no longer this program's file (replaced since it "
			   "started?): the hook would run another; refusing to create the container",
		       out);
		return -ESTALE;
	}
	return 0;
}

int oci_runtime_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "runc", required_argument, NULL, 'r' },
		{ "policy", required_argument, NULL, 'p' },
		{ "policy-dir", required_argument, NULL, 'P' },
		{ "socket", required_argument, NULL, 's' },
		{ "mode", required_argument, NULL, 'm' },
		{ "trust-run-id", no_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	char *hook_argv[HOOK_ARGS_MAX] = { "sluice", "oci-hook" };
	char runc[PATH_MAX], self[PATH_MAX], why[WHY_MAX];
	struct oci_runtime_args ra = { .cmd = -1 };
	const char *runc_opt = NULL, *name;
	int c, sep, n_hook = 2, n_own, parsed = 0;
	char **runc_argv;

	/* ours up to the first "--", runc's after it: no option of runc's is read as ours */
	for (sep = 1; sep < argc && strcmp(argv[sep], "--"); sep++)
		;
	n_own = sep;
	/* runc's first: where its log is, for every refusal below (a misconfigured runtime too) */
	runc_argv = argv + sep; /* runc_argv[0], "--", becomes runc's argv[0] */
	if (sep < argc)
		parsed = oci_runtime_parse(argc - sep - 1, runc_argv + 1, &ra, why, sizeof(why));
	optind = 1;
	opterr = 0; /* its messages go to stderr only: refuse() says it */
	while ((c = getopt_long(n_own, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			runc_opt = optarg;
			break;
		case 'p':
		case 'P':
		case 's':
		case 'm':
			/* the hook runs with the bundle as its working directory */
			name = c == 'p' ? "--policy" : c == 'P' ? "--policy-dir" :
			       c == 's' ? "--socket" : "--mode";
			if (c != 'm' && optarg[0] != '/') {
				refuse(&ra, WRAPPER ": %s %s: expected an absolute path", name, optarg);
				return OCI_RUNTIME_EXIT_USAGE;
			}
			if (c == 'm' && strcmp(optarg, "report") && strcmp(optarg, "enforce")) {
				refuse(&ra, WRAPPER ": --mode: expected report or enforce");
				return OCI_RUNTIME_EXIT_USAGE;
			}
			/* the operator's policy binds: an annotation naming another is refused */
			hook_argv[n_hook++] = c == 'p' ? "--policy-fixed" : (char *)name;
			hook_argv[n_hook++] = optarg;
			break;
		case 'T':
			hook_argv[n_hook++] = "--trust-run-id";
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			refuse(&ra, WRAPPER ": %s: an unknown option, or one without its value (sluice "
				   "oci-runtime --help)", argv[optind - 1]);
			return OCI_RUNTIME_EXIT_USAGE;
		}
		if (n_hook > HOOK_ARGS_MAX - 2) {
			refuse(&ra, WRAPPER ": too many options");
			return OCI_RUNTIME_EXIT_USAGE;
		}
	}
	if (optind < n_own) {
		refuse(&ra, WRAPPER ": unexpected argument \"%s\" before \"--\"", argv[optind]);
		return OCI_RUNTIME_EXIT_USAGE;
	}
	if (sep >= argc) {
		refuse(NULL, WRAPPER ": no \"--\" before runc's arguments (Docker: end runtimeArgs "
				 "with \"--\")");
		return OCI_RUNTIME_EXIT_USAGE;
	}
	if (parsed) {
		refuse(&ra, WRAPPER ": %s: refusing to run runc", why);
		return OCI_RUNTIME_EXIT_USAGE;
	}
	if (find_runc(&ra, runc_opt, runc, sizeof(runc)))
		return OCI_RUNTIME_EXIT_NO_RUNC;
	if (ra.creates && (self_path(&ra, self, sizeof(self)) ||
			   edit_config(&ra, self, hook_argv, n_hook)))
		return OCI_RUNTIME_EXIT_USAGE;
	runc_argv[0] = runc;
	execv(runc, runc_argv);
	refuse(&ra, WRAPPER ": exec %s: %s", runc, strerror(errno));
	return OCI_RUNTIME_EXIT_NO_RUNC;
}
