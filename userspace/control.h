/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The daemon's control protocol, both ends. A client connects to the daemon's UNIX socket
 * (root only: the daemon checks the peer's credentials), sends one request, a flat JSON object
 * on one line, and reads one reply line: {"ok":true,…} or {"ok":false,"error":"why"}. A stream
 * (op "events") continues after its ok with one line per record until either side closes.
 *
 * A request is at most CONTROL_LINE_MAX bytes with its newline; its members are strings,
 * integers, true or false under keys of [a-z0-9_]; anything else is answered with an error that
 * says where, and changes nothing.
 */
#ifndef SLUICE_CONTROL_H
#define SLUICE_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CONTROL_SOCKET_DIR "/run/sluice"
#define CONTROL_SOCKET_DEFAULT CONTROL_SOCKET_DIR "/sluice.sock"
#define CONTROL_LINE_MAX 65536 /* a request or reply line, with its "\n" */
#define CONTROL_MEMBERS_MAX 32
#define CONTROL_KEY_MAX 32

/* The daemon's socket: opt (--socket) if given, else $SLUICE_SOCKET, else the default. */
const char *control_socket_path(const char *opt);

/*
 * Whether the peer of the connected UNIX socket fd may be trusted as either end of the control
 * protocol: uid 0 in this user namespace with CAP_SYS_ADMIN in its effective set (read through
 * SO_PEERPIDFD where the kernel has it, else SO_PEERCRED's pid). uid 0 alone is not enough: a
 * confined workload (sluice run's default) is uid 0 without capabilities. 0, or -errno with the
 * reason in why.
 */
int control_peer_check(int fd, char *why, size_t why_len);

/*
 * Connect to the daemon at path. Returns the fd or -errno (-ENOENT, -ECONNREFUSED: none runs;
 * -EPERM: the listener there fails control_peer_check, so is not the daemon; said on
 * stderr).
 */
int control_connect(const char *path);

/*
 * Send request (one JSON object, no newline) on fd and read the reply's line into reply.
 * Returns 0 when the reply says "ok":true; -EPROTO when it says false (reply holds the line:
 * control_reply_error extracts the reason); -errno when the exchange itself failed.
 */
int control_call(int fd, const char *request, char *reply, size_t reply_len);

/*
 * control_call passing descriptors (SCM_RIGHTS): send_fd (>= 0) goes with the request; a
 * descriptor the reply carries is put in *recv_fd (close-on-exec; -1 when none, or when the reply
 * is not "ok"). A handed run (handoff.c): its cgroup comes back, its seccomp listener goes.
 */
int control_call_fd(int fd, const char *request, int send_fd, char *reply, size_t reply_len,
		    int *recv_fd);

/*
 * Read one line (without "\n") from fd into buf, NUL-terminated. Returns its length, 0 at the
 * end of the stream, -EMSGSIZE for a line longer than len - 1 (the rest of it is skipped), or
 * -errno.
 */
ssize_t control_read_line(int fd, char *buf, size_t len);

/* A request or reply being built: members appended in order, strings escaped. */
struct control_msg {
	char buf[CONTROL_LINE_MAX];
	size_t len;
	bool overflow; /* it did not fit: control_msg_end fails */
};

void control_msg_begin(struct control_msg *m);
void control_msg_str(struct control_msg *m, const char *key, const char *val);
void control_msg_u64(struct control_msg *m, const char *key, uint64_t val);
void control_msg_bool(struct control_msg *m, const char *key, bool val);
/* Append a member whose value is already JSON (an object or array built elsewhere). */
void control_msg_raw(struct control_msg *m, const char *key, const char *json);
/* Close the object. Returns 0, or -EMSGSIZE when it does not fit a line. */
int control_msg_end(struct control_msg *m);

/* One parsed request or reply: a flat object. Strings are decoded into the struct. */
enum control_kind { CONTROL_STR, CONTROL_INT, CONTROL_BOOL };

struct control_member {
	char key[CONTROL_KEY_MAX + 1];
	enum control_kind kind;
	char *str;    /* CONTROL_STR: NUL-terminated, inside control_obj.text; no NUL inside */
	int64_t i;    /* CONTROL_INT */
	bool b;	      /* CONTROL_BOOL */
};

struct control_obj {
	size_t n;
	struct control_member m[CONTROL_MEMBERS_MAX];
	char text[CONTROL_LINE_MAX]; /* decoded strings */
};

/*
 * Parse line (len bytes, no newline) as a flat JSON object. Returns 0, or -EINVAL with why
 * saying what is wrong and at which byte.
 */
int control_parse(struct control_obj *o, const char *line, size_t len, char *why, size_t why_len);

/* The string member key, or NULL (absent, or not a string: *bad set true when not a string). */
const char *control_str(const struct control_obj *o, const char *key, bool *bad);
/* The boolean member key: 1 true, 0 false, -ENOENT absent, -EINVAL another kind. */
int control_bool(const struct control_obj *o, const char *key);
/* The member key, or NULL. */
const struct control_member *control_get(const struct control_obj *o, const char *key);

/* The "error" of a failed reply line, into buf (the whole line when it has none). */
void control_reply_error(const char *reply, char *buf, size_t len);

#endif /* SLUICE_CONTROL_H */
