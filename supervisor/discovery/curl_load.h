/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcurl, loaded by the supervisor only when Kubernetes discovery is active (curl_load.c
 * says why). Runs in the supervisor, before its seccomp filter.
 */
#ifndef ROVER_SUPERVISOR_CURL_LOAD_H
#define ROVER_SUPERVISOR_CURL_LOAD_H

#include <stddef.h>

/*
 * dlopen of libcurl's SONAME (RTLD_NOW, RTLD_LOCAL) and every function k8s.c calls; a second
 * call returns 0. 0, or -errno with a sentence for the user in why. Before it, k8s__new fails
 * (curl_global_init and curl_easy_init fail).
 */
int curl__load(char *why, size_t whylen);

#endif
