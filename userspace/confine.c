// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>

#include "confine.h"

#define CAPBIT(c) (1ULL << (c))
/*
 * What a root workload keeps: enough for package managers and builds (own any file, read and
 * write files of other users, switch uid and gid to drop privileges, signal its own processes,
 * bind low ports, chroot, write audit records). Everything else goes, in particular what undoes
 * the run or reaches past it: SYS_ADMIN (setns, mount, bpf), BPF, PERFMON, NET_ADMIN, NET_RAW
 * (raw and packet sockets), SYS_PTRACE, SYS_MODULE, SYS_RAWIO, SYS_BOOT, MKNOD (device nodes),
 * SETPCAP, SETFCAP (file capabilities for later), DAC_READ_SEARCH (open_by_handle_at reaches
 * files under the masks below), SYS_RESOURCE, SYS_NICE, SYSLOG, LINUX_IMMUTABLE, MAC_*, AUDIT_
 * CONTROL, IPC_*, CHECKPOINT_RESTORE. KILL is kept: in its own PID namespace it names only the
 * run's processes (apt kills its _apt helpers with it).
 */
#define CONFINE_KEEP_CAPS                                                                     \
	(CAPBIT(CAP_CHOWN) | CAPBIT(CAP_DAC_OVERRIDE) | CAPBIT(CAP_FOWNER) | CAPBIT(CAP_FSETID) | \
	 CAPBIT(CAP_KILL) | CAPBIT(CAP_SETGID) | CAPBIT(CAP_SETUID) |                          \
	 CAPBIT(CAP_NET_BIND_SERVICE) | CAPBIT(CAP_SYS_CHROOT) | CAPBIT(CAP_AUDIT_WRITE))

/* Fresh /proc entries that stay read-only: uid 0 writes them without any capability. */
static const char *const proc_ro[] = {
	"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs",
};

/* mountinfo escapes space, tab, newline and backslash as \ooo */
static void unescape(char *s)
{
	char *d = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else {
			*d++ = *s++;
		}
	}
	*d = '\0';
}

static const char *keep_path(struct confine *c, const char *p)
{
	size_t n = strlen(p) + 1;
	char *at;

	if (n > sizeof(c->buf) - c->used)
		return NULL;
	at = c->buf + c->used;
	memcpy(at, p, n);
	c->used += n;
	return at;
}

static bool under_sys(const char *p)
{
	return !strcmp(p, "/sys") || !strncmp(p, "/sys/", 5);
}

static int add_file(struct confine *c, const char **list, int *n, const char *path)
{
	if (*n == CONFINE_FILES_MAX || !(list[*n] = keep_path(c, path)))
		return -E2BIG;
	(*n)++;
	return 0;
}

int confine_hide(struct confine *c, const char *path)
{
	return add_file(c, c->hide, &c->n_hide, path);
}

int confine_protect(struct confine *c, const char *path)
{
	return add_file(c, c->protect, &c->n_protect, path);
}

int confine_mask(struct confine *c, const char *path)
{
	return add_file(c, c->mask, &c->n_mask, path);
}

int confine_prepare(struct confine *c)
{
	char *line = NULL, *mnt, *fstype, *sep;
	const char **list;
	int *n, err = 0;
	size_t cap = 0;
	FILE *f;

	memset(c, 0, sizeof(*c));
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL…] - FSTYPE SOURCE SUPEROPTS */
		sep = strstr(line, " - ");
		if (!sep)
			continue;
		*sep = '\0';
		fstype = strtok(sep + 3, " \n");
		if (!fstype || !strtok(line, " ") || !strtok(NULL, " ") || !strtok(NULL, " ") ||
		    !strtok(NULL, " "))
			continue;
		mnt = strtok(NULL, " ");
		if (!mnt)
			continue;
		unescape(mnt);
		if (!strcmp(fstype, "bpf")) {
			list = c->umount;
			n = &c->n_umount;
		} else if (under_sys(mnt) || !strcmp(fstype, "cgroup") ||
			   !strcmp(fstype, "cgroup2")) {
			list = c->ro;
			n = &c->n_ro;
		} else {
			continue;
		}
		/* a mount table this large is not one to guess about: refuse, never half-confine */
		if (*n == CONFINE_PATHS_MAX || !(list[*n] = keep_path(c, mnt))) {
			err = -E2BIG;
			break;
		}
		(*n)++;
	}
	free(line);
	fclose(f);
	return err;
}

