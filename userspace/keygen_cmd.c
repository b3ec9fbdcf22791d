// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sluice keygen [--name NAME] FILE
 *
 * Writes the signer key to FILE (mode 0600) and the verifier key to FILE.pub (0644), each as the
 * key string and one newline, and prints the verifier key. Neither file may exist beforehand,
 * and neither is opened through a symlink: both are checked before either is created, and both
 * are created with O_CREAT|O_EXCL|O_NOFOLLOW, so a file or link that appears in between is
 * refused too. If FILE.pub cannot be written, FILE is removed again, so a failed run leaves
 * nothing behind to be mistaken for a complete pair.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "keygen_cmd.h"
#include "note.h"

struct created {
	dev_t dev;
	ino_t ino;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sluice keygen [--name NAME] FILE\n"
		"\n"
		"Writes an Ed25519 signer key to FILE (0600) and its verifier key to FILE.pub\n"
		"(0644), refusing to overwrite either, and prints the verifier key.\n"
		"NAME (default: the hostname) names the key in signatures: 1-%d bytes of UTF-8,\n"
		"no spaces, '+' or control characters.\n",
		NOTE_NAME_MAX);
}

/* 0 when nothing is at path (not even a dangling symlink). */
static int check_absent(const char *path)
{
	struct stat st;

	if (!lstat(path, &st)) {
		fprintf(stderr, "sluice keygen: %s already exists; refusing to overwrite it\n",
			path);
		return -EEXIST;
	}
	if (errno != ENOENT) {
		fprintf(stderr, "sluice keygen: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	return 0;
}

/* Create path (which must not exist) with exactly mode and write data to it, durably. */
static int write_new(const char *path, mode_t mode, const char *data, size_t len, struct created *c)
{
	size_t done = 0;
	struct stat st;
	int fd, err = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0) {
		err = -errno;
		if (err == -EEXIST)
			fprintf(stderr,
				"sluice keygen: %s already exists (file or symlink); "
				"refusing to overwrite it\n",
				path);
		else
			fprintf(stderr, "sluice keygen: create %s: %s\n", path, strerror(errno));
		return err;
	}
	/* Exactly mode, whatever the umask took away. */
	if (fstat(fd, &st) || fchmod(fd, mode)) {
		err = -errno;
		fprintf(stderr, "sluice keygen: %s: %s\n", path, strerror(errno));
		goto err_unlink;
	}
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	while (done < len) {
		ssize_t n = write(fd, data + done, len - done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			fprintf(stderr, "sluice keygen: write %s: %s\n", path, strerror(errno));
			goto err_unlink;
		}
		done += (size_t)n;
	}
	if (fsync(fd)) {
		err = -errno;
		fprintf(stderr, "sluice keygen: fsync %s: %s\n", path, strerror(errno));
		goto err_unlink;
	}
	if (close(fd)) {
		fd = -1;
		err = -errno;
		fprintf(stderr, "sluice keygen: close %s: %s\n", path, strerror(errno));
		goto err_unlink;
	}
	return 0;

err_unlink:
	if (fd >= 0)
		close(fd);
	unlink(path);
	return err;
}

/* Remove a file this run created, unless something else has taken its place since. */
static void remove_created(const char *path, const struct created *c)
{
	struct stat st;

	if (!lstat(path, &st) && st.st_dev == c->dev && st.st_ino == c->ino && unlink(path))
		fprintf(stderr, "sluice keygen: remove %s: %s\n", path, strerror(errno));
}

/* Make the two new directory entries durable; a failure here is reported but not undone. */
static void sync_dir(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd;

	if (!slash) {
		strcpy(dir, ".");
	} else if (slash == path) {
		strcpy(dir, "/");
	} else {
		/* path fitted PATH_MAX with its ".pub", so its directory part fits too. */
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = '\0';
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd))
		fprintf(stderr, "sluice keygen: warning: fsync directory %s: %s\n", dir,
			strerror(errno));
	if (fd >= 0)
		close(fd);
}

int keygen_cmd_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"name", required_argument, NULL, 'n'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	char host[HOST_NAME_MAX + 1], pub_path[PATH_MAX];
	char skey[NOTE_SKEY_MAX + 2], vkey[NOTE_VKEY_MAX + 2];
	struct note_signer *signer = NULL;
	const char *name = NULL, *path;
	struct created priv_file;
	int c, n, err, ret = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			name = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 1) {
		usage(stderr);
		return 2;
	}
	path = argv[optind];
	if (!*path) {
		fprintf(stderr, "sluice keygen: FILE is empty\n");
		return 2;
	}
	if (name && !note_name_valid(name)) {
		fprintf(stderr,
			"sluice keygen: invalid key name \"%s\": it must be 1-%d bytes of UTF-8 "
			"without spaces, '+' or control characters\n",
			name, NOTE_NAME_MAX);
		return 2;
	}
	if (!name) {
		if (gethostname(host, sizeof(host))) {
			fprintf(stderr, "sluice keygen: gethostname: %s; give a name with --name\n",
				strerror(errno));
			return 1;
		}
		host[sizeof(host) - 1] = '\0';
		if (!note_name_valid(host)) {
			fprintf(stderr,
				"sluice keygen: the hostname \"%s\" is not a valid key name; "
				"give one with --name\n",
				host);
			return 2;
		}
		name = host;
	}
	n = snprintf(pub_path, sizeof(pub_path), "%s.pub", path);
	if (n < 0 || (size_t)n >= sizeof(pub_path)) {
		fprintf(stderr, "sluice keygen: %s: path too long\n", path);
		return 2;
	}

	/* Both names first: a refusal must not leave half a pair behind. */
	if (check_absent(path) || check_absent(pub_path))
		return 1;

	err = note_signer_generate(name, &signer);
	if (err) {
		fprintf(stderr, "sluice keygen: generate key: %s\n", strerror(-err));
		goto out;
	}
	if (note_signer_skey(signer, skey, sizeof(skey) - 1) ||
	    note_signer_vkey(signer, vkey, sizeof(vkey) - 1)) {
		fprintf(stderr, "sluice keygen: encode key: %s\n", strerror(ENOSPC));
		goto out;
	}
	/* Room for the newline was kept above. */
	strcat(skey, "\n");
	strcat(vkey, "\n");

	if (write_new(path, 0600, skey, strlen(skey), &priv_file))
		goto out;
	if (write_new(pub_path, 0644, vkey, strlen(vkey), &(struct created){0})) {
		remove_created(path, &priv_file);
		goto out;
	}
	sync_dir(path);

	fputs(vkey, stdout);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "sluice keygen: write to stdout: %s\n", strerror(errno));
		goto out;
	}
	ret = 0;
out:
	OPENSSL_cleanse(skey, sizeof(skey));
	note_signer_free(signer);
	return ret;
}
