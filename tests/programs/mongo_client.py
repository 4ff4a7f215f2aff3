#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A MongoDB client for the NETWORK tests: pymongo (python3-pymongo, Debian's /usr/bin/python3)
against tests/tools/mongo_peer.py.

    mongo_client.py [--tls] PORT N_PING N_INSERT N_FIND [GOFILE]

Waits for GOFILE if given (20 s at most), then through one MongoClient on 127.0.0.1:PORT (over
TLS with --tls, the certificate not checked):
N_PING commands ping, N_INSERT insert_one into test.k, N_FIND find on test.k (each read to
its end), one command "bogus" (the peer answers ok 0, code 59) and one insert_one into
test.dup (ok 1 with writeErrors code 11000). Prints what pymongo returned or raised:

    ping=N insert=N find=N docs=N bogus_code=59 dup_code=11000

a count going up only on the answer expected (ok 1, an acknowledged insert, a document).
"""
import os
import sys
import time

import pymongo
from pymongo.errors import DuplicateKeyError, OperationFailure


def main():
    args = sys.argv[1:]
    tls = args[:1] == ["--tls"]
    if tls:
        args = args[1:]
    port, n_ping, n_insert, n_find = (int(a) for a in args[:4])
    gofile = args[4] if len(args) > 4 else None
    if gofile:
        for _ in range(400):
            if os.path.exists(gofile):
                break
            time.sleep(0.05)
    counts = {"ping": 0, "insert": 0, "find": 0, "docs": 0, "bogus_code": 0, "dup_code": 0}
    extra = {"tls": True, "tlsAllowInvalidCertificates": True} if tls else {}
    client = pymongo.MongoClient("127.0.0.1", port, serverSelectionTimeoutMS=10000,
                                 connectTimeoutMS=10000, socketTimeoutMS=10000, **extra)
    db = client.test
    for _ in range(n_ping):
        if db.command("ping").get("ok") == 1:
            counts["ping"] += 1
    for i in range(n_insert):
        if db.k.insert_one({"_id": 100 + i, "a": i}).acknowledged:
            counts["insert"] += 1
    for _ in range(n_find):
        docs = list(db.k.find({}))
        counts["find"] += 1
        counts["docs"] += len(docs)
    try:
        db.command("bogus")
    except OperationFailure as e:
        counts["bogus_code"] = e.code
    try:
        db.dup.insert_one({"_id": 1})
    except DuplicateKeyError as e:
        counts["dup_code"] = e.code
    client.close()
    print(" ".join("%s=%d" % kv for kv in counts.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