static int set_ro(const char *path, unsigned int flags)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };

	if (syscall(SYS_mount_setattr, AT_FDCWD, path, flags | AT_SYMLINK_NOFOLLOW |
		    AT_NO_AUTOMOUNT, &attr, sizeof(attr)) == 0)
		return 0;
	/* gone with an unmounted parent, or not there in this namespace: nothing to protect */
	return errno == ENOENT || errno == EINVAL ? 0 : -errno;
}

static int setup_mounts(const struct confine *c)
{
	size_t i;
	int n, err;

	/* Nothing done here may reach sluice's namespace; mounts made there still arrive. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL))
		return -errno;
	for (n = c->n_umount - 1; n >= 0; n--)
		if (umount2(c->umount[n], MNT_DETACH) && errno != EINVAL && errno != ENOENT)
			return -errno;
	for (n = 0; n < c->n_ro; n++) {
		err = set_ro(c->ro[n], 0);
		if (err)
			return err;
	}
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return -errno;
	for (i = 0; i < sizeof(proc_ro) / sizeof(proc_ro[0]); i++) {
		if (mount(proc_ro[i], proc_ro[i], NULL, MS_BIND | MS_REC, NULL)) {
			if (errno == ENOENT)
				continue;
			return -errno;
		}
		err = set_ro(proc_ro[i], AT_RECURSIVE);
		if (err)
			return err;
	}
	for (n = 0; n < c->n_hide; n++)
		if (mount("/dev/null", c->hide[n], NULL, MS_BIND, NULL) && errno != ENOENT)
			return -errno;
	for (n = 0; n < c->n_mask; n++)
		if (mount("tmpfs", c->mask[n], "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  "size=4k,nr_inodes=1,mode=0555") && errno != ENOENT)
			return -errno;
	for (n = 0; n < c->n_protect; n++) {
		if (mount(c->protect[n], c->protect[n], NULL, MS_BIND, NULL)) {
			if (errno == ENOENT)
				continue;
			return -errno;
		}
		err = set_ro(c->protect[n], 0);
		if (err)
			return err;
	}
	return 0;
}

static int drop_caps(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	unsigned long cap;

	/* Bounding set first: dropping from it needs CAP_SETPCAP, which goes next. */
	for (cap = 0; cap < 64; cap++) {
		if (CONFINE_KEEP_CAPS & CAPBIT(cap))
			continue;
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)) {
			if (errno == EINVAL)
				break; /* past the kernel's last capability */
			return -errno;
		}
	}
	memset(data, 0, sizeof(data));
	data[0].effective = data[0].permitted = (uint32_t)CONFINE_KEEP_CAPS;
	data[1].effective = data[1].permitted = (uint32_t)(CONFINE_KEEP_CAPS >> 32);
	if (syscall(SYS_capset, &hdr, data) ||
	    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return 0;
}

int confine_child(const struct confine *c)
{
	int err, wstatus;
	long cmd;
	pid_t got;

	err = setup_mounts(c);
	if (!err)
		err = drop_caps();
	if (err)
		return err;
	/* A raw fork: glibc's runs atfork handlers, whose locks a parent's thread may hold. */
	cmd = syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
	if (cmd < 0)
		return -errno;
	if (cmd == 0)
		return 0;
	/*
	 * The namespace's init: reap whatever is reparented here until CMD ends. Its exit takes
	 * every process left in the namespace with it, as sluice's cgroup.kill would next. It never
	 * execs, so it would keep every descriptor sluice had, close-on-exec or not: the pin
	 * directory's lock among them (a killed writer's run then looked alive to sluice resume
	 * until CMD ended) and the run's links and maps. It needs none (the exec-error pipe
	 * included: only CMD's copy is left).
	 */
	if (syscall(SYS_close_range, 3U, ~0U, 0U))
		_exit(125);
	for (;;) {
		got = waitpid(-1, &wstatus, 0);
		if (got == (pid_t)cmd)
			break;
		if (got < 0 && errno != EINTR)
			_exit(125);
	}
	if (WIFEXITED(wstatus))
		_exit(WEXITSTATUS(wstatus));
	_exit(128 + WTERMSIG(wstatus));
}
