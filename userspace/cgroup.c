// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* linux/exportfs.h's FILEID_KERNFS, which the UAPI does not carry: kernfs (cgroupfs) handles */
#define CGROUP_FILEID_KERNFS 0xfe

#include "cgroup.h"
#include "util.h"

int cgroup_v2_mount(char *buf, size_t len)
{
	char *line = NULL;
	size_t cap = 0;
	FILE *f;
	int err = -ENOENT;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		/* "id parent maj:min root mountpoint opts [optional…] - fstype source superopts" */
		char *sep = strstr(line, " - ");
		char mnt[PATH_MAX], fstype[64];

		if (!sep || sscanf(sep, " - %63s", fstype) != 1 || strcmp(fstype, "cgroup2"))
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		if (util_unescape_mountinfo(mnt) || util_copy(buf, len, mnt)) {
			err = -ENAMETOOLONG;
			break;
		}
		err = 0;
		break;
	}
	free(line);
	fclose(f);
	return err;
}

static int mkdir_one(const char *path)
{
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/* The fd, id and level of the run's cgroup at cg->path, <parent>/<run_id> below the root. */
static int open_run(const char *parent, struct run_cgroup *cg)
{
	struct stat st;
	int err;

	cg->fd = open(cg->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg->fd < 0)
		return -errno;
	if (fstat(cg->fd, &st)) {
		err = -errno;
		close(cg->fd);
		cg->fd = -1;
		return err;
	}
	cg->id = st.st_ino;
	/* one level per component */
	cg->level = 1;
	for (const char *c = parent; *c; c++)
		if (*c != '/' && (c == parent || c[-1] == '/'))
			cg->level++;
	return 0;
}

int cgroup_create_run(const char *parent, const char *run_id, struct run_cgroup *cg)
{
	char mnt[PATH_MAX], dir[PATH_MAX];
	int err;

	cg->fd = -1;
	cg->path[0] = '\0';
	err = cgroup_v2_mount(mnt, sizeof(mnt));
	if (err)
		return err;
	if (util_fmt(dir, sizeof(dir), "%s/%s", mnt, parent))
		return -ENAMETOOLONG;
	err = mkdir_one(dir);
	if (err)
		return err;
	if (util_fmt(cg->path, sizeof(cg->path), "%s/%s", dir, run_id)) {
		cg->path[0] = '\0';
		return -ENAMETOOLONG;
	}
	/* Never adopt an existing cgroup: its removal at the end would not be ours to do. */
	if (mkdir(cg->path, 0755)) {
		err = -errno;
		cg->path[0] = '\0';
		return err;
	}
	err = open_run(parent, cg);
	if (err) {
		rmdir(cg->path);
		cg->path[0] = '\0';
	}
	return err;
}

int cgroup_open_path(const char *path, const char *run_id, struct run_cgroup *cg)
{
	const char *base = strrchr(path, '/');
	int err;

	/* <mount>/<parent…>/<run_id>: the run's name last, below a parent of sluice's */
	if (!base || strcmp(base + 1, run_id)) {
		cg->fd = -1;
		cg->path[0] = '\0';
		return -EINVAL;
	}
	err = cgroup_open_existing(path, cg);
	if (!err && cg->level < 2) {
		close(cg->fd);
		cg->fd = -1;
		cg->path[0] = '\0';
		err = -EINVAL;
	}
	return err;
}

int cgroup_id_exists(uint64_t id)
{
	/* a struct file_handle and its 8 handle bytes, suitably aligned */
	uint64_t buf[(sizeof(struct file_handle) + sizeof(uint64_t) + 7) / 8] = {};
	struct file_handle *fh = (struct file_handle *)buf;
	char mnt[PATH_MAX];
	int mfd, fd, err;

	err = cgroup_v2_mount(mnt, sizeof(mnt));
	if (err)
		return err;
	mfd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mfd < 0)
		return -errno;
	/* cgroupfs hands out kernfs file handles: the 64-bit id is the handle */
	fh->handle_bytes = sizeof(id);
	fh->handle_type = CGROUP_FILEID_KERNFS;
	memcpy(fh->f_handle, &id, sizeof(id));
	fd = open_by_handle_at(mfd, fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	err = fd >= 0 ? 1 : errno == ESTALE || errno == ENOENT ? 0 : -errno;
	if (fd >= 0)
		close(fd);
	close(mfd);
	return err;
}

int cgroup_is_populated(const struct run_cgroup *cg)
{
	char path[PATH_MAX], buf[256];
	char *p;
	int err;

	if (util_fmt(path, sizeof(path), "%s/cgroup.events", cg->path))
		return -ENAMETOOLONG;
	err = util_read_file(path, buf, sizeof(buf));
	if (err < 0)
		return err;
	p = strstr(buf, "populated ");
	if (!p)
		return -EPROTO;
	return p[strlen("populated ")] == '1';
}

int cgroup_kill_and_wait(const struct run_cgroup *cg, int timeout_ms)
{
	char path[PATH_MAX];
	struct pollfd pfd;
	struct timespec start, now;
	int err, populated;

	if (util_fmt(path, sizeof(path), "%s/cgroup.kill", cg->path))
		return -ENAMETOOLONG;
	err = util_write_file(path, "1");
	if (err)
		return err;

	/* cgroup.events raises POLLPRI when "populated" changes. */
	if (util_fmt(path, sizeof(path), "%s/cgroup.events", cg->path))
		return -ENAMETOOLONG;
	pfd.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (pfd.fd < 0)
		return -errno;
	pfd.events = POLLPRI;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		long elapsed;

		populated = cgroup_is_populated(cg);
		if (populated <= 0)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		elapsed = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
		if (elapsed >= timeout_ms) {
			populated = -ETIMEDOUT;
			break;
		}
		/* Short waits too: a zombie's exit does not always raise the event we need. */
		poll(&pfd, 1, 20);
	}
	close(pfd.fd);
	return populated < 0 ? populated : 0;
}

