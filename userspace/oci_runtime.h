/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * "sluice oci-runtime": an OCI runtime in front of runc, for engines that run no hooks of their
 * own (Docker): it adds the oci-hook to a bundle's config.json before runc creates the container.
 */
#ifndef SLUICE_OCI_RUNTIME_H
#define SLUICE_OCI_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>

/* Exit statuses of the wrapper itself (runc's are runc's: it is exec'd). */
#define OCI_RUNTIME_EXIT_USAGE 2 /* its own options, runc's arguments, the bundle */
#define OCI_RUNTIME_EXIT_NO_RUNC 127

/* What the wrapper needs to know of runc's arguments. */
struct oci_runtime_args {
	int cmd;	    /* the index of runc's command in its arguments; -1: none */
	bool creates;	    /* create, run or restore: runc runs the bundle's hooks */
	const char *bundle; /* --bundle/-b's value; NULL: the working directory */
	const char *log;    /* the global --log FILE (runc's log, where Docker's shim looks) */
	bool log_json;	    /* --log-format json (else runc writes text) */
};

/*
 * Read runc's arguments (argv[0] is the first of them, not a program name) as runc 1.1 does
 * (urfave/cli over Go's flag package): global options, one or two dashes, a value after '=' or
 * in the next argument, up to the command; then the command's options anywhere among its
 * arguments, up to "--". An option unknown to runc 1.1 (a later runc's, which could take a
 * value and hide the command) or a second --bundle is refused: the wrapper cannot then tell
 * which bundle runc would use. 0, or -EINVAL with why (and out holding what was read up to the
 * refused argument: the log a refusal can still be written to).
 */
int oci_runtime_parse(int argc, char *const *argv, struct oci_runtime_args *out, char *why,
		      size_t why_len);

/* argv starts at "oci-runtime". Execs runc, or returns an OCI_RUNTIME_EXIT_* status. */
int oci_runtime_main(int argc, char **argv);

#endif /* SLUICE_OCI_RUNTIME_H */
