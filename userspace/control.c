// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The daemon's control protocol: see control.h. */
#define _GNU_SOURCE /* struct ucred */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "cjson.h"
#include "control.h"
#include "util.h"

/* A daemon that has not answered in this long is not going to (attach loads programs: seconds). */
#define CONTROL_REPLY_TIMEOUT_MS 60000

const char *control_socket_path(const char *opt)
{
	const char *env = getenv("SLUICE_SOCKET");

	if (opt && *opt)
		return opt;
	return env && *env ? env : CONTROL_SOCKET_DEFAULT;
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* asm-generic/socket.h, Linux 6.5 */
#endif
#define CAP_SYS_ADMIN_BIT 21

/* The pid a pidfd refers to (its fdinfo's "Pid:"), or -1. */
static pid_t pidfd_pid(int pidfd)
{
	char path[64], buf[1024], *p;

	util_fmt(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	if (util_read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	p = strstr(buf, "\nPid:\t");
	return p ? (pid_t)strtol(p + 6, NULL, 10) : -1;
}

int control_peer_check(int fd, char *why, size_t why_len)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	char path[64], status[4096], *cap;
	struct stat peer_ns, own_ns;
	unsigned long long eff;
	int pidfd = -1, err = -EPERM;
	pid_t pid;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
		util_fmt(why, why_len, "its credentials: %s", strerror(errno));
		return -errno;
	}
	if (cred.uid != 0) {
		util_fmt(why, why_len, "uid %u is not root", (unsigned int)cred.uid);
		return -EPERM;
	}
	pid = cred.pid;
	len = sizeof(pidfd);
	if (!getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len)) {
		pid = pidfd_pid(pidfd);
	} else {
		/*
		 * Before 6.5 the pid alone: a peer that exits right after connect() and whose pid is
		 * taken over by a privileged process would be judged by that process's capabilities.
		 * Winning that needs the pid space to wrap between accept and this read.
		 */
		pidfd = -1;
	}
	if (pid <= 0) {
		util_fmt(why, why_len, "its process is gone or outside this PID namespace");
		goto out;
	}
	util_fmt(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (util_read_file(path, status, sizeof(status)) < 0 ||
	    !(cap = strstr(status, "\nCapEff:\t"))) {
		util_fmt(why, why_len, "%s: unreadable", path);
		goto out;
	}
	eff = strtoull(cap + 9, NULL, 16);
	/*
	 * Capabilities count in the user namespace they belong to: root of a namespace it made
	 * itself (uid 0 mapped to 0 is allowed to its creator) has all of them there, none here.
	 */
	util_fmt(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	if (stat(path, &peer_ns) || stat("/proc/self/ns/user", &own_ns) ||
	    peer_ns.st_ino != own_ns.st_ino || peer_ns.st_dev != own_ns.st_dev) {
		util_fmt(why, why_len, "pid %d is in another user namespace", (int)pid);
		goto out;
	}
	if (!(eff & (1ULL << CAP_SYS_ADMIN_BIT))) {
		util_fmt(why, why_len, "pid %d (uid 0) lacks CAP_SYS_ADMIN: a confined workload, not "
			 "a trusted sluice", (int)pid);
		goto out;
	}
	/* the pidfd still names a live process: the pid read above was not reused meanwhile */
	if (pidfd >= 0 && syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0)) {
		util_fmt(why, why_len, "pid %d exited while being checked", (int)pid);
		goto out;
	}
	err = 0;
out:
	if (pidfd >= 0)
		close(pidfd);
	return err;
}

int control_connect(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char why[160];
	int fd, err;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		err = -errno;
		close(fd);
		return err;
	}
	/*
	 * Only a privileged listener is the daemon: whoever could create the socket's path (a
	 * loose directory, $SLUICE_SOCKET under /tmp, a confined workload that is uid 0 without
	 * capabilities and owns /run/sluice) must not be able to answer an attach or a run "ok".
	 */
	if (control_peer_check(fd, why, sizeof(why))) {
		fprintf(stderr, "sluice: %s: refused the listener: %s\n", path, why);
		close(fd);
		return -EPERM;
	}
	return fd;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t control_read_line(int fd, char *buf, size_t len)
{
	size_t got = 0;
	bool too_long = false;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char c;
		ssize_t n;

		n = read(fd, &c, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			if (poll(&p, 1, CONTROL_REPLY_TIMEOUT_MS) == 0)
				return -ETIMEDOUT;
			continue;
		}
		if (n < 0)
			return -errno;
		if (n == 0)
			return got || too_long ? -EPIPE : 0; /* a line cut short is not a line */
		if (c == '\n')
			break;
		if (got + 1 >= len) {
			too_long = true;
			continue;
		}
		buf[got++] = c;
	}
	buf[got] = '\0';
	return too_long ? -EMSGSIZE : (ssize_t)got;
}

