/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The messages rover processes exchange. Fixed-width types and fixed arrays only: this header
 * is an ABI between processes that trust each other less than they trust the kernel.
 *
 *   client (rover profile) --ctl.sock-->  supervisor  <--socketpairs--> launcher (spawner)
 *   supervisor <--socketpair from the launcher--> worker
 *   worker <--socketpair from the launcher--> shipper
 *   shipper <--socketpairs--> launcher (file opener; new peers handed over)
 *   supervisor <--socketpair from the launcher--> shipper
 *
 * No role finds another by a path: the launcher creates every connection between roles and
 * hands each end to the process it started for it (inherited descriptors, or MSG_PEER_CONN).
 * The only paths are ctl.sock, bound by the launcher in its root-owned socket directory, and
 * spawner.sock when the roles run in containers of their own (policy/README.md).
 */
#ifndef ROVER_COMMON_MSG_H
#define ROVER_COMMON_MSG_H

#include <stdint.h>

#define ROVER_MAX_PIDS 64
#define ROVER_MAX_STACK_DEPTH 127
#define ROVER_ERRMSG_LEN 256

enum msg_type {
	MSG_HELLO = 1, /* first frame on every connection */

	/* supervisor <-> launcher (spawner) */
	MSG_SPAWN_WORKER,   /* struct msg_spawn */
	MSG_WORKER_SPAWNED, /* struct msg_worker + fd: the supervisor's end of the worker socket */
	MSG_SPAWN_FAILED,   /* struct msg_error */
	MSG_WORKER_EXITED,  /* struct msg_worker_exit */

	/* shipper <-> launcher (file opener) */
	MSG_OPEN_REQUEST, /* struct msg_open */
	MSG_OPEN_REPLY,	  /* struct msg_open_reply, + fd when err == 0 */

	/* supervisor <-> worker */
	MSG_TASK_START,	  /* struct task_spec */
	MSG_TASK_STARTED, /* struct msg_task_started */
	MSG_TASK_STOP,	  /* empty */
	MSG_TASK_DONE,	  /* struct msg_task_done */
	MSG_TASK_ERROR,	  /* struct msg_error */

	/* worker -> shipper */
	MSG_SHIP_BEGIN,	 /* struct task_spec */
	MSG_SHIP_STACKS, /* struct ship_stack[] */
	MSG_SHIP_COUNTS, /* struct ship_counts_hdr + struct ship_count[] */
	MSG_SHIP_END,	 /* struct ship_end */

	/* supervisor <-> shipper */
	MSG_OUTPUT_OPEN,    /* struct msg_output + fd: where the task's profile goes */
	MSG_OUTPUT_ABORT,   /* struct msg_output_abort */
	MSG_OUTPUT_WRITTEN, /* struct msg_output_written */

	/* client <-> supervisor */
	MSG_CTL_PROFILE,  /* struct task_spec + fd of the output file */
	MSG_CTL_ACCEPTED, /* struct msg_ctl_accepted */
	MSG_CTL_DONE,	  /* struct msg_ctl_done */
	MSG_CTL_STOP,	  /* struct msg_ctl_accepted: end the task now, keep its data */

	/* supervisor -> shipper: the task's data goes to the backend (no descriptor) */
	MSG_OUTPUT_BACKEND, /* struct msg_output_backend */

	/* supervisor (discovery connection) <-> launcher */
	MSG_PROC_QUERY, /* struct msg_proc_query */
	MSG_PROC_INFO,	/* struct msg_proc_info */

	/* inside the supervisor: backend threads <-> its main loop */
	MSG_BK_START, /* struct msg_bk_start */
	MSG_BK_STOP,  /* struct msg_bk_stop */
	MSG_BK_ENDED, /* struct msg_bk_ended */

	/* worker -> shipper: user stack snapshots (unwind mode dwarf) */
	MSG_SHIP_SNAPSHOTS, /* struct ship_snapshots_hdr + records, see struct ship_snapshot */

	/* launcher -> supervisor or shipper: a connection it made for them */
	MSG_PEER_CONN, /* struct msg_peer_conn + fd */

	/* worker -> shipper: NETWORK tasks (records of common/netrec.h) */
	MSG_SHIP_NET_DATA,  /* struct ship_net_hdr + net_rec_* records as the program wrote them */
	MSG_SHIP_NET_CONNS, /* struct ship_net_hdr + struct net_conn[]: open connections now */

	/* supervisor -> shipper: a backend NETWORK task's processes and sampling rules */
	MSG_OUTPUT_NETWORK, /* struct msg_output_network; again with the same task_id: update */

