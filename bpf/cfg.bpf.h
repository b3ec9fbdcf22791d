/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The run's configuration (struct sl_cfg, bpf/sluice.h), in a section of its own so that it is
 * one map that every object of the run shares (its name, ".data.cfg", is the same in each). The
 * loader writes it after the programs are loaded and before they are attached.
 */
#ifndef SLUICE_CFG_BPF_H
#define SLUICE_CFG_BPF_H

#include "sluice.h"
#include "net.bpf.h"

struct sl_cfg sl_cfg SEC(".data.cfg") = {
	.version = SL_CFG_VERSION,
	.wakeup_bytes = 64 * 1024,
	.deny_errno = EPERM,
	.mode = SL_MODE_ENFORCE,
	.backstop = 1,
	.era = 1,
};

/*
 * What the programs decide on read through these, so that a configuration the loader did not
 * write whole (zeroed, of another layout) fails closed: it enforces, with the packet checks on.
 * Report mode only where the loader wrote exactly that.
 */
static __always_inline bool cfg_enforcing(void)
{
	return sl_cfg.version != SL_CFG_VERSION || sl_cfg.mode != SL_MODE_REPORT;
}

static __always_inline bool cfg_backstop(void)
{
	return sl_cfg.version != SL_CFG_VERSION || sl_cfg.backstop;
}

#endif /* SLUICE_CFG_BPF_H */
