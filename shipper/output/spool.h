/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shipper side: where upload batches wait while the backend is away. A bounded FIFO of
 * batches, in memory up to mem_bytes, then in files under a directory up to disk_bytes; at the
 * bound the oldest batch is dropped. Files survive a shipper restart: a new spool on the same
 * directory picks them up, oldest first, before anything put after it.
 *
 * One thread puts (the main loop), another takes (the upload thread); every call is safe from
 * any thread. A taken batch stays first in line, and is neither dropped nor moved, until it is
 * given back as sent (spool__done) or not (spool__untake).
 *
 * A file is <seq, 16 hex digits>.batch: a struct spool_file_hdr, then the payload. It is
 * written under a temporary name, synced and renamed, so a crash leaves the old or the new
 * state, never half a batch under the final name. A file that does not check out (magic,
 * version, kind, length against the file size, CRC-32 of header and payload) is dropped and
 * counted. Files of version 1, from before batches had a kind, load as SPOOL_PROFILE.
 */
#ifndef ROVER_SHIPPER_SPOOL_H
#define ROVER_SHIPPER_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#define SPOOL_MAGIC 0x50535652u /* "RVSP" */
#define SPOOL_VERSION 2u
/* A batch larger than this is refused by put (one flush of one task never gets near it). */
#define SPOOL_MAX_BATCH (256u << 20)

/* Which client stream of the OAP a batch is for: its messages' type and the rpc they go to. */
enum spool_kind {
	SPOOL_PROFILE = 0, /* EBPFProfilingData, EBPFProfilingService/collectProfilingData */
	SPOOL_METERS,	   /* MeterDataCollection, MeterReportService/collectBatch */
	SPOOL_LOGS,	   /* LogData, LogReportService/collect */
	SPOOL_EVENTS,	   /* SpanAttachedEvent, SpanAttachedEventReportService/collect */
	SPOOL_ACCESSLOG,   /* EBPFAccessLogMessage, EBPFAccessLogService/collect */
	SPOOL_KIND_MAX,
};

/* One batch: the packed messages of one client stream. */
struct spool_batch {
	uint64_t seq;	  /* set by the spool */
	uint64_t task_id; /* the rover task it came from, for accounting */
	uint64_t samples; /* what its messages count, for accounting */
	uint32_t nmsgs;
	uint32_t len;  /* bytes of data */
	uint32_t cap;  /* bytes allocated at data, while it is built */
	uint32_t kind; /* enum spool_kind */
	uint8_t *data; /* nmsgs times { uint32_t length, little-endian; that many bytes } */
};

/* Host byte order: a spool is read back only by the shipper of the host that wrote it. */
struct spool_file_hdr {
	uint32_t magic;
	uint32_t version;
	uint64_t seq;
	uint64_t task_id;
	uint64_t samples;
	uint32_t nmsgs;
	uint32_t len;  /* payload bytes after the header */
	uint32_t crc;  /* zlib crc32 of this header with crc = 0, then of the payload */
	uint32_t kind; /* enum spool_kind; version 1: padding, always 0 */
};

enum spool_drop_why {
	SPOOL_DROP_BOUND = 1, /* oldest batch dropped to make room */
	SPOOL_DROP_TOO_BIG,   /* a batch larger than the whole spool */
	SPOOL_DROP_CORRUPT,   /* a file that did not check out */
};

struct spool_drop {
	enum spool_drop_why why;
	uint64_t task_id; /* 0 when unknown (corrupt file) */
	uint64_t samples;
	int first_of_episode; /* first drop since the last put that needed none */
	const char *file;     /* corrupt: file name */
	const char *detail;   /* corrupt: what was wrong */
};

struct spool_opts {
	const char *dir; /* NULL or "": memory only */
	/*
	 * > 0: the directory's descriptor is moved to this number, which must be free (EBUSY);
	 * the shipper's seccomp policy allows writing only relative to it (SPOOL_DIR_FD).
	 */
	int fixed_dirfd;
	uint64_t mem_bytes;
	uint64_t disk_bytes;
	/*
	 * Told of every drop, in the thread whose call dropped it, with the spool locked: it must
	 * not call the spool. May be NULL.
	 */
	void (*on_drop)(void *ctx, const struct spool_drop *d);
	void *ctx;
};

struct spool_stats {
	uint64_t batches; /* waiting now, taken one included */
	uint64_t samples;
	uint64_t mem_bytes;
	uint64_t disk_bytes;
	uint64_t disk_batches;
	uint64_t put_batches, put_samples;	   /* accepted by put, since new */
	uint64_t sent_batches, sent_samples;	   /* given back by done */
	uint64_t dropped_batches, dropped_samples; /* at the bound or too big */
	uint64_t corrupt_files;
	uint64_t disk_errors;  /* writes that failed: the batch stayed in memory or was dropped */
	uint64_t loaded_files; /* found at start */
};

struct spool;

/*
 * Opens (creating it, mode 0700, when missing) dir and picks up its batches; stale temporary
 * files are removed. NULL with errno set: EINVAL for no room at all, or what opening the
 * directory failed with.
 */
struct spool *spool__new(const struct spool_opts *opts);
/* Memory batches are lost unless spool__persist ran. */
void spool__free(struct spool *sp);

/*
 * Queues b, oldest batches dropped first when there is no room. Takes b->data in every case
 * (b->data is NULL after). 0 when queued; -E2BIG when b itself was dropped (larger than the
 * spool, or nothing older left to drop), -EINVAL for a malformed batch or an unknown kind.
 */
int spool__put(struct spool *sp, struct spool_batch *b);

/*
 * The oldest batch, waiting up to timeout_ms for one (-1: no limit). 0 and *ret (data owned
 * by the spool, valid until done or untake); -ETIMEDOUT; -EINTR instead of waiting once
 * spool__interrupt was called; -EBUSY when a batch is taken already.
 */
int spool__take(struct spool *sp, int timeout_ms, struct spool_batch *ret);
/* The taken batch was sent: forgotten, its file removed. */
void spool__done(struct spool *sp, uint64_t seq);
/* The taken batch was not sent: stays first. */
void spool__untake(struct spool *sp, uint64_t seq);

/* Sleeps ms, or less when interrupted. 0 after the full time, -EINTR. */
int spool__sleep(struct spool *sp, uint64_t ms);
/* Ends every wait of take and sleep, now and from now on. */
void spool__interrupt(struct spool *sp);

/*
 * Writes every memory batch to disk, oldest first, within the disk bound (older batches are
 * dropped first, as in put). For shutdown. 0, -ENOTDIR without a directory, or the first
 * write error (the batches not written stay in memory).
 */
int spool__persist(struct spool *sp);

void spool__stats(struct spool *sp, struct spool_stats *ret);
/* The directory's descriptor, -1 for a spool in memory only. */
int spool__dirfd(struct spool *sp);

/* Iterates a batch's messages: 1 and the next message, 0 at the end, -EBADMSG if malformed. */
int spool_batch__next(const struct spool_batch *b, size_t *off, const uint8_t **ret_msg,
		      size_t *ret_len);
/*
 * Room for one more message of len bytes in a batch being built (b->data grows; the length
 * prefix is written): *ret_msg is where its bytes go. 0, -ENOMEM, -E2BIG past SPOOL_MAX_BATCH.
 */
int spool_batch__reserve(struct spool_batch *b, size_t len, uint8_t **ret_msg);

#endif