	/* supervisor -> worker: a keep-alive moved the task's end */
	MSG_TASK_EXTEND, /* struct msg_task_extend */

	/* inside the supervisor: a backend NETWORK task, one rover task for all its processes */
	MSG_BK_NET_START,  /* struct msg_bk_net_start */
	MSG_BK_NET_EXTEND, /* struct msg_bk_net_extend: a keep-alive of a running one */

	/* shipper -> supervisor, supervisor main loop -> backend thread: HTTP monitor samples */
	MSG_NET_MONITOR, /* struct msg_net_monitor + struct msg_net_monitor_entry[count] */

	/* shipper <-> worker: TLS libraries of a NETWORK task's targets (uprobes) */
	MSG_NET_TLS_ATTACH, /* struct msg_tls_attach + fd of the file (the launcher opened it) */
	MSG_NET_TLS_RESULT, /* struct msg_tls_result: what the worker made of it */

	/* worker -> shipper: names of kernel frames, ahead of the stacks and snapshots holding them */
	MSG_SHIP_KSYMS, /* struct ship_ksyms_hdr + struct ship_ksym records, see there */

	/* shipper -> worker: how much user stack a target's snapshots need (UNWIND_DWARF) */
	MSG_SHIP_STACK_HINT, /* struct msg_stack_hint */

	/* shipper <-> worker: a target's CPython interpreter (stack tasks, UNWIND_DWARF) */
	MSG_SHIP_PY_ATTACH, /* struct msg_py_attach + fd of the file (the launcher opened it) */
	MSG_SHIP_PY_RESULT, /* struct msg_py_result: what the worker made of it */
	/* worker -> shipper: code objects met for the first time, ahead of the frames naming them */
	MSG_SHIP_PYCODES, /* struct ship_pycodes_hdr + records, see there */

	/*
	 * The access-log module (docs/access-log.md). supervisor -> launcher and supervisor ->
	 * worker: the processes the TASK_ACCESS_LOG worker traces from now on, added or dropped
	 * (the launcher pins each added pid as it pins a task's pids at spawn, for the shipper's
	 * opens; the worker sets or clears its target bit).
	 */
	MSG_TASK_TARGETS, /* struct msg_task_targets_hdr + struct msg_task_target[count] */
	/* supervisor -> shipper: the access-log task's output (the node, the flush), once */
	MSG_OUTPUT_ACCESSLOG, /* struct msg_output_accesslog */
	/* supervisor -> shipper: who a pid or an address is, for the access log's addresses */
	MSG_ALOG_PROCS, /* struct msg_alog_procs_hdr + struct msg_alog_proc[count] */

	MSG_TYPE_MAX,
};

enum rover_role {
	ROLE_CLIENT = 1,
	ROLE_SUPERVISOR,
	ROLE_WORKER,
	ROLE_SHIPPER,
	ROLE_LAUNCHER,
	ROLE_DISCOVERY,	    /* the supervisor's second connection to the launcher: process facts */
	ROLE_SHIPPER_PEERS, /* the shipper's second connection: peers the launcher hands over */
};

/* Descriptors a role finds open at start when the launcher started it (no --socket-dir). */
enum {
	ROLE_FD_LAUNCHER = 3, /* supervisor: spawns; shipper: opens; worker: its supervisor */
	ROLE_FD_SECOND = 4,   /* supervisor: discovery; shipper: new peers; worker: its shipper */
};

/*
 * A connection made by the launcher. To the supervisor: role ROLE_SHIPPER (its link to the
 * shipper) or ROLE_CLIENT (the listening ctl.sock). To the shipper: ROLE_SUPERVISOR or
 * ROLE_WORKER (pid and task_id say which), whose first frame is still a MSG_HELLO of that role.
 */
struct msg_peer_conn {
	uint32_t role;
	int32_t pid;
	uint64_t task_id;
};

struct msg_hello {
	uint32_t role;
	uint32_t proto_version;
	int32_t pid;
	uint32_t pad;
};

enum task_type {
	TASK_ON_CPU = 1,
	TASK_OFF_CPU = 2, /* later issue */
	TASK_NETWORK = 3, /* later issue */
	/*
	 * The access-log module's capture (docs/access-log.md): started by the supervisor alone
	 * (never by a client or the backend), one at a time, with no duration (it runs until
	 * stopped); its targets change while it runs (MSG_TASK_TARGETS); NETWORK's worker and
	 * privileges, its records in access-log mode (common/netrec.h, net_opts.access_log).
	 */
	TASK_ACCESS_LOG = 4,
};

