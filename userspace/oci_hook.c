// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sluice oci-hook [--policy FILE | --policy-fixed FILE] [--policy-dir DIR] [--mode MODE]
 *                 [--socket PATH] [--trust-run-id] [--dry-run]
 *
 * An OCI runtime hook for createRuntime: the runtime has made the container's namespaces and
 * cgroup and put its init process (still waiting, before the user's program) in them, and passes
 * the container's state on stdin. The hook finds the cgroup (config.json's linux.cgroupsPath,
 * checked against the kernel's word for the init process) and the network namespace, takes the
 * policy, run id, mode and task from the container's annotations, and asks the daemon to attach
 * before the runtime goes on. When it cannot (no daemon, no policy, bad input) it exits non-zero,
 * and the runtime then refuses to start the container: it never starts unconfined.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach_cmd.h"
#include "cgroup.h"
#include "json.h"
#include "locate.h"
#include "oci_hook.h"
#include "run.h"
#include "util.h"

#define HOOK "sluice oci-hook"
#define HOOK_STATE_MAX (1u << 20) /* the state on stdin */
#define HOOK_VERSION_MAX 64
#define HOOK_CG_DEPTH 8 /* how deep below cgroupsPath the container's process may sit */
#define OCI_HOOK_ID_CHARS 12 /* of the container id in a run id from an annotation */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sluice oci-hook [--policy FILE | --policy-fixed FILE] [--policy-dir DIR]\n"
		"                       [--mode MODE] [--socket PATH] [--trust-run-id]\n"
		"                       [--dry-run]\n"
		"\n"
		"An OCI runtime createRuntime hook: reads the container's state (JSON) on\n"
		"stdin and asks the sluice daemon to attach to the container's cgroup before\n"
		"its process starts. Exits non-zero when it cannot, so the container fails to\n"
		"start instead of starting unconfined.\n"
		"  cgroup   config.json's linux.cgroupsPath in the bundle: a cgroupfs path, or\n"
		"           systemd's SLICE:PREFIX:NAME (<SLICE hierarchy>/PREFIX-NAME.scope);\n"
		"           it must hold the state's pid and no other process, in it or\n"
		"           below it (no cgroupsPath: that pid's cgroup)\n"
		"  netns    /proc/PID/ns/net, when it is not sluice's own namespace\n"
		"  annotations of the container (the state's, else config.json's):\n"
		"    io.sluice.policy   the policy file, an absolute path inside the policy\n"
		"                       directory (required, or --policy)\n"
		"    io.sluice.run-id   the run id's name, made ID-CONTAINER (the first 12\n"
		"                       characters of the container id) so that no container\n"
		"                       can take another's run id (default: the container id,\n"
		"                       if a valid one)\n"
		"    io.sluice.mode     enforce (default: the policy's mode; report is refused:\n"
		"                       the policy or --mode report chooses it)\n"
		"    io.sluice.task     the task recorded in the log\n"
		"  --policy FILE      the policy of containers without io.sluice.policy\n"
		"  --policy-fixed FILE  every container's policy: an io.sluice.policy that\n"
		"                     names another file is refused (as --mode binds the mode)\n"
		"  --mode MODE        every container in MODE (report or enforce); an\n"
		"                     io.sluice.mode annotation that says otherwise is refused\n"
		"  --policy-dir DIR   io.sluice.policy may only name a policy inside DIR\n"
		"                     (symlinks resolved; default " OCI_HOOK_POLICY_DIR "):\n"
		"                     whoever creates containers chooses among the policies\n"
		"                     the node's administrator put there\n"
		"  --socket PATH      the daemon's socket (default: $SLUICE_SOCKET, else\n"
		"                     " CONTROL_SOCKET_DEFAULT ")\n"
		"  --trust-run-id     take io.sluice.run-id as it is: whoever sets annotations\n"
		"                     is trusted not to reuse another container's run id\n"
		"  --dry-run          print the attach request instead of sending it\n"
		"Exit status: 0 attached; 1 the daemon refused; 2 bad input (stdin, config.json,\n"
		"annotations, arguments); 3 the container's cgroup was not found; 4 no daemon.\n");
}

