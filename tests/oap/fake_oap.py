#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A fake SkyWalking OAP for rover's tests: serves the rpcs of the v3 protocol the agent uses,
records every request message as a JSON line and serves scripted tasks. See README.md next to
this file; the command line is a contract with the C tests that start it."""

import argparse
import glob
import hashlib
import importlib.util
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent import futures

import grpc
from google.protobuf.json_format import MessageToDict

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "proto"))
# A directory that does not exist (yet) adds nothing: logging/ comes with Logging.proto.
PROTO_DIRS = ("common", "ebpf", "ebpf/profiling", "language-agent", "logging")

# (service, rpc, request, answer, client streaming, name in the record and for --stall).
# The last two are served only when proto/ has their messages (logging/Logging.proto,
# language-agent/Tracing.proto); their rpc name is "collect" like the meters', so the record
# names them with their service.
RPCS = (
    ("EBPFProcessService", "reportProcesses", "EBPFProcessReportList",
     "EBPFReportProcessDownstream", False, "reportProcesses"),
    ("EBPFProcessService", "keepAlive", "EBPFProcessPingPkgList", "Commands", False,
     "keepAlive"),
    ("EBPFProfilingService", "queryTasks", "EBPFProfilingTaskQuery", "Commands", False,
     "queryTasks"),
    ("EBPFProfilingService", "collectProfilingData", "EBPFProfilingData", "Commands", True,
     "collectProfilingData"),
    ("ContinuousProfilingService", "queryPolicies", "ContinuousProfilingPolicyQuery",
     "Commands", False, "queryPolicies"),
    ("ContinuousProfilingService", "reportProfilingTask", "ContinuousProfilingReport",
     "Commands", False, "reportProfilingTask"),
    ("MeterReportService", "collect", "MeterData", "Commands", True, "collect"),
    ("MeterReportService", "collectBatch", "MeterDataCollection", "Commands", True,
     "collectBatch"),
    ("LogReportService", "collect", "LogData", "Commands", True, "LogReportService/collect"),
    ("SpanAttachedEventReportService", "collect", "SpanAttachedEvent", "Commands", True,
     "SpanAttachedEventReportService/collect"),
    ("EBPFAccessLogService", "collect", "EBPFAccessLogMessage", "EBPFAccessLogDownstream", True,
     "EBPFAccessLogService/collect"),
)

NOW_RE = re.compile(r"^@now([+-]\d+)?$")
FIRST = "@first"


def now_ms():
    return int(time.time() * 1000)


def load_messages(proto_root):
    """Compiles proto/ with protoc into a temporary directory and returns {name: class}."""
    out = tempfile.mkdtemp(prefix="fake_oap_pb2.")
    files = []
    for d in PROTO_DIRS:
        files += sorted(os.path.relpath(p, proto_root)
                        for p in glob.glob(os.path.join(proto_root, d, "*.proto")))
    subprocess.run(["protoc", "--python_out=" + out, "-I" + proto_root] + files, check=True)
    # The generated files import each other as `from common import Command_pb2`.
    sys.path.insert(0, out)
    classes = {}
    for f in files:
        # protoc writes language-agent/Meter.proto as language_agent/Meter_pb2.py.
        modname = f[:-len(".proto")].replace("/", ".").replace("-", "_") + "_pb2"
        path = os.path.join(out, *modname.split(".")) + ".py"
        if modname in sys.modules:
            mod = sys.modules[modname]
        else:
            spec = importlib.util.spec_from_file_location(modname, path)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[modname] = mod
            spec.loader.exec_module(mod)
        for name in mod.DESCRIPTOR.message_types_by_name:
            classes[name] = getattr(mod, name)
    sys.path.remove(out)
    shutil.rmtree(out, ignore_errors=True)
    return classes


class FakeOap:
    def __init__(self, args, classes):
        self.args = args
        self.m = classes
        self.lock = threading.Lock()
        self.record = open(args.record, "a", encoding="utf-8") if args.record else None
        self.calls = 0
        self.streams = 0
        self.fail_left = args.fail_first
        self.stall = {}
        for s in args.stall:
            method, _, secs = s.rpartition(":")
            self.stall[method] = float(secs)
        self.process_ids = {}  # processName -> processId, from reportProcesses
        self.resolved_now = {}  # (index, command json, arg) -> value of @now
        self.first_served = {}  # (TaskId, arg) -> the value first served, for @first

    # --- helpers -------------------------------------------------------------------------
    def log(self, method, msg, metadata, stream=None, index=None, extra=None):
        if not self.record:
            return
        line = {"method": method, "time_ms": now_ms(), "metadata": metadata,
                "message": MessageToDict(msg, preserving_proto_field_name=True)}
        line.update(extra or {})
        if stream is not None:
            line["stream"] = stream
            line["index"] = index
        with self.lock:
            self.record.write(json.dumps(line, sort_keys=True) + "\n")
            self.record.flush()

    def admit(self, method, context):
        """Applies --fail-first, --require-auth and --stall; returns the call's metadata."""
        metadata = {k: v for k, v in context.invocation_metadata() if not k.startswith(":")}
        with self.lock:
            self.calls += 1
            fail = self.fail_left > 0
            if fail:
                self.fail_left -= 1
        if fail:
            context.abort(grpc.StatusCode.UNAVAILABLE, "fake OAP: --fail-first")
        if self.args.require_auth is not None and \
                metadata.get("authentication") != self.args.require_auth:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "fake OAP: bad authentication")
        return metadata

    def maybe_stall(self, method, context):
        secs = self.stall.get(method)
        if not secs:
            return
        end = time.monotonic() + secs
        while time.monotonic() < end and context.is_active():
            time.sleep(min(0.05, max(0.0, end - time.monotonic())))

    # --- answers -------------------------------------------------------------------------
    def process_id(self, entity):
        key = "\0".join((entity.serviceName, entity.instanceName, entity.processName))
        return hashlib.sha256(key.encode()).hexdigest()[:32]

    def answer_report_processes(self, req):
        out = self.m["EBPFReportProcessDownstream"]()
        for p in req.processes:
            branch = p.WhichOneof("metadata")
            if branch is None:
                continue
            meta = getattr(p, branch)
            d = out.processes.add()
            d.processId = self.process_id(meta.entity)
            with self.lock:
                self.process_ids[meta.entity.processName] = d.processId
            down = d.hostProcess if branch == "hostProcess" else d.k8sProcess
            down.pid = meta.pid
            down.entityMetadata.CopyFrom(meta.entity)
        return out

    def read_tasks(self):
        path = self.args.tasks
        if not path:
            return []
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as e:
            print("fake_oap: %s: %s, serving no tasks" % (path, e), file=sys.stderr, flush=True)
            return []
        return data if isinstance(data, list) else []

    def resolve(self, index, cmd):
        """Returns the command's args with @process, @now and @first replaced, or None to
        hold it."""
        ident = json.dumps(cmd, sort_keys=True)
        args = {}
        firsts = []
        for key, value in (cmd.get("args") or {}).items():
            value = str(value)
            if value == FIRST:
                firsts.append(key)
                continue
            parts = []
            for part in value.split(","):
                if part.startswith("@process:"):
                    with self.lock:
                        pid = self.process_ids.get(part[len("@process:"):])
                    if pid is None:
                        return None
                    parts.append(pid)
                    continue
                m = NOW_RE.match(part)
                if m:
                    with self.lock:
                        k = (index, ident, key)
                        if k not in self.resolved_now:
                            self.resolved_now[k] = str(now_ms() + int(m.group(1) or 0))
                        part = self.resolved_now[k]
                parts.append(part)
            args[key] = ",".join(parts)
        # A re-send of a task served before (the OAP's keep-alive copy): its start time as
        # first served; held back until that first one was.
        for key in firsts:
            with self.lock:
                value = self.first_served.get((args.get("TaskId"), key))
            if value is None:
                return None
            args[key] = value
        return args

    def answer_query_tasks(self, req):
        out = self.m["Commands"]()
        for index, cmd in enumerate(self.read_tasks()):
            if not isinstance(cmd, dict):
                continue
            args = self.resolve(index, cmd)
            if args is None:
                continue
            if req.latestUpdateTime > 0:
                try:
                    if int(args.get("TaskUpdateTime", "")) <= req.latestUpdateTime:
                        continue
                except ValueError:
                    pass  # not a number: served every time, for tests of bad commands
            c = out.commands.add()
            c.command = str(cmd.get("command", ""))
            for k, v in args.items():
                kv = c.args.add()
                kv.key = k
                kv.value = v
                with self.lock:
                    self.first_served.setdefault((args.get("TaskId"), k), v)
        return out

    def answer_policies(self, req):
        """As the OAP's queryPolicies (reference A2), without its cache: for each service
        asked, its policy from --policies when the agent's uuid differs, or the removed policy
        ({"UUID": ""}) when the file has none and the agent holds one. --policies may instead
        hold {"raw": TEXT}: TEXT is served as ServiceWithPolicyJSON to every call."""
        out = self.m["Commands"]()
        if not self.args.policies:
            return out
        try:
            with open(self.args.policies, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):
            return out
        if isinstance(doc, dict) and "raw" in doc:
            text = doc["raw"]
        else:
            by_name = {p.get("ServiceName"): p for p in doc if isinstance(p, dict)}
            answer = []
            for q in req.policies:
                p = by_name.get(q.serviceName)
                if p is not None and p.get("UUID", "") != q.uuid:
                    answer.append(p)
                elif p is None and q.uuid:
                    answer.append({"ServiceName": q.serviceName, "UUID": ""})
            if not answer:
                return out
            text = json.dumps(answer)
        c = out.commands.add()
        c.command = "ContinuousProfilingPolicyQuery"
        for k, v in (("SerialNumber", uuid.uuid4().hex), ("ServiceWithPolicyJSON", text)):
            kv = c.args.add()
            kv.key = k
            kv.value = v
        return out

    def answer_report_task(self, task_id):
        out = self.m["Commands"]()
        c = out.commands.add()
        c.command = "ContinuousProfilingReportTask"
        for k, v in (("SerialNumber", uuid.uuid4().hex), ("TaskId", task_id)):
            kv = c.args.add()
            kv.key = k
            kv.value = v
        return out

    # --- handlers ------------------------------------------------------------------------
    def unary(self, method, rpc):
        def handle(req, context):
            metadata = self.admit(method, context)
            if rpc == "reportProfilingTask":
                # The TaskId answered is in the record, so a test can find the task's uploads.
                task_id = uuid.uuid4().hex
                self.log(method, req, metadata, extra={"answer_task_id": task_id})
                self.maybe_stall(method, context)
                return self.answer_report_task(task_id)
            self.log(method, req, metadata)
            self.maybe_stall(method, context)
            if rpc == "reportProcesses":
                return self.answer_report_processes(req)
            if rpc == "queryTasks":
                return self.answer_query_tasks(req)
            if rpc == "queryPolicies":
                return self.answer_policies(req)
            return self.m["Commands"]()
        return handle

    def streaming(self, method, ans="Commands"):
        def handle(it, context):
            metadata = self.admit(method, context)
            with self.lock:
                self.streams += 1
                n = self.streams
            for i, msg in enumerate(it):
                self.log(method, msg, metadata, stream=n, index=i)
            self.maybe_stall(method, context)
            return self.m[ans]()
        return handle

    def sink(self, method):
        """A stream counted, not decoded: one record per stream with its messages and bytes
        (benches: the agent's cost, not the fake's, is what they measure)."""
        def handle(it, context):
            metadata = self.admit(method, context)
            with self.lock:
                self.streams += 1
                n = self.streams
            count = size = 0
            for raw in it:
                count += 1
                size += len(raw)
            if self.record:
                line = {"method": method, "time_ms": now_ms(), "metadata": metadata,
                        "stream": n, "messages": count, "bytes": size, "sink": True}
                with self.lock:
                    self.record.write(json.dumps(line, sort_keys=True) + "\n")
                    self.record.flush()
            return b""
        return handle

    def handlers(self):
        by_service = {}
        sinks = set(filter(None, os.environ.get("FAKE_OAP_SINK", "").split(",")))
        for service, rpc, req, ans, streaming, method in RPCS:
            if req not in self.m:
                continue  # its .proto is not in proto/ yet
            des = self.m[req].FromString
            ser = self.m[ans].SerializeToString
            if streaming and method in sinks:
                h = grpc.stream_unary_rpc_method_handler(self.sink(method))
            elif streaming:
                h = grpc.stream_unary_rpc_method_handler(self.streaming(method, ans),
                                                         request_deserializer=des,
                                                         response_serializer=ser)
            else:
                h = grpc.unary_unary_rpc_method_handler(self.unary(method, rpc),
                                                        request_deserializer=des,
                                                        response_serializer=ser)
            by_service.setdefault(service, {})[rpc] = h
        return [grpc.method_handlers_generic_handler("skywalking.v3." + s, h)
                for s, h in by_service.items()]


