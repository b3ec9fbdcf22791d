#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# probes.sh without the selftest files: the kit's probes only (what make probes runs in the
# VMs by default, where the files under emulation would take hours).
export PROBES_KIT_ONLY=1
exec bash "$(dirname "${BASH_SOURCE[0]}")/probes.sh" "$@"
