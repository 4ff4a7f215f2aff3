#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A fake Kubernetes API server for rover's tests: the core/v1, apps/v1 and batch/v1 subset the
supervisor's discovery reads (nodes, pods, services, and the owners of pods), over the real
REST/JSON: lists with paging, watch streams (chunked, one event per line, 410 Expired after a
compaction, bookmarks), a bearer token re-read at every request, TLS. Tests drive it through
POST /_control. See README.md next to this file; the command line and the control commands are
a contract with the C tests (tests/integration/kube_harness.h)."""

import argparse
import base64
import bisect
import copy
import datetime
import json
import os
import signal
import socket
import ssl
import sys
import threading
import time
import urllib.parse
import uuid
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# resource -> (group/version, kind, namespaced)
RESOURCES = {
    "nodes": ("v1", "Node", False),
    "pods": ("v1", "Pod", True),
    "services": ("v1", "Service", True),
    "replicasets": ("apps/v1", "ReplicaSet", True),
    "deployments": ("apps/v1", "Deployment", True),
    "jobs": ("batch/v1", "Job", True),
}
KIND_TO_RESOURCE = {kind: res for res, (_, kind, _) in RESOURCES.items()}

# The fields the real server lets a fieldSelector name, per resource (every resource also
# takes metadata.name and metadata.namespace). Another field is a 400, as there.
FIELDS = {
    "pods": ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
             "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
             "status.nominatedNodeName"),
    "services": (),
    "nodes": ("spec.unschedulable",),
    "replicasets": ("status.replicas",),
    "deployments": (),
    "jobs": ("status.successful",),
}

# Events kept for watches before the oldest are compacted away on their own (etcd compacts
# every 5 minutes; a test never comes near this).
MAX_EVENTS = 100000
# Consistent snapshots kept for `continue` tokens; an older token gets 410 Expired, as a token
# whose revision etcd compacted does.
MAX_SNAPSHOTS = 64
# A watch without timeoutSeconds ends after this, as the real server's --min-request-timeout.
DEFAULT_WATCH_SECONDS = 1800
# A control body larger than this is refused (a test never sends one).
MAX_CONTROL_BODY = 64 << 20
RECENT = 256


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_obj(code, reason, message, details=None):
    s = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
         "message": message, "reason": reason, "code": code}
    if details is not None:
        s["details"] = details
    return s


def field_value(obj, path):
    cur = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


class SelectorError(Exception):
    pass


def parse_selector(text, allowed):
    """`a=b,c!=d` as the API server parses a fieldSelector or labelSelector: a list of
    (key, op, value); `allowed` (None: any) limits the keys."""
    terms = []
    if not text:
        return terms
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "!=" in part:
            k, v = part.split("!=", 1)
            op = "!="
        elif "==" in part:
            k, v = part.split("==", 1)
            op = "="
        elif "=" in part:
            k, v = part.split("=", 1)
            op = "="
        else:
            raise SelectorError("invalid selector: '%s'; can't understand '%s'" % (text, part))
        k = k.strip()
        if allowed is not None and k not in allowed:
            raise SelectorError('field label not supported: %s' % k)
        terms.append((k, op, v.strip()))
    return terms


def fields_match(obj, terms):
    for k, op, v in terms:
        have = field_value(obj, k)
        if (have == v) != (op == "="):
            return False
    return True


def labels_match(obj, terms):
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for k, op, v in terms:
        have = labels.get(k)
        if op == "=" and have != v:
            return False
        if op == "!=" and have == v:
            return False
    return True


class Store:
    """Every object, keyed (resource, namespace, name), with one resourceVersion counter over
    all of them as etcd's revision, and the events since the compaction point."""

    def __init__(self):
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.objects = {}
        self.rv = 0
        self.compacted = 0  # a watch from an RV below this gets 410
        self.events = []  # (rv, resource, type, old, new): old None for ADDED, new the last for DELETED
        self.event_rvs = []
        self.snapshots = OrderedDict()  # rv -> {key: obj}, for continue tokens
        self.bookmark_gen = 0
        self.drop_gen = 0
        self.stopping = False

    # Called with the lock held.
    def _record(self, res, typ, old, new):
        self.events.append((self.rv, res, typ, old, new))
        self.event_rvs.append(self.rv)
        if len(self.events) > MAX_EVENTS:
            drop = len(self.events) - MAX_EVENTS
            self.compacted = self.events[drop - 1][0]
            del self.events[:drop]
            del self.event_rvs[:drop]
        self.cond.notify_all()

    def put(self, obj, load=False):
        """Creates or replaces obj; with load (--objects), keeps its resourceVersion when it
        has one and records no event."""
        if not isinstance(obj, dict):
            raise ValueError("object is not a JSON object")
        kind = obj.get("kind")
        res = KIND_TO_RESOURCE.get(kind)
        if res is None:
            raise ValueError("kind %r is none of %s" % (kind, sorted(KIND_TO_RESOURCE)))
        gv, _, namespaced = RESOURCES[res]
        obj = copy.deepcopy(obj)
        # kind and apiVersion first, as the real server writes them.
        obj = dict([("kind", kind), ("apiVersion", gv)] +
                   [(k, v) for k, v in obj.items() if k not in ("kind", "apiVersion")])
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or \
                not meta["name"]:
            raise ValueError("metadata.name missing")
        if namespaced:
            meta["namespace"] = meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        key = (res, meta.get("namespace", ""), meta["name"])
        with self.lock:
            old = self.objects.get(key)
            if old is not None:
                meta.setdefault("uid", old["metadata"].get("uid"))
                meta.setdefault("creationTimestamp", old["metadata"].get("creationTimestamp"))
            else:
                meta.setdefault("uid", str(uuid.uuid4()))
                meta.setdefault("creationTimestamp", now_rfc3339())
            typ = "MODIFIED" if old is not None else "ADDED"
            kept = meta.get("resourceVersion")
            if load and isinstance(kept, str) and kept.isdigit():
                self.rv = max(self.rv, int(kept))
                self.objects[key] = obj
                return typ, int(kept), obj
            self.rv += 1
            meta["resourceVersion"] = str(self.rv)
            self.objects[key] = obj
            if not load:
                self._record(res, typ, old, obj)
            return typ, self.rv, obj

    def delete(self, kind, ns, name):
        res = KIND_TO_RESOURCE.get(kind)
        if res is None:
            raise ValueError("kind %r is none of %s" % (kind, sorted(KIND_TO_RESOURCE)))
        if not RESOURCES[res][2]:
            ns = ""
        elif not ns:
            ns = "default"
        with self.lock:
            old = self.objects.pop((res, ns, name), None)
            if old is None:
                return None
            self.rv += 1
            gone = copy.deepcopy(old)
            # The DELETED event carries the object at the revision of its deletion.
            gone["metadata"]["resourceVersion"] = str(self.rv)
            self._record(res, "DELETED", old, gone)
            return self.rv

    def compact(self):
        with self.lock:
            self.compacted = self.rv
            self.events = []
            self.event_rvs = []
            self.snapshots.clear()
            return self.rv

    def snapshot(self):
        """The store as of now, kept for continue tokens. Lock held."""
        snap = self.snapshots.get(self.rv)
        if snap is None:
            snap = dict(self.objects)  # objects are never changed in place, only replaced
            self.snapshots[self.rv] = snap
            while len(self.snapshots) > MAX_SNAPSHOTS:
                self.snapshots.popitem(last=False)
        return self.rv, snap


