// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ipc.h"
#include "worker/ship.h"
#include "common/stackcount.h"

/* Frames stay well under IPC_MAX_PAYLOAD. */
#define STACKS_PER_FRAME 1000
#define COUNTS_PER_FRAME 32768

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *n;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 256;
	while (ncap < need)
		ncap *= 2;
	n = realloc(*arr, ncap * elem);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}

int ship_batch_add_stack(struct ship_batch *b, const struct ship_stack *s)
{
	int err = grow((void **)&b->stacks, &b->cap_stacks, b->nstacks + 1, sizeof(*s));

	if (err)
		return err;
	b->stacks[b->nstacks++] = *s;
	return 0;
}

int ship_batch_add_count(struct ship_batch *b, const struct ship_count *c)
{
	int err = grow((void **)&b->counts, &b->cap_counts, b->ncounts + 1, sizeof(*c));

	if (err)
		return err;
	b->counts[b->ncounts++] = *c;
	return 0;
}

static size_t snapshot_bytes(const struct ship_snapshot *s)
{
	return sizeof(*s) + s->nkips * sizeof(uint64_t) + s->npy * sizeof(struct py_frame) +
	       ((s->stack_len + 7u) & ~7u);
}

int ship_batch_add_snapshot(struct ship_batch *b, const struct ship_snapshot *s, const void *kips,
			    const struct py_frame *py, const uint8_t *stack)
{
	size_t need = snapshot_bytes(s), kb = s->nkips * sizeof(uint64_t);
	size_t pb = s->npy * sizeof(struct py_frame);
	/* Room for the first frame's header: wk_send_snapshots sends the records in place. */
	size_t at = b->snaps_len ? b->snaps_len : sizeof(struct ship_snapshots_hdr);
	uint8_t *p;
	int err;

	if (s->nkips > ROVER_MAX_STACK_DEPTH || s->npy > PY_MAX_FRAMES ||
	    s->stack_len > SHIP_SNAPSHOT_MAX_STACK)
		return -EINVAL;
	err = grow((void **)&b->snaps, &b->snaps_cap, at + need, 1);
	if (err)
		return err;
	b->snaps_len = at;
	p = b->snaps + b->snaps_len;
	memcpy(p, s, sizeof(*s));
	memcpy(p + sizeof(*s), kips, kb);
	memcpy(p + sizeof(*s) + kb, py, pb);
	memcpy(p + sizeof(*s) + kb + pb, stack, s->stack_len);
	memset(p + sizeof(*s) + kb + pb + s->stack_len, 0,
	       need - sizeof(*s) - kb - pb - s->stack_len);
	b->snaps_len += need;
	b->snaps_value += s->value;
	b->nsnaps++;
	return 0;
}

static size_t ksym_bytes(const uint8_t *rec)
{
	const struct ship_ksym *k = (const void *)rec;

	return sizeof(*k) + ((k->len + 7u) & ~7u);
}

/* A Python code, Java method, Java nmethod or JavaScript function record's bytes, without the
 * padding: as long as its line table (an nmethod's PcDescs and scopes) needs. Its kind was
 * checked by the caller. */
static size_t pycode_len(const struct sc_pycode *c)
{
	const struct sc_jmethod *j = (const void *)c;
	const struct sc_jnmethod *n = (const void *)c;

	if (c->kind == SC_REC_JMETHOD)
		return offsetof(struct sc_jmethod, data) + JAVA_STRINGS + j->lines_len;
	if (c->kind == SC_REC_JNMETHOD)
		return offsetof(struct sc_jnmethod, data) + (size_t)n->pcs_len + n->scopes_len;
	if (c->kind == SC_REC_V8FUNC) {
		const struct sc_v8func *v = (const void *)c;

		return V8_REC_LEN(v);
	}
	return offsetof(struct sc_pycode, data) + PY_NAME_MAX + PY_FILE_MAX + c->lines_len;
}

static size_t pycode_bytes(const uint8_t *rec)
{
	return (pycode_len((const void *)rec) + 7u) & ~(size_t)7u;
}

