// SPDX-License-Identifier: Apache-2.0
/*
 * The OAP client as the supervisor and the shipper link it: forwarders to librover-oap.so
 * (oap.c built as a module, gRPC behind it). Linking gRPC into the binaries made ld.so map
 * and relocate gRPC, abseil, OpenSSL, c-ares and re2 at every start, about 30 ms of CPU per
 * role, which a one-shot `rover profile` (no backend) paid for nothing (docs/performance.md,
 * "One-shot start-up"). Now only a role with a backend configured loads it, before its
 * seccomp filter.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/grpc/oap.h"

/* Set once, by oap__load before the role starts any thread; read-only after. */
static struct {
	__typeof__(oap_conn__new) *conn_new;
	__typeof__(oap_conn__free) *conn_free;
	__typeof__(oap_conn__call) *conn_call;
	__typeof__(oap_stream__open) *stream_open;
	__typeof__(oap_stream__send) *stream_send;
	__typeof__(oap_stream__send_packed) *stream_send_packed;
	__typeof__(oap_stream__finish) *stream_finish;
} mod;
static int loaded;

static void status__none(struct oap_status *st)
{
	if (st)
		*st = (struct oap_status){ .code = 13 /* INTERNAL */,
					   .text = "the OAP client module is not loaded" };
}

/*
 * The module runs with the role's uid, so it must be no easier to replace than the role's own
 * executable: a regular file owned by root or by the executable's owner, writable by nobody
 * else. (The directory is the executable's: whoever may write there may swap the binaries.)
 */
static int module__check(const char *path, char *why, size_t whylen)
{
	struct stat exe, st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0) {
		int err = -errno;

		snprintf(why, whylen, "%s: %s", path, strerror(-err));
		return err;
	}
	if (fstat(fd, &st) || stat("/proc/self/exe", &exe)) {
		int err = -errno;

		close(fd);
		snprintf(why, whylen, "%s: %s", path, strerror(-err));
		return err;
	}
	close(fd);
	if (!S_ISREG(st.st_mode) || (st.st_uid != 0 && st.st_uid != exe.st_uid) ||
	    (st.st_mode & 022)) {
		snprintf(why, whylen,
			 "%s: not a regular file of root or of the executable's owner (uid %u) "
			 "writable by nobody else (uid %u, mode %o)",
			 path, (unsigned)exe.st_uid, (unsigned)st.st_uid,
			 (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* Every entry point, and the layout the module was built for; 0 or -ELIBBAD. */
static int module__resolve(void *h, const char *path, char *why, size_t whylen)
{
	struct {
		const char *name;
		void *slot;
	} syms[] = {
		{ "oap_conn__new", &mod.conn_new },
		{ "oap_conn__free", &mod.conn_free },
		{ "oap_conn__call", &mod.conn_call },
		{ "oap_stream__open", &mod.stream_open },
		{ "oap_stream__send", &mod.stream_send },
		{ "oap_stream__send_packed", &mod.stream_send_packed },
		{ "oap_stream__finish", &mod.stream_finish },
	};
	const struct oap_module_abi *abi = dlsym(h, "oap_module_abi");

	if (!abi || abi->version != OAP_MODULE_ABI || abi->opts_size != sizeof(struct oap_opts) ||
	    abi->status_size != sizeof(struct oap_status)) {
		snprintf(why, whylen, "%s: built for another version of rover (%s)", path,
			 abi ? "interface differs" : "no oap_module_abi");
		return -ELIBBAD;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *p = dlsym(h, syms[i].name);

		if (!p) {
			snprintf(why, whylen, "%s: no %s in it", path, syms[i].name);
			return -ELIBBAD;
		}
		/* POSIX guarantees a data pointer from dlsym converts to a function pointer. */
		memcpy(syms[i].slot, &p, sizeof(p));
	}
	return 0;
}

int oap__load(char *why, size_t whylen)
{
	char path[PATH_MAX];
	ssize_t n;
	char *slash;
	void *h;
	int err;

	if (loaded)
		return 0;
	n = readlink("/proc/self/exe", path, sizeof(path) - sizeof(OAP_MODULE) - 1);
	if (n <= 0 || !(path[n] = '\0', slash = strrchr(path, '/'))) {
		err = n < 0 ? -errno : -ENOENT;
		snprintf(why, whylen, "finding the OAP client module: /proc/self/exe: %s",
			 strerror(-err));
		return err;
	}
	strcpy(slash + 1, OAP_MODULE);
	err = module__check(path, why, whylen);
	if (err)
		return err;
	/* RTLD_NOW: every relocation now, none left to resolve under the filter; RTLD_LOCAL:
	 * gRPC's symbols stay out of the global scope. */
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(why, whylen, "%s", dlerror());
		return -ELIBBAD;
	}
	err = module__resolve(h, path, why, whylen);
	if (err) {
		memset(&mod, 0, sizeof(mod));
		dlclose(h);
		return err;
	}
	loaded = 1;
	return 0;
}

struct oap_conn *oap_conn__new(const struct oap_opts *opts)
{
	if (!loaded) {
		errno = ELIBACC;
		return NULL;
	}
	return mod.conn_new(opts);
}

void oap_conn__free(struct oap_conn *c)
{
	/* Without the module no oap_conn exists. */
	if (loaded)
		mod.conn_free(c);
}

int oap_conn__call(struct oap_conn *c, const char *method, const ProtobufCMessage *req,
		   const ProtobufCMessageDescriptor *answer_desc, ProtobufCMessage **ret_answer,
		   struct oap_status *st)
{
	if (!loaded) {
		status__none(st);
		return -ELIBACC;
	}
	return mod.conn_call(c, method, req, answer_desc, ret_answer, st);
}

struct oap_stream *oap_stream__open(struct oap_conn *c, const char *method)
{
	if (!loaded) {
		errno = ELIBACC;
		return NULL;
	}
	return mod.stream_open(c, method);
}

int oap_stream__send(struct oap_stream *s, const ProtobufCMessage *msg)
{
	return loaded ? mod.stream_send(s, msg) : -ELIBACC;
}

int oap_stream__send_packed(struct oap_stream *s, const void *buf, size_t len)
{
	return loaded ? mod.stream_send_packed(s, buf, len) : -ELIBACC;
}

int oap_stream__finish(struct oap_stream *s, const ProtobufCMessageDescriptor *answer_desc,
		       ProtobufCMessage **ret_answer, struct oap_status *st)
{
	if (!loaded) {
		status__none(st);
		return -ELIBACC;
	}
	return mod.stream_finish(s, answer_desc, ret_answer, st);
}