enum output_format {
	FORMAT_FOLDED = 1,
	FORMAT_PPROF = 2,
	FORMAT_SVG = 3,
	FORMAT_NET_TXT = 4,  /* NETWORK: the report for people (docs/network.md, "The report") */
	FORMAT_NET_JSON = 5, /* NETWORK: the same, for programs */
	FORMAT_HTML = 6,     /* ON_CPU, OFF_CPU: the flame graph, its search and top functions */
	FORMAT_NET_HTML = 7, /* NETWORK: the report as one page, its topology drawn */
};

struct task_spec {
	uint64_t task_id; /* assigned by the supervisor; 0 from a client */
	uint32_t type;	  /* enum task_type */
	uint32_t format;  /* enum output_format */
	uint32_t duration_ms;
	uint32_t period_us; /* sampling period; frequency = 1e6 / period_us */
	uint32_t flush_ms;
	uint32_t npids;
	int32_t pids[ROVER_MAX_PIDS];
	uint64_t start_unix_ms;
	uint32_t attach; /* enum attach_pref: OFF_CPU hook choice, auto unless troubleshooting */
	uint32_t unwind; /* enum unwind_mode */
	uint32_t flags;	 /* enum task_flags, set by the supervisor */
	uint32_t capture_bytes; /* NETWORK: payload bytes copied per syscall; 0: the default */
	/* TASK_USER_ONLY: the client's uid and gid, set by the supervisor from its socket. */
	uint32_t req_uid;
	uint32_t req_gid;
};

enum task_flags {
	/*
	 * Asked by a client that is not root: its own processes' user frames only, as
	 * perf_event_paranoid >= 2 gives unprivileged users; the kernel's frames stay in the
	 * worker.
	 */
	TASK_USER_ONLY = 1,
	/*
	 * Asked by the client (rover profile --python-native all): Python targets keep every
	 * native frame, the evaluation loop's included, each Python group after its loop frame;
	 * without it the interpreter's C frames between spliced Python calls are hidden
	 * (docs/profiling.md, "Python frames").
	 */
	TASK_PYTHON_NATIVE_ALL = 2,
	/*
	 * Asked by the client (rover profile --python-frames off): no interpreter is looked for,
	 * Python targets get native frames only (what make bench compares the frames' cost to).
	 */
	TASK_PYTHON_OFF = 4,
	/*
	 * Set by the supervisor on continuous profiling's HTTP monitor: the worker reads the ring
	 * buffer at each flush and when the programs wake it (bpf/net/record.bpf.h), not every
	 * 100 ms as well. Its counts go out per flush anyway; its processes are many and mostly
	 * quiet, and ten wakeups a second, each a poll of every target's pidfd, were most of
	 * what it cost them.
	 */
	TASK_READ_AT_FLUSH = 8,
	/*
	 * Set by the supervisor on continuous profiling's HTTP monitor too: the shipper looks
	 * through its processes for TLS libraries mapped since every TLS_RESCAN_MONITOR_MS, not
	 * every TLS_RESCAN_MS (shipper/main.c): a look reads every target's maps, and a monitor
	 * holds up to 64 long-lived processes.
	 */
	TASK_MONITOR = 16,
	/*
	 * Asked by the client (rover profile --children): the targets' descendants are the
	 * task's processes too, those running when it starts (the supervisor adds them to its
	 * pids) and those they start while it runs (MSG_TASK_TARGETS, each checked by the
	 * launcher as a spawn's pids are; supervisor/discovery/children.h).
	 */
	TASK_CHILDREN = 32,
};

/* The flags a client may set; the supervisor sets the others. */
#define TASK_CLIENT_FLAGS (TASK_PYTHON_NATIVE_ALL | TASK_PYTHON_OFF | TASK_CHILDREN)

/*
 * Processes a TASK_CHILDREN task follows at once beyond its first pids: each is held by a
 * pidfd in the supervisor (to see it end) and in the launcher (for the shipper's opens).
 */
#define ROVER_MAX_CHILDREN 256

/* How user stacks are unwound (docs/profiling.md, "Whole stacks"). */
enum unwind_mode {
	UNWIND_DEFAULT = 0, /* UNWIND_DWARF */
	UNWIND_FP = 1,	    /* frame pointers, in the kernel, counted by stack id */
	UNWIND_DWARF = 2,   /* user stack snapshots unwound by the shipper with CFI */
};

