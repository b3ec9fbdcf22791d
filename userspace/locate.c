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
#include "runopts.h"
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

/*
 * A path the kernel resolves as written: no empty, "." or ".." component ("/a/." is "/a", "/."
 * the root), so that a prefix compare on it means what it says.
 */
static bool plain_path(const char *p)
{
	size_t n = strlen(p);

	return !strstr(p, "//") && !strstr(p, "/./") && !strstr(p, "/../") &&
	       !(n >= 2 && !strcmp(p + n - 2, "/.")) && !(n >= 3 && !strcmp(p + n - 3, "/.."));
}

/* path must be a directory strictly below the v2 mount mnt, with no "." or ".." in it. */
static int check_below(const char *mnt, const char *path, char *why, size_t why_len)
{
	size_t n = strlen(mnt);
	struct stat st;

	if (strncmp(path, mnt, n) || path[n] != '/' || !path[n + 1] || !plain_path(path)) {
		util_fmt(why, why_len, "%s is not a cgroup below the cgroup v2 mount %s", path,
			 mnt);
		return -EINVAL;
	}
	if (stat(path, &st)) {
		util_fmt(why, why_len, "cgroup %s: %s", path, strerror(errno));
		return -ENOENT;
	}
	if (!S_ISDIR(st.st_mode)) {
		util_fmt(why, why_len, "cgroup %s: not a directory", path);
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

int locate_pid_start(pid_t pid, unsigned long long *start)
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

int locate_netns_of_pid(pid_t pid, unsigned long long start, int *fd, char *buf, size_t len,
			char *why, size_t why_len)
{
	unsigned long long now;
	struct stat self, other;
	char path[64];
	int err;

	*fd = -1;
	buf[0] = '\0';
	util_fmt(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	*fd = runopts_open_netns(path, why, why_len);
	if (*fd < 0) {
		err = *fd;
		goto fail;
	}
	if (stat("/proc/self/ns/net", &self) || fstat(*fd, &other)) {
		err = -errno;
		util_fmt(why, why_len, "%s: %s", path, strerror(-err));
		goto fail;
	}
	/* opened: the namespace is the one of the process that held the pid at the open */
	if (locate_pid_start(pid, &now) || now != start) {
		err = -ESRCH;
		util_fmt(why, why_len, "process %d is gone (its pid is another process's now, or "
				       "no one's): not opening its network namespace", (int)pid);
		goto fail;
	}
	if (self.st_dev == other.st_dev && self.st_ino == other.st_ino) {
		close(*fd);
		*fd = -1;
		return 0;
	}
	return util_copy(buf, len, path);
fail:
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	return err;
}

void locate_release(struct locate *l)
{
	if (l->netns_fd >= 0)
		close(l->netns_fd);
	l->netns_fd = -1;
}

static void locate_init(struct locate *l)
{
	memset(l, 0, sizeof(*l));
	l->netns_fd = -1;
}

int locate_pid(pid_t pid, struct locate *l, char *why, size_t why_len)
{
	unsigned long long start;
	int err;

	locate_init(l);
	if (pid <= 0) {
		util_fmt(why, why_len, "--pid: expected a process id > 0");
		return -EINVAL;
	}
	/* the process whose cgroup is read is the one whose namespace is opened */
	err = locate_pid_start(pid, &start);
	if (err) {
		util_fmt(why, why_len, "process %d: %s", (int)pid,
			 err == -ENOENT ? "no such process" : strerror(-err));
		return err;
	}
	err = locate_cgroup_of_pid(pid, l->cgroup, sizeof(l->cgroup), why, why_len);
	if (!err)
		err = locate_netns_of_pid(pid, start, &l->netns_fd, l->netns, sizeof(l->netns), why,
					  why_len);
	if (err)
		return err;
	l->pid = pid;
	util_fmt(l->source, sizeof(l->source), "pid:%d", (int)pid);
	return 0;
}

/* One container a name matched. */
struct candidate {
	char runtime[64]; /* where it was found: "runc (/run/runc)", "podman", … */
	char id[LOCATE_NAME_MAX + 1];
	char ns[LOCATE_NAME_MAX + 1]; /* its containerd namespace; else "" */
	pid_t pid;
	unsigned long long start; /* when pid started, as its state says */
	char cgroup[PATH_MAX];
};

/* The states a name matched that could not be used: the first, or the first not -ESRCH. */
struct failure {
	int err;
	char why[LOCATE_WHY_MAX / 2];
};

struct search {
	const char *name;
	char mnt[PATH_MAX];
	struct candidate c[LOCATE_CANDIDATES_MAX];
	size_t n;
	bool exact; /* some name or id matched exactly (read or not): prefixes no longer count */
	bool here_exact; /* whether the state being read now matched exactly */
	char *why;
	size_t why_len;
	struct failure fail[2]; /* [0]: of prefix matches; [1]: of exact ones */
};

/*
 * A name or id matched (exactly or as a prefix): its state is read next. An exact match wins over
 * every prefix match, whether or not its state can be read: a container named web that is stopped
 * or unreadable is never answered with web2.
 */
static void search_match(struct search *s, bool exact)
{
	s->here_exact = exact;
	if (exact && !s->exact) {
		s->exact = true;
		s->n = 0;
	}
}

/*
 * Add the candidate whose state was just read: unless an exact match makes it a prefix match that
 * no longer counts, or it is one seen already through another runtime's state (podman on runc:
 * podman's inspect and runc's root).
 */
static void add_candidate(struct search *s, const struct candidate *c)
{
	size_t i;

	if (s->exact && !s->here_exact)
		return;
	for (i = 0; i < s->n; i++)
		if (!strcmp(s->c[i].cgroup, c->cgroup))
			return;
	if (s->n < LOCATE_CANDIDATES_MAX)
		s->c[s->n++] = *c;
}

/* The state just matched could not be used: err, and why (fmt with a and b). */
static void search_fail(struct search *s, int err, const char *fmt, const char *a, const char *b)
{
	struct failure *f = &s->fail[s->here_exact];

	if (f->err && (f->err != -ESRCH || err == -ESRCH))
		return;
	f->err = err;
	util_fmt(f->why, sizeof(f->why), fmt, a, b);
}

/*
 * Whether a component of cg below the mount names the container: id whole, or after a '-' and
 * before a '.' (runc's /NS/ID, Docker's docker-ID.scope, podman's libpod-ID.scope, crun's
 * libpod-ID.scope/container), not merely somewhere in a word (a short id "s" in system.slice).
 */
static bool cgroup_names(const char *mnt, const char *cg, const char *id)
{
	size_t n = strlen(id);
	const char *p;

	/* (past the mount, a '/' precedes every match: an id starts with a letter or digit) */
	for (p = cg + strlen(mnt); (p = strstr(p, id)); p++)
		if ((p[-1] == '/' || p[-1] == '-') && (!p[n] || p[n] == '/' || p[n] == '.'))
			return true;
	return false;
}

/*
 * A state's init (pid, which started at st) and its cgroup (c->cgroup, absolute), as the kernel
 * must agree with them: the init alive and the same process, in that cgroup or below it (systemd
 * in a container moves itself to init.scope), and the cgroup the container's own, not a parent of
 * it: the init directly in it, or its path naming the container (cgroup_names).
 */
static int check_init(struct search *s, const char *path, const char *id, int64_t pid, int64_t st,
		      struct candidate *c)
{
	char why[LOCATE_WHY_MAX / 4], pidcg[PATH_MAX];
	unsigned long long start;
	size_t n = strlen(c->cgroup);
	int err;

	if (locate_pid_start((pid_t)pid, &start) || start != (unsigned long long)st) {
		search_fail(s, -ESRCH, "container %s (%s): its init process is gone: not running",
			    id, path);
		return -ESRCH;
	}
	err = check_below(s->mnt, c->cgroup, why, sizeof(why));
	if (err) {
		search_fail(s, err, "%s: %s", path, why);
		return err;
	}
	err = locate_cgroup_of_pid((pid_t)pid, pidcg, sizeof(pidcg), why, sizeof(why));
	if (err || strncmp(pidcg, c->cgroup, n) || (pidcg[n] && pidcg[n] != '/')) {
		search_fail(s, -EINVAL, "%s: the init process is not in the state's cgroup %s",
			    path, c->cgroup);
		return -EINVAL;
	}
	if (pidcg[n] && !cgroup_names(s->mnt, c->cgroup, id)) {
		search_fail(s, -EINVAL, "%s: the state's cgroup %s holds the init only below it "
					"and does not name the container: a parent cgroup, not the "
					"container's", path, c->cgroup);
		return -EINVAL;
	}
	c->pid = (pid_t)pid;
	c->start = (unsigned long long)st;
	util_copy(c->id, sizeof(c->id), id);
	return 0;
}

/*
 * A runc state.json: its init pid (alive, the same process: its start time), its cgroup v2 path
 * (cgroup_paths[""], runc's word for the unified hierarchy), which the init must be in.
 */
static int read_runc_state(struct search *s, const char *path, const char *id, struct candidate *c)
{
	char why[256];
	struct json *j = NULL;
	const char *cg;
	int64_t pid, st;
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
	cg = json_str(json_get(json_get(j, "cgroup_paths"), ""));
	if (!cg) {
		search_fail(s, err, "%s: %s", path,
			    "no cgroup v2 path (cgroup_paths[\"\"]): a cgroup v1-only host?");
		goto out;
	}
	if (util_copy(c->cgroup, sizeof(c->cgroup), cg)) {
		search_fail(s, err, "%s: cgroup %s is too long", path, cg);
		goto out;
	}
	err = check_init(s, path, id, pid, st, c);
out:
	json_free(j);
	return err;
}

/*
 * crun's status file: its pid, which must have a start time to tell a stopped container's reused
 * pid (crun keeps the status until `crun delete`) from its init, and its cgroup-path (relative to
 * the cgroup v2 mount).
 */
static int read_crun_status(struct search *s, const char *path, const char *id,
			    struct candidate *c)
{
	char why[256];
	struct json *j = NULL;
	const char *cg;
	int64_t pid, st;
	int err;

	err = json_read_file(path, &j, why, sizeof(why));
	if (err) {
		search_fail(s, err, "%s: %s", path, why);
		return err;
	}
	err = -EINVAL;
	if (json_int(json_get(j, "pid"), &pid) || pid <= 0 || pid > INT32_MAX ||
	    json_int(json_get(j, "process-start-time"), &st)) {
		search_fail(s, err, "%s: %s", path,
			    "no valid \"pid\" and \"process-start-time\" (the start time tells the "
			    "container's init from a process that took its pid)");
		goto out;
	}
	cg = json_str(json_get(j, "cgroup-path"));
	if (!cg || cg[0] != '/' || !strcmp(cg, "/")) {
		search_fail(s, err, "%s: \"cgroup-path\" %s", path,
			    cg ? "is not a cgroup below the mount (\"/...\")" :
				 "is missing: crun made no cgroup for it");
		goto out;
	}
	if (util_fmt(c->cgroup, sizeof(c->cgroup), "%s%s", s->mnt, cg)) {
		search_fail(s, err, "%s: cgroup %s is too long", path, cg);
		goto out;
	}
	err = check_init(s, path, id, pid, st, c);
out:
	json_free(j);
	return err;
}

/* lstat's word on path: a regular file (1), nothing (0), or something else (-1: a link, …). */
static int regular_file(const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return 0;
	return S_ISREG(st.st_mode) ? 1 : -1;
}

/*
 * Every container under a runc or crun state root whose id is s->name or starts with it, each
 * read as the runtime that keeps it left it: runc's state.json, crun's status (crun's own root;
 * containerd's, when its runc shim runs crun). ns: the containerd namespace the root belongs to,
 * or NULL. Runtimes make real directories and files there: a symbolic link is no runtime's (a
 * link to another container's state would pass it off under a second id).
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
		char dir[PATH_MAX], path[PATH_MAX];
		struct stat st;
		int runc, crun = 0;

		/* (a longer name is no id: runtimes allow none) */
		if (de->d_name[0] == '.' || strncmp(de->d_name, s->name, nlen) ||
		    strlen(de->d_name) > LOCATE_NAME_MAX ||
		    util_fmt(dir, sizeof(dir), "%s/%s", root, de->d_name) ||
		    lstat(dir, &st) || S_ISREG(st.st_mode))
			continue;
		search_match(s, !de->d_name[nlen]);
		if (!S_ISDIR(st.st_mode)) {
			search_fail(s, -EINVAL, "%s: %s", dir,
				    "not a directory (a symbolic link?): no runtime's state");
			continue;
		}
		util_fmt(path, sizeof(path), "%s/state.json", dir);
		runc = regular_file(path);
		if (!runc) {
			util_fmt(path, sizeof(path), "%s/status", dir);
			crun = regular_file(path);
		}
		if (runc < 0 || (!runc && crun < 0)) {
			search_fail(s, -EINVAL, "%s: %s", path,
				    "not a regular file (a symbolic link?): no runtime's state");
			continue;
		}
		if (!runc && !crun) {
			search_fail(s, -ENOENT, "%s: %s", dir,
				    "neither runc's state.json nor crun's status in it (a container "
				    "being created or deleted?)");
			continue;
		}
		util_copy(c.runtime, sizeof(c.runtime), label);
		if (ns)
			util_copy(c.ns, sizeof(c.ns), ns);
		if (runc ? read_runc_state(s, path, de->d_name, &c) :
			   read_crun_status(s, path, de->d_name, &c))
			continue;
		add_candidate(s, &c);
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

/* What podman's inspect says of a container. */
struct podman_view {
	char id[LOCATE_NAME_MAX + 1];
	bool named; /* its id or name is s->name */
	int64_t pid;
	char cgroup[PATH_MAX]; /* State.CgroupPath (below the mount), or "" */
};

/*
 * podman's own record of the container (its name, or an id or prefix of one): 0 with v filled, 1
 * when podman has none, or -errno (with search_fail).
 */
static int podman_inspect(struct search *s, struct podman_view *v)
{
	char *argv[] = { "podman", "container", "inspect", "--", (char *)s->name, NULL };
	const struct json *c0, *state;
	struct json *j = NULL;
	const char *id, *name, *cg;
	char why[256], *out = NULL;
	int status, err;

	memset(v, 0, sizeof(*v));
	err = run_capture(argv, &out, &status);
	if (err) {
		search_fail(s, err, "podman container inspect %s: %s", s->name, strerror(-err));
		return err;
	}
	/* podman says "no such container" with status 125: not podman's */
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		free(out);
		return 1;
	}
	err = json_parse(out, strlen(out), &j, why, sizeof(why));
	c0 = json_at(j, 0);
	state = json_get(c0, "State");
	id = json_str(json_get(c0, "Id"));
	name = json_str(json_get(c0, "Name"));
	cg = json_str(json_get(state, "CgroupPath"));
	if (err || !id || locate_check_name(id) || json_int(json_get(state, "Pid"), &v->pid)) {
		search_fail(s, -EINVAL, "podman container inspect %s: %s", s->name,
			    err ? why : "no Id or State.Pid");
		err = -EINVAL;
	} else {
		util_copy(v->id, sizeof(v->id), id);
		v->named = !strcmp(id, s->name) || (name && !strcmp(name, s->name));
		if (cg && cg[0] == '/' && strcmp(cg, "/"))
			util_copy(v->cgroup, sizeof(v->cgroup), cg);
	}
	json_free(j);
	free(out);
	return err;
}

/*
 * A podman container: its init pid and cgroup from its runtime's state (runc's state.json, crun's
 * status) when that is where podman's default roots keep it. Else (another runtime) from podman's
 * State.CgroupPath and State.Pid, which has no start time: podman is asked again once the pid's
 * start time is read, and must still name that pid, or the pid may be another process's by then.
 */
static void scan_podman(struct search *s)
{
	struct candidate c = { 0 };
	struct podman_view v, again;
	unsigned long long start;
	char path[PATH_MAX];
	int runc = 0, crun = 0, err;

	if (!in_path("podman"))
		return;
	s->here_exact = false; /* (whose failure this is, podman has not said yet) */
	if (podman_inspect(s, &v))
		return;
	search_match(s, v.named);
	if (v.pid <= 0 || v.pid > INT32_MAX) {
		search_fail(s, -ESRCH, "podman container %s (%s) is not running", s->name, v.id);
		return;
	}
	util_copy(c.runtime, sizeof(c.runtime), "podman");
	util_fmt(path, sizeof(path), "/run/runc/%s/state.json", v.id);
	runc = regular_file(path);
	if (!runc) {
		util_fmt(path, sizeof(path), CRUN_ROOT "/%s/status", v.id);
		crun = regular_file(path);
	}
	if (runc < 0 || crun < 0) {
		search_fail(s, -EINVAL, "%s: %s", path,
			    "not a regular file (a symbolic link?): no runtime's state");
		return;
	}
	if (runc > 0 || crun > 0) {
		if (runc > 0 ? read_runc_state(s, path, v.id, &c) :
			       read_crun_status(s, path, v.id, &c))
			return;
	} else {
		if (!v.cgroup[0] ||
		    util_fmt(c.cgroup, sizeof(c.cgroup), "%s%s", s->mnt, v.cgroup)) {
			search_fail(s, -EINVAL, "podman container %s (%s): no usable State.CgroupPath "
						"in its inspect", s->name, v.id);
			return;
		}
		if (locate_pid_start((pid_t)v.pid, &start)) {
			search_fail(s, -ESRCH, "podman container %s (%s) is not running", s->name,
				    v.id);
			return;
		}
		if (check_init(s, "podman container inspect", v.id, v.pid, (int64_t)start, &c))
			return;
		err = podman_inspect(s, &again);
		if (err < 0)
			return;
		if (err > 0 || strcmp(again.id, v.id) || again.pid != v.pid) {
			search_fail(s, -ESRCH, "podman container %s (%s): its process changed while "
					       "it was being located: not running", s->name, v.id);
			return;
		}
	}
	add_candidate(s, &c);
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
		int state;

		if (de->d_name[0] == '.' || strlen(de->d_name) > LOCATE_NAME_MAX ||
		    util_fmt(path, sizeof(path), DOCKER_CONTAINERS "/%s/config.v2.json",
			     de->d_name) ||
		    json_read_file(path, &j, why, sizeof(why)))
			continue;
		name = json_str(json_get(j, "Name"));
		if (name && name[0] == '/' && !strcmp(name + 1, s->name) &&
		    !util_fmt(path, sizeof(path), "/run/docker/runtime-runc/moby/%s/state.json",
			      de->d_name)) {
			search_match(s, true);
			util_copy(c.runtime, sizeof(c.runtime), "docker");
			state = regular_file(path);
			if (!state)
				search_fail(s, -ESRCH, "docker container %s (%s) is not running",
					    s->name, de->d_name);
			else if (state < 0)
				search_fail(s, -EINVAL, "%s: %s", path,
					    "not a regular file (a symbolic link?): no runtime's "
					    "state");
			else if (!read_runc_state(s, path, de->d_name, &c))
				add_candidate(s, &c);
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
	struct stat st;
	DIR *d;

	d = opendir(CONTAINERD_RUNC_ROOT);
	if (!d)
		return; /* no containerd (with runc) runs here */
	while ((de = readdir(d))) {
		/* a namespace is a directory of containerd's making, its name one a name can be */
		if (de->d_name[0] == '.' || (ns && strcmp(de->d_name, ns)) ||
		    strlen(de->d_name) > LOCATE_NAME_MAX ||
		    util_fmt(root, sizeof(root), CONTAINERD_RUNC_ROOT "/%s", de->d_name) ||
		    lstat(root, &st) || !S_ISDIR(st.st_mode))
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
	const struct failure *f;
	bool containerd = false;
	const char *ns, *id;
	struct search *s;
	size_t i, used;
	int err;

	locate_init(l);
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

	/* the states that count: the exact matches' if there are any, else the prefix matches' */
	f = &s->fail[s->exact];
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
		err = f->err ? f->err : -ENOENT;
		if (f->err)
			util_copy(why, why_len, f->why);
		else if (ns)
			util_fmt(why, why_len, "no running container \"%s\" in containerd's "
					       "namespace %s (" CONTAINERD_RUNC_ROOT "/%s)",
				 id, ns, ns);
		else
			util_fmt(why, why_len, "no running container \"%s\" in the state of runc "
					       "(/run/runc), Docker, containerd, crun or podman (root's "
					       "only: rootless containers are not searched)", name);
		goto out;
	}
	/* one found, but another it matches as well could not be read: which is meant is unknown */
	if (f->err && f->err != -ESRCH) {
		util_fmt(why, why_len, "\"%s\" matches %s%s%s (%s), but also a container whose state "
				       "could not be read: %s: refusing to guess",
			 name, s->c[0].ns, s->c[0].ns[0] ? "/" : "", s->c[0].id, s->c[0].runtime,
			 f->why);
		err = f->err;
		goto out;
	}
	util_copy(l->cgroup, sizeof(l->cgroup), s->c[0].cgroup);
	util_copy(l->id, sizeof(l->id), s->c[0].id);
	l->pid = s->c[0].pid;
	/* the init whose state was read: still it once its namespace is open */
	err = locate_netns_of_pid(l->pid, s->c[0].start, &l->netns_fd, l->netns, sizeof(l->netns),
				  why, why_len);
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

	locate_init(l);
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
		char pidcg[PATH_MAX];
		unsigned long long start;
		size_t n = strlen(l->cgroup);

		/*
		 * The namespace of a process of the unit, which the pid systemctl named (started
		 * at start) still is: in the unit's cgroup or below it.
		 */
		l->pid = (pid_t)main_pid;
		err = locate_pid_start(l->pid, &start);
		if (!err)
			err = locate_cgroup_of_pid(l->pid, pidcg, sizeof(pidcg), why, why_len);
		if (err || strncmp(pidcg, l->cgroup, n) || (pidcg[n] && pidcg[n] != '/')) {
			util_fmt(why, why_len, "unit %s: its main process %d is gone (not in the "
					       "unit's cgroup %s)", unit, (int)l->pid, l->cgroup);
			err = -ESRCH;
		} else {
			err = locate_netns_of_pid(l->pid, start, &l->netns_fd, l->netns,
						  sizeof(l->netns), why, why_len);
		}
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
		if (!strcmp(spec, "/") || !plain_path(spec)) {
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
