/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef SLUICE_VERSION_H
#define SLUICE_VERSION_H

#define SLUICE_VERSION "0.1.0"

#endif /* SLUICE_VERSION_H */