class Garbage:
    """The next `count` answers to API requests and/or watch lines are garbage of a mode."""

    MODES = ("json", "types", "huge", "dense")
    TARGETS = ("any", "response", "watch")

    def __init__(self):
        self.lock = threading.Lock()
        self.left = 0
        self.mode = "json"
        self.target = "any"
        self.huge_bytes = 8 << 20

    def set(self, mode, count, target, huge_bytes):
        with self.lock:
            self.mode, self.left, self.target, self.huge_bytes = mode, count, target, huge_bytes

    def take(self, where):
        with self.lock:
            if self.left > 0 and self.target in ("any", where):
                self.left -= 1
                return self.mode, self.huge_bytes
            return None


def wrong_types(kind):
    """An object with each field the supervisor reads of the wrong JSON type."""
    return {"kind": kind, "apiVersion": 7,
            "metadata": "not an object",
            "spec": {"containers": 7, "nodeName": ["node"], "selector": "app=x",
                     "initContainers": {"a": 1}},
            "status": {"containerStatuses": "running", "podIP": 10, "addresses": 1}}


def huge(kind, nbytes):
    labels = {}
    size = 0
    i = 0
    while size < nbytes:
        k = "huge.example.com/l%06d" % i
        labels[k] = "v" * 1000
        size += len(k) + 1000 + 6
        i += 1
    return {"kind": kind, "apiVersion": RESOURCES[KIND_TO_RESOURCE[kind]][0],
            "metadata": {"name": "huge", "namespace": "default", "uid": str(uuid.uuid4()),
                         "resourceVersion": "1", "labels": labels},
            "spec": {"nodeName": "", "containers": []}}