int control_call(int fd, const char *request, char *reply, size_t reply_len)
{
	size_t len = strlen(request);
	ssize_t n;
	char *line;
	int err;

	if (len + 1 > CONTROL_LINE_MAX)
		return -EMSGSIZE;
	line = malloc(len + 1);
	if (!line)
		return -ENOMEM;
	memcpy(line, request, len);
	line[len] = '\n';
	err = write_all(fd, line, len + 1);
	free(line);
	if (err)
		return err;
	n = control_read_line(fd, reply, reply_len);
	if (n < 0)
		return (int)n;
	if (n == 0)
		return -ECONNRESET;
	return strstr(reply, "\"ok\":true") == reply + 1 ? 0 : -EPROTO;
}

void control_msg_begin(struct control_msg *m)
{
	m->buf[0] = '{';
	m->len = 1;
	m->overflow = false;
}

static void put(struct control_msg *m, const char *s, size_t n)
{
	/* room for the closing brace and the NUL */
	if (m->overflow || m->len + n + 2 > sizeof(m->buf)) {
		m->overflow = true;
		return;
	}
	memcpy(m->buf + m->len, s, n);
	m->len += n;
}

/* Strings in the log's canonical form (cjson.h): the parser below reads them back byte for byte. */
static void put_cb(void *m, const char *s, size_t n)
{
	put(m, s, n);
}

static void put_string(struct control_msg *m, const char *s)
{
	cjson_put_string(put_cb, m, s);
}

static void put_key(struct control_msg *m, const char *key)
{
	if (m->len > 1)
		put(m, ",", 1);
	put_string(m, key);
	put(m, ":", 1);
}

void control_msg_str(struct control_msg *m, const char *key, const char *val)
{
	put_key(m, key);
	put_string(m, val);
}

void control_msg_u64(struct control_msg *m, const char *key, uint64_t val)
{
	char num[CJSON_INT_MAX];

	put_key(m, key);
	put(m, num, cjson_fmt_u64(num, val));
}

void control_msg_bool(struct control_msg *m, const char *key, bool val)
{
	put_key(m, key);
	put(m, val ? "true" : "false", val ? 4 : 5);
}

void control_msg_raw(struct control_msg *m, const char *key, const char *json)
{
	put_key(m, key);
	put(m, json, strlen(json));
}

int control_msg_end(struct control_msg *m)
{
	if (m->overflow || m->len + 2 > sizeof(m->buf))
		return -EMSGSIZE;
	m->buf[m->len++] = '}';
	m->buf[m->len] = '\0';
	return 0;
}

/* The parser: a cursor over the line and where decoded strings go. */
struct cursor {
	const char *s;
	size_t len, pos;
	char *out;
	size_t out_len, out_pos;
	char *why;
	size_t why_len;
};

static int fail(struct cursor *c, const char *what)
{
	util_fmt(c->why, c->why_len, "byte %zu: %s", c->pos, what);
	return -EINVAL;
}