/*
 * OFF_CPU: auto is tp_btf, else raw_tp. NETWORK: auto is the socket-call tracepoints (tp_btf),
 * else the syscall tracepoints, tp_btf then raw_tp; TP_BTF is the socket calls only;
 * SYSCALLS the syscall tracepoints with tp_btf (call durations measured, every process pays).
 */
enum attach_pref {
	ATTACH_AUTO = 0,
	ATTACH_TP_BTF = 1,
	ATTACH_RAW_TP = 2,
	ATTACH_SYSCALLS = 3, /* NETWORK only */
};

#define ROVER_MAX_GROUPS 64

/*
 * check_access: the task came from a ctl.sock client other than root, whose credentials
 * follow (SO_PEERCRED, SO_PEERGROUPS); the launcher spawns only if that user could ptrace
 * every pid itself.
 */
struct msg_spawn {
	uint64_t task_id;
	uint32_t npids;
	uint32_t check_access;
	int32_t pids[ROVER_MAX_PIDS];
	uint32_t req_uid;
	uint32_t req_gid;
	uint32_t ngroups;
	/*
	 * 1: a TASK_ACCESS_LOG worker (from the supervisor's own module, never a client's):
	 * npids may be 0, and MSG_TASK_TARGETS changes its pids while it runs.
	 */
	uint32_t access_log;
	/* 1: a TASK_CHILDREN task, whose children come with MSG_TASK_TARGETS while it runs. */
	uint32_t children;
	uint32_t groups[ROVER_MAX_GROUPS];
};

struct msg_worker {
	uint64_t task_id;
	int32_t pid;
	uint32_t pad;
};

struct msg_worker_exit {
	uint64_t task_id;
	int32_t pid;
	int32_t exit_code; /* -1 when killed */
	int32_t signal;	   /* 0 when it exited */
	uint32_t pad;
};

struct msg_error {
	uint64_t task_id;
	int32_t err; /* positive errno */
	uint32_t pad;
	char text[ROVER_ERRMSG_LEN];
};

enum open_what {
	OPEN_MAPS = 1,	      /* /proc/PID/maps */
	OPEN_MAPPED_FILE = 2, /* /proc/PID/map_files/START-END */
	OPEN_KALLSYMS = 3,    /* /proc/kallsyms, opened with the opener's credentials */
	OPEN_PERF_MAP = 4,    /* /proc/PID/root/tmp/perf-NSPID.map (JIT symbols), checked */
};

struct msg_open {
	uint32_t what;
	int32_t pid;
	uint64_t start;
	uint64_t end;
};

struct msg_open_reply {
	uint32_t what;
	int32_t err; /* 0 with a descriptor, else a positive errno */
};

struct msg_task_extend {
	uint64_t task_id;
	uint32_t duration_ms; /* the new whole duration, counted from the task's start */
	uint32_t pad;
};

struct msg_task_started {
	uint64_t task_id;
	uint32_t ncpus;
	uint32_t freq_hz;
	char attach[64]; /* which attach method the worker chose */
};

/* Everything a task lost, counted where it was lost. */
enum loss_kind {
	LOSS_USTACK_COLLISION, /* user stack id bucket held another stack */
	LOSS_KSTACK_COLLISION,
	LOSS_STACK_MAP_FULL,	/* no free stack map entry */
	LOSS_USTACK_MISSING,	/* no user stack could be taken */
	LOSS_COUNTS_FULL,	/* counts map full: the sample was not counted */
	LOSS_STACK_EVICTED,	/* a counted stack was gone when it was read */
	LOSS_SEND_FAILED,	/* a flush the shipper did not take */
	LOSS_STARTS_FULL,	/* OFF_CPU: no room to remember a switched-out thread */
	LOSS_SNAP_RINGBUF_FULL, /* stack snapshot not taken (ring buffer full): frame pointers used */
	LOSS_SNAP_FAULT,	/* no user stack byte could be copied: frame pointers used */
	LOSS_SNAP_UNMATCHED,	/* OFF_CPU snapshot whose time never arrived, or not kept */
	LOSS_NET_CONNS_FULL,	/* NETWORK: a connection not tracked (connection map full) */
	LOSS_NET_SYSCALLS,	/* NETWORK: syscalls not traced (no room for their arguments) */
	LOSS_NET_SEGMENTS,	/* NETWORK: payload segments not delivered (ring buffer, budget) */
	LOSS_NET_CLOSES,	/* NETWORK: connections whose last counters were lost */
	LOSS_NET_RECORDS,	/* NETWORK: records the shipper did not take */
	LOSS_NET_TLS,	   /* NETWORK: TLS calls not traced or on no connection we could name */
	LOSS_NET_PARSERS,  /* NETWORK: connections over the task's bound of parsers: L4 only */
	LOSS_TARGETS_CRED, /* a client's target dropped: its credentials left the client's */
	LOSS_PY_CODES,	   /* Python code objects' names not sent: their frames not named */
	LOSS_MAX,
};

