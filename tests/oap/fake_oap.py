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

    oap = FakeOap(args, load_messages(args.proto_root))
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32),
                         handlers=oap.handlers(),
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
