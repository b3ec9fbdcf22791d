// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/sched.h>

#include "spawn.h"

/* Child side: only async-signal-safe calls between clone3 and exec. */
static void __attribute__((noreturn)) exec_child(int netns_fd, char *const argv[],
						  const sigset_t *mask, int err_fd)
{
	int sig, err;

	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	if (netns_fd >= 0 && setns(netns_fd, CLONE_NEWNET))
		goto fail;
	execvp(argv[0], argv);
fail:
	err = errno;
	if (write(err_fd, &err, sizeof(err)) != sizeof(err))
		_exit(127);
	_exit(127);
}

int spawn_in_cgroup(int cgroup_fd, int netns_fd, char *const argv[], const sigset_t *child_mask,
		    pid_t *pid)
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
	args.exit_signal = SIGCHLD;
	args.cgroup = (uint64_t)cgroup_fd;
	ret = syscall(SYS_clone3, &args, sizeof(args));
	if (ret < 0) {
		err = -errno;
		goto out;
	}
	if (ret == 0) {
		close(pipefd[0]);
		exec_child(netns_fd, argv, child_mask, pipefd[1]);
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
	*pid = (pid_t)ret;
out:
	close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	return err;
}
