// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
/* Find the cgroup and netns of a process, a container or a unit: see locate.h. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "json.h"
#include "locate.h"
#include "util.h"

/* A helper program (podman, systemctl) that has not answered in this long is not going to. */
#define LOCATE_EXEC_TIMEOUT_MS 15000
#define LOCATE_EXEC_OUT_MAX (4u << 20)
#define LOCATE_CANDIDATES_MAX 16

/* runc's state roots: its own, Docker's (moby namespace), containerd's (one per namespace). */
static const char *const runc_roots[] = { "/run/runc", "/run/docker/runtime-runc/moby" };
#define CONTAINERD_RUNC_ROOT "/run/containerd/runc"
#define CRUN_ROOT "/run/crun"
#define DOCKER_CONTAINERS "/var/lib/docker/containers"

int locate_check_name(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > LOCATE_NAME_MAX || !isalnum((unsigned char)s[0]))
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.-", s[i]))
			return -EINVAL;
	return 0;
}

static int v2_mount(char *mnt, size_t len, char *why, size_t why_len)
{
	int err = cgroup_v2_mount(mnt, len);

	if (err)
		util_fmt(why, why_len, "no cgroup v2 hierarchy in /proc/self/mountinfo: %s",
			 strerror(-err));
	return err;
}

/* path must be a directory strictly below the v2 mount mnt, with no ".." in it. */
static int check_below(const char *mnt, const char *path, char *why, size_t why_len)
{
	size_t n = strlen(mnt);
	struct stat st;

	if (strncmp(path, mnt, n) || path[n] != '/' || !path[n + 1] || strstr(path, "/../") ||
	    (strlen(path) >= 3 && !strcmp(path + strlen(path) - 3, "/..")) ||
	    strstr(path, "/./") || strstr(path, "//")) {
		util_fmt(why, why_len, "%s is not a cgroup below the cgroup v2 mount %s", path,
			 mnt);
		return -EINVAL;
	}
	if (stat(path, &st) || !S_ISDIR(st.st_mode)) {
		util_fmt(why, why_len, "cgroup %s: %s", path,
			 errno ? strerror(errno) : "not a directory");
		return -ENOENT;
	}
	return 0;
}

int locate_cgroup_of_pid(pid_t pid, char *buf, size_t len, char *why, size_t why_len)
{
	char path[64], mnt[PATH_MAX], *line = NULL;
	size_t cap = 0;
	bool found = false;
	FILE *f;
	int err;

	err = v2_mount(mnt, sizeof(mnt), why, why_len);
	if (err)
		return err;
	util_fmt(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	if (!f) {
		err = -errno;
		util_fmt(why, why_len, "process %d: %s", (int)pid,
			 err == -ENOENT ? "no such process" : strerror(-err));
		return err;
	}
	err = -ENOENT;
	while (getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "0::", 3))
			continue;
		found = true;
		/* Another cgroup namespace shows paths relative to its root: not ours to resolve */
		if (line[3] != '/' || !strncmp(line + 3, "/..", 3)) {
			util_fmt(why, why_len, "process %d: cgroup \"%s\" is outside this cgroup "
					       "namespace", (int)pid, line + 3);
			err = -EINVAL;
			break;
		}
		if (!strcmp(line + 3, "/")) {
			util_fmt(why, why_len, "process %d is in the root cgroup: refusing to "
					       "attach to the whole host", (int)pid);
			err = -EINVAL;
			break;
		}
		if (util_fmt(buf, len, "%s%s", mnt, line + 3)) {
			util_fmt(why, why_len, "process %d: cgroup path too long", (int)pid);
			err = -ENAMETOOLONG;
			break;
		}
		err = check_below(mnt, buf, why, why_len);
		break;
	}
	if (!found)
		util_fmt(why, why_len, "process %d has no cgroup v2 (\"0::\") line in %s", (int)pid,
			 path);
	free(line);
	fclose(f);
	return err;
}