static void skip_ws(struct cursor *c)
{
	while (c->pos < c->len && (c->s[c->pos] == ' ' || c->s[c->pos] == '\t' ||
				   c->s[c->pos] == '\r'))
		c->pos++;
}

/*
 * A string at c->pos (its opening quote) in the canonical grammar (cjson.h), decoded into
 * c->out; *start where it begins. A NUL in it is refused: it is handed on as a C string.
 */
static int parse_string(struct cursor *c, char **start)
{
	const unsigned char *s = (const unsigned char *)c->s;
	size_t from = c->pos, err_off;
	const char *why;
	bool escaped;
	int n;

	if (c->pos >= c->len || c->s[c->pos] != '"')
		return fail(c, "expected a string");
	if (cjson_scan_string(s, c->len, &c->pos, &escaped, &err_off, &why)) {
		c->pos = err_off;
		return fail(c, why);
	}
	*start = c->out + c->out_pos;
	n = cjson_decode(s + from + 1, c->pos - from - 2, *start, c->out_len - c->out_pos);
	if (n < 0)
		return fail(c, "strings too long");
	if (memchr(*start, '\0', (size_t)n)) {
		c->pos = from;
		return fail(c, "NUL (\\u0000) in a string");
	}
	c->out_pos += (size_t)n + 1;
	return 0;
}

int control_parse(struct control_obj *o, const char *line, size_t len, char *why, size_t why_len)
{
	struct cursor c = { .s = line, .len = len, .out = o->text, .out_len = sizeof(o->text),
			    .why = why, .why_len = why_len };
	int err;

	o->n = 0;
	if (len + 1 > CONTROL_LINE_MAX)
		return fail(&c, "request longer than a line may be");
	skip_ws(&c);
	if (c.pos >= len || line[c.pos] != '{')
		return fail(&c, "expected '{'");
	c.pos++;
	skip_ws(&c);
	if (c.pos < len && line[c.pos] == '}') {
		c.pos++;
		goto end;
	}
	for (;;) {
		struct control_member *m;
		char *key;
		size_t i;

		if (o->n == CONTROL_MEMBERS_MAX)
			return fail(&c, "too many members");
		m = &o->m[o->n];
		skip_ws(&c);
		err = parse_string(&c, &key);
		if (err)
			return err;
		if (!*key || strlen(key) > CONTROL_KEY_MAX ||
		    strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(key))
			return fail(&c, "a key must be 1-32 characters of [a-z0-9_]");
		for (i = 0; i < o->n; i++)
			if (!strcmp(o->m[i].key, key))
				return fail(&c, "the same key twice");
		memcpy(m->key, key, strlen(key) + 1);
		skip_ws(&c);
		if (c.pos >= len || line[c.pos] != ':')
			return fail(&c, "expected ':'");
		c.pos++;
		skip_ws(&c);
		if (c.pos < len && line[c.pos] == '"') {
			m->kind = CONTROL_STR;
			err = parse_string(&c, &m->str);
			if (err)
				return err;
		} else if (c.pos + 4 <= len && !memcmp(line + c.pos, "true", 4)) {
			m->kind = CONTROL_BOOL;
			m->b = true;
			c.pos += 4;
		} else if (c.pos + 5 <= len && !memcmp(line + c.pos, "false", 5)) {
			m->kind = CONTROL_BOOL;
			m->b = false;
			c.pos += 5;
		} else if (c.pos < len && (line[c.pos] == '-' || (line[c.pos] >= '0' &&
								   line[c.pos] <= '9'))) {
			size_t err_off;
			const char *why;
			uint64_t v;
			bool neg;

			if (cjson_scan_int((const unsigned char *)line, len, &c.pos, &v, &neg,
					   &err_off, &why)) {
				c.pos = err_off;
				return fail(&c, why);
			}
			if (!neg && v > (uint64_t)INT64_MAX)
				return fail(&c, "integer out of range");
			m->kind = CONTROL_INT;
			m->i = neg ? (int64_t)(0 - v) : (int64_t)v;
		} else {
			return fail(&c, "expected a string, an integer, true or false");
		}
		o->n++;
		skip_ws(&c);
		if (c.pos < len && line[c.pos] == ',') {
			c.pos++;
			continue;
		}
		if (c.pos < len && line[c.pos] == '}') {
			c.pos++;
			break;
		}
		return fail(&c, "expected ',' or '}'");
	}
end:
	skip_ws(&c);
	if (c.pos != len)
		return fail(&c, "bytes after the object");
	return 0;
}

