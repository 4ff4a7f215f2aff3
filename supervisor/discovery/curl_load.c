// SPDX-License-Identifier: Apache-2.0
/*
 * libcurl for the Kubernetes client (k8s.c), loaded by its SONAME only when
 * process_discovery.kubernetes is active: linked, it had ld.so map and relocate libcurl and
 * its own dependencies (OpenSSL, nghttp2, libssh2, LDAP, Kerberos, ...) at every start of the
 * supervisor, a one-shot `rover profile` included. k8s.c calls curl_* as it always did; these
 * definitions forward to the library through a table resolved at load. A module built from
 * k8s.c would have had to reach back into the supervisor (logging, k8sobj.c, the config), so
 * the library itself is loaded instead.
 *
 * Not linked into the unit and fuzz runners: they link k8s.c with -lcurl.
 */
#define _GNU_SOURCE
/* The type-checking macros of curl.h would rename the definitions below. */
#define CURL_DISABLE_TYPECHECK
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "common/dynload.h"
#include "supervisor/discovery/curl_load.h"

/* Debian's libcurl4 (OpenSSL flavour), as the supervisor linked it before. */
#define CURL_SONAME "libcurl.so.4"

/* Set once, by curl__load before the supervisor starts any thread; read-only after. */
static struct {
	__typeof__(curl_global_init) *global_init;
	__typeof__(curl_easy_init) *easy_init;
	__typeof__(curl_easy_setopt) *easy_setopt;
	__typeof__(curl_easy_getinfo) *easy_getinfo;
	__typeof__(curl_easy_reset) *easy_reset;
	__typeof__(curl_easy_cleanup) *easy_cleanup;
	__typeof__(curl_easy_strerror) *easy_strerror;
	__typeof__(curl_easy_escape) *easy_escape;
	__typeof__(curl_free) *free;
	__typeof__(curl_slist_append) *slist_append;
	__typeof__(curl_slist_free_all) *slist_free_all;
	__typeof__(curl_multi_init) *multi_init;
	__typeof__(curl_multi_add_handle) *multi_add_handle;
	__typeof__(curl_multi_remove_handle) *multi_remove_handle;
	__typeof__(curl_multi_perform) *multi_perform;
	__typeof__(curl_multi_poll) *multi_poll;
	__typeof__(curl_multi_wakeup) *multi_wakeup;
	__typeof__(curl_multi_info_read) *multi_info_read;
	__typeof__(curl_multi_cleanup) *multi_cleanup;
} fn;
static int loaded;

int curl__load(char *why, size_t whylen)
{
	const struct dynload_sym syms[] = {
		{ "curl_global_init", &fn.global_init },
		{ "curl_easy_init", &fn.easy_init },
		{ "curl_easy_setopt", &fn.easy_setopt },
		{ "curl_easy_getinfo", &fn.easy_getinfo },
		{ "curl_easy_reset", &fn.easy_reset },
		{ "curl_easy_cleanup", &fn.easy_cleanup },
		{ "curl_easy_strerror", &fn.easy_strerror },
		{ "curl_easy_escape", &fn.easy_escape },
		{ "curl_free", &fn.free },
		{ "curl_slist_append", &fn.slist_append },
		{ "curl_slist_free_all", &fn.slist_free_all },
		{ "curl_multi_init", &fn.multi_init },
		{ "curl_multi_add_handle", &fn.multi_add_handle },
		{ "curl_multi_remove_handle", &fn.multi_remove_handle },
		{ "curl_multi_perform", &fn.multi_perform },
		{ "curl_multi_poll", &fn.multi_poll },
		{ "curl_multi_wakeup", &fn.multi_wakeup },
		{ "curl_multi_info_read", &fn.multi_info_read },
		{ "curl_multi_cleanup", &fn.multi_cleanup },
	};
	const char *missing = NULL;
	char err[256];
	int rc;

	if (loaded)
		return 0;
	rc = dynload(CURL_SONAME, syms, sizeof(syms) / sizeof(syms[0]), &missing, err, sizeof(err));
	if (rc == -ELIBACC)
		snprintf(why, whylen, "kubernetes: loading libcurl: %s; install libcurl4", err);
	else if (rc)
		/* curl_multi_wakeup is the newest (7.68). */
		snprintf(why, whylen, "kubernetes: %s has no %s: libcurl 7.68 or newer is needed",
			 CURL_SONAME, missing);
	loaded = !rc;
	return rc;
}

