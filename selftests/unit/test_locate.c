// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of userspace/locate.c's reading of an OCI config's linux.cgroupsPath: cgroupfs paths
 * and systemd's SLICE:PREFIX:NAME, expanded as systemd places slices (a-b.slice is
 * a.slice/a-b.slice), and every malformed form refused with a reason. Expectations are written
 * out by hand from systemd's slice naming rules (systemd.slice(5)) and runc's systemd driver.
 * Also: a pid's network namespace opened only while the pid is still the process found.
 *
 * Usage: test_locate        TAP 13; exits 1 if any test failed, 0 otherwise
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "userspace/locate.h"
#include "tap.h"

#define MNT "/sys/fs/cgroup"

static char why[WHY_LEN];

struct good {
	const char *spec;
	const char *path;
};

static const struct good good_cases[] = {
	{ "/docker/abc", MNT "/docker/abc" },
	{ "/libpod_parent/libpod-1f", MNT "/libpod_parent/libpod-1f" },
	{ "system.slice:docker:abc", MNT "/system.slice/docker-abc.scope" },
	{ ":crio:abc", MNT "/system.slice/crio-abc.scope" },
	{ "-.slice:p:n", MNT "/p-n.scope" },
	{ "machine.slice:libpod:1f", MNT "/machine.slice/libpod-1f.scope" },
	{ "a-b.slice:p:n", MNT "/a.slice/a-b.slice/p-n.scope" },
	{ "kubepods-burstable-pod12_34.slice:cri-containerd:c1",
	  MNT "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_34.slice/"
	      "cri-containerd-c1.scope" },
	{ "system.slice:p:x-y.slice", MNT "/x.slice/x-y.slice" },
};

struct bad {
	const char *spec;
	const char *why;
};

static const struct bad bad_cases[] = {
	{ "relative/path", "is neither an absolute cgroupfs path nor systemd's" },
	{ "a:b", "is neither" },
	{ "a:b:c:d", "is neither" },
	{ "/", "is not a plain cgroup path" },
	{ "/a/../b", "is not a plain cgroup path" },
	{ "/a/..", "is not a plain cgroup path" },
	{ "/a//b", "is not a plain cgroup path" },
	{ "/a/./b", "is not a plain cgroup path" },
	{ "/.", "is not a plain cgroup path" }, /* the root cgroup */
	{ "/a/.", "is not a plain cgroup path" },
	{ "system.slice:p:", "NAME must be non-empty" },
	{ "system.slice:p/q:n", "neither part may hold '/'" },
	{ "system.slice:p:../n", "neither part may hold '/'" },
	{ "system.slice:p:..", "NAME must be non-empty" },
	{ "system:p:n", "\"system\" is not a valid slice name" },
	{ "a--b.slice:p:n", "\"a--b.slice\" is not a valid slice name" },
	{ "-a.slice:p:n", "is not a valid slice name" },
	{ "a-.slice:p:n", "is not a valid slice name" },
	{ "a/b.slice:p:n", "is not a valid slice name" },
	{ ".slice:p:n", "is not a valid slice name" },
	{ "system.slice:p:a--b.slice", "\"a--b.slice\" is not a valid slice name" },
};

static bool good(const struct good *c)
{
	char buf[PATH_MAX], msg[256] = "";
	int err;

	err = locate_cgroups_path(MNT, c->spec, buf, sizeof(buf), msg, sizeof(msg));
	EXPECT(!err, "0, got %d (%s)", err, msg);
	EXPECT(!strcmp(buf, c->path), "\"%s\", got \"%s\"", c->path, buf);
	return true;
}

static bool bad(const struct bad *c)
{
	char buf[PATH_MAX], msg[256] = "";
	int err;

	err = locate_cgroups_path(MNT, c->spec, buf, sizeof(buf), msg, sizeof(msg));
	EXPECT(err == -EINVAL, "-EINVAL, got %d (%s)", err, msg);
	EXPECT(strstr(msg, c->why), "a reason holding \"%s\", got \"%s\"", c->why, msg);
	EXPECT(!strncmp(msg, "cgroupsPath: ", 13), "the reason names cgroupsPath: \"%s\"", msg);
	return true;
}