/* What a loss kind means, for people: "stack map full". */
const char *loss_name(unsigned kind);

struct msg_task_done {
	uint64_t task_id;
	uint64_t samples; /* samples of the targets counted in the kernel */
	uint64_t losses[LOSS_MAX];
	uint32_t reason; /* enum task_end_reason */
	uint32_t pad;
};

enum task_end_reason {
	END_DURATION = 1,
	END_TARGETS_EXITED = 2,
	END_STOPPED = 3,
};

struct ship_stack {
	int32_t id;
	uint32_t kind; /* 0 kernel, 1 user: the SkyWalking stack type numbers */
	uint32_t nr;
	uint32_t pad;
	uint64_t ips[ROVER_MAX_STACK_DEPTH]; /* innermost first, as the kernel gives them */
};

/*
 * UNWIND_DWARF: one event's registers, kernel stack and the top of its user stack. In a
 * MSG_SHIP_SNAPSHOTS frame after struct ship_snapshots_hdr, each record is followed by
 * uint64_t kips[nkips] (innermost first), struct py_frame py[npy] (common/pyframes.h,
 * innermost first) and stack_len bytes of user stack starting at address sp, then zero
 * padding to a multiple of 8 bytes.
 */
struct ship_snapshot {
	int32_t tgid;
	uint32_t nkips;	    /* <= ROVER_MAX_STACK_DEPTH */
	uint32_t stack_len; /* <= SHIP_SNAPSHOT_MAX_STACK */
	uint32_t flags;	    /* SHIP_SNAP_* */
	uint64_t value;	    /* as in struct ship_count */
	uint64_t value2;
	uint64_t ip, sp, bp; /* user registers at the event */
	uint32_t npy;	     /* Python frames (struct py_frame) after the kernel frames */
	uint32_t pystatus;   /* enum py_status: PY_ST_NONE for a process not read as Python */
};

#define SHIP_SNAPSHOT_MAX_STACK 65536
/* The worker cut the stack to the shipper's hint (struct msg_stack_hint): more was copied. */
#define SHIP_SNAP_TRIMMED 1u

/*
 * MSG_SHIP_STACK_HINT: the user stack bytes above sp the shipper wants of tgid's snapshots,
 * from what its unwinder read of the earlier ones (a thread's stack top holds its TLS and the
 * environment, which no unwinding reads: most of a 16 KiB snapshot). The worker sends at most
 * that many, at least SHIP_STACK_HINT_MIN, and flags the snapshots it cut; a hint for a
 * process not among the task's targets is ignored. A hostile shipper can only starve its own
 * unwinding.
 */
#define SHIP_STACK_HINT_MIN 512
struct msg_stack_hint {
	uint64_t task_id;
	int32_t tgid;
	uint32_t bytes;
};

/*
 * MSG_SHIP_PY_ATTACH: the file of pid's mapping that starts at `start` (the launcher opened
 * /proc/PID/map_files/START-END for the shipper) looks like a CPython interpreter, or
 * (runtime SC_RT_JAVA) like HotSpot's libjvm.so. The worker
 * checks the file (worker/pyattach.h); the programs check the mapping. A hostile shipper can
 * only point the frame reader at an interpreter a target really maps, at the place it maps it.
 */
struct msg_py_attach {
	uint64_t task_id;
	int32_t pid;
	uint32_t seq; /* echoed in the result */
	uint64_t start;
	uint32_t runtime; /* SC_RT_PYTHON (an interpreter) or SC_RT_JAVA (a libjvm.so) */
	uint32_t pad;
	char path[256]; /* for logs */
};

struct msg_py_result {
	uint64_t task_id;
	int32_t pid;
	uint32_t seq;
	int32_t err;	  /* 0, or the -errno that refused it */
	uint32_t version; /* 0x030b for 3.11, the JDK's major version for Java, when err is 0 */
};

/*
 * MSG_SHIP_PYCODES: after struct ship_pycodes_hdr, `count` records, each a struct sc_pycode
 * (common/pyframes.h) as the programs wrote it, as long as its line table needs
 * (offsetof(data) + PY_NAME_MAX + PY_FILE_MAX + lines_len), a struct sc_jmethod
 * (common/jvmframes.h: offsetof(data) + JAVA_STRINGS + lines_len), a struct sc_jnmethod
 * (offsetof(data) + pcs_len + scopes_len) or a struct sc_v8func (common/v8frames.h:
 * offsetof(data) + V8_STRINGS + pos_len + src_len), each told by its kind, then
 * zero padding to a multiple of 8 bytes. Every byte of a record after kind and tgid is the target's: hostile.
 */
