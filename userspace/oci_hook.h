/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* "sluice oci-hook": an OCI createRuntime hook that attaches the container before it starts. */
#ifndef SLUICE_OCI_HOOK_H
#define SLUICE_OCI_HOOK_H

/* Where the policies an annotation may name live, unless --policy-dir says otherwise. */
#define OCI_HOOK_POLICY_DIR "/etc/sluice/policies"

/* argv starts at "oci-hook". Returns the exit status (attach_cmd.h's ATTACH_EXIT_*). */
int oci_hook_main(int argc, char **argv);

#endif /* SLUICE_OCI_HOOK_H */
