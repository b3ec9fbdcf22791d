// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/sched.h>

#include "sandbox_seccomp.h"
#include "spawn.h"

/* Child side: only async-signal-safe calls between clone3 and exec. */
static void __attribute__((noreturn)) exec_child(const struct spawn_opts *o, char *const argv[],
						  int err_fd)
{
	int sig, err;

	for (sig = 0; sig < o->n_close_fds; sig++)
		close(o->close_fds[sig]);
	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigprocmask(SIG_SETMASK, o->child_mask, NULL);
	if (o->netns_fd >= 0 && setns(o->netns_fd, CLONE_NEWNET))
		goto fail;
	/* The default root workload: from here on CMD's own process, under an init of its own. */
	if (o->confine) {
		err = confine_child(o->confine);
		if (err) {
			errno = -err;
			goto fail;
		}
	}
	/*
	 * The threat model is an unprivileged workload: drop to it for good. Groups first (that
	 * needs root), then the ids; no_new_privs keeps setuid binaries from climbing back. Raw
	 * system calls: glibc's wrappers broadcast the change to every thread it knows of, and
	 * this child of a threaded parent has none of them, so the wrappers would wait forever.
	 */
	if (o->drop && (syscall(SYS_setgroups, 1, &o->gid) ||
			syscall(SYS_setresgid, o->gid, o->gid, o->gid) ||
			syscall(SYS_setresuid, o->uid, o->uid, o->uid) ||
			prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)))
		goto fail;
	/* Socket families no hook judges (sandbox_seccomp.c): last, with no_new_privs always. */
	if (o->seccomp && sandbox_seccomp_install(o->seccomp))
		goto fail;
	execvp(argv[0], argv);
fail:
	err = errno;
	if (write(err_fd, &err, sizeof(err)) != sizeof(err))
		_exit(127);
	_exit(127);
}

int spawn_parse_user(const char *spec, uid_t *uid, gid_t *gid)
{
	char name[256], *colon, *end;
	struct passwd *pw = NULL;
	struct group *gr;
	unsigned long n;

	if (strlen(spec) >= sizeof(name))
		return -EINVAL;
	strcpy(name, spec);
	colon = strchr(name, ':');
	if (colon)
		*colon++ = '\0';
	errno = 0;
	n = strtoul(name, &end, 10);
	if (name[0] && !*end && !errno && n < (uid_t)-1) {
		*uid = (uid_t)n;
		pw = getpwuid(*uid);
	} else {
		pw = getpwnam(name);
		if (!pw)
			return -ENOENT;
		*uid = pw->pw_uid;
	}
	if (!colon || !*colon) {
		if (!pw)
			return -ENOENT; /* a bare number with no passwd entry: say the group */
		*gid = pw->pw_gid;
		return 0;
	}
	errno = 0;
	n = strtoul(colon, &end, 10);
	if (!*end && !errno && n < (gid_t)-1) {
		*gid = (gid_t)n;
		return 0;
	}
	gr = getgrnam(colon);
	if (!gr)
		return -ENOENT;
	*gid = gr->gr_gid;
	return 0;
}

int spawn_in_cgroup(const struct spawn_opts *o, char *const argv[], pid_t *pid)
{
	struct clone_args args;
	int pipefd[2], child_err, err = 0;
	ssize_t n;
	long ret;

	/* CLOEXEC pipe: EOF on exec success, the errno on failure. */
	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;

	memset(&args, 0, sizeof(args));
	args.flags = CLONE_INTO_CGROUP;
	/* the cgroup namespace is rooted at the cgroup the child is cloned into */
	if (o->confine)
		args.flags |= CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWIPC;
	args.exit_signal = SIGCHLD;
	args.cgroup = (uint64_t)o->cgroup_fd;
	ret = syscall(SYS_clone3, &args, sizeof(args));
	if (ret < 0) {
		err = -errno;
		goto out;
	}
	if (ret == 0) {
		close(pipefd[0]);
		exec_child(o, argv, pipefd[1]);
	}

	close(pipefd[1]);
	pipefd[1] = -1;
	do {
		n = read(pipefd[0], &child_err, sizeof(child_err));
	} while (n < 0 && errno == EINTR);
	if (n == sizeof(child_err)) {
		waitpid((pid_t)ret, NULL, 0);
		err = -child_err;
		goto out;
	}
	/* The filter's listener, sent before the exec just seen: without it, no run. */
	if (o->seccomp) {
		err = sandbox_seccomp_take(o->seccomp);
		if (err) {
			kill((pid_t)ret, SIGKILL);
			waitpid((pid_t)ret, NULL, 0);
			goto out;
		}
	}
	*pid = (pid_t)ret;
out:
	close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	return err;
}
