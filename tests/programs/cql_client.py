#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A Cassandra CQL client for the NETWORK tests: the DataStax python driver (python3-cassandra,
Debian's /usr/bin/python3) on one native protocol v4 connection.

    cql_client.py PORT N M [GOFILE]

Waits for GOFILE if given (20 s at most), then opens one connection to 127.0.0.1:PORT (the
driver sends OPTIONS and STARTUP), runs N QUERY "SELECT v FROM t WHERE k = 1", one PREPARE of
"SELECT v FROM t WHERE k = ?" and M EXECUTE of it, then one QUERY "SELECT * FROM nosuchtable";
prints what the driver returned:

    options=1 startup=1 query=N prepare=1 execute=M error=1 error_code=8704

a count going up only when the driver got the answer it expects (rows, a prepared id, an
error), error_code the code of the last error. The low-level connection and not Cluster():
Cluster's control connection asks system tables on its own schedule, and every request here
is one this script made.
"""
import os
import sys
import threading
import time

from cassandra import ConsistencyLevel
from cassandra.connection import DefaultEndPoint
from cassandra.io.asyncorereactor import AsyncoreConnection
from cassandra.protocol import (ErrorMessage, ExecuteMessage, PrepareMessage, QueryMessage,
                                ResultMessage, RESULT_KIND_PREPARED, RESULT_KIND_ROWS)

ONE = ConsistencyLevel.ONE


def ask(conn, msg):
    """The decoded answer to msg: a ResultMessage, or the ErrorMessage as the server sent it
    (its code off the wire; wait_for_response() would turn it into an exception)."""
    done = threading.Event()
    got = []
    with conn.lock:
        rid = conn.get_request_id()
        conn.in_flight += 1

    def cb(response):
        with conn.lock:
            conn.in_flight -= 1
        got.append(response)
        done.set()

    conn.send_msg(msg, rid, cb)
    if not done.wait(10):
        raise TimeoutError("no answer to %s" % msg.name)
    return got[0]


def main():
    port, n, m = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    gofile = sys.argv[4] if len(sys.argv) > 4 else None
    if gofile:
        for _ in range(400):
            if os.path.exists(gofile):
                break
            time.sleep(0.05)
    counts = {"options": 0, "startup": 0, "query": 0, "prepare": 0, "execute": 0, "error": 0}
    code = 0
    AsyncoreConnection.initialize_reactor()
    conn = AsyncoreConnection.factory(DefaultEndPoint("127.0.0.1", port), 10,
                                      protocol_version=4)
    # factory() returns once the server said READY to STARTUP, after SUPPORTED to OPTIONS.
    counts["options"] = counts["startup"] = 1
    for _ in range(n):
        r = ask(conn, QueryMessage("SELECT v FROM t WHERE k = 1", ONE))
        if isinstance(r, ResultMessage) and r.kind == RESULT_KIND_ROWS:
            counts["query"] += 1
    r = ask(conn, PrepareMessage("SELECT v FROM t WHERE k = ?"))
    if isinstance(r, ResultMessage) and r.kind == RESULT_KIND_PREPARED:
        counts["prepare"] += 1
        for i in range(m):
            e = ask(conn, ExecuteMessage(r.query_id, [(i).to_bytes(4, "big")], ONE))
            if isinstance(e, ResultMessage) and e.kind == RESULT_KIND_ROWS:
                counts["execute"] += 1
    r = ask(conn, QueryMessage("SELECT * FROM nosuchtable", ONE))
    if isinstance(r, ErrorMessage):
        counts["error"] += 1
        code = r.code
    conn.close()
    print(" ".join("%s=%d" % kv for kv in counts.items()) + " error_code=%d" % code, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