struct ship_pycodes_hdr {
	uint64_t task_id;
	uint32_t count;
	uint32_t pad;
};

/*
 * MSG_SHIP_KSYMS: after struct ship_ksyms_hdr, `count` records, each a struct ship_ksym then
 * len bytes of name (no NUL) and zero padding to a multiple of 8 bytes. A name is a kernel
 * symbol as the kernel's own lookup gives it: bytes 0x21-0x7e but ';'. len 0: the kernel has
 * no symbol at addr. An address named again in a task keeps its first name.
 */
#define SHIP_KSYM_NAME_MAX 512
/* A byte a name may hold: what the worker keeps (worker/ksyms.c), the shipper checks. */
static inline int ship_ksym_byte_ok(char c)
{
	return (unsigned char)c > ' ' && (unsigned char)c < 0x7f && c != ';';
}
struct ship_ksyms_hdr {
	uint64_t task_id;
	uint32_t count;
	uint32_t pad;
};

struct ship_ksym {
	uint64_t addr;
	uint32_t len;
	uint32_t pad;
};

struct ship_snapshots_hdr {
	uint64_t task_id;
	uint32_t count; /* records that follow */
	uint32_t pad;
};

struct ship_counts_hdr {
	uint64_t task_id;
	uint64_t losses[LOSS_MAX]; /* deltas since the previous flush */
};

struct ship_count {
	int32_t tgid;
	int32_t ustack; /* -1: none */
	int32_t kstack; /* -1: none */
	uint32_t pad;
	uint64_t value;	 /* samples (ON_CPU) */
	uint64_t value2; /* reserved for OFF_CPU switch counts */
};

/*
 * NETWORK frames. MSG_SHIP_NET_DATA: `count` records of common/netrec.h follow, each
 * net_rec_hdr.len long. MSG_SHIP_NET_CONNS: `count` struct net_conn follow, every open
 * connection whose counters moved since the previous such frame, then the program's loss
 * counters since then (enum net_stat) in stats; one per flush, after that flush's data.
 */
struct ship_net_hdr {
	uint64_t task_id;
	uint32_t count;
	uint32_t pad;
	uint64_t stats[16]; /* MSG_SHIP_NET_CONNS: enum net_stat deltas; 0 in data frames */
};

struct ship_end {
	uint64_t task_id;
	uint32_t reason;
	uint32_t pad;
};

struct msg_output {
	uint64_t task_id;
	uint32_t format;
	uint32_t type;
};

#define ROVER_SW_ID_LEN 256 /* a SkyWalking task or process id, NUL included */

/* A pid of a backend task and the process id (index into process_id[]) it uploads under. */
struct msg_bk_pid {
	int32_t pid;
	uint32_t proc;
};

/*
 * A backend task's upload identity: every collectProfilingData stream of the task starts with
 * EBPFProfilingTaskMetadata{taskId, processId, profilingStartTime, currentTime}, which names one
 * process id. A backend task runs one rover task (one worker) for all of its processes here, up
 * to ROVER_MAX_PIDS pids: each flush goes out as one stream per process id, a pid's samples
 * under the process id pid_proc gives it; a pid pid_proc does not name goes under
 * process_id[0], which also names the task to the supervisor's backend thread.
 */
struct msg_output_backend {
	uint64_t task_id;
	uint32_t type;		/* enum task_type */
	uint32_t nprocs;	/* process ids in process_id[]: 1..ROVER_MAX_PIDS */
	uint64_t start_unix_ms; /* profilingStartTime */
	uint32_t npids;		/* entries in pid_proc: 0..ROVER_MAX_PIDS */
	uint32_t pad;
	char sw_task_id[ROVER_SW_ID_LEN];
	struct msg_bk_pid pid_proc[ROVER_MAX_PIDS];
	char process_id[ROVER_MAX_PIDS][ROVER_SW_ID_LEN];
};

#define ROVER_NET_MAX_RULES 16

/* A NETWORK task's target as the backend knows it: its meters' and logs' labels. */
struct msg_net_process {
	int32_t pid;
	uint32_t pad;
	char process_id[ROVER_SW_ID_LEN];
	char service[256];
	char instance[256];
	char name[256];
	char layer[64];
};