int ship_batch_add_pycode(struct ship_batch *b, const struct sc_pycode *c, size_t size)
{
	/* Room for the first frame's header, as for snapshots. */
	size_t at = b->pycodes_len ? b->pycodes_len : sizeof(struct ship_pycodes_hdr), len, need;
	int err;

	if (size < sizeof(uint32_t))
		return -EINVAL;
	if (c->kind == SC_REC_JMETHOD) {
		const struct sc_jmethod *j = (const void *)c;

		if (size < offsetof(struct sc_jmethod, data) || j->lines_len > JAVA_LINES_MAX)
			return -EINVAL;
	} else if (c->kind == SC_REC_JNMETHOD) {
		const struct sc_jnmethod *n = (const void *)c;

		if (size < offsetof(struct sc_jnmethod, data) || n->pcs_len > JAVA_NM_PCS_MAX ||
		    n->scopes_len > JAVA_NM_SCOPES_MAX)
			return -EINVAL;
	} else if (c->kind == SC_REC_V8FUNC) {
		const struct sc_v8func *v = (const void *)c;

		if (size < offsetof(struct sc_v8func, data) + V8_STRINGS ||
		    v->pos_len > V8_POS_MAX || v->bot_len > V8_BOT_MAX || v->bc_len > V8_BC_MAX ||
		    v->src_len > V8_SRC_HEAD)
			return -EINVAL;
	} else if (c->kind != SC_REC_PYCODE || size < offsetof(struct sc_pycode, data) ||
		   c->lines_len > PY_LINES_MAX) {
		return -EINVAL;
	}
	if (size < pycode_len(c))
		return -EINVAL;
	len = pycode_len(c);
	need = pycode_bytes((const uint8_t *)c);
	err = grow((void **)&b->pycodes, &b->pycodes_cap, at + need, 1);
	if (err)
		return err;
	memcpy(b->pycodes + at, c, len);
	memset(b->pycodes + at + len, 0, need - len);
	b->pycodes_len = at + need;
	return 0;
}

int ship_batch_add_ksym(struct ship_batch *b, uint64_t addr, const char *name, size_t len)
{
	struct ship_ksym k = { .addr = addr, .len = (uint32_t)len };
	/* Room for the first frame's header, as for snapshots. */
	size_t at = b->ksyms_len ? b->ksyms_len : sizeof(struct ship_ksyms_hdr);
	size_t need = ksym_bytes((const uint8_t *)&k);
	int err;

	if (len > SHIP_KSYM_NAME_MAX)
		return -EINVAL;
	err = grow((void **)&b->ksyms, &b->ksyms_cap, at + need, 1);
	if (err)
		return err;
	memcpy(b->ksyms + at, &k, sizeof(k));
	memcpy(b->ksyms + at + sizeof(k), name, len);
	memset(b->ksyms + at + sizeof(k) + len, 0, need - sizeof(k) - len);
	b->ksyms_len = at + need;
	return 0;
}

void ship_batch_reset(struct ship_batch *b)
{
	b->ksyms_len = 0;
	b->pycodes_len = 0;
	b->snaps_len = 0;
	b->snaps_value = 0;
	b->nsnaps = 0;
	b->nstacks = 0;
	b->ncounts = 0;
	memset(b->losses, 0, sizeof(b->losses));
}

void ship_batch_free(struct ship_batch *b)
{
	free(b->stacks);
	free(b->counts);
	free(b->snaps);
	free(b->ksyms);
	free(b->pycodes);
	memset(b, 0, sizeof(*b));
}

int wk_send_begin(int sock, const struct task_spec *spec)
{
	struct msg_hello hello = { .role = ROLE_WORKER,
				   .proto_version = IPC_VERSION,
				   .pid = (int32_t)getpid() };
	int err = ipc_send(sock, MSG_HELLO, &hello, sizeof(hello), -1);

	return err ? err : ipc_send(sock, MSG_SHIP_BEGIN, spec, sizeof(*spec), -1);
}

/*
 * Frames of whole records, at most PACKED_FRAME_MAX bytes, sent in place as snapshots are
 * (below); the records are forgotten once sent. Kernel names and Python code records both:
 * their headers are laid out alike.
 */
#define PACKED_FRAME_MAX (256u << 10)
_Static_assert(sizeof(struct ship_ksyms_hdr) == sizeof(struct ship_pycodes_hdr) &&
		       offsetof(struct ship_pycodes_hdr, count) ==
			       offsetof(struct ship_ksyms_hdr, count),
	       "packed record headers differ");

