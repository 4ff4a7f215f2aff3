/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcapstone, loaded by the shipper only when it may serve a NETWORK task (capstone_load.c
 * says why). Runs in the shipper, before its seccomp filter.
 */
#ifndef ROVER_SHIPPER_CAPSTONE_LOAD_H
#define ROVER_SHIPPER_CAPSTONE_LOAD_H

#include <stddef.h>

/*
 * dlopen of libcapstone's SONAME (RTLD_NOW, RTLD_LOCAL) and every function tlsfind.c calls; a
 * second call returns 0. 0, or -errno with a sentence for the user in why. Before it, cs_open
 * fails (CS_ERR_HANDLE) and tlsfind.c finds no Go TLS probes, saying why.
 */
int capstone__load(char *why, size_t whylen);

#endif
