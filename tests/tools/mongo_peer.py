#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A MongoDB server for recording and integration tests: MockupDB (python3-mockupdb, a real
OP_MSG/OP_QUERY wire server from MongoDB Inc.) with canned answers, on 127.0.0.1.

    /usr/bin/python3 tests/tools/mongo_peer.py --port 17017 --ready-file /tmp/ready [--ssl]

Answers: hello/isMaster (maxWireVersion --max-wire, 21 by default: npm mongodb 7 needs 8+),
ping, insert (into "dup": ok 1 with a writeErrors E11000), find (one document, cursor id 0 as
Int64), anything else ok 1, but the command "bogus": ok 0, code 59 (CommandNotFound). A request
with moreToCome (w:0 writes, endSessions) gets no reply, as from a real server.
--ssl: TLS only, with MockupDB's own certificate (CPython's ssl: SSL_read_ex/SSL_write_ex).
Runs until SIGTERM or SIGINT, then writes to stderr one line per kind of request it took, for
tests to compare with what a profiler saw:
    counted COMMAND TARGET CODE N
COMMAND the first key of the command document as sent, TARGET its value when a string (the
collection; "-" otherwise), CODE the code of the answer (0: success; "-": no reply).
"""
import argparse
import collections
import signal
import sys
import threading
import time

from bson.int64 import Int64
from mockupdb import MockupDB


COUNTS = collections.Counter()
LOCK = threading.Lock()


def count(doc, code):
    first = next(iter(doc), "-") if doc else "-"
    target = doc.get(first) if doc else None
    key = (first, target if isinstance(target, str) and target else "-",
           "-" if code is None else str(code))
    with LOCK:
        COUNTS[key] += 1


def report(f):
    with LOCK:
        for (cmd, target, code), n in sorted(COUNTS.items()):
            f.write("counted %s %s %s %d\n" % (cmd, target, code, n))
    f.flush()


def handle(request):
    name = request.command_name or ""
    doc = request.doc
    lname = name.lower()
    if getattr(request, "flags", 0) & 2:
        count(doc, None)
        return True  # moreToCome: the client wants no reply
    code = 0
    if lname in ("ismaster", "hello"):
        request.replies({"ismaster": True, "isWritablePrimary": True, "helloOk": True,
                         "minWireVersion": 0, "maxWireVersion": handle.max_wire,
                         "maxBsonObjectSize": 16777216, "maxMessageSizeBytes": 48000000,
                         "maxWriteBatchSize": 100000, "localTime": time.time(),
                         "logicalSessionTimeoutMinutes": 30, "connectionId": 1})
    elif name == "bogus":
        code = 59
        request.replies({"ok": 0, "errmsg": "no such command: 'bogus'", "code": 59,
                         "codeName": "CommandNotFound"})
    elif name == "insert" and doc.get("insert") == "dup":
        code = 11000
        request.replies({"ok": 1, "n": 0, "writeErrors": [
            {"index": 0, "code": 11000, "errmsg": "E11000 duplicate key error"}]})
    elif name == "insert":
        request.replies({"ok": 1, "n": 1})
    elif name == "find":
        coll = doc.get("find")
        request.replies({"ok": 1, "cursor": {
            "id": Int64(0), "ns": "test.%s" % coll,
            "firstBatch": [{"_id": 1, "a": "hello-mongo"}]}})
    else:
        request.replies({"ok": 1})
    count(doc, code)
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=17017)
    ap.add_argument("--ready-file")
    ap.add_argument("--max-wire", type=int, default=21)
    ap.add_argument("--ssl", action="store_true")
    args = ap.parse_args()
    handle.max_wire = args.max_wire
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    server = MockupDB(port=args.port, request_timeout=int(1e6), ssl=args.ssl)
    server.autoresponds(handle)
    server.run()
    if args.ready_file:
        with open(args.ready_file, "w") as f:
            f.write("%d\n" % server.port)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        report(sys.stderr)


if __name__ == "__main__":
    main()