static int send_packed(int sock, uint32_t type, uint64_t task_id, uint8_t *buf, size_t *len,
		       size_t (*rec_bytes)(const uint8_t *))
{
	size_t off = sizeof(struct ship_ksyms_hdr), end;
	int err = 0;

	while (!err && off < *len) {
		struct ship_ksyms_hdr hdr = { .task_id = task_id };

		for (end = off; end < *len && end - off < PACKED_FRAME_MAX; hdr.count++)
			end += rec_bytes(buf + end);
		memcpy(buf + off - sizeof(hdr), &hdr, sizeof(hdr));
		err = ipc_send(sock, type, buf + off - sizeof(hdr),
			       (uint32_t)(sizeof(hdr) + end - off), -1);
		off = end;
	}
	*len = 0;
	return err;
}

/* Kernel names and Python code records, ahead of the stacks and snapshots naming them. */
static int send_ksyms(int sock, uint64_t task_id, struct ship_batch *b)
{
	int err = send_packed(sock, MSG_SHIP_KSYMS, task_id, b->ksyms, &b->ksyms_len, ksym_bytes);

	if (!err)
		err = send_packed(sock, MSG_SHIP_PYCODES, task_id, b->pycodes, &b->pycodes_len,
				  pycode_bytes);
	return err;
}

int wk_send_batch(int sock, uint64_t task_id, struct ship_batch *b)
{
	struct ship_counts_hdr *hdr;
	size_t i, n;
	int err = send_ksyms(sock, task_id, b);

	if (err)
		return err;

	for (i = 0; i < b->nstacks; i += n) {
		n = b->nstacks - i < STACKS_PER_FRAME ? b->nstacks - i : STACKS_PER_FRAME;
		err = ipc_send(sock, MSG_SHIP_STACKS, b->stacks + i,
			       (uint32_t)(n * sizeof(struct ship_stack)), -1);
		if (err)
			return err;
	}
	/* Always one counts frame, even empty: it carries the losses. */
	hdr = malloc(sizeof(*hdr) + COUNTS_PER_FRAME * sizeof(struct ship_count));
	if (!hdr)
		return -ENOMEM;
	i = 0;
	do {
		n = b->ncounts - i < COUNTS_PER_FRAME ? b->ncounts - i : COUNTS_PER_FRAME;
		hdr->task_id = task_id;
		if (i == 0)
			memcpy(hdr->losses, b->losses, sizeof(hdr->losses));
		else
			memset(hdr->losses, 0, sizeof(hdr->losses));
		memcpy(hdr + 1, b->counts + i, n * sizeof(struct ship_count));
		err = ipc_send(sock, MSG_SHIP_COUNTS, hdr,
			       (uint32_t)(sizeof(*hdr) + n * sizeof(struct ship_count)), -1);
		i += n;
	} while (!err && i < b->ncounts);
	free(hdr);
	return err;
}

/*
 * Frames of whole records up to SNAPS_FRAME_MAX bytes, at least one record each, sent from the
 * batch in place: a frame's header goes into the bytes just before its first record, which
 * are the reserved start of the buffer or the tail of a record already sent.
 */
#define SNAPS_FRAME_MAX (1u << 20)

int wk_send_snapshots(int sock, uint64_t task_id, struct ship_batch *b)
{
	size_t off = sizeof(struct ship_snapshots_hdr), end;
	int err = send_ksyms(sock, task_id, b);

	while (!err && off < b->snaps_len) {
		struct ship_snapshots_hdr hdr = { .task_id = task_id };

		end = off;
		while (end < b->snaps_len &&
		       (end == off || end - off + snapshot_bytes((const void *)(b->snaps + end)) <=
					      SNAPS_FRAME_MAX)) {
			end += snapshot_bytes((const void *)(b->snaps + end));
			hdr.count++;
		}
		memcpy(b->snaps + off - sizeof(hdr), &hdr, sizeof(hdr));
		err = ipc_send(sock, MSG_SHIP_SNAPSHOTS, b->snaps + off - sizeof(hdr),
			       (uint32_t)(sizeof(hdr) + end - off), -1);
		off = end;
	}
	b->snaps_len = 0;
	b->nsnaps = 0;
	if (!err)
		b->snaps_value = 0;
	return err;
}

int wk_send_end(int sock, uint64_t task_id, uint32_t reason)
{
	struct ship_end end = { .task_id = task_id, .reason = reason };

	return ipc_send(sock, MSG_SHIP_END, &end, sizeof(end), -1);
}
