#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A logging proxy for recording real client/server conversations as unit-test vectors.

    tcp_record.py [--udp] [--count N] [--per-conn] [--no-times] [--idle S] [--ready-file F]
                  LISTEN SERVER OUT

Listens on LISTEN and relays to SERVER, both [HOST:]PORT (host 127.0.0.1 if not given).
TCP: each accepted connection is relayed, a half close passed on, until both sides have
closed (or it was idle for --idle seconds, default 10, 0: never); UDP: each datagram from a
client goes to the server from one socket per client address, and the server's datagrams go
back. The proxy exits after N connections (TCP) or N client datagrams (UDP, once all was
idle for 2 s) have been relayed (--count, default 1; 0: until SIGTERM or SIGINT).

It writes OUT.c2s (what the client sent) and OUT.s2c (what the server sent), one line per
recv() (a TCP segment as the proxy read it; a UDP datagram):

    <seq> <seconds since the first line> <hex bytes>

or, with --no-times, "<seq> <hex bytes>". `seq` numbers the lines of both files together, in
the order the proxy read them, so a reader (tests/unit/l7_replay.h) can merge the two
directions back into one conversation. Lines starting with '#' are comments (the first one
says what was recorded). TCP connections go one at a time into these two files; with
--per-conn they are relayed side by side, connection N (from 0) into OUT.N.c2s and
OUT.N.s2c, each with its own seq and times. Files are flushed after every line. Relayed
sockets have TCP_NODELAY, so that the proxy passes each write on as it reads it. --ready-file
F: F gets the proxy's pid once it listens.

Debian's python (/usr/bin/python3), standard library only.
"""
import argparse
import os
import select
import selectors
import signal
import socket
import sys
import time


def addr(s):
    host, _, port = s.rpartition(":")
    return host or "127.0.0.1", int(port)


class Log:
    def __init__(self, prefix, what, times):
        cols = "SEQ SECONDS HEX" if times else "SEQ HEX"
        self.files = {}
        for name in ("c2s", "s2c"):
            f = open("%s.%s" % (prefix, name), "w", encoding="ascii")
            f.write("# tcp_record.py %s %s: %s per recv()\n" % (what, name, cols))
            f.flush()
            self.files[name] = f
        self.times = times
        self.seq = 0
        self.t0 = None

    def add(self, direction, data):
        now = time.monotonic()
        if self.t0 is None:
            self.t0 = now
        f = self.files[direction]
        if self.times:
            f.write("%d %.6f %s\n" % (self.seq, now - self.t0, data.hex()))
        else:
            f.write("%d %s\n" % (self.seq, data.hex()))
        f.flush()
        self.seq += 1

    def close(self):
        for f in self.files.values():
            f.close()


class Conn:
    def __init__(self, client, server, log):
        self.log = log
        self.peer = {client: server, server: client}
        self.dir = {client: "c2s", server: "s2c"}
        self.reading = {client, server}
        self.last = time.monotonic()


def relay_tcp(a, what, stop):
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(a.listen)
    lsock.listen(16)
    ready(a)
    sel = selectors.DefaultSelector()
    sel.register(lsock, selectors.EVENT_READ, None)
    shared = None if a.per_conn else Log(a.out, what, a.times)
    conns = set()
    accepted = ended = 0

    def end(c):
        nonlocal ended
        for s in c.peer:
            if s in c.reading:
                sel.unregister(s)
            s.close()
        if a.per_conn:
            c.log.close()
        conns.discard(c)
        ended += 1
        if not a.per_conn:
            sel.register(lsock, selectors.EVENT_READ, None)

    while not stop and not (a.count and ended >= a.count):
        for key, _ in sel.select(timeout=0.5):
            if key.data is None:
                client, _ = lsock.accept()
                server = socket.create_connection(a.server)
                for s in (client, server):
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                log = shared
                if a.per_conn:
                    log = Log("%s.%d" % (a.out, accepted),
                              "%s connection %d" % (what, accepted), a.times)
                else:
                    sel.unregister(lsock)  # one connection at a time into the one pair
                c = Conn(client, server, log)
                accepted += 1
                conns.add(c)
                for s in (client, server):
                    sel.register(s, selectors.EVENT_READ, c)
                continue
            c, s = key.data, key.fileobj
            if c not in conns:
                continue
            c.last = time.monotonic()
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if data:
                c.log.add(c.dir[s], data)
                try:
                    c.peer[s].sendall(data)
                except OSError:
                    end(c)
                continue
            sel.unregister(s)
            c.reading.discard(s)
            try:
                c.peer[s].shutdown(socket.SHUT_WR)
            except OSError:
                pass
            if not c.reading:
                end(c)
        if a.idle:
            for c in [c for c in conns if time.monotonic() - c.last > a.idle]:
                end(c)
    for c in list(conns):
        end(c)
    if shared:
        shared.close()
    lsock.close()


def relay_udp(a, what, stop):
    log = Log(a.out, what, a.times)
    lsock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    lsock.bind(a.listen)
    ready(a)
    upstream = {}  # client address -> socket towards the server
    owner = {}
    seen = 0
    last = time.monotonic()
    while not stop:
        socks = [lsock] + list(upstream.values())
        r, _, _ = select.select(socks, [], [], 0.2)
        if not r and a.count and seen >= a.count and time.monotonic() - last > 2:
            break
        for s in r:
            last = time.monotonic()
            if s is lsock:
                data, peer = lsock.recvfrom(65536)
                if peer not in upstream:
                    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    u.connect(a.server)
                    upstream[peer] = u
                    owner[u] = peer
                log.add("c2s", data)
                upstream[peer].send(data)
                seen += 1
            else:
                data = s.recv(65536)
                log.add("s2c", data)
                lsock.sendto(data, owner[s])
    lsock.close()
    for u in upstream.values():
        u.close()
    log.close()


def ready(a):
    if a.ready_file:
        with open(a.ready_file, "w") as f:
            f.write("%d\n" % os.getpid())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--udp", action="store_true", help="relay datagrams, not connections")
    p.add_argument("--count", type=int, default=1,
                   help="connections or client datagrams before exiting (0: until a signal)")
    p.add_argument("--per-conn", action="store_true",
                   help="TCP: connections side by side, each into OUT.N.c2s and OUT.N.s2c")
    p.add_argument("--no-times", dest="times", action="store_false",
                   help='lines "SEQ HEX", without the seconds')
    p.add_argument("--idle", type=float, default=10,
                   help="TCP: close a connection quiet this many seconds (0: never)")
    p.add_argument("--ready-file", help="written with the pid once listening")
    p.add_argument("listen", type=addr, help="[HOST:]PORT to listen on")
    p.add_argument("server", type=addr, help="[HOST:]PORT to relay to")
    p.add_argument("out", help="path prefix of the recording")
    a = p.parse_args()
    if a.per_conn and a.udp:
        p.error("--per-conn is for TCP")
    what = "%s %s:%d -> %s:%d" % (("udp" if a.udp else "tcp",) + a.listen + a.server)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    (relay_udp if a.udp else relay_tcp)(a, what, stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