/* One sampling rule of ExtensionConfigJSON.NetworkSamplings (reference network-profiling §1). */
struct msg_net_rule {
	char uri_regex[256];	 /* "": the default rule */
	int32_t min_duration_ms; /* -1: none */
	uint8_t when_4xx, when_5xx;
	uint8_t require_complete_request, require_complete_response;
	uint32_t max_request_size, max_response_size; /* 0: unlimited */
};

/*
 * The backend half of a NETWORK task: sent before the task starts, and again when keep-alive
 * re-sends of the same SkyWalking task bring rules (they are appended, as upstream does). Such
 * an update carries the same processes again and only the rules it adds.
 */
struct msg_output_network {
	uint64_t task_id;
	uint32_t nprocs, nrules;
	int64_t start_unix_ms;
	char sw_task_id[ROVER_SW_ID_LEN];
	struct msg_net_process procs[ROVER_MAX_PIDS];
	struct msg_net_rule rules[ROVER_NET_MAX_RULES];
	/*
	 * 1: continuous profiling's HTTP monitor (a light NETWORK task): nothing is uploaded or
	 * written; each flush, the server side's HTTP exchanges per process and path go to the
	 * supervisor (MSG_NET_MONITOR). No payload is kept.
	 */
	uint32_t monitor;
	uint32_t pad;
};

/* MSG_NET_MONITOR: a flush's HTTP exchanges served, per (process, path). */
#define MSG_NET_MONITOR_MAX 512
struct msg_net_monitor_entry {
	int32_t pid;
	uint32_t requests;
	uint32_t errors; /* status >= 500 */
	uint32_t pad;
	uint64_t sum_us; /* of the exchanges' durations */
	char path[256];	 /* the request's path, without its query */
};

struct msg_net_monitor {
	uint64_t task_id;
	uint32_t count;	  /* entries that follow */
	uint32_t dropped; /* exchanges of (process, path) pairs past MSG_NET_MONITOR_MAX */
};

/*
 * What process discovery needs of a process that the rover user may not read itself
 * (/proc/PID/exe and cwd of other users' processes): the launcher answers with the two paths.
 */
struct msg_proc_query {
	int32_t pid;
	uint32_t pad;
};

#define ROVER_PROC_PATH_LEN 1024

struct msg_proc_info {
	int32_t pid;
	int32_t err; /* 0, or a positive errno: ESRCH for a process that is gone */
	char exe[ROVER_PROC_PATH_LEN];
	char cwd[ROVER_PROC_PATH_LEN];
};

/* A backend task for one process id, from the supervisor's task thread to its main loop. */
struct msg_bk_start {
	struct task_spec spec;
	struct msg_output_backend out;
};

/*
 * A backend NETWORK task, from the supervisor's task thread to its main loop: out names the
 * task for MSG_BK_ENDED (process_id: the first of its processes), net goes to the shipper.
 */
struct msg_bk_net_start {
	struct task_spec spec;
	struct msg_output_backend out;
	struct msg_output_network net;
};

/* A keep-alive: the task now ends at end_unix_ms; rules, when any, are appended. */
struct msg_bk_net_extend {
	char sw_task_id[ROVER_SW_ID_LEN];
	uint64_t end_unix_ms;
	uint32_t nrules;
	uint32_t pad;
	struct msg_net_rule rules[ROVER_NET_MAX_RULES];
};

struct msg_bk_stop {
	char sw_task_id[ROVER_SW_ID_LEN];
};

struct msg_bk_ended {
	char sw_task_id[ROVER_SW_ID_LEN];
	char process_id[ROVER_SW_ID_LEN]; /* the task's first: process_id[0] */
	int32_t err;
	uint32_t nprocs;	 /* process ids the task covered */
	uint64_t samples;	 /* the shipper's: uploaded or queued */
	uint64_t kernel_samples; /* the worker's: counted in the kernel */
};

struct msg_output_abort {
	uint64_t task_id;
	char reason[ROVER_ERRMSG_LEN];
};

struct msg_output_written {
	uint64_t task_id;
	int32_t err; /* 0 or a positive errno */
	uint32_t pad;
	uint64_t samples;
	uint64_t stacks;
	uint64_t frames_unnamed; /* frames shown as module+offset or [unknown] */
	uint64_t losses[LOSS_MAX];
	char summary[1024]; /* the hottest functions, one per line */
};

struct msg_ctl_accepted {
	uint64_t task_id;
};

struct msg_ctl_done {
	uint64_t task_id;
	int32_t err; /* 0: profile written */
	uint32_t pad;
	uint64_t kernel_samples; /* samples of the targets the BPF program saw */
	struct msg_output_written out;
	char text[ROVER_ERRMSG_LEN];
};