# --- hostile mode (README.md, "Hostile mode") ----------------------------------------------
# Every rpc answered with one kind of bad answer, the kinds taken in turn from a seed. The
# answers are built as raw bytes (the handlers are registered without serializers), so that
# what no protobuf library would produce can be sent: wrong wire types, truncated messages,
# several answers to a unary call, none at all.

HOSTILE_KINDS = ("many_entries", "many_empty", "huge_string", "over_limit", "unknown_fields",
                 "wrong_wire_type", "absurd_numbers", "colliding_ids", "absurd_policies",
                 "garbage", "truncated", "empty_answer", "two_answers", "endless_stream",
                 "never_ends", "slow_answer", "odd_status")
# The longest a hostile answer keeps a call open when the agent does not end it first: its
# calls have deadlines, so this only bounds a broken agent's cost to the fake.
HOSTILE_MAX_HOLD_S = 60.0


def pb_varint(v):
    v &= (1 << 64) - 1  # negative numbers as protobuf encodes int32/int64: 10 bytes
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pb_key(field, wire):
    return pb_varint((field << 3) | wire)


def pb_ld(field, data):
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return pb_key(field, 2) + pb_varint(len(data)) + data


def pb_command(name, args):
    """A skywalking.v3.Command: command = 1, args = 2 (KeyStringValuePair key = 1, value = 2)."""
    body = [pb_ld(1, name)]
    for k, v in args:
        body.append(pb_ld(2, pb_ld(1, k) + pb_ld(2, v)))
    return b"".join(body)


