#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A small Cassandra CQL native protocol v4 server, for tests: real drivers talk to it.

    cql_responder.py [--host 127.0.0.1] [--port 19042] [--ready-file F] [--events]

There is no Cassandra in Debian or npm; this answers what drivers send (the DataStax python
driver's Cluster().connect(), npm cassandra-driver):
  OPTIONS -> SUPPORTED (CQL_VERSION 3.4.5, no compression)
  STARTUP, REGISTER -> READY (--events: then an EVENT, stream -1, STATUS_CHANGE UP)
  AUTH_RESPONSE -> AUTH_SUCCESS
  QUERY, and EXECUTE of a statement it prepared:
    text containing "nosuchtable" (or system.peers_v2, as Cassandra 3 does) -> ERROR 0x2200
    system.local / system.peers -> ROWS (one local node, no peers)
    USE ks -> RESULT Set_keyspace; CREATE/ALTER/DROP -> RESULT Schema_change
    other SELECT -> ROWS, one int column "v" = 42; anything else -> RESULT Void
  PREPARE -> RESULT Prepared (an int bound variable per '?' in the text)
  BATCH -> RESULT Void
  a frame of another protocol version -> ERROR 0x000A in a v4 frame, as Cassandra 3/4 do
  (drivers then retry with v4 on a new connection).
A query whose text contains "sleep" is answered 200 ms later, after the requests that follow
it: responses out of order, as stream ids allow. Stdlib only (Debian's /usr/bin/python3);
stops on SIGTERM/SIGINT.
"""
import argparse
import heapq
import os
import selectors
import signal
import socket
import struct
import sys
import time
import uuid

OPS = {"ERROR": 0x00, "STARTUP": 0x01, "READY": 0x02, "AUTHENTICATE": 0x03, "OPTIONS": 0x05,
       "SUPPORTED": 0x06, "QUERY": 0x07, "RESULT": 0x08, "PREPARE": 0x09, "EXECUTE": 0x0A,
       "REGISTER": 0x0B, "EVENT": 0x0C, "BATCH": 0x0D, "AUTH_RESPONSE": 0x0F,
       "AUTH_SUCCESS": 0x10}
T_INT, T_VARCHAR, T_UUID, T_INET, T_SET = 0x0009, 0x000D, 0x000C, 0x0010, 0x0022
HOST_ID = uuid.UUID("8e8b3cf4-51c2-4b94-9d3a-6b8e6a7c2f10")
SCHEMA = uuid.UUID("2a1d5c3e-0b7f-3c0e-9a41-7d3d2f0e9b55")


def short(n):
    return struct.pack(">H", n)


def string(s):
    b = s.encode()
    return short(len(b)) + b


def cell(b):
    return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b


def inet(addr):
    return socket.inet_aton(addr)


def col_type(t):
    if isinstance(t, tuple):
        return short(t[0]) + col_type(t[1])
    return short(t)


def rows(ks, table, cols, data):
    """RESULT Rows with a global table spec: cols [(name, type)], data [[bytes|None]]."""
    body = struct.pack(">iii", 2, 0x0001, len(cols)) + string(ks) + string(table)
    for name, t in cols:
        body += string(name) + col_type(t)
    body += struct.pack(">i", len(data))
    for row in data:
        for v in row:
            body += cell(v)
    return body


def text_set(items):
    out = struct.pack(">i", len(items))
    for s in items:
        out += cell(s.encode())
    return out


LOCAL_COLS = [("key", T_VARCHAR), ("bootstrapped", T_VARCHAR), ("broadcast_address", T_INET),
              ("cluster_name", T_VARCHAR), ("cql_version", T_VARCHAR),
              ("data_center", T_VARCHAR), ("host_id", T_UUID), ("listen_address", T_INET),
              ("partitioner", T_VARCHAR), ("rack", T_VARCHAR), ("release_version", T_VARCHAR),
              ("rpc_address", T_INET), ("schema_version", T_UUID),
              ("tokens", (T_SET, T_VARCHAR))]
PEER_COLS = [("peer", T_INET), ("data_center", T_VARCHAR), ("host_id", T_UUID),
             ("preferred_ip", T_INET), ("rack", T_VARCHAR), ("release_version", T_VARCHAR),
             ("rpc_address", T_INET), ("schema_version", T_UUID),
             ("tokens", (T_SET, T_VARCHAR))]


def local_row(host):
    return [b"local", b"COMPLETED", inet(host), b"rover-test", b"3.4.5", b"datacenter1",
            HOST_ID.bytes, inet(host), b"org.apache.cassandra.dht.Murmur3Partitioner",
            b"rack1", b"4.0.0", inet(host), SCHEMA.bytes, text_set(["0"])]


def error(code, msg):
    return OPS["ERROR"], struct.pack(">i", code) + string(msg)


class Responder:
    def __init__(self, host, events):
        self.host = host
        self.events = events
        self.prepared = {}  # id -> query text

    def answer_query(self, q):
        low = q.lower()
        if "nosuchtable" in low or "peers_v2" in low:
            word = "nosuchtable" if "nosuchtable" in low else "peers_v2"
            return error(0x2200, "unconfigured table %s" % word)
        if "system.local" in low:
            return OPS["RESULT"], rows("system", "local", LOCAL_COLS, [local_row(self.host)])
        if "system.peers" in low:
            return OPS["RESULT"], rows("system", "peers", PEER_COLS, [])
        first = low.split(None, 1)[0] if low.split() else ""
        if first == "use":
            ks = q.split(None, 1)[1].strip().strip('";')
            return OPS["RESULT"], struct.pack(">i", 3) + string(ks)
        if first in ("create", "alter", "drop"):
            target = "TABLE" if "table" in low else "KEYSPACE"
            body = struct.pack(">i", 5) + string(first.upper() + "D") + string(target)
            body += string("ks") + (string("t") if target == "TABLE" else b"")
            return OPS["RESULT"], body
        if first == "select":
            return OPS["RESULT"], rows("ks", "t", [("v", T_INT)], [[struct.pack(">i", 42)]])
        return OPS["RESULT"], struct.pack(">i", 1)

    def prepare(self, q):
        pid = struct.pack(">I", len(self.prepared) + 1) + b"\xab" * 12
        self.prepared[pid] = q
        nvars = q.count("?")
        meta = struct.pack(">iii", 0x0001, nvars, min(nvars, 1))
        meta += short(0) if nvars else b""
        meta += string("ks") + string("t")
        for i in range(nvars):
            meta += string("p%d" % i) + short(T_INT)
        if q.lower().startswith("select"):
            res = struct.pack(">ii", 0x0001, 1) + string("ks") + string("t")
            res += string("v") + short(T_INT)
        else:
            res = struct.pack(">ii", 0x0004, 0)  # no metadata
        return OPS["RESULT"], struct.pack(">i", 4) + short(len(pid)) + pid + meta + res

    def handle(self, version, opcode, body):
        """(opcode, body) of the answer, or None for no answer."""
        if version & 0x7F != 4:
            return error(0x000A, "Invalid or unsupported protocol version (%d); "
                         "supported versions are (3/v3, 4/v4)" % (version & 0x7F))
        if opcode == OPS["OPTIONS"]:
            mm = short(3) + string("CQL_VERSION") + short(1) + string("3.4.5")
            mm += string("COMPRESSION") + short(0)
            mm += string("PROTOCOL_VERSIONS") + short(2) + string("3/v3") + string("4/v4")
            return OPS["SUPPORTED"], mm
        if opcode in (OPS["STARTUP"], OPS["REGISTER"]):
            return OPS["READY"], b""
        if opcode == OPS["AUTH_RESPONSE"]:
            return OPS["AUTH_SUCCESS"], cell(None)
        if opcode == OPS["QUERY"]:
            (n,) = struct.unpack_from(">i", body, 0)
            return self.answer_query(body[4:4 + n].decode(errors="replace"))
        if opcode == OPS["PREPARE"]:
            (n,) = struct.unpack_from(">i", body, 0)
            return self.prepare(body[4:4 + n].decode(errors="replace"))
        if opcode == OPS["EXECUTE"]:
            (n,) = struct.unpack_from(">H", body, 0)
            q = self.prepared.get(body[2:2 + n])
            if q is None:
                return OPS["ERROR"], struct.pack(">i", 0x2500) + string("Prepared query "
                                                                        "not found") + short(n) + body[2:2 + n]
            return self.answer_query(q)
        if opcode == OPS["BATCH"]:
            return OPS["RESULT"], struct.pack(">i", 1)
        return error(0x000A, "unexpected opcode %d" % opcode)

    def event(self):
        body = string("STATUS_CHANGE") + string("UP") + bytes([4]) + inet(self.host)
        body += struct.pack(">i", 9042)
        return OPS["EVENT"], body


def frame(version, stream, opcode, body):
    return struct.pack(">BBhBi", version, 0, stream, opcode, len(body)) + body


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=19042)
    ap.add_argument("--ready-file")
    ap.add_argument("--events", action="store_true", help="an EVENT after each REGISTER")
    a = ap.parse_args()

    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind((a.host, a.port))
    lst.listen(16)
    sel = selectors.DefaultSelector()
    sel.register(lst, selectors.EVENT_READ, None)
    resp = Responder(a.host, a.events)
    later = []  # (due, n, sock, bytes)
    bufs = {}
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    if a.ready_file:
        with open(a.ready_file, "w") as f:
            f.write("%d\n" % os.getpid())
    n = 0
    while not stop:
        timeout = max(0.0, later[0][0] - time.monotonic()) if later else 0.5
        for key, _ in sel.select(timeout=min(timeout, 0.5)):
            if key.data is None:
                s, _ = lst.accept()
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                bufs[s] = b""
                sel.register(s, selectors.EVENT_READ, 1)
                continue
            s = key.fileobj
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data:
                sel.unregister(s)
                bufs.pop(s, None)
                s.close()
                later = [x for x in later if x[2] is not s]
                heapq.heapify(later)
                continue
            buf = bufs[s] + data
            out = b""
            while len(buf) >= 9:
                version, flags, stream, opcode, length = struct.unpack_from(">BBhBi", buf)
                if len(buf) < 9 + length:
                    break
                body, buf = buf[9:9 + length], buf[9 + length:]
                ans = resp.handle(version, opcode, body)
                rv = 0x84 if version & 0x7F != 4 else 0x80 | version
                f = frame(rv, stream, *ans)
                text = body.decode(errors="replace").lower()
                if opcode in (OPS["QUERY"], OPS["EXECUTE"]) and "sleep" in text:
                    n += 1
                    heapq.heappush(later, (time.monotonic() + 0.2, n, s, f))
                    continue
                out += f
                if opcode == OPS["REGISTER"] and a.events:
                    out += frame(0x84, -1, *resp.event())
            bufs[s] = buf
            if out:
                s.sendall(out)
        now = time.monotonic()
        while later and later[0][0] <= now:
            _, _, s, f = heapq.heappop(later)
            try:
                s.sendall(f)
            except OSError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