/* Without the library nothing below is reached: k8s__new is called only after curl__load.
 * The constructors still fail cleanly rather than call through a null pointer. */

CURLcode curl_global_init(long flags)
{
	return loaded ? fn.global_init(flags) : CURLE_FAILED_INIT;
}

CURL *curl_easy_init(void)
{
	return loaded ? fn.easy_init() : NULL;
}

/*
 * The option's number says the type of its argument (curl.h, CURLOPTTYPE_*), as libcurl's
 * own curl_easy_setopt reads it. Function pointers travel as void *: on every ABI rover
 * builds for they are passed alike.
 */
CURLcode curl_easy_setopt(CURL *h, CURLoption opt, ...)
{
	CURLcode rc = CURLE_FAILED_INIT;
	va_list ap;

	if (!loaded)
		return rc;
	va_start(ap, opt);
	if (opt < CURLOPTTYPE_OBJECTPOINT)
		rc = fn.easy_setopt(h, opt, va_arg(ap, long));
	else if (opt < CURLOPTTYPE_OFF_T || opt >= CURLOPTTYPE_BLOB)
		rc = fn.easy_setopt(h, opt, va_arg(ap, void *));
	else
		rc = fn.easy_setopt(h, opt, va_arg(ap, curl_off_t));
	va_end(ap);
	return rc;
}

/* Every CURLINFO_* takes a pointer to where the answer goes. */
CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
	CURLcode rc;
	va_list ap;

	if (!loaded)
		return CURLE_FAILED_INIT;
	va_start(ap, info);
	rc = fn.easy_getinfo(h, info, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

void curl_easy_reset(CURL *h)
{
	if (loaded)
		fn.easy_reset(h);
}

void curl_easy_cleanup(CURL *h)
{
	if (loaded)
		fn.easy_cleanup(h);
}

const char *curl_easy_strerror(CURLcode code)
{
	return loaded ? fn.easy_strerror(code) : "libcurl is not loaded";
}

char *curl_easy_escape(CURL *h, const char *s, int len)
{
	return loaded ? fn.easy_escape(h, s, len) : NULL;
}

void curl_free(void *p)
{
	if (loaded)
		fn.free(p);
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *s)
{
	return loaded ? fn.slist_append(list, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *list)
{
	if (loaded)
		fn.slist_free_all(list);
}

CURLM *curl_multi_init(void)
{
	return loaded ? fn.multi_init() : NULL;
}

CURLMcode curl_multi_add_handle(CURLM *m, CURL *h)
{
	return loaded ? fn.multi_add_handle(m, h) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_remove_handle(CURLM *m, CURL *h)
{
	return loaded ? fn.multi_remove_handle(m, h) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_perform(CURLM *m, int *running)
{
	return loaded ? fn.multi_perform(m, running) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_poll(CURLM *m, struct curl_waitfd extra[], unsigned n, int timeout_ms,
			  int *ret)
{
	return loaded ? fn.multi_poll(m, extra, n, timeout_ms, ret) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_wakeup(CURLM *m)
{
	return loaded ? fn.multi_wakeup(m) : CURLM_INTERNAL_ERROR;
}

CURLMsg *curl_multi_info_read(CURLM *m, int *left)
{
	return loaded ? fn.multi_info_read(m, left) : NULL;
}

CURLMcode curl_multi_cleanup(CURLM *m)
{
	return loaded ? fn.multi_cleanup(m) : CURLM_INTERNAL_ERROR;
}