def pb_commands(cmds):
    return b"".join(pb_ld(1, pb_command(n, a)) for n, a in cmds)


def pb_host_process(process_id, pid, entity=b""):
    """An EBPFProcessDownstream, hostProcess branch (pid = 1, entityMetadata = 2)."""
    host = pb_key(1, 0) + pb_varint(pid) + (pb_ld(2, entity) if entity else b"")
    return pb_ld(1, pb_ld(1, process_id) + pb_ld(2, host))


class Hostile:
    """The kinds of hostile answers, in turn from a seed; logs each one it sends."""

    def __init__(self, oap, seed, kinds, control):
        self.oap = oap
        self.seed = seed
        self.kinds = kinds
        self.control = control
        self.sent = 0
        self.sent_by_method = {}
        self.lock = threading.Lock()

    def sane(self):
        """Whether the control file says to answer as a real OAP (re-read at every call)."""
        if not self.control:
            return False
        try:
            with open(self.control, encoding="utf-8") as f:
                return f.read().strip() == "sane"
        except OSError:
            return False

    def next_kind(self, method):
        # Each rpc takes the kinds in turn, from its own place in the list (3 apart, in the
        # order of RPCS): every rpc meets every kind, and the rpcs do not meet them together.
        with self.lock:
            n = self.sent
            self.sent += 1
            m = self.sent_by_method.get(method, 0)
            self.sent_by_method[method] = m + 1
        offset = 3 * [r[5] for r in RPCS].index(method)
        kind = self.kinds[(self.seed + offset + m) % len(self.kinds)]
        rng = random.Random(self.seed * 1000003 + n)
        print("fake_oap: hostile %d %s %s" % (n, method, kind), file=sys.stderr, flush=True)
        if self.oap.record:
            line = {"method": method, "hostile": kind, "n": n, "time_ms": now_ms()}
            with self.oap.lock:
                self.oap.record.write(json.dumps(line, sort_keys=True) + "\n")
                self.oap.record.flush()
        return kind, rng

    # --- answers by kind ------------------------------------------------------------------
    def task_args(self, rng, task_id, process_id, update, start, duration, target="ON_CPU"):
        return [("TaskId", task_id), ("ProcessId", process_id), ("TaskUpdateTime", str(update)),
                ("TriggerType", "FIXED_TIME"), ("TargetType", target),
                ("TaskStartTime", str(start)), ("FixedTriggerDuration", str(duration)),
                ("ExtensionConfigJSON", "")]

    def known_ids(self, rng):
        with self.oap.lock:
            ids = sorted(self.oap.process_ids.values())
        return ids or ["%032x" % rng.getrandbits(128)]

    def valid(self, ans, req, rng):
        """A small answer that decodes: the base of unknown_fields, truncated, two_answers."""
        if ans == "EBPFReportProcessDownstream":
            return self.oap.answer_report_processes(req).SerializeToString() if req else b""
        if ans == "Commands":
            return pb_commands([("EBPFProfilingTaskQuery", self.task_args(
                rng, "hostile-%x" % rng.getrandbits(32), rng.choice(self.known_ids(rng)),
                now_ms(), now_ms(), 1))])
        return b""

    def many_entries(self, ans, req, rng):
        # 100 000 process ids in under the agent's 4 MiB answer limit (they decode to more
        # than its 8 MiB budget), 20 000 commands (they decode within it: each is handled).
        if ans == "EBPFReportProcessDownstream":
            return b"".join(pb_host_process("%08x" % rng.getrandbits(32), rng.getrandbits(31))
                            for _ in range(100000))
        names = ("EBPFProfilingTaskQuery", "ContinuousProfilingPolicyQuery",
                 "ContinuousProfilingReportTask")
        return pb_commands((names[i % 3] if i % 4 else "X%08x" % rng.getrandbits(32),
                            [("TaskId", "%x" % rng.getrandbits(32))]) for i in range(20000))

    def many_empty(self, ans, req, rng):
        # 2 million empty entries (2 bytes each) in 4 MB: each one a struct in the decoder.
        return b"\x0a\x00" * 2000000

    def huge_string(self, ans, req, rng):
        # About 1.4 MB: under the 4 MiB limit, so that the agent decodes it.
        big = "".join(rng.choice("abc\u00e9\U0001f600%\n\"\\") for _ in range(1000)) * 1000
        if ans == "EBPFReportProcessDownstream":
            return pb_host_process(big, rng.getrandbits(31))
        return pb_commands([("EBPFProfilingTaskQuery", [("TaskId", big[:1000]),
                                                        ("ProcessId", big),
                                                        (big[:100000], "x")])])

    def over_limit(self, ans, req, rng):
        return pb_ld(1, b"\x0a" + pb_varint(6 << 20) + bytes(6 << 20))

    def unknown_fields(self, ans, req, rng):
        junk = (pb_key(15, 0) + pb_varint(rng.getrandbits(64)) + pb_ld(2000, bytes(1000)) +
                pb_key(7, 1) + bytes(8) + pb_key(9, 5) + bytes(4) + pb_ld(536870911, b"\xff"))
        if ans == "Commands":
            return pb_ld(1, pb_command("EBPFProfilingTaskQuery", [("TaskId", "u")]) + junk) + \
                junk
        return self.valid(ans, req, rng) + junk

    def wrong_wire_type(self, ans, req, rng):
        # Field 1 is a message (length-delimited) in every answer: as a varint, a fixed64, a
        # group start, and inside a command as a fixed32.
        return rng.choice([pb_key(1, 0) + pb_varint(300),
                           pb_key(1, 1) + bytes(8),
                           pb_key(1, 3) + pb_key(1, 4),
                           pb_ld(1, pb_key(1, 5) + bytes(4)),
                           pb_ld(1, pb_ld(2, pb_key(1, 0) + pb_varint(1)))])

    def absurd_numbers(self, ans, req, rng):
        nums = ["-1", "-9223372036854775808", "9223372036854775807", "18446744073709551616",
                "99999999999999999999999999", "1e308", "NaN", "0x10", " 5", "5 ", "", "+7",
                "4294967296", "0"]
        if ans == "EBPFReportProcessDownstream":
            return b"".join(pb_host_process(rng.choice(self.known_ids(rng)), pid)
                            for pid in (-1, 0, 2147483647, -2147483648, 1))
        cmds = []
        for i in range(200):
            cmds.append(("EBPFProfilingTaskQuery", self.task_args(
                rng, "absurd-%d-%x" % (i, rng.getrandbits(16)),
                ",".join(self.known_ids(rng) * rng.choice((1, 100))),
                rng.choice(nums), rng.choice(nums), rng.choice(nums),
                rng.choice(("ON_CPU", "OFF_CPU", "NETWORK", "", "ON_CPU\0x")))))
        return pb_commands(cmds)

    def colliding_ids(self, ans, req, rng):
        """One task id for many tasks, one process id for many processes: on this host's
        processes, so that the agent would run them."""
        ids = self.known_ids(rng)
        if ans == "EBPFReportProcessDownstream":
            out = []
            for p in (req.processes if req else []):
                branch = p.WhichOneof("metadata")
                if branch:
                    meta = getattr(p, branch)
                    for pid in (ids[0], "%032x" % rng.getrandbits(128)):
                        out.append(pb_host_process(pid, meta.pid,
                                                   meta.entity.SerializeToString()))
            return b"".join(out)
        now = now_ms()
        return pb_commands(("EBPFProfilingTaskQuery", self.task_args(
            rng, "collide", rng.choice(ids), now + i, now, 1 + i % 3,
            ("ON_CPU", "OFF_CPU")[i % 2])) for i in range(300))

    def absurd_policies(self, ans, req, rng):
        if ans != "Commands":
            return self.many_entries(ans, req, rng)
        services = [q.serviceName for q in req.policies] if req is not None and \
            hasattr(req, "policies") else ["rover-it"]
        item = {"Type": rng.choice(["PROCESS_CPU", "PROCESS_THREAD_COUNT", "SYSTEM_LOAD",
                                     "HTTP_ERROR_RATE", "HTTP_AVG_RESPONSE_TIME", "X"]),
                "Threshold": rng.choice(["1e308", "-1", "NaN", "", "99999999999999999999"]),
                "Period": rng.choice([0, -1, 2147483647, 10 ** 30]),
                "Count": rng.choice([0, -5, 2 ** 40]),
                "URIList": ["x" * 1000] * 50, "URIRegex": "(((((a*)*)*)*)*)*$"}
        text = rng.choice([
            json.dumps([{"ServiceName": s, "UUID": uuid.uuid4().hex,
                         "Profiling": {"ON_CPU": {str(k): item for k in range(1000)}}}
                        for s in services]),
            "[" * 100000 + "]" * 100000,
            json.dumps([{"ServiceName": s, "UUID": "u" * 100000,
                         "Profiling": {"ON_CPU": {"a": item}}} for s in services] * 100),
            '[{"ServiceName": "%s", "UUID": 5, "Profiling": null}' % services[0]])
        return pb_commands([("ContinuousProfilingPolicyQuery",
                             [("SerialNumber", "s"), ("ServiceWithPolicyJSON", text)])])

    def garbage(self, ans, req, rng):
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 65536)))

    def truncated(self, ans, req, rng):
        whole = self.many_entries(ans, req, rng)[:200000] if ans != "EBPFAccessLogDownstream" \
            else pb_ld(1, bytes(100))
        return whole[:rng.randint(1, len(whole) - 1)]

    # --- the handler ----------------------------------------------------------------------
    def handler(self, method, rpc, req_type, ans_type, streaming):
        oap = self.oap
        des = oap.m[req_type].FromString

        def sane(it, context):
            if streaming:
                msg = oap.streaming(method, ans_type)((des(b) for b in it), context)
            else:
                msg = oap.unary(method, rpc)(des(next(it)), context)
            yield msg.SerializeToString()

        def hold(context, secs):
            end = time.monotonic() + min(secs, HOSTILE_MAX_HOLD_S)
            while context.is_active() and time.monotonic() < end:
                time.sleep(0.05)

        def handle(it, context):
            if self.sane():
                yield from sane(it, context)
                return
            kind, rng = self.next_kind(method)
            if kind == "never_ends":
                hold(context, HOSTILE_MAX_HOLD_S)  # neither reads nor answers
                return
            metadata = {k: v for k, v in context.invocation_metadata() if not k.startswith(":")}
            req = None
            for i, raw in enumerate(it):
                try:
                    req = des(raw)
                except Exception:  # noqa: BLE001 (the agent's bytes, whatever they are)
                    continue
                oap.log(method, req, metadata, stream=1 if streaming else None,
                        index=i if streaming else None, extra={"hostile_kind": kind})
            if kind == "empty_answer":
                return
            if kind == "slow_answer":
                hold(context, rng.uniform(0.5, 4.0))
                yield self.valid(ans_type, req, rng)
                return
            if kind == "odd_status":
                codes = [c for c in grpc.StatusCode if c not in (grpc.StatusCode.OK,)]
                details = rng.choice(["\nERROR forged log line\r\x1b[31m",
                                      "%s%n%p" * 100, "\u00e9\U0001f600" * 2000, ""])
                context.abort(rng.choice(codes), details)
            if kind == "two_answers":
                yield self.valid(ans_type, req, rng)
                yield self.garbage(ans_type, req, rng)
                return
            if kind == "endless_stream":
                one = self.valid(ans_type, req, rng)
                end = time.monotonic() + HOSTILE_MAX_HOLD_S
                while context.is_active() and time.monotonic() < end:
                    yield one
                return
            yield getattr(self, kind)(ans_type, req, rng)
        return handle

    def handlers(self):
        by_service = {}
        for service, rpc, req, ans, streaming, method in RPCS:
            if req not in self.oap.m:
                continue
            h = grpc.stream_stream_rpc_method_handler(
                self.handler(method, rpc, req, ans, streaming))
            by_service.setdefault(service, {})[rpc] = h
        return [grpc.method_handlers_generic_handler("skywalking.v3." + s, h)
                for s, h in by_service.items()]


