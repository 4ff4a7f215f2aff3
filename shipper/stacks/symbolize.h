/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side (no privileges): names kernel and user addresses. The shipper cannot open
 * another user's /proc/PID/maps, the files a process maps, or a /proc/kallsyms with real
 * addresses; a struct fd_opener hands it descriptors opened by a side that may (the launcher,
 * over SCM_RIGHTS). Debug files under /usr/lib/debug are world-readable and opened directly.
 */
#ifndef ROVER_SHIPPER_SYMBOLIZE_H
#define ROVER_SHIPPER_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

struct fd_opener {
	/* Each returns an O_RDONLY|O_CLOEXEC descriptor the caller owns, or -errno. */
	int (*open_maps)(void *ctx, int pid);
	/* The file mapped at [start, end) in pid: /proc/PID/map_files/START-END. */
	int (*open_mapped_file)(void *ctx, int pid, uint64_t start, uint64_t end);
	int (*open_kallsyms)(void *ctx);
	void *ctx;
	/*
	 * The perf map of pid, /tmp/perf-PID.map in its mount namespace, where JITs name their
	 * code (common/safeopen.c says which files are refused). Optional: NULL names no JIT
	 * code. Last, so that openers written before it still initialise ctx by position.
	 */
	int (*open_perf_map)(void *ctx, int pid);
};

/*
 * An opener that opens the paths itself: for tests and for a shipper that runs as root. It
 * lives in shipper/opener.c and applies the launcher's checks to perf maps.
 */
extern const struct fd_opener fd_opener_direct;

struct symbolizer;

/* budget_bytes bounds the memory of cached symbol tables (0: 64 MiB). NULL + errno. */
struct symbolizer *symbolizer__new(const struct fd_opener *opener, size_t budget_bytes);
void symbolizer__free(struct symbolizer *sym);

/*
 * Names a user address of pid into buf: the demangled function name when one covers it, else
 * "module+0xOFFSET" (module = file base name, OFFSET relative to the file), else "[unknown]".
 * An address in no file mapping (JIT code) is named from pid's perf map, as written there.
 * Returns 1 when a function name was found, 0 when a fallback was written, -errno on a bad
 * argument. Never fails to write something into buf when len > 0.
 */
int symbolizer__user(struct symbolizer *sym, int pid, uint64_t addr, char *buf, size_t len);

/* Same for kernel addresses, from /proc/kallsyms, modules included ("[unknown]" fallback). */
int symbolizer__kernel(struct symbolizer *sym, uint64_t addr, char *buf, size_t len);
/*
 * As symbolizer__kernel, for a frame the worker named with the kernel's lookup (name; "" when
 * the kernel had no symbol): counted in the same statistics, kallsyms not read.
 */
int symbolizer__kernel_named(struct symbolizer *sym, const char *name, char *buf, size_t len);

/*
 * Reads /proc/kallsyms now if it was never read; symbolizer__kernel does it at the first
 * address it is asked for. Generating it costs the kernel about 40 ms of CPU here: a task's
 * worker names its kernel frames itself (worker/ksyms.c), so kallsyms is read only for a
 * worker that could not.
 */
void symbolizer__load_kernel(struct symbolizer *sym);

/* Takes a snapshot of pid's mappings now (call early: the process may exit). 0 or -errno. */
int symbolizer__load_pid(struct symbolizer *sym, int pid);

/*
 * When pid's mappings were last read (or a read of them failed), in monotonic ns; 0 when none
 * are held. A change says they were read again: new code mapped, or an exec.
 */
uint64_t symbolizer__maps_stamp(const struct symbolizer *sym, int pid);

/* Drops what is cached for pid (its mappings; symbol tables stay cached by build-id). */
void symbolizer__forget_pid(struct symbolizer *sym, int pid);

/* A file mapping of a process, as the unwinder needs it (shipper/stacks/unwind.c). */
struct sym_mapping {
	uint64_t start, end; /* addresses */
	uint64_t off;	     /* file offset of start */
	uint64_t dev, ino;   /* the file's identity */
};

/*
 * The executable file mapping of pid that holds addr, from the same snapshot of its maps as
 * naming uses (read or refreshed as there): 1 with ret filled, 0 when none, -errno.
 */
int symbolizer__mapping(struct symbolizer *sym, int pid, uint64_t addr, struct sym_mapping *ret);

/* Up to max executable file mappings of pid, in address order: how many were written. */
size_t symbolizer__mappings(struct symbolizer *sym, int pid, struct sym_mapping *ret, size_t max);

/* Opens the file of mapping m of pid through the opener: a descriptor, or -errno. */
int symbolizer__open_mapping(struct symbolizer *sym, int pid, const struct sym_mapping *m);

/*
 * A file a memory budget refused for one purpose (what: "symbols", "CFI (.eh_frame)"): its
 * name in the process, what reading it would have taken, and the cap. Reported once per file
 * read (a refused file is remembered), for the caller to log.
 */
struct budget_refusal {
	const char *what;
	const char *path;
	uint64_t bytes;
	uint64_t limit;
};
typedef void (*budget_refusal_fn)(void *ctx, const struct budget_refusal *r);

/* Sets the hook that refusals are reported to (NULL: none). */
void symbolizer__on_refusal(struct symbolizer *sym, budget_refusal_fn fn, void *ctx);

/* Reports a refusal for the file of mapping m of pid (shipper/stacks/unwind.c). */
void symbolizer__refused(struct symbolizer *sym, int pid, const struct sym_mapping *m,
			 const char *what, uint64_t bytes, uint64_t limit);

struct symbolizer_stats {
	uint64_t cache_bytes;
	uint64_t elf_loaded;
	uint64_t elf_evicted;
	uint64_t lookups;
	uint64_t unnamed;
	uint64_t perf_map_reads;  /* perf maps opened and parsed (each re-read counts) */
	uint64_t perf_map_bytes;  /* memory held by cached perf maps */
	uint64_t elf_over_budget; /* files whose symbols were cut at ELFSYM_FILE_BUDGET */
};
void symbolizer__stats(const struct symbolizer *sym, struct symbolizer_stats *ret_stats);

#endif