/*
 * TLS probes (NETWORK). The shipper, which parses the target's files (no capability), finds a
 * TLS library a target maps and the offsets of its calls; the worker, which parses nothing,
 * checks each offset lies in an executable segment of the file it is handed (and that a Go
 * return probe sits on a RET byte), then attaches uprobes limited to that one process. The
 * descriptor is the one the launcher opened for the shipper (OPEN_MAPPED_FILE), named to the
 * kernel as /proc/self/fd/N: the worker opens nothing.
 */
#define MSG_TLS_MAX_PROBES 64

struct msg_tls_probe {
	uint64_t offset; /* in the file */
	uint32_t cookie; /* NET_TLS_COOKIE(fn, lib), common/netrec.h */
	uint32_t ret;	 /* 1: a return probe (C libraries only) */
};

struct msg_tls_attach {
	uint64_t task_id;
	int32_t pid;
	uint32_t lib; /* enum net_tls_lib */
	uint32_t nprobes;
	uint32_t seq;	/* echoed in the result */
	char path[256]; /* for logs and the report */
	struct msg_tls_probe probes[MSG_TLS_MAX_PROBES];
};

struct msg_tls_result {
	uint64_t task_id;
	int32_t pid;
	uint32_t seq;
	int32_t err;	   /* 0, or the -errno that refused it */
	uint32_t attached; /* probes attached */
};


/*
 * MSG_TASK_TARGETS: after the header, `count` entries. Sent by the supervisor to the launcher
 * first (which pins the added pids, or answers nothing: a pid it cannot pin is left out of
 * the shipper's opens and logged), then to the TASK_ACCESS_LOG worker. Only a TASK_ACCESS_LOG
 * or a TASK_CHILDREN worker's targets change this way; the launcher refuses the frame for any
 * other task. For a TASK_CHILDREN task the launcher answers with the same frame, each added
 * pid on (pinned, and for a client's task one the client could trace) or off (refused), and
 * the supervisor sends the worker only those it let on.
 */
#define MSG_TARGETS_MAX 1024 /* entries in one frame */
#define ALOG_MAX_PIDS 4096   /* processes one access-log task traces at once */
struct msg_task_targets_hdr {
	uint64_t task_id;
	uint32_t count;
	uint32_t pad;
};

struct msg_task_target {
	int32_t pid;
	uint32_t on; /* 1: trace it from now on; 0: no longer */
};

/* MSG_OUTPUT_ACCESSLOG: what EBPFAccessLogNodeInfo says and how often the logs go. */
#define ALOG_MAX_EXCLUDE 32
#define ALOG_MAX_IFS 64
struct msg_alog_netif {
	int32_t index;
	int32_t mtu;
	char name[16]; /* IFNAMSIZ */
};

struct msg_output_accesslog {
	uint64_t task_id;
	uint32_t flush_max_count; /* logs (kernel and protocol) that make a flush before its time */
	uint32_t flush_period_ms;
	uint32_t queue_size; /* connections the shipper keeps logs of at once (bounded) */
	uint32_t nexclude, nifs;
	uint32_t pad;
	int64_t boot_unix_ns; /* CLOCK_REALTIME at CLOCK_MONOTONIC 0: bootTime */
	char node_name[256];
	char cluster[256];
	char exclude[ALOG_MAX_EXCLUDE][64]; /* policy.excludeNamespaces */
	struct msg_alog_netif ifs[ALOG_MAX_IFS];
};

/*
 * MSG_ALOG_PROCS: after the header, `count` entries, each a process of a watched pod (pid >
 * 0) or an address only (pid 0: a Service's cluster IP, service set, the rest ""). Names are
 * as discovery reports the process (service, pod, container, process name). `gone`: forget
 * the pid (or the address). Strings are NUL-terminated within their arrays; the shipper
 * checks that and drops an entry that is not.
 */
#define MSG_ALOG_PROCS_MAX 256 /* entries in one frame */
struct msg_alog_procs_hdr {
	uint64_t task_id;
	uint32_t count;
	uint32_t pad;
};

struct msg_alog_proc {
	int32_t pid;
	uint8_t gone;
	uint8_t family; /* AF_INET or AF_INET6 of addr; 0: no address known */
	uint8_t pad[2];
	uint8_t addr[16]; /* the pod's IP (a process), the cluster IP (an address only) */
	char ns[64];
	char service[256];
	char pod[256];
	char container[128];
	char process[256];
};

#endif