const struct control_member *control_get(const struct control_obj *o, const char *key)
{
	size_t i;

	for (i = 0; i < o->n; i++)
		if (!strcmp(o->m[i].key, key))
			return &o->m[i];
	return NULL;
}

const char *control_str(const struct control_obj *o, const char *key, bool *bad)
{
	const struct control_member *m = control_get(o, key);

	if (m && m->kind != CONTROL_STR) {
		if (bad)
			*bad = true;
		return NULL;
	}
	return m ? m->str : NULL;
}

int control_bool(const struct control_obj *o, const char *key)
{
	const struct control_member *m = control_get(o, key);

	if (!m)
		return -ENOENT;
	if (m->kind != CONTROL_BOOL)
		return -EINVAL;
	return m->b;
}

void control_reply_error(const char *reply, char *buf, size_t len)
{
	struct control_obj *o = malloc(sizeof(*o));
	char why[128];
	const char *e = NULL;

	if (o && !control_parse(o, reply, strlen(reply), why, sizeof(why)))
		e = control_str(o, "error", NULL);
	util_copy(buf, len, e ? e : reply);
	if (e && !buf[0])
		util_copy(buf, len, reply);
	free(o);
}

/* One sendmsg of the whole line, the descriptor attached to its first byte; the rest written. */
static int send_line_fd(int fd, const char *line, size_t len, int send_fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = (void *)line, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	ssize_t n;

	if (send_fd < 0)
		return write_all(fd, line, len);
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof(cbuf);
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &send_fd, sizeof(int));
	do {
		n = sendmsg(fd, &msg, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return write_all(fd, line + n, len - (size_t)n);
}

/* The reply's first byte, with the descriptor that came with it (or -1). */
static int recv_first_fd(int fd, char *c, int *recv_fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = c, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf,
		.msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	ssize_t n;

	*recv_fd = -1;
	do {
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ECONNRESET;
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(int)) && *recv_fd < 0)
			memcpy(recv_fd, CMSG_DATA(cm), sizeof(int));
	return 0;
}

int control_call_fd(int fd, const char *request, int send_fd, char *reply, size_t reply_len,
		    int *recv_fd)
{
	size_t len = strlen(request);
	char *line;
	ssize_t n;
	int err, got = -1;

	if (recv_fd)
		*recv_fd = -1;
	if (len + 1 > CONTROL_LINE_MAX || reply_len < 2)
		return -EMSGSIZE;
	line = malloc(len + 1);
	if (!line)
		return -ENOMEM;
	memcpy(line, request, len);
	line[len] = '\n';
	err = send_line_fd(fd, line, len + 1, send_fd);
	free(line);
	if (err)
		return err;
	err = recv_first_fd(fd, reply, &got);
	if (err)
		return err;
	if (reply[0] == '\n') {
		reply[0] = '\0';
		n = 0;
	} else {
		n = control_read_line(fd, reply + 1, reply_len - 1);
		if (n < 0) {
			if (got >= 0)
				close(got);
			return (int)n;
		}
	}
	if (recv_fd)
		*recv_fd = got;
	else if (got >= 0)
		close(got);
	if (strstr(reply, "\"ok\":true") != reply + 1) {
		if (recv_fd && *recv_fd >= 0)
			close(*recv_fd);
		if (recv_fd)
			*recv_fd = -1;
		return -EPROTO;
	}
	return 0;
}