/* rmdir a cgroup directory after its children; cgroupfs only allows rmdir of empty cgroups. */
static int remove_tree(const char *path, int depth)
{
	char child[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int err = 0;

	if (depth > 64)
		return -ELOOP;
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (util_fmt(child, sizeof(child), "%s/%s", path, de->d_name)) {
			err = -ENAMETOOLONG;
			continue;
		}
		if (!err)
			err = remove_tree(child, depth + 1);
	}
	closedir(d);
	if (!err && rmdir(path) && errno != ENOENT)
		err = -errno;
	return err;
}

int cgroup_remove(struct run_cgroup *cg)
{
	if (cg->fd >= 0) {
		close(cg->fd);
		cg->fd = -1;
	}
	if (!cg->path[0])
		return 0;
	return remove_tree(cg->path, 0);
}

int cgroup_open_existing(const char *path, struct run_cgroup *cg)
{
	char mnt[PATH_MAX];
	const char *below;
	size_t n;
	int err;

	cg->fd = -1;
	cg->path[0] = '\0';
	err = cgroup_v2_mount(mnt, sizeof(mnt));
	if (err)
		return err;
	n = strlen(mnt);
	/* below the root (the root is everything: not a sandbox), nothing that climbs out */
	/* one spelling per cgroup ("X/." is X): the daemon tells overlapping runs apart by it */
	if (strncmp(path, mnt, n) || path[n] != '/' || !path[n + 1] || strstr(path, "/..") ||
	    strstr(path, "//") || strstr(path, "/./") || path[strlen(path) - 1] == '/' ||
	    !strcmp(path + strlen(path) - 2, "/."))
		return -EINVAL;
	if (util_copy(cg->path, sizeof(cg->path), path))
		return -ENAMETOOLONG;
	below = path + n + 1;
	/* open_run counts the parent's components and adds one for the last */
	{
		char parent[PATH_MAX];
		const char *base = strrchr(below, '/');
		size_t plen = base ? (size_t)(base - below) : 0;

		memcpy(parent, below, plen);
		parent[plen] = '\0';
		err = open_run(parent, cg);
	}
	if (err)
		cg->path[0] = '\0';
	return err;
}

int cgroup_is_removed(const struct run_cgroup *cg)
{
	struct stat st;

	if (cg->fd < 0)
		return cgroup_id_exists(cg->id) == 0;
	/* a removed cgroup's directory, still open, holds no files any more */
	if (!fstatat(cg->fd, "cgroup.events", &st, 0))
		return 0;
	return errno == ENOENT ? 1 : -errno;
}