/*
 * The run id of annotation name for container id: NAME-XXXXXXXXXXXX, the container id's first
 * 12 characters, each one a run id may not hold made '_'. -ENAMETOOLONG when it does not fit.
 */
static int run_id_of_container(const char *name, const char *id, char *out, size_t size)
{
	size_t n = strlen(name), i;

	if (n + 1 + OCI_HOOK_ID_CHARS > RUN_ID_MAX || size <= RUN_ID_MAX)
		return -ENAMETOOLONG;
	memcpy(out, name, n);
	out[n++] = '-';
	for (i = 0; i < OCI_HOOK_ID_CHARS && id[i]; i++) {
		char c = id[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '-';

		out[n++] = ok ? c : '_';
	}
	out[n] = '\0';
	return 0;
}

/* stdin, up to HOOK_STATE_MAX bytes, into a new buffer. */
static int read_stdin(char **out, size_t *len)
{
	size_t cap = 8192, n = 0;
	char *buf = malloc(cap), *nb;
	ssize_t got;

	*out = NULL;
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (n == cap) {
			if (cap > HOOK_STATE_MAX) {
				free(buf);
				return -EFBIG;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		got = read(0, buf + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			free(buf);
			return -errno;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	if (n > HOOK_STATE_MAX) {
		free(buf);
		return -EFBIG;
	}
	*out = buf;
	*len = n;
	return 0;
}

/* The annotation key: the state's, else config.json's. NULL when neither has it. -EINVAL: bad. */
static int annotation(const struct json *state, const struct json *config, const char *key,
		      const char **val)
{
	const struct json *a = json_get(json_get(state, "annotations"), key);

	if (!a)
		a = json_get(json_get(config, "annotations"), key);
	*val = NULL;
	if (!a)
		return 0;
	*val = json_str(a);
	if (!*val) {
		fprintf(stderr, HOOK ": annotation %s: expected a string\n", key);
		return -EINVAL;
	}
	return 0;
}

static int string_field(const struct json *state, const char *key, size_t max, const char **val)
{
	const struct json *f = json_get(state, key);

	*val = json_str(f);
	if (!f) {
		fprintf(stderr, HOOK ": state on stdin: \"%s\" is missing\n", key);
		return -EINVAL;
	}
	if (!*val || !**val || strlen(*val) > max) {
		fprintf(stderr, HOOK ": state on stdin: \"%s\": expected a string of 1-%zu bytes\n",
			key, max);
		return -EINVAL;
	}
	return 0;
}

/*
 * 0 when every process in the cgroup tree at path is pid, -EPERM (with *other set) when one is
 * not. At createRuntime the container's cgroup holds its init and nothing else; but the
 * container's creator writes cgroupsPath, and runc puts the init into a cgroup that holds
 * processes already, so cgroupsPath could name a host service's cgroup, an unconfined
 * container's, or a parent of its own, and the run would confine (and in enforce mode cut the
 * connections of) processes that are not the container's.
 */
static int only_pid(const char *path, pid_t pid, int depth, long *other)
{
	char sub[PATH_MAX], line[32];
	struct dirent *e;
	FILE *f;
	DIR *d;
	int err = 0;

	if (depth > HOOK_CG_DEPTH)
		return -ELOOP;
	if (util_fmt(sub, sizeof(sub), "%s/cgroup.procs", path))
		return -ENAMETOOLONG;
	f = fopen(sub, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (strtol(line, NULL, 10) != pid) {
			*other = strtol(line, NULL, 10);
			fclose(f);
			return -EPERM;
		}
	fclose(f);
	d = opendir(path);
	if (!d)
		return -errno;
	while (!err && (e = readdir(d)))
		if (e->d_type == DT_DIR && strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			if (util_fmt(sub, sizeof(sub), "%s/%s", path, e->d_name))
				err = -ENAMETOOLONG;
			else
				err = only_pid(sub, pid, depth + 1, other);
		}
	closedir(d);
	return err;
}

int oci_hook_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "policy-fixed", required_argument, NULL, 'F' },
		{ "policy-dir", required_argument, NULL, 'P' },
		{ "socket", required_argument, NULL, 's' },
		{ "mode", required_argument, NULL, 'm' },
		{ "dry-run", no_argument, NULL, 'D' },
		{ "trust-run-id", no_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	static char cgroup[PATH_MAX], pid_cg[PATH_MAX], mnt[PATH_MAX], netns[PATH_MAX];
	static char cfg_path[PATH_MAX], policy_abs[PATH_MAX], dir_abs[PATH_MAX];
	static char named_abs[PATH_MAX];
	static struct control_msg m;
	const char *socket = NULL, *default_policy = NULL, *policy_dir = NULL, *forced_mode = NULL;
	const char *fixed_policy = NULL;
	const char *version, *id, *bundle, *cg_spec;
	struct json *state = NULL, *config = NULL;
	const struct json *cgp;
	/* a container started again (docker start, a restart policy) keeps its id: its runs, -2, … */
	struct attach_req r = { .source = "oci-hook", .next_free_id = true };
	char why[LOCATE_WHY_MAX], *text = NULL;
	static char run_id[RUN_ID_MAX + 1];
	bool dry_run = false, trust_run_id = false;
	int c, err, ret = ATTACH_EXIT_USAGE, netns_fd = -1;
	unsigned long long start;
	size_t len = 0;
	int64_t pid;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': default_policy = optarg; break;
		case 'F': fixed_policy = optarg; break;
		case 'P': policy_dir = optarg; break;
		case 's': socket = optarg; break;
		case 'm': forced_mode = optarg; break;
		case 'D': dry_run = true; break;
		case 'T': trust_run_id = true; break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return ATTACH_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, HOOK ": unexpected argument \"%s\"\n", argv[optind]);
		return ATTACH_EXIT_USAGE;
	}
	if (fixed_policy && default_policy) {
		fprintf(stderr, HOOK ": --policy and --policy-fixed: give one\n");
		return ATTACH_EXIT_USAGE;
	}
	if (fixed_policy)
		default_policy = fixed_policy; /* which binds: fixed_policy set */

	err = read_stdin(&text, &len);
	if (err) {
		fprintf(stderr, HOOK ": state on stdin: %s\n",
			err == -EFBIG ? "longer than 1 MiB" : strerror(-err));
		goto out;
	}
	if (json_parse(text, len, &state, why, sizeof(why))) {
		fprintf(stderr, HOOK ": state on stdin: %s\n", why);
		goto out;
	}
	if (state->type != JSON_OBJECT) {
		fprintf(stderr, HOOK ": state on stdin: expected a JSON object\n");
		goto out;
	}
	if (string_field(state, "ociVersion", HOOK_VERSION_MAX, &version) ||
	    string_field(state, "id", LOCATE_NAME_MAX, &id) ||
	    string_field(state, "bundle", PATH_MAX - 16, &bundle))
		goto out;
	if (locate_check_name(id)) {
		fprintf(stderr, HOOK ": state on stdin: \"id\": expected "
				"[A-Za-z0-9][A-Za-z0-9_.-]*\n");
		goto out;
	}
	if (bundle[0] != '/') {
		fprintf(stderr, HOOK ": state on stdin: \"bundle\": expected an absolute path\n");
		goto out;
	}
	err = json_int(json_get(state, "pid"), &pid);
	if (err || pid <= 0 || pid > INT32_MAX) {
		fprintf(stderr, HOOK ": state on stdin: \"pid\": %s\n",
			err == -ENOENT ? "missing (createRuntime runs once the container's process "
					 "exists: is this hook in the right place?)" :
					 "expected an integer from 1 to 2147483647");
		goto out;
	}

	util_fmt(cfg_path, sizeof(cfg_path), "%s/config.json", bundle);
	if (json_read_file(cfg_path, &config, why, sizeof(why))) {
		fprintf(stderr, HOOK ": %s: %s\n", cfg_path, why);
		goto out;
	}

	if (annotation(state, config, "io.sluice.policy", &r.policy) ||
	    annotation(state, config, "io.sluice.run-id", &r.run_id) ||
	    annotation(state, config, "io.sluice.mode", &r.mode) ||
	    annotation(state, config, "io.sluice.task", &r.task))
		goto out;
	if (!r.run_id) {
		if (run_check_id(id)) {
			fprintf(stderr, HOOK ": the container id \"%s\" is not a valid run id "
					"(1-%d characters of [A-Za-z0-9_-]): give "
					"io.sluice.run-id\n", id, RUN_ID_MAX);
			goto out;
		}
		r.run_id = id;
	} else if (run_check_id(r.run_id)) {
		fprintf(stderr, HOOK ": annotation io.sluice.run-id: expected 1-%d characters of "
				"[A-Za-z0-9_-], not starting with '-'\n", RUN_ID_MAX);
		goto out;
	} else if (!trust_run_id) {
		/*
		 * Whoever writes annotations (a pod's author) could otherwise name another
		 * container's run before it starts: that container would then fail to start (the
		 * daemon refuses a second run of one id) and the first one's traffic would be
		 * logged under the other's name. The runtime chose the container id, not them.
		 */
		if (run_id_of_container(r.run_id, id, run_id, sizeof(run_id))) {
			fprintf(stderr, HOOK ": annotation io.sluice.run-id: \"%s\" and the "
					"container's id make more than %d characters (or "
					"--trust-run-id)\n", r.run_id, RUN_ID_MAX);
			goto out;
		}
		r.run_id = run_id;
	}
	if (forced_mode && strcmp(forced_mode, "report") && strcmp(forced_mode, "enforce")) {
		fprintf(stderr, HOOK ": --mode: expected report or enforce\n");
		goto out;
	}
	if (forced_mode && r.mode && strcmp(r.mode, forced_mode)) {
		fprintf(stderr, HOOK ": annotation io.sluice.mode: \"%.64s\", but this hook runs "
				"every container in %s mode (--mode)\n", r.mode, forced_mode);
		goto out;
	}
	/* the same people must not be able to turn enforcement off: report is the policy's word */
	if (!forced_mode && r.mode && !strcmp(r.mode, "report")) {
		fprintf(stderr, HOOK ": annotation io.sluice.mode: \"report\" would let whoever "
				"creates the container turn enforcement off; a policy that says "
				"mode: report, or this hook's --mode report, chooses report\n");
		goto out;
	}
	if (forced_mode)
		r.mode = forced_mode;
	if (r.mode && strcmp(r.mode, "report") && strcmp(r.mode, "enforce")) {
		fprintf(stderr, HOOK ": annotation io.sluice.mode: expected report or enforce, got "
				"\"%.64s\"\n", r.mode);
		goto out;
	}

	if (default_policy && (!r.policy || fixed_policy)) {
		if (!realpath(default_policy, policy_abs)) {
			fprintf(stderr, HOOK ": --policy%s %s: %s\n", fixed_policy ? "-fixed" : "",
				default_policy, strerror(errno));
			goto out;
		}
		/*
		 * The operator's policy binds (a runtime whose policy it is): whoever creates the
		 * container may name that file, under any name, and no other, or a policy of the
		 * policy directory would be theirs to choose, the loosest one too.
		 */
		if (r.policy && (!realpath(r.policy, named_abs) || strcmp(named_abs, policy_abs))) {
			fprintf(stderr, HOOK ": annotation io.sluice.policy: \"%.256s\", but this "
					"hook runs every container under %s (--policy-fixed)\n",
				r.policy, policy_abs);
			goto out;
		}
		r.policy = policy_abs;
	}
	if (!r.policy) {
		fprintf(stderr, HOOK ": container %s has no io.sluice.policy annotation (and the "
				"hook no --policy): refusing to let it start unconfined\n", id);
		goto out;
	}
	if (r.policy[0] != '/') {
		fprintf(stderr, HOOK ": annotation io.sluice.policy: expected an absolute path, "
				"got \"%s\"\n", r.policy);
		goto out;
	}
	/*
	 * Whoever creates containers writes their annotations (a pod's author, say), and the daemon
	 * reads the file as root: an annotation names only a policy the node's administrator put
	 * in the policy directory, by default too.
	 */
	if (!policy_dir)
		policy_dir = OCI_HOOK_POLICY_DIR;
	if (r.policy != policy_abs) {
		size_t n;

		if (!realpath(policy_dir, dir_abs)) {
			fprintf(stderr, HOOK ": the policy directory %s (--policy-dir): %s\n",
				policy_dir, strerror(errno));
			goto out;
		}
		if (!realpath(r.policy, policy_abs)) {
			fprintf(stderr, HOOK ": annotation io.sluice.policy: %s: %s\n", r.policy,
				strerror(errno));
			goto out;
		}
		n = strlen(dir_abs);
		if (strncmp(policy_abs, dir_abs, n) || (policy_abs[n] != '/' && n > 1)) {
			fprintf(stderr, HOOK ": annotation io.sluice.policy: %s is not inside the "
					"policy directory %s (--policy-dir)\n", r.policy, dir_abs);
			goto out;
		}
		/* the file checked is the file named: the daemon reads this path, not the link */
		r.policy = policy_abs;
	}
	/* the cgroup: config.json's word, which the kernel's word for the init must match */
	err = cgroup_v2_mount(mnt, sizeof(mnt));
	if (err) {
		fprintf(stderr, HOOK ": no cgroup v2 mount: %s\n", strerror(-err));
		ret = ATTACH_EXIT_NOT_FOUND;
		goto out;
	}
	/* (its start time: the process whose cgroup is read is the one whose netns is sent) */
	err = locate_pid_start((pid_t)pid, &start);
	if (err)
		util_fmt(why, sizeof(why), "the container's process %d: %s", (int)pid,
			 err == -ENOENT ? "no such process" : strerror(-err));
	else
		err = locate_cgroup_of_pid((pid_t)pid, pid_cg, sizeof(pid_cg), why, sizeof(why));
	if (err) {
		fprintf(stderr, HOOK ": %s\n", why);
		ret = ATTACH_EXIT_NOT_FOUND;
		goto out;
	}
	cgp = json_get(json_get(config, "linux"), "cgroupsPath");
	cg_spec = json_str(cgp);
	if (cgp && (!cg_spec || strlen(cg_spec) >= PATH_MAX / 2)) {
		fprintf(stderr, HOOK ": %s: linux.cgroupsPath: expected a string shorter than %d "
				"bytes\n", cfg_path, PATH_MAX / 2);
		goto out;
	}
	if (cg_spec && cg_spec[0]) {
		if (locate_cgroups_path(mnt, cg_spec, cgroup, sizeof(cgroup), why, sizeof(why))) {
			fprintf(stderr, HOOK ": %s: linux.%s\n", cfg_path, why);
			goto out;
		}
		/* the init may sit below the container's cgroup (a nested one), never elsewhere */
		if (strncmp(pid_cg, cgroup, strlen(cgroup)) ||
		    (pid_cg[strlen(cgroup)] && pid_cg[strlen(cgroup)] != '/')) {
			fprintf(stderr, HOOK ": %s: linux.cgroupsPath \"%s\" is %s, but the "
					"container's process %d is in %s\n", cfg_path, cg_spec,
				cgroup, (int)pid, pid_cg);
			ret = ATTACH_EXIT_NOT_FOUND;
			goto out;
		}
	} else {
		util_copy(cgroup, sizeof(cgroup), pid_cg);
	}
	{
		long other = 0;

		err = only_pid(cgroup, (pid_t)pid, 0, &other);
		if (err) {
			if (err == -EPERM)
				fprintf(stderr, HOOK ": the container's cgroup %s holds process %ld, "
						"which is not the container's (%d): refusing to "
						"confine what is not the container\n", cgroup, other,
					(int)pid);
			else
				fprintf(stderr, HOOK ": the container's cgroup %s: %s\n", cgroup,
					strerror(-err));
			ret = ATTACH_EXIT_NOT_FOUND;
			goto out;
		}
	}
	r.cgroup = cgroup;

	err = locate_netns_of_pid((pid_t)pid, start, &netns_fd, netns, sizeof(netns), why,
				  sizeof(why));
	if (err) {
		fprintf(stderr, HOOK ": %s\n", why);
		ret = ATTACH_EXIT_NOT_FOUND;
		goto out;
	}
	r.netns = netns[0] ? netns : NULL;

	if (attach_build(&r, &m, why, sizeof(why))) {
		fprintf(stderr, HOOK ": %s\n", why);
		goto out;
	}
	if (dry_run) {
		printf("%s\n", m.buf);
		ret = ATTACH_EXIT_OK;
		goto out;
	}
	ret = attach_send(HOOK, socket, &m, netns_fd);
out:
	if (netns_fd >= 0)
		close(netns_fd);
	json_free(state);
	json_free(config);
	free(text);
	return ret;
}