static bool too_long(void)
{
	char spec[PATH_MAX + 16], buf[PATH_MAX], msg[256];
	int err;

	memset(spec, 'a', sizeof(spec) - 1);
	spec[0] = '/';
	spec[sizeof(spec) - 1] = '\0';
	err = locate_cgroups_path(MNT, spec, buf, sizeof(buf), msg, sizeof(msg));
	EXPECT(err == -ENAMETOOLONG, "-ENAMETOOLONG for a path past PATH_MAX, got %d", err);
	memset(spec, 'a', 300);
	memcpy(spec + 300, ".slice:p:n", 11);
	err = locate_cgroups_path(MNT, spec, buf, sizeof(buf), msg, sizeof(msg));
	EXPECT(err == -ENAMETOOLONG, "-ENAMETOOLONG for a 306-byte slice, got %d", err);
	return true;
}

static bool names(void)
{
	EXPECT(!locate_check_name("web-7"), "web-7");
	EXPECT(!locate_check_name("0a1b_c.d"), "0a1b_c.d");
	EXPECT(locate_check_name("") == -EINVAL, "empty");
	EXPECT(locate_check_name("-x") == -EINVAL, "a leading dash (an option to podman)");
	EXPECT(locate_check_name(".x") == -EINVAL, "a leading dot");
	EXPECT(locate_check_name("a/b") == -EINVAL, "a slash");
	EXPECT(locate_check_name("a b") == -EINVAL, "a space");
	return true;
}

/* --container's NAMESPACE/ID (containerd): each part a name, one slash, refused before any scan */
static bool container_forms(void)
{
	static const char *const refused[] = { "a/b/c", "/x", "x/", "../x", "ns/..", "ns/-x",
					       "-n/x", "ns//x", "ns/x y" };
	char long_ns[LOCATE_NAME_MAX + 8], msg[256];
	struct locate l;
	size_t i;
	int err;

	for (i = 0; i < ARRAY_SIZE(refused); i++) {
		err = locate_container(refused[i], &l, msg, sizeof(msg));
		EXPECT(err == -EINVAL && strstr(msg, "--container: expected a name or id (or "
						     "containerd's NAMESPACE/ID)"),
		       "\"%s\": -EINVAL naming the form, got %d (%s)", refused[i], err, msg);
	}
	memset(long_ns, 'n', LOCATE_NAME_MAX + 1);
	memcpy(long_ns + LOCATE_NAME_MAX + 1, "/x", 3);
	err = locate_container(long_ns, &l, msg, sizeof(msg));
	EXPECT(err == -EINVAL, "a namespace of %d characters: -EINVAL, got %d", LOCATE_NAME_MAX + 1,
	       err);
	return true;
}

/*
 * A pid's netns is opened only while the pid is still the process found: its start time, read
 * when it was found, is checked once the namespace is open (a pid reused in between is another's).
 */
static bool netns_of_reused_pid(void)
{
	unsigned long long start;
	char path[PATH_MAX], msg[256] = "";
	int err, fd = 0;

	err = locate_pid_start(getpid(), &start);
	EXPECT(!err, "our own start time, got %d", err);
	err = locate_netns_of_pid(getpid(), start, &fd, path, sizeof(path), msg, sizeof(msg));
	EXPECT(!err && fd == -1 && !path[0], "our own netns: 0, no fd, no path; got %d, %d, \"%s\"",
	       err, fd, path);
	err = locate_netns_of_pid(getpid(), start + 1, &fd, path, sizeof(path), msg, sizeof(msg));
	EXPECT(err == -ESRCH && fd == -1 && strstr(msg, "is gone"),
	       "a start time not the process's: -ESRCH, no fd; got %d, %d (%s)", err, fd, msg);
	return true;
}

int main(void)
{
	char name[PATH_MAX + 64];
	size_t i;

	printf("TAP version 13\n1..%zu\n", 4 + ARRAY_SIZE(good_cases) + ARRAY_SIZE(bad_cases));
	for (i = 0; i < ARRAY_SIZE(good_cases); i++) {
		snprintf(name, sizeof(name), "cgroupsPath %s", good_cases[i].spec);
		report(good(&good_cases[i]), name, why);
	}
	for (i = 0; i < ARRAY_SIZE(bad_cases); i++) {
		snprintf(name, sizeof(name), "cgroupsPath %s refused", bad_cases[i].spec);
		report(bad(&bad_cases[i]), name, why);
	}
	report(too_long(), "cgroupsPath past the buffer refused", why);
	report(names(), "container names: what runtimes allow, nothing an option could start", why);
	report(netns_of_reused_pid(), "a pid's netns: refused once the pid is another process's", why);
	report(container_forms(), "--container NAMESPACE/ID: malformed forms refused", why);
	return tap_status();
}