int locate_netns_of_pid(pid_t pid, char *buf, size_t len, char *why, size_t why_len)
{
	struct stat self, other;
	char path[64];

	buf[0] = '\0';
	util_fmt(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	if (stat("/proc/self/ns/net", &self) || stat(path, &other)) {
		util_fmt(why, why_len, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (self.st_dev == other.st_dev && self.st_ino == other.st_ino)
		return 0;
	return util_copy(buf, len, path);
}

int locate_pid(pid_t pid, struct locate *l, char *why, size_t why_len)
{
	int err;

	memset(l, 0, sizeof(*l));
	if (pid <= 0) {
		util_fmt(why, why_len, "--pid: expected a process id > 0");
		return -EINVAL;
	}
	err = locate_cgroup_of_pid(pid, l->cgroup, sizeof(l->cgroup), why, why_len);
	if (!err)
		err = locate_netns_of_pid(pid, l->netns, sizeof(l->netns), why, why_len);
	if (err)
		return err;
	l->pid = pid;
	util_fmt(l->source, sizeof(l->source), "pid:%d", (int)pid);
	return 0;
}

/* Field 22 of /proc/PID/stat: when the process started, in clock ticks since boot. */
static int pid_start_time(pid_t pid, unsigned long long *start)
{
	char path[64], buf[1024], *p;
	int n, i;

	util_fmt(path, sizeof(path), "/proc/%d/stat", (int)pid);
	n = util_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	/* the command name may hold spaces and parentheses: count from the last ')' */
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	for (i = 2; i < 22 && p; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", start) != 1)
		return -EINVAL;
	return 0;
}

/* One container a name matched. */
struct candidate {
	char runtime[64]; /* where it was found: "runc (/run/runc)", "podman", … */
	char id[LOCATE_NAME_MAX + 1];
	char ns[LOCATE_NAME_MAX + 1]; /* its containerd namespace; else "" */
	pid_t pid;
	char cgroup[PATH_MAX];
};

struct search {
	const char *name;
	char mnt[PATH_MAX];
	struct candidate c[LOCATE_CANDIDATES_MAX];
	size_t n;
	bool exact; /* some candidate matched exactly: prefix matches no longer count */
	char *why;
	size_t why_len;
	int err; /* the first hard error (a state that could not be read) */
};

/*
 * Add a candidate. Exact matches (full id or name) beat prefix matches; the same container seen
 * through two runtimes' state (podman on runc: podman's inspect and runc's root) is one.
 */
static void add_candidate(struct search *s, const struct candidate *c, bool exact)
{
	size_t i;

	if (s->exact && !exact)
		return;
	if (exact && !s->exact) {
		s->exact = true;
		s->n = 0;
	}
	for (i = 0; i < s->n; i++)
		if (!strcmp(s->c[i].cgroup, c->cgroup))
			return;
	if (s->n < LOCATE_CANDIDATES_MAX)
		s->c[s->n++] = *c;
}

static void search_fail(struct search *s, int err, const char *fmt, const char *a, const char *b)
{
	if (s->err)
		return;
	s->err = err;
	util_fmt(s->why, s->why_len, fmt, a, b);
}

/*
 * A runc state.json: its init pid (alive, the same process: its start time), its cgroup v2 path
 * (cgroup_paths[""], runc's word for the unified hierarchy), which the init must be in.
 */
static int read_runc_state(struct search *s, const char *path, const char *id, struct candidate *c)
{
	char why[256], pidcg[PATH_MAX];
	const struct json *paths;
	unsigned long long start;
	struct json *j = NULL;
	const char *cg;
	int64_t pid, st;
	size_t n;
	int err;

	err = json_read_file(path, &j, why, sizeof(why));
	if (err) {
		search_fail(s, err, "%s: %s", path, why);
		return err;
	}
	err = -EINVAL;
	if (!json_str(json_get(j, "id")) || strcmp(json_str(json_get(j, "id")), id)) {
		search_fail(s, err, "%s: its \"id\" is not %s", path, id);
		goto out;
	}
	if (json_int(json_get(j, "init_process_pid"), &pid) || pid <= 0 || pid > INT32_MAX ||
	    json_int(json_get(j, "init_process_start"), &st)) {
		search_fail(s, err, "%s: %s", path, "no valid init_process_pid/init_process_start");
		goto out;
	}
	paths = json_get(j, "cgroup_paths");
	cg = json_str(json_get(paths, ""));
	if (!cg) {
		search_fail(s, err, "%s: %s", path,
			    "no cgroup v2 path (cgroup_paths[\"\"]): a cgroup v1-only host?");
		goto out;
	}
	n = strlen(s->mnt);
	if (strncmp(cg, s->mnt, n) || cg[n] != '/' || util_copy(c->cgroup, sizeof(c->cgroup), cg)) {
		search_fail(s, err, "%s: cgroup %s is not below this host's cgroup v2 mount", path,
			    cg);
		goto out;
	}
	if (pid_start_time((pid_t)pid, &start) || start != (unsigned long long)st) {
		err = -ESRCH;
		search_fail(s, err, "container %s (%s): its init process is gone: not running", id,
			    path);
		goto out;
	}
	/* The state and the kernel must agree: the init is in that cgroup or below it. */
	err = locate_cgroup_of_pid((pid_t)pid, pidcg, sizeof(pidcg), why, sizeof(why));
	if (err || strncmp(pidcg, cg, strlen(cg)) ||
	    (pidcg[strlen(cg)] && pidcg[strlen(cg)] != '/')) {
		err = -EINVAL;
		search_fail(s, err, "%s: the init process is not in the state's cgroup %s", path,
			    cg);
		goto out;
	}
	err = check_below(s->mnt, c->cgroup, why, sizeof(why));
	if (err) {
		search_fail(s, err, "%s: %s", path, why);
		goto out;
	}
	c->pid = (pid_t)pid;
	util_copy(c->id, sizeof(c->id), id);
out:
	json_free(j);
	return err;
}

/* crun's status file: its pid (the kernel says which cgroup; crun's own path is mount-relative). */
static int read_crun_status(struct search *s, const char *path, const char *id,
			    struct candidate *c)
{
	char why[256];
	unsigned long long start;
	struct json *j = NULL;
	int64_t pid, st;
	int err;

	err = json_read_file(path, &j, why, sizeof(why));
	if (err) {
		search_fail(s, err, "%s: %s", path, why);
		return err;
	}
	if (json_int(json_get(j, "pid"), &pid) || pid <= 0 || pid > INT32_MAX) {
		err = -EINVAL;
		search_fail(s, err, "%s: %s", path, "no valid \"pid\"");
		goto out;
	}
	/*
	 * crun keeps a stopped container's status until `crun delete`, and its pid may since be
	 * another process's: the start time crun recorded (ticks since boot, as /proc/PID/stat's)
	 * says whether it is still the container's init.
	 */
	if (!json_int(json_get(j, "process-start-time"), &st) &&
	    (pid_start_time((pid_t)pid, &start) || start != (unsigned long long)st)) {
		err = -ESRCH;
		search_fail(s, err, "container %s (%s): its init process is gone: not running", id,
			    path);
		goto out;
	}
	err = locate_cgroup_of_pid((pid_t)pid, c->cgroup, sizeof(c->cgroup), why, sizeof(why));
	if (err) {
		search_fail(s, err, "container %s: %s", id, why);
		goto out;
	}
	c->pid = (pid_t)pid;
	util_copy(c->id, sizeof(c->id), id);
out:
	json_free(j);
	return err;
}

/*
 * Every container under a runc or crun state root whose id is s->name or starts with it, each
 * read as the runtime that keeps it left it: runc's state.json, crun's status (crun's own root;
 * containerd's, when its runc shim runs crun). ns: the containerd namespace the root belongs to,
 * or NULL.
 */
static void scan_root(struct search *s, const char *root, const char *label, const char *ns)
{
	size_t nlen = strlen(s->name);
	struct dirent *de;
	DIR *d;

	d = opendir(root);
	if (!d)
		return; /* that runtime keeps no state here: nothing of it runs */
	while ((de = readdir(d))) {
		struct candidate c = { 0 };
		char path[PATH_MAX];
		bool exact, crun = false;

		if (de->d_name[0] == '.' || strncmp(de->d_name, s->name, nlen) ||
		    util_fmt(path, sizeof(path), "%s/%s/state.json", root, de->d_name))
			continue;
		exact = !de->d_name[nlen];
		if (access(path, F_OK)) {
			if (util_fmt(path, sizeof(path), "%s/%s/status", root, de->d_name) ||
			    access(path, F_OK))
				continue;
			crun = true;
		}
		util_copy(c.runtime, sizeof(c.runtime), label);
		if (ns)
			util_copy(c.ns, sizeof(c.ns), ns);
		if (crun ? read_crun_status(s, path, de->d_name, &c) :
			   read_runc_state(s, path, de->d_name, &c))
			continue;
		add_candidate(s, &c, exact);
	}
	closedir(d);
}

/* Run argv with stdout into a new buffer (*out, NUL-terminated), stderr discarded. */
static int run_capture(char *const argv[], char **out, int *status)
{
	size_t cap = 65536, len = 0;
	char *buf = malloc(cap);
	int pfd[2], err = 0;
	struct timespec t0, t;
	pid_t pid;

	*out = NULL;
	if (!buf)
		return -ENOMEM;
	if (pipe2(pfd, O_CLOEXEC)) {
		free(buf);
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(pfd[0]);
		close(pfd[1]);
		free(buf);
		return err;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(pfd[1], 1);
		dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(pfd[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		long left;
		ssize_t n;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left = LOCATE_EXEC_TIMEOUT_MS - ((t.tv_sec - t0.tv_sec) * 1000 +
						 (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0 || poll(&p, 1, (int)left) == 0) {
			err = -ETIMEDOUT;
			kill(pid, SIGKILL);
			break;
		}
		if (len + 1 == cap) {
			char *nb = cap * 2 <= LOCATE_EXEC_OUT_MAX ? realloc(buf, cap * 2) : NULL;

			if (!nb) {
				err = -EFBIG;
				kill(pid, SIGKILL);
				break;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(pfd[0], buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(pfd[0]);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	if (err) {
		free(buf);
		return err;
	}
	buf[len] = '\0';
	*out = buf;
	return 0;
}

static bool in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char dir[PATH_MAX], full[PATH_MAX];
	size_t n;

	if (!path)
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	while (*path) {
		n = strcspn(path, ":");
		if (n && n < sizeof(dir)) {
			memcpy(dir, path, n);
			dir[n] = '\0';
			if (!util_fmt(full, sizeof(full), "%s/%s", dir, prog) &&
			    !access(full, X_OK))
				return true;
		}
		path += n;
		if (*path)
			path++;
	}
	return false;
}

/*
 * podman's own record of the container (its name, or an id or prefix of one): its full id and
 * init pid; the cgroup from its runtime's state (runc's state.json, crun's status) when that is
 * where podman's default roots keep it, else from the kernel for that pid.
 */
static void scan_podman(struct search *s)
{
	char *argv[] = { "podman", "container", "inspect", "--", (char *)s->name, NULL };
	char why[256], path[PATH_MAX];
	const struct json *c0;
	struct candidate c = { 0 };
	struct json *j = NULL;
	const char *id, *name;
	char *out = NULL;
	int status, err;
	int64_t pid;

	if (!in_path("podman"))
		return;
	err = run_capture(argv, &out, &status);
	if (err) {
		search_fail(s, err, "podman container inspect %s: %s", s->name, strerror(-err));
		return;
	}
	/* podman says "no such container" with status 125: not podman's */
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		goto out;
	err = json_parse(out, strlen(out), &j, why, sizeof(why));
	c0 = json_at(j, 0);
	id = json_str(json_get(c0, "Id"));
	name = json_str(json_get(c0, "Name"));
	if (err || !id || locate_check_name(id) ||
	    json_int(json_get(json_get(c0, "State"), "Pid"), &pid)) {
		search_fail(s, -EINVAL, "podman container inspect %s: %s", s->name,
			    err ? why : "no Id or State.Pid");
		goto out;
	}
	if (pid <= 0) {
		search_fail(s, -ESRCH, "podman container %s (%s) is not running", s->name, id);
		goto out;
	}
	util_copy(c.runtime, sizeof(c.runtime), "podman");
	if (!util_fmt(path, sizeof(path), "/run/runc/%s/state.json", id) && !access(path, F_OK))
		err = read_runc_state(s, path, id, &c);
	else if (!util_fmt(path, sizeof(path), CRUN_ROOT "/%s/status", id) && !access(path, F_OK))
		err = read_crun_status(s, path, id, &c);
	else
		err = -ENOENT;
	if (err == -ENOENT) {
		err = locate_cgroup_of_pid((pid_t)pid, c.cgroup, sizeof(c.cgroup), why,
					   sizeof(why));
		if (err)
			search_fail(s, err, "podman container %s: %s", s->name, why);
		c.pid = (pid_t)pid;
		util_copy(c.id, sizeof(c.id), id);
	}
	if (!err)
		add_candidate(s, &c, !strcmp(id, s->name) || (name && !strcmp(name, s->name)));
out:
	json_free(j);
	free(out);
}

/* Docker's names: /var/lib/docker/containers/<id>/config.v2.json "Name": "/NAME". */
static void scan_docker_names(struct search *s)
{
	struct dirent *de;
	DIR *d;

	d = opendir(DOCKER_CONTAINERS);
	if (!d)
		return;
	while ((de = readdir(d))) {
		struct candidate c = { 0 };
		char path[PATH_MAX], why[256];
		struct json *j = NULL;
		const char *name;

		if (de->d_name[0] == '.' ||
		    util_fmt(path, sizeof(path), DOCKER_CONTAINERS "/%s/config.v2.json",
			     de->d_name) ||
		    json_read_file(path, &j, why, sizeof(why)))
			continue;
		name = json_str(json_get(j, "Name"));
		if (name && name[0] == '/' && !strcmp(name + 1, s->name) &&
		    !util_fmt(path, sizeof(path), "/run/docker/runtime-runc/moby/%s/state.json",
			      de->d_name)) {
			util_copy(c.runtime, sizeof(c.runtime), "docker");
			if (access(path, F_OK))
				search_fail(s, -ESRCH, "docker container %s (%s) is not running",
					    s->name, de->d_name);
			else if (!read_runc_state(s, path, de->d_name, &c))
				add_candidate(s, &c, true);
		}
		json_free(j);
	}
	closedir(d);
}

/* The runc roots of containerd's namespaces (all of them, or only the one named ns). */
static void scan_containerd(struct search *s, const char *ns)
{
	char root[PATH_MAX];
	struct dirent *de;
	DIR *d;

	d = opendir(CONTAINERD_RUNC_ROOT);
	if (!d)
		return; /* no containerd (with runc) runs here */
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || (ns && strcmp(de->d_name, ns)) ||
		    util_fmt(root, sizeof(root), CONTAINERD_RUNC_ROOT "/%s", de->d_name))
			continue;
		/* (the namespace is in the candidate's name, NAMESPACE/ID) */
		scan_root(s, root, "containerd", de->d_name);
	}
	closedir(d);
}

/*
 * A name or id (prefix), or containerd's NAMESPACE/ID (prefix): containerd's ids are unique only
 * within a namespace. *ns: NULL, or the namespace (in ns_buf); *id: the rest.
 */
static int split_container_name(const char *name, char *ns_buf, size_t ns_len, const char **ns,
				const char **id)
{
	const char *slash = strchr(name, '/');

	*ns = NULL;
	*id = name;
	if (slash) {
		if ((size_t)(slash - name) >= ns_len)
			return -EINVAL;
		memcpy(ns_buf, name, (size_t)(slash - name));
		ns_buf[slash - name] = '\0';
		if (locate_check_name(ns_buf))
			return -EINVAL;
		*ns = ns_buf;
		*id = slash + 1;
	}
	return locate_check_name(*id);
}

int locate_container(const char *name, struct locate *l, char *why, size_t why_len)
{
	char ns_buf[LOCATE_NAME_MAX + 1], label[96];
	bool containerd = false;
	const char *ns, *id;
	struct search *s;
	size_t i, used;
	int err;

	memset(l, 0, sizeof(*l));
	if (split_container_name(name, ns_buf, sizeof(ns_buf), &ns, &id)) {
		util_fmt(why, why_len, "--container: expected a name or id (or containerd's "
				       "NAMESPACE/ID), each of 1-%d characters of [A-Za-z0-9_.-] "
				       "starting with a letter or digit", LOCATE_NAME_MAX);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->name = id;
	s->why = why;
	s->why_len = why_len;
	err = v2_mount(s->mnt, sizeof(s->mnt), why, why_len);
	if (err)
		goto out;
	if (ns) {
		scan_containerd(s, ns);
	} else {
		for (i = 0; i < sizeof(runc_roots) / sizeof(runc_roots[0]); i++) {
			util_fmt(label, sizeof(label), "runc state %s", runc_roots[i]);
			scan_root(s, runc_roots[i], label, NULL);
		}
		scan_containerd(s, NULL);
		scan_root(s, CRUN_ROOT, "crun state " CRUN_ROOT, NULL);
		scan_docker_names(s);
		scan_podman(s);
	}

	if (s->n > 1) {
		used = (size_t)snprintf(why, why_len, "\"%s\" is ambiguous: it matches", name);
		for (i = 0; i < s->n && used < why_len; i++) {
			containerd |= s->c[i].ns[0] != '\0';
			used += (size_t)snprintf(why + used, why_len - used,
						 "%s %s%s%s (%s, cgroup %s)", i ? ";" : "",
						 s->c[i].ns, s->c[i].ns[0] ? "/" : "", s->c[i].id,
						 s->c[i].runtime, s->c[i].cgroup);
		}
		if (used < why_len)
			snprintf(why + used, why_len - used, "; give the full id%s",
				 containerd ? " (containerd's as NAMESPACE/ID)" : "");
		err = -EEXIST;
		goto out;
	}
	if (s->n == 0) {
		err = s->err ? s->err : -ENOENT;
		if (!s->err && ns)
			util_fmt(why, why_len, "no running container \"%s\" in containerd's "
					       "namespace %s (" CONTAINERD_RUNC_ROOT "/%s)",
				 id, ns, ns);
		else if (!s->err)
			util_fmt(why, why_len, "no running container \"%s\" in the state of runc "
					       "(/run/runc), Docker, containerd, crun or podman (root's "
					       "only: rootless containers are not searched)", name);
		goto out;
	}
	util_copy(l->cgroup, sizeof(l->cgroup), s->c[0].cgroup);
	util_copy(l->id, sizeof(l->id), s->c[0].id);
	l->pid = s->c[0].pid;
	err = locate_netns_of_pid(l->pid, l->netns, sizeof(l->netns), why, why_len);
	if (!err)
		util_fmt(l->source, sizeof(l->source), "container:%s", l->id);
out:
	free(s);
	return err;
}

int locate_unit(const char *unit, struct locate *l, char *why, size_t why_len)
{
	char *argv[] = { "systemctl", "show", "-p", "ControlGroup", "-p", "MainPID", "--",
			 (char *)unit, NULL };
	char mnt[PATH_MAX], *out = NULL, *line, *save = NULL;
	const char *cg = "";
	long main_pid = 0;
	int status, err;
	size_t i;

	memset(l, 0, sizeof(*l));
	for (i = 0; unit[i]; i++)
		if (!isalnum((unsigned char)unit[i]) && !strchr(":_.@\\-", unit[i]))
			break;
	if (!unit[0] || unit[i] || i > LOCATE_NAME_MAX || unit[0] == '-') {
		util_fmt(why, why_len, "--unit: expected a unit name of 1-%d characters of "
				       "[A-Za-z0-9:_.@\\-]", LOCATE_NAME_MAX);
		return -EINVAL;
	}
	err = v2_mount(mnt, sizeof(mnt), why, why_len);
	if (err)
		return err;
	/*
	 * systemd's own test for "booted with systemd" (sd_booted): without it systemctl only says
	 * it cannot reach the bus, and no unit has a cgroup of systemd's making.
	 */
	if (access("/run/systemd/system", F_OK)) {
		char comm[64] = "";

		if (util_read_file("/proc/1/comm", comm, sizeof(comm)) > 0)
			comm[strcspn(comm, "\n")] = '\0';
		util_fmt(why, why_len, "unit %s: systemd is not running here (no /run/systemd/system; "
				       "PID 1 is %s): there are no units to attach to; attach with "
				       "--pid or --cgroup", unit, comm[0] ? comm : "unknown");
		return -ENOENT;
	}
	if (!in_path("systemctl")) {
		util_fmt(why, why_len, "unit %s: systemctl is not in PATH: cannot ask systemd for "
				       "the unit's cgroup", unit);
		return -ENOENT;
	}
	err = run_capture(argv, &out, &status);
	if (!err && (!WIFEXITED(status) || WEXITSTATUS(status)))
		err = -EIO;
	if (err) {
		util_fmt(why, why_len, "systemctl show %s failed (%s): is systemd running?", unit,
			 err == -EIO ? "non-zero exit" : strerror(-err));
		free(out);
		return err;
	}
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "ControlGroup=", 13))
			cg = line + 13;
		else if (!strncmp(line, "MainPID=", 8))
			main_pid = strtol(line + 8, NULL, 10);
	}
	err = -ENOENT;
	if (cg[0] == '/' && strcmp(cg, "/")) {
		if (util_fmt(l->cgroup, sizeof(l->cgroup), "%s%s", mnt, cg)) {
			util_fmt(why, why_len, "unit %s: cgroup path too long", unit);
			err = -ENAMETOOLONG;
		} else {
			err = check_below(mnt, l->cgroup, why, why_len);
		}
	} else if (main_pid > 0 && main_pid <= INT32_MAX) {
		err = locate_cgroup_of_pid((pid_t)main_pid, l->cgroup, sizeof(l->cgroup), why,
					   why_len);
	} else {
		util_fmt(why, why_len, "unit %s has no cgroup (not loaded, or not running): "
				       "refusing it", unit);
	}
	if (!err && main_pid > 0 && main_pid <= INT32_MAX) {
		l->pid = (pid_t)main_pid;
		err = locate_netns_of_pid(l->pid, l->netns, sizeof(l->netns), why, why_len);
	}
	if (!err)
		util_fmt(l->source, sizeof(l->source), "unit:%s", unit);
	free(out);
	return err;
}

/* systemd's slice name to its path: "a-b.slice" → "a.slice/a-b.slice"; "-.slice" → "". */
static int expand_slice(const char *slice, char *buf, size_t len)
{
	size_t n = strlen(slice), used = 0, i;

	buf[0] = '\0';
	if (!strcmp(slice, "-.slice"))
		return 0;
	if (n <= 6 || strcmp(slice + n - 6, ".slice") || strchr(slice, '/') || slice[0] == '-' ||
	    slice[n - 7] == '-' || strstr(slice, "--"))
		return -EINVAL;
	for (i = 0; i < n - 6; i++) {
		if (slice[i] != '-')
			continue;
		if (used + i + 7 + 1 > len)
			return -ENAMETOOLONG;
		/* the prefix up to this dash, as a slice */
		memcpy(buf + used, slice, i);
		memcpy(buf + used + i, ".slice/", 7);
		used += i + 7;
	}
	if (used + n + 1 > len)
		return -ENAMETOOLONG;
	memcpy(buf + used, slice, n + 1);
	return 0;
}

int locate_cgroups_path(const char *mnt, const char *spec, char *buf, size_t len, char *why,
			size_t why_len)
{
	char slice[256], prefix[256], name[256], sl_path[PATH_MAX], nm_path[PATH_MAX];
	const char *c1, *c2;
	int err;

	if (spec[0] == '/') {
		if (util_fmt(buf, len, "%s%s", mnt, spec)) {
			util_fmt(why, why_len, "cgroupsPath: too long");
			return -ENAMETOOLONG;
		}
		if (!strcmp(spec, "/") || strstr(spec, "/../") || strstr(spec, "/./") ||
		    strstr(spec, "//") || (strlen(spec) >= 3 && !strcmp(spec + strlen(spec) - 3,
									"/.."))) {
			util_fmt(why, why_len, "cgroupsPath: \"%s\" is not a plain cgroup path",
				 spec);
			return -EINVAL;
		}
		return 0;
	}
	c1 = strchr(spec, ':');
	c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c1 || !c2 || strchr(c2 + 1, ':')) {
		util_fmt(why, why_len, "cgroupsPath: \"%s\" is neither an absolute cgroupfs path "
				       "nor systemd's SLICE:PREFIX:NAME", spec);
		return -EINVAL;
	}
	if ((size_t)(c1 - spec) >= sizeof(slice) || (size_t)(c2 - c1 - 1) >= sizeof(prefix) ||
	    strlen(c2 + 1) >= sizeof(name)) {
		util_fmt(why, why_len, "cgroupsPath: a part of \"%s\" is too long", spec);
		return -ENAMETOOLONG;
	}
	memcpy(slice, spec, (size_t)(c1 - spec));
	slice[c1 - spec] = '\0';
	memcpy(prefix, c1 + 1, (size_t)(c2 - c1 - 1));
	prefix[c2 - c1 - 1] = '\0';
	util_copy(name, sizeof(name), c2 + 1);
	if (!name[0] || strchr(prefix, '/') || strchr(name, '/') || !strcmp(name, ".") ||
	    !strcmp(name, "..")) {
		util_fmt(why, why_len, "cgroupsPath: \"%s\": NAME must be non-empty and neither "
				       "part may hold '/'", spec);
		return -EINVAL;
	}
	/* as runc's systemd driver: no slice is system.slice, a NAME.slice is that slice */
	err = expand_slice(slice[0] ? slice : "system.slice", sl_path, sizeof(sl_path));
	if (err) {
		util_fmt(why, why_len, "cgroupsPath: \"%s\" is not a valid slice name", slice);
		return err;
	}
	if (strlen(name) > 6 && !strcmp(name + strlen(name) - 6, ".slice")) {
		err = expand_slice(name, nm_path, sizeof(nm_path));
		if (err) {
			util_fmt(why, why_len, "cgroupsPath: \"%s\" is not a valid slice name",
				 name);
			return err;
		}
		err = util_fmt(buf, len, "%s/%s", mnt, nm_path);
	} else {
		err = util_fmt(buf, len, "%s%s%s/%s-%s.scope", mnt, sl_path[0] ? "/" : "",
			       sl_path, prefix, name);
	}
	if (err)
		util_fmt(why, why_len, "cgroupsPath: too long");
	return err;
}