def dense(kind, nbytes):
    """An object whose spec holds nbytes of empty objects: a few MiB of "{}," are hundreds of
    MiB in a JSON parser's tree."""
    obj = huge(kind, 0)
    obj["spec"]["dense"] = [{}] * max(1, nbytes // 3)
    return obj


BAD_JSON = b'{"kind": "PodList", "apiVersion": "v1", "items": [{"metadata": {"name": "trunc\xff\xfe'


class FakeKube:
    def __init__(self, args):
        self.args = args
        self.store = Store()
        self.garbage = Garbage()
        self.stats_lock = threading.Lock()
        self.requests = {}  # "verb resource" -> count
        self.unauthorized = 0
        self.tokens = {}  # presented token -> requests
        self.open_watches = {}  # resource -> open now
        self.watches_started = {}
        self.recent = []
        self.outage = None  # None, "reset" or "503"
        self.next_watch_id = 0
        self.watch_conns = {}  # id -> socket, for outage/drop
        if args.objects:
            self.load(args.objects)

    def load(self, path):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if isinstance(doc, dict):
            items = doc.get("items", [])
            rv = int(doc.get("resourceVersion", 0) or 0)
        else:
            items, rv = doc, 0
        # A dump taken before a restart keeps its objects' resourceVersions and the counter,
        # as etcd's data outlives an API server restart: a watch from the last RV a client saw
        # goes on; the events before the restart are gone, so an older RV gets 410.
        self.store.rv = rv
        for o in items:
            self.store.put(o, load=True)
        self.store.compacted = self.store.rv

    def dump(self):
        with self.store.lock:
            items = [self.store.objects[k] for k in sorted(self.store.objects)]
            return {"resourceVersion": str(self.store.rv), "items": copy.deepcopy(items)}

    def count(self, key, token, code, method, path, query):
        with self.stats_lock:
            self.requests[key] = self.requests.get(key, 0) + 1
            if token is not None:
                self.tokens[token] = self.tokens.get(token, 0) + 1
            if code == 401:
                self.unauthorized += 1
            self.recent.append({"method": method, "path": path, "query": query, "code": code,
                                "what": key})
            del self.recent[:-RECENT]

    def status(self):
        with self.store.lock:
            rv, compacted = self.store.rv, self.store.compacted
            nobjects = len(self.store.objects)
        with self.stats_lock:
            return {"resourceVersion": str(rv), "compacted": str(compacted),
                    "objects": nobjects,
                    "requests": dict(self.requests), "unauthorized": self.unauthorized,
                    "tokens": dict(self.tokens),
                    "open_watches": {k: v for k, v in self.open_watches.items() if v},
                    "open_watches_total": sum(self.open_watches.values()),
                    "watches_started": dict(self.watches_started),
                    "recent": list(self.recent), "garbage_left": self.garbage.left,
                    "outage": self.outage}

    def token_ok(self, header):
        """The token must equal the token file's content now: a test rotates it by rewriting
        the file, as the kubelet does for a projected token."""
        if not self.args.token_file:
            return True, None
        presented = None
        if header and header.startswith("Bearer "):
            presented = header[len("Bearer "):].strip()
        try:
            with open(self.args.token_file, encoding="utf-8") as f:
                want = f.read().strip()
        except OSError:
            want = ""
        return bool(want) and presented == want, presented

    def disconnect_watches(self):
        with self.store.lock:
            self.store.drop_gen += 1
            n = len(self.watch_conns)
            for s in self.watch_conns.values():
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.store.cond.notify_all()
            return n

    # --- control ---------------------------------------------------------------------------
    def control(self, cmd):
        """One command; returns (http code, answer)."""
        if not isinstance(cmd, dict) or not isinstance(cmd.get("cmd"), str):
            return 400, {"error": 'a control body is {"cmd": NAME, ...}'}
        name = cmd["cmd"]
        try:
            if name == "put":
                objs = cmd.get("objects") if "objects" in cmd else [cmd.get("object")]
                if not isinstance(objs, list):
                    return 400, {"error": "objects is not a list"}
                out = []
                for o in objs:
                    typ, rv, stored = self.store.put(o)
                    out.append({"type": typ, "resourceVersion": str(rv),
                                "uid": stored["metadata"]["uid"]})
                ans = dict(out[-1]) if out else {}
                ans["results"] = out
                return 200, ans
            if name == "delete":
                rv = self.store.delete(cmd.get("kind"), cmd.get("namespace", ""),
                                       cmd.get("name"))
                if rv is None:
                    return 404, {"error": "no such object"}
                return 200, {"resourceVersion": str(rv)}
            if name == "compact":
                return 200, {"compacted": str(self.store.compact())}
            if name == "bookmark":
                with self.store.lock:
                    self.store.bookmark_gen += 1
                    self.store.cond.notify_all()
                    rv = self.store.rv
                with self.stats_lock:
                    n = sum(self.open_watches.values())
                return 200, {"resourceVersion": str(rv), "open_watches": n}
            if name == "drop_watches":
                return 200, {"dropped": self.disconnect_watches()}
            if name == "garbage":
                mode = cmd.get("mode", "json")
                target = cmd.get("target", "any")
                n = cmd.get("count", 1)
                size = cmd.get("bytes", 8 << 20)
                if mode not in Garbage.MODES or target not in Garbage.TARGETS or \
                        not isinstance(n, int) or not isinstance(size, int) or n < 0:
                    return 400, {"error": "mode is one of %s, target one of %s, count and "
                                 "bytes integers" % (Garbage.MODES, Garbage.TARGETS)}
                self.garbage.set(mode, n, target, size)
                return 200, {"garbage_left": n}
            if name == "outage":
                mode = cmd.get("mode")
                if mode not in (None, "reset", "503"):
                    return 400, {"error": 'mode is "reset", "503" or null (the outage ends)'}
                self.outage = mode
                dropped = self.disconnect_watches() if mode else 0
                return 200, {"outage": mode, "dropped": dropped}
            if name == "status":
                return 200, self.status()
            if name == "dump":
                return 200, self.dump()
        except (ValueError, TypeError, AttributeError) as e:
            return 400, {"error": str(e)}
        return 400, {"error": "unknown command %r" % name}


def parse_api_path(path):
    """-> (group/version, namespace or None, resource, name or None), or None."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api" and parts[1] == "v1":
        gv, rest = "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        gv, rest = parts[1] + "/" + parts[2], parts[3:]
    else:
        return None
    ns = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    if not rest or len(rest) > 2:
        return None
    res = rest[0]
    name = rest[1] if len(rest) == 2 else None
    info = RESOURCES.get(res)
    if info is None or info[0] != gv or (ns is not None and not info[2]):
        return None
    return gv, ns, res, name


def discovery(path):
    """Enough of /api and /apis for kubectl (a real client) to find its way; None if path is
    not a discovery path."""
    if path == "/version":
        return {"major": "1", "minor": "30", "gitVersion": "v1.30.0-fake",
                "platform": "linux/amd64"}
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                "serverAddress": "127.0.0.1"}]}
    groups = {}
    for res, (gv, kind, namespaced) in RESOURCES.items():
        groups.setdefault(gv, []).append(
            {"name": res, "singularName": kind.lower(), "namespaced": namespaced,
             "kind": kind, "verbs": ["get", "list", "watch"]})
    if path == "/apis":
        out = []
        for gv in sorted(groups):
            if "/" in gv:
                g, v = gv.split("/")
                out.append({"name": g, "versions": [{"groupVersion": gv, "version": v}],
                            "preferredVersion": {"groupVersion": gv, "version": v}})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": out}
    for gv, resources in groups.items():
        if path == ("/api/" if gv == "v1" else "/apis/") + gv:
            return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                    "resources": resources}
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-kube-apiserver"
    sys_version = ""

    def setup(self):
        # TLS and plain HTTP share the port: a TLS handshake starts with 0x16. A plain
        # connection may only reach /_control when TLS is on (the C tests' control client is
        # plain); an API request on it gets Go's answer for that mistake.
        self.tls = False
        ctx = self.server.ssl_ctx
        if ctx is not None:
            self.request.settimeout(10)
            try:
                first = self.request.recv(1, socket.MSG_PEEK)
            except OSError:
                first = b""
            if first == b"\x16":
                self.request = ctx.wrap_socket(self.request, server_side=True)
                self.tls = True
            self.request.settimeout(None)
        super().setup()

    def log_message(self, fmt, *args):
        pass  # one line per request is written by log_request below

    def log_request(self, code="-", size="-"):
        sys.stderr.write("%s %s %s\n" % (self.command, self.path, code))
        sys.stderr.flush()

    def send_json(self, code, obj, body=None):
        if body is None:
            body = json.dumps(obj, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        fake = self.server.fake
        url = urllib.parse.urlsplit(self.path)
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if url.path != "/_control":
            self.close_connection = True
            self.send_json(405, status_obj(405, "MethodNotAllowed",
                                           "the server does not allow this method"))
            return
        if length < 0 or length > MAX_CONTROL_BODY:
            self.close_connection = True
            self.send_json(400, {"error": "bad Content-Length"})
            return
        raw = self.rfile.read(length)
        try:
            cmd = json.loads(raw)
        except ValueError as e:
            self.send_json(400, {"error": "body: %s" % e})
            return
        code, ans = fake.control(cmd)
        self.send_json(code, ans)

    def do_GET(self):
        fake = self.server.fake
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        if self.server.ssl_ctx is not None and not self.tls:
            self.close_connection = True
            body = b"Client sent an HTTP request to an HTTPS server.\n"
            self.send_response(400)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if url.path == "/_control":
            self.send_json(405, {"error": "POST /_control"})
            return
        ok, token = fake.token_ok(self.headers.get("Authorization"))
        parsed = parse_api_path(url.path)
        if parsed is None:
            key = "discovery" if discovery(url.path) is not None else "other"
        else:
            _, ns, res, name = parsed
            watch = q.get("watch", "") in ("1", "true", "True")
            key = ("get " if name else "watch " if watch else "list ") + res
        if not ok:
            fake.count(key, token, 401, "GET", url.path, q)
            self.send_json(401, status_obj(401, "Unauthorized", "Unauthorized"))
            return
        if fake.outage == "reset":
            fake.count(key, token, 0, "GET", url.path, q)
            self.log_request("reset")
            self.close_connection = True
            try:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           b"\x01\x00\x00\x00\x00\x00\x00\x00")
            except OSError:
                pass
            return
        if fake.outage == "503":
            fake.count(key, token, 503, "GET", url.path, q)
            self.send_json(503, status_obj(503, "ServiceUnavailable",
                                           "the server is currently unable to handle the request"))
            return
        if parsed is None:
            d = discovery(url.path)
            if d is None:
                fake.count(key, token, 404, "GET", url.path, q)
                self.send_json(404, status_obj(404, "NotFound",
                                               "the server could not find the requested resource"))
            else:
                fake.count(key, token, 200, "GET", url.path, q)
                self.send_json(200, d)
            return
        gv, ns, res, name = parsed
        if name is not None:
            self.get_one(key, token, q, gv, ns, res, name)
        elif key.startswith("watch "):
            self.watch(key, token, q, ns, res)
        else:
            self.list(key, token, q, gv, ns, res)

    def garbage_body(self, kind, list_kind):
        g = self.server.fake.garbage.take("response")
        if g is None:
            return None
        mode, nbytes = g
        if mode == "json":
            return BAD_JSON
        if mode == "types":
            obj = wrong_types(kind)
            if list_kind:
                obj = {"kind": list_kind, "apiVersion": "v1", "metadata": {"resourceVersion": 5},
                       "items": [obj, {"metadata": {"name": 5, "labels": [1, 2]}, "spec": 3}]}
        else:
            obj = (dense if mode == "dense" else huge)(kind, nbytes)
            if list_kind:
                obj = {"kind": list_kind, "apiVersion": "v1",
                       "metadata": {"resourceVersion": "1"}, "items": [obj]}
        return json.dumps(obj, separators=(",", ":")).encode()

    def get_one(self, key, token, q, gv, ns, res, name):
        fake = self.server.fake
        kind = RESOURCES[res][1]
        body = self.garbage_body(kind, None)
        if body is not None:
            fake.count(key, token, 200, "GET", self.path, q)
            self.send_json(200, None, body)
            return
        store = fake.store
        with store.lock:
            obj = store.objects.get((res, ns or "", name))
        if obj is None:
            fake.count(key, token, 404, "GET", self.path, q)
            self.send_json(404, status_obj(404, "NotFound", '%s "%s" not found' % (res, name),
                                           {"name": name, "kind": res}))
            return
        fake.count(key, token, 200, "GET", self.path, q)
        self.send_json(200, obj)

    def selectors(self, q, res):
        fields = parse_selector(q.get("fieldSelector", ""),
                                set(FIELDS[res]) | {"metadata.name", "metadata.namespace"})
        labels = parse_selector(q.get("labelSelector", ""), None)
        return fields, labels

    def list(self, key, token, q, gv, ns, res):
        fake = self.server.fake
        store = fake.store
        kind = RESOURCES[res][1]
        try:
            fsel, lsel = self.selectors(q, res)
            limit = int(q.get("limit") or 0)
            want_rv = int(q["resourceVersion"]) if q.get("resourceVersion") else 0
            if limit < 0:
                raise ValueError
        except SelectorError as e:
            fake.count(key, token, 400, "GET", self.path, q)
            self.send_json(400, status_obj(400, "BadRequest", str(e)))
            return
        except ValueError:
            fake.count(key, token, 400, "GET", self.path, q)
            self.send_json(400, status_obj(400, "BadRequest", "invalid limit or resourceVersion"))
            return
        body = self.garbage_body(kind, kind + "List")
        if body is not None:
            fake.count(key, token, 200, "GET", self.path, q)
            self.send_json(200, None, body)
            return
        start = ""
        with store.lock:
            if q.get("continue"):
                try:
                    tok = json.loads(base64.urlsafe_b64decode(q["continue"] + "=="))
                    rv, start = int(tok["rv"]), tok["start"]
                except (ValueError, KeyError, TypeError):
                    fake.count(key, token, 400, "GET", self.path, q)
                    self.send_json(400, status_obj(400, "BadRequest",
                                                   "continue key is not valid"))
                    return
                snap = store.snapshots.get(rv)
                if snap is None or rv < store.compacted:
                    fake.count(key, token, 410, "GET", self.path, q)
                    self.send_json(410, status_obj(
                        410, "Expired",
                        "The provided continue parameter is too old to display a consistent "
                        "list result. You can start a new list without the continue "
                        "parameter."))
                    return
            elif want_rv > store.rv:
                fake.count(key, token, 504, "GET", self.path, q)
                self.send_json(504, status_obj(
                    504, "Timeout", "Too large resource version: %d, current: %d" %
                    (want_rv, store.rv),
                    {"causes": [{"reason": "ResourceVersionTooLarge",
                                 "message": "Too large resource version"}],
                     "retryAfterSeconds": 1}))
                return
            else:
                rv, snap = store.snapshot()
        # Keys sort as etcd's /registry/<resource>/<namespace>/<name>.
        keys = sorted(k for k in snap if k[0] == res and (ns is None or k[1] == ns) and
                      "%s/%s" % (k[1], k[2]) > start)
        items = []
        cont = None
        remaining = 0
        for i, k in enumerate(keys):
            obj = snap[k]
            if not fields_match(obj, fsel) or not labels_match(obj, lsel):
                continue
            if limit and len(items) == limit:
                cont = "%s/%s" % (items[-1]["metadata"].get("namespace", ""),
                                  items[-1]["metadata"]["name"])
                remaining = sum(1 for k2 in keys[i:] if fields_match(snap[k2], fsel) and
                                labels_match(snap[k2], lsel))
                break
            item = copy.copy(obj)
            item.pop("kind", None)  # list items carry neither, as the real server's
            item.pop("apiVersion", None)
            items.append(item)
        meta = {"resourceVersion": str(rv)}
        if cont is not None:
            tok = {"v": "meta.k8s.io/v1", "rv": rv, "start": cont}
            meta["continue"] = base64.urlsafe_b64encode(
                json.dumps(tok, separators=(",", ":")).encode()).decode().rstrip("=")
            meta["remainingItemCount"] = remaining
        fake.count(key, token, 200, "GET", self.path, q)
        self.send_json(200, {"kind": kind + "List", "apiVersion": RESOURCES[res][0],
                             "metadata": meta, "items": items})

    # --- watch -----------------------------------------------------------------------------
    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def event_line(self, typ, obj):
        g = self.server.fake.garbage.take("watch")
        if g is not None:
            mode, nbytes = g
            if mode == "json":
                return b'{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"tr\xff\n'
            if mode == "types":
                return json.dumps({"type": "ADDED", "object": wrong_types(obj.get("kind", "Pod"))},
                                  separators=(",", ":")).encode() + b"\n"
            make = dense if mode == "dense" else huge
            return json.dumps({"type": "ADDED", "object": make(obj.get("kind", "Pod"), nbytes)},
                              separators=(",", ":")).encode() + b"\n"
        return json.dumps({"type": typ, "object": obj}, separators=(",", ":")).encode() + b"\n"

    def watch(self, key, token, q, ns, res):
        fake = self.server.fake
        store = fake.store
        gv, kind, _ = RESOURCES[res]
        try:
            fsel, lsel = self.selectors(q, res)
            timeout = float(q.get("timeoutSeconds") or DEFAULT_WATCH_SECONDS)
            rv_text = q.get("resourceVersion", "")
            from_rv = int(rv_text) if rv_text not in ("", "0") else None
        except SelectorError as e:
            fake.count(key, token, 400, "GET", self.path, q)
            self.send_json(400, status_obj(400, "BadRequest", str(e)))
            return
        except ValueError:
            fake.count(key, token, 400, "GET", self.path, q)
            self.send_json(400, status_obj(400, "BadRequest",
                                           "invalid timeoutSeconds or resourceVersion"))
            return
        bookmarks = q.get("allowWatchBookmarks", "") in ("1", "true", "True")
        deadline = time.monotonic() + timeout

        def matches(obj):
            return obj is not None and (ns is None or obj["metadata"].get("namespace") == ns) \
                and fields_match(obj, fsel) and labels_match(obj, lsel)

        def translate(typ, old, new):
            if typ == "ADDED":
                return "ADDED" if matches(new) else None
            if typ == "DELETED":
                return "DELETED" if matches(old) else None
            # An object leaving the selection is DELETED for this watch, one entering it
            # ADDED, as the real server's watch cache filters.
            was, now = matches(old), matches(new)
            if was and now:
                return "MODIFIED"
            if now:
                return "ADDED"
            if was:
                return "DELETED"
            return None

        initial = []
        error = None
        with store.lock:
            if from_rv is None:
                # No resourceVersion (or "0"): the current state as ADDED events first.
                initial = [store.objects[k] for k in sorted(store.objects)
                           if k[0] == res and matches(store.objects[k])]
                pos = store.rv
            elif from_rv < store.compacted:
                error = status_obj(410, "Expired", "too old resource version: %d (%d)" %
                                   (from_rv, store.compacted))
            elif from_rv > store.rv:
                error = status_obj(504, "Timeout", "Too large resource version: %d, current: %d"
                                   % (from_rv, store.rv))
            else:
                pos = from_rv
            bgen, dgen = store.bookmark_gen, store.drop_gen
            if error is None:
                wid = fake.next_watch_id
                fake.next_watch_id += 1
                fake.watch_conns[wid] = self.connection
        fake.count(key, token, 200, "GET", self.path, q)
        self.log_request(200)
        self.send_response_only(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        if error is not None:
            try:
                self.chunk(json.dumps({"type": "ERROR", "object": error},
                                      separators=(",", ":")).encode() + b"\n")
                self.chunk(b"")
            except OSError:
                self.close_connection = True
            return
        with fake.stats_lock:
            fake.open_watches[res] = fake.open_watches.get(res, 0) + 1
            fake.watches_started[res] = fake.watches_started.get(res, 0) + 1
        clean = False
        try:
            for obj in initial:
                self.chunk(self.event_line("ADDED", obj))
            while True:
                with store.lock:
                    while True:
                        if store.stopping or store.drop_gen != dgen:
                            break
                        i = bisect.bisect_right(store.event_rvs, pos)
                        if i < len(store.events) or store.bookmark_gen != bgen:
                            break
                        left = deadline - time.monotonic()
                        if left <= 0:
                            break
                        store.cond.wait(min(left, 1.0))
                    if store.stopping or store.drop_gen != dgen:
                        break
                    if pos < store.compacted:
                        # Compacted under this watch's feet: the real server ends such a
                        # stream with the same ERROR.
                        pending = [("ERROR", status_obj(410, "Expired",
                                                        "too old resource version: %d (%d)" %
                                                        (pos, store.compacted)))]
                        pos = None
                    else:
                        i = bisect.bisect_right(store.event_rvs, pos)
                        pending = []
                        for rv, r, typ, old, new in store.events[i:]:
                            pos = rv
                            if r != res:
                                continue
                            t = translate(typ, old, new)
                            if t is not None:
                                pending.append((t, new))
                        if store.bookmark_gen != bgen:
                            bgen = store.bookmark_gen
                            if bookmarks:
                                pending.append(("BOOKMARK", {"kind": kind, "apiVersion": gv,
                                                             "metadata": {"resourceVersion":
                                                                          str(store.rv)}}))
                                pos = store.rv
                for typ, obj in pending:
                    if typ in ("ERROR", "BOOKMARK"):
                        line = json.dumps({"type": typ, "object": obj},
                                          separators=(",", ":")).encode() + b"\n"
                    else:
                        line = self.event_line(typ, obj)
                    self.chunk(line)
                if pos is None or time.monotonic() >= deadline:
                    self.chunk(b"")
                    clean = True
                    break
        except (OSError, ssl.SSLError):
            pass  # the client went away
        finally:
            with store.lock:
                fake.watch_conns.pop(wid, None)
            with fake.stats_lock:
                fake.open_watches[res] -= 1
            if not clean:
                # Dropped (drop_watches, an outage, the server stopping): abruptly, no last
                # chunk, as a server that died would.
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def handle_error(self, request, client_address):
        # A client that hangs up mid-answer or fails its handshake is not our error.
        exc = sys.exc_info()[1]
        if isinstance(exc, (OSError, ssl.SSLError, ValueError)):
            return
        super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, default=6443, help="0 picks a free port")
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--port-file", help="once listening, write the port here (via rename)")
    ap.add_argument("--token-file", help="the bearer token, re-read at every request")
    ap.add_argument("--cert", help="serve TLS with this certificate chain (PEM)")
    ap.add_argument("--key", help="and this key (PEM)")
    ap.add_argument("--objects", help="initial objects: a JSON list, or a dump")
    args = ap.parse_args()
    if bool(args.cert) != bool(args.key):
        ap.error("--cert and --key go together")

    fake = FakeKube(args)
    srv = Server((args.bind, args.port), Handler)
    srv.fake = fake
    srv.ssl_ctx = None
    if args.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.cert, args.key)
        ctx.set_alpn_protocols(["http/1.1"])
        srv.ssl_ctx = ctx
    port = srv.server_address[1]

    def stop(signum, frame):
        with fake.store.lock:
            fake.store.stopping = True
            fake.store.cond.notify_all()
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.rename(tmp, args.port_file)
    print("listening on %d" % port, flush=True)
    srv.serve_forever(poll_interval=0.1)
    srv.server_close()


if __name__ == "__main__":
    main()
