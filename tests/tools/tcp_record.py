#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A logging TCP proxy: records real client/server conversations as unit-test vectors.

    tcp_record.py [--count N] LISTEN_PORT SERVER_PORT OUT_PREFIX

Listens on 127.0.0.1:LISTEN_PORT and relays each accepted connection to
127.0.0.1:SERVER_PORT until both sides closed (or 10 s of silence); exits after N
connections (default 1), one after the other.

It writes OUT_PREFIX.c2s (what the client sent) and OUT_PREFIX.s2c (what the server sent),
one line per recv() (a segment as the proxy read it):

    <seq> <seconds since the first line> <hex bytes>

`seq` numbers the lines of both files together, in the order the proxy read them, so a
reader merges the two directions back into one conversation. Lines starting with '#' are
comments. With N > 1 a line "# connection K" starts each connection's lines. Debian's
python (/usr/bin/python3), standard library only.
"""
import argparse
import select
import socket
import time


class Log:
    def __init__(self, prefix):
        self.files = {d: open(prefix + "." + d, "w", encoding="ascii") for d in ("c2s", "s2c")}
        for name, f in self.files.items():
            f.write("# tcp_record.py %s\n" % name)
        self.seq = 0
        self.t0 = None

    def comment(self, text):
        for f in self.files.values():
            f.write("# %s\n" % text)

    def add(self, direction, data):
        now = time.monotonic()
        if self.t0 is None:
            self.t0 = now
        self.files[direction].write("%d %.6f %s\n" % (self.seq, now - self.t0, data.hex()))
        self.seq += 1

    def close(self):
        for f in self.files.values():
            f.close()


def relay(client, server_port, log):
    server = socket.create_connection(("127.0.0.1", server_port))
    peer = {client: server, server: client}
    name = {client: "c2s", server: "s2c"}
    live = [client, server]
    while live:
        ready, _, _ = select.select(live, [], [], 10)
        if not ready:
            break
        for s in ready:
            try:
                data = s.recv(65536)
            except ConnectionResetError:
                data = b""
            if not data:
                live.remove(s)
                try:
                    peer[s].shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                continue
            log.add(name[s], data)
            peer[s].sendall(data)
    client.close()
    server.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("listen", type=int)
    ap.add_argument("server", type=int)
    ap.add_argument("out")
    args = ap.parse_args()
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", args.listen))
    lsock.listen(4)
    log = Log(args.out)
    for k in range(args.count):
        client, _ = lsock.accept()
        if args.count > 1:
            log.comment("connection %d" % k)
        relay(client, args.server, log)
    log.close()


if __name__ == "__main__":
    main()
