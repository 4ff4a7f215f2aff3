/* SPDX-License-Identifier: Apache-2.0 */
/* Shipper side: descriptors asked of the launcher, which may open what the shipper may not. */
#ifndef ROVER_SHIPPER_OPENER_H
#define ROVER_SHIPPER_OPENER_H

#include "shipper/stacks/symbolize.h"

/* ctx points to the int socket connected to the launcher's spawner.sock. */
extern const struct fd_opener fd_opener_launcher_ops;

/* sh_ask_open / the launcher's lc_answer_open: one request, one reply (+ descriptor). */
int sh_ask_open(int sock, uint32_t what, int pid, uint64_t start, uint64_t end);

#endif
