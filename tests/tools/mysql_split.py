#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A MySQL client that writes each command's 4-byte header and its payload apart.

    mysql_split.py PORT N DELAY

Connects to 127.0.0.1:PORT (a server that lets any user in: MariaDB with
--skip-grant-tables), logs in as root without a password, then sends N times "SELECT 1" as a
COM_QUERY whose packet header goes first and its payload DELAY seconds later, reading each
answer whole, and ends with a COM_QUIT sent the same way. Prints "queries N" once all were
answered. MariaDB reads a packet's header by itself before its payload: with this client the
header's read returns DELAY seconds before the payload's, so a request seen to start with its
payload would look DELAY seconds shorter than it was.

Debian's python (/usr/bin/python3), standard library only.
"""
import socket
import struct
import sys
import time

CLIENT_LONG_PASSWORD = 0x1
CLIENT_PROTOCOL_41 = 0x200
CLIENT_TRANSACTIONS = 0x2000
CLIENT_SECURE_CONNECTION = 0x8000


def read_exact(s, n):
    buf = b""
    while len(buf) < n:
        got = s.recv(n - len(buf))
        if not got:
            sys.exit("mysql_split: the server closed the connection")
        buf += got
    return buf


def read_packet(s):
    head = read_exact(s, 4)
    n = head[0] | head[1] << 8 | head[2] << 16
    return head[3], read_exact(s, n)


def header(n, seq):
    return struct.pack("<I", n)[:3] + bytes([seq])


def send_split(s, payload, delay):
    s.sendall(header(len(payload), 0))
    time.sleep(delay)
    s.sendall(payload)


def check(payload, what):
    if payload[:1] == b"\xff":
        code = struct.unpack("<H", payload[1:3])[0]
        sys.exit("mysql_split: %s: ERR %d %r" % (what, code, payload[3:]))


def login(s):
    seq, greeting = read_packet(s)
    if greeting[:1] != b"\x0a":
        sys.exit("mysql_split: not a greeting: %r" % greeting[:16])
    caps = CLIENT_LONG_PASSWORD | CLIENT_PROTOCOL_41 | CLIENT_TRANSACTIONS | \
        CLIENT_SECURE_CONNECTION
    resp = struct.pack("<IIB23x", caps, 1 << 24, 33) + b"root\0" + b"\0"
    s.sendall(header(len(resp), seq + 1) + resp)
    seq, ok = read_packet(s)
    if ok[:1] == b"\xfe":
        # An authentication method switch: an empty password in any method.
        s.sendall(header(0, seq + 1))
        seq, ok = read_packet(s)
    check(ok, "login")
    if ok[:1] != b"\x00":
        sys.exit("mysql_split: login answered %r" % ok[:16])


def answer(s):
    """Reads a COM_QUERY's answer: an OK, an ERR, or a result set with its two EOFs."""
    _, first = read_packet(s)
    check(first, "SELECT 1")
    if first[:1] == b"\x00":
        return
    eofs = 0
    while eofs < 2:
        _, p = read_packet(s)
        check(p, "SELECT 1")
        if p[:1] == b"\xfe" and len(p) < 9:
            eofs += 1


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: mysql_split.py PORT N DELAY")
    port, n, delay = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    login(s)
    for _ in range(n):
        send_split(s, b"\x03SELECT 1", delay)
        answer(s)
    send_split(s, b"\x01", delay)
    s.close()
    print("queries %d" % n, file=sys.stderr)


if __name__ == "__main__":
    main()
