#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A DNS server for tests that answers every A query with 127.0.0.1 and every other query with
no record, on UDP 127.0.0.1. Prints "listening on PORT" (flushed) once bound; SIGTERM stops it.
gRPC reaches it with a target naming the DNS server: dns://127.0.0.1:PORT/any.name:OAPPORT."""

import argparse
import signal
import socket
import struct
import sys


def answer(q):
    tid, _flags, qdcount = struct.unpack(">HHH", q[:6])
    if qdcount != 1:
        return None
    i = 12
    while i < len(q) and q[i]:
        i += q[i] + 1
    if i + 5 > len(q):
        return None
    qtype = struct.unpack(">H", q[i + 1:i + 3])[0]
    question = q[12:i + 5]
    if qtype == 1:
        rr = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton("127.0.0.1")
        return struct.pack(">HHHHHH", tid, 0x8180, 1, 1, 0, 0) + question + rr
    return struct.pack(">HHHHHH", tid, 0x8180, 1, 0, 0, 0) + question


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", args.port))
    print("listening on %d" % s.getsockname()[1], flush=True)
    while True:
        q, peer = s.recvfrom(512)
        a = answer(q)
        if a:
            s.sendto(a, peer)


if __name__ == "__main__":
    main()