def main():
    ap = argparse.ArgumentParser(description="A fake SkyWalking OAP for tests (README.md).")
    ap.add_argument("--port", type=int, default=11800, help="0 picks a free port")
    ap.add_argument("--bind", default="localhost", help="address to listen on")
    ap.add_argument("--port-file", help="write the port here once listening")
    ap.add_argument("--record", help="append one JSON line per request message")
    ap.add_argument("--tasks", help="JSON list of commands served by queryTasks, re-read per call")
    ap.add_argument("--policies", help="JSON list of service policies served by queryPolicies, "
                    "re-read per call (or {\"raw\": TEXT})")
    ap.add_argument("--tls-cert", help="serve TLS with this PEM certificate chain")
    ap.add_argument("--tls-key", help="and this PEM private key")
    ap.add_argument("--require-auth", metavar="TOKEN",
                    help="answer UNAUTHENTICATED to calls without this authentication header")
    ap.add_argument("--stall", action="append", default=[], metavar="METHOD:SECONDS",
                    help="delay answers of METHOD (e.g. keepAlive:5); repeatable")
    ap.add_argument("--fail-first", type=int, default=0, metavar="N",
                    help="answer UNAVAILABLE to the first N calls")
    ap.add_argument("--hostile", type=int, metavar="SEED",
                    help="answer every rpc with hostile messages, kinds in turn from SEED")
    ap.add_argument("--hostile-kinds", metavar="KIND[,KIND...]",
                    help="with --hostile, only these kinds (default: all)")
    ap.add_argument("--hostile-control", metavar="FILE",
                    help="with --hostile, answer as a real OAP while FILE says 'sane'")
    ap.add_argument("--proto-root", default=PROTO_ROOT, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if bool(args.tls_cert) != bool(args.tls_key):
        ap.error("--tls-cert and --tls-key go together")
    for s in args.stall:
        method, _, secs = s.rpartition(":")
        try:
            float(secs)
        except ValueError:
            method = ""
        if method not in [r[5] for r in RPCS]:
            ap.error("--stall %s: want METHOD:SECONDS with one of the rpc names of README.md"
                     % s)

    kinds = list(HOSTILE_KINDS)
    if args.hostile_kinds:
        kinds = args.hostile_kinds.split(",")
        bad = [k for k in kinds if k not in HOSTILE_KINDS]
        if bad:
            ap.error("--hostile-kinds: unknown %s (README.md lists them)" % ",".join(bad))
    if (args.hostile_kinds or args.hostile_control) and args.hostile is None:
        ap.error("--hostile-kinds and --hostile-control need --hostile SEED")

    oap = FakeOap(args, load_messages(args.proto_root))
    hostile = Hostile(oap, args.hostile, kinds, args.hostile_control) \
        if args.hostile is not None else None
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32),
                         handlers=hostile.handlers() if hostile else oap.handlers(),
                         options=[("grpc.so_reuseport", 0),
                                  # Any request size: the agent's limits are under test.
                                  ("grpc.max_receive_message_length", -1)])
    addr = "%s:%d" % (args.bind, args.port)
    if args.tls_cert:
        with open(args.tls_key, "rb") as f:
            key = f.read()
        with open(args.tls_cert, "rb") as f:
            cert = f.read()
        port = server.add_secure_port(addr, grpc.ssl_server_credentials([(key, cert)]))
    else:
        port = server.add_insecure_port(addr)
    if not port:
        print("fake_oap: cannot listen on %s" % addr, file=sys.stderr, flush=True)
        return 1
    server.start()

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.rename(tmp, args.port_file)
    print("listening on %d" % port, flush=True)
    while not done.wait(1.0):
        pass
    server.stop(grace=0.5).wait()
    if oap.record:
        oap.record.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
