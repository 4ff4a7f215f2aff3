#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A logging proxy for recording real client/server conversations as unit-test vectors.

    tcp_record.py [--udp] [--count N] LISTEN_PORT SERVER_PORT OUT_PREFIX

Listens on 127.0.0.1:LISTEN_PORT and relays to 127.0.0.1:SERVER_PORT. TCP: each accepted
connection is relayed until both sides close; UDP: each datagram from a client goes to the
server from one socket per client address, and the server's datagrams go back. The proxy
exits after N connections (TCP) or N client datagrams (UDP) have been relayed and answered
or idle for 2 s (default 1).

It writes OUT_PREFIX.c2s (what the client sent) and OUT_PREFIX.s2c (what the server sent),
one line per recv() (a TCP segment as the proxy read it; a UDP datagram):

    <seq> <seconds since the first line> <hex bytes>

`seq` numbers the lines of both files together, in the order the proxy read them, so a
reader can merge the two directions back into one conversation. Lines starting with '#'
are comments (the first one says what was recorded). Debian's python (/usr/bin/python3),
standard library only.
"""
import argparse
import select
import socket
import sys
import time


class Log:
    def __init__(self, prefix, what):
        self.files = {
            "c2s": open(prefix + ".c2s", "w", encoding="ascii"),
            "s2c": open(prefix + ".s2c", "w", encoding="ascii"),
        }
        for name, f in self.files.items():
            f.write("# tcp_record.py %s %s\n" % (what, name))
        self.seq = 0
        self.t0 = None

    def add(self, direction, data):
        now = time.monotonic()
        if self.t0 is None:
            self.t0 = now
        self.files[direction].write("%d %.6f %s\n" % (self.seq, now - self.t0, data.hex()))
        self.seq += 1

    def close(self):
        for f in self.files.values():
            f.close()


def relay_tcp(args, log):
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", args.listen))
    lsock.listen(4)
    for _ in range(args.count):
        client, _ = lsock.accept()
        server = socket.create_connection(("127.0.0.1", args.server))
        peer = {client: server, server: client}
        name = {client: "c2s", server: "s2c"}
        open_socks = [client, server]
        while open_socks:
            ready, _, _ = select.select(open_socks, [], [], 10)
            if not ready:
                break
            for s in ready:
                data = s.recv(65536)
                if not data:
                    open_socks.remove(s)
                    try:
                        peer[s].shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    continue
                log.add(name[s], data)
                peer[s].sendall(data)
        client.close()
        server.close()
    lsock.close()


def relay_udp(args, log):
    lsock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    lsock.bind(("127.0.0.1", args.listen))
    upstream = {}  # client address -> socket towards the server
    owner = {}
    seen = 0
    last = time.monotonic()
    while True:
        socks = [lsock] + list(upstream.values())
        ready, _, _ = select.select(socks, [], [], 0.2)
        if not ready and seen >= args.count and time.monotonic() - last > 2:
            break
        for s in ready:
            last = time.monotonic()
            if s is lsock:
                data, addr = lsock.recvfrom(65536)
                if addr not in upstream:
                    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    u.connect(("127.0.0.1", args.server))
                    upstream[addr] = u
                    owner[u] = addr
                log.add("c2s", data)
                upstream[addr].send(data)
                seen += 1
            else:
                data = s.recv(65536)
                log.add("s2c", data)
                lsock.sendto(data, owner[s])
    lsock.close()
    for u in upstream.values():
        u.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--udp", action="store_true")
    p.add_argument("--count", type=int, default=1)
    p.add_argument("listen", type=int)
    p.add_argument("server", type=int)
    p.add_argument("out_prefix")
    args = p.parse_args()
    log = Log(args.out_prefix, "%s 127.0.0.1:%d -> 127.0.0.1:%d" % (
        "udp" if args.udp else "tcp", args.listen, args.server))
    try:
        (relay_udp if args.udp else relay_tcp)(args, log)
    finally:
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
