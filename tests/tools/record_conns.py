#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A logging TCP proxy: records real client/server conversations for the parsers' unit tests.

    record_conns.py --listen 127.0.0.1:23306 --target 127.0.0.1:13306 --out DIR [--name mysql]
                  [--ready-file F] [--max-conns N]

Every accepted connection N is forwarded to the target and recorded as two files, one per
direction: DIR/NAME-N.c2s (what the client wrote) and DIR/NAME-N.s2c (what the server wrote).
Each line is one segment, as one recv() returned it: "SEQ HEX", SEQ counting the segments of
both directions of that connection in the order the proxy received them, so that a reader
can interleave the two files as the conversation went. Lines starting with '#' are comments.

Stdlib only (Debian's /usr/bin/python3). Stops after --max-conns connections have ended, or
on SIGTERM/SIGINT.
"""
import argparse
import os
import selectors
import signal
import socket
import sys


def addr(s):
    host, _, port = s.rpartition(":")
    return host or "127.0.0.1", int(port)


class Conn:
    def __init__(self, n, client, server, out, name):
        self.n = n
        self.seq = 0
        self.sock = {"c2s": client, "s2c": server}
        self.peer = {"c2s": server, "s2c": client}
        self.open = {"c2s": True, "s2c": True}
        self.files = {}
        for d in ("c2s", "s2c"):
            f = open(os.path.join(out, "%s-%d.%s" % (name, n, d)), "w")
            f.write("# %s connection %d, %s: SEQ HEX per recv()\n" % (name, n, d))
            self.files[d] = f

    def record(self, d, data):
        self.files[d].write("%d %s\n" % (self.seq, data.hex()))
        self.files[d].flush()
        self.seq += 1

    def close(self):
        for s in self.sock.values():
            try:
                s.close()
            except OSError:
                pass
        for f in self.files.values():
            f.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", required=True, help="HOST:PORT to accept on")
    ap.add_argument("--target", required=True, help="HOST:PORT to forward to")
    ap.add_argument("--out", required=True, help="directory for the recordings")
    ap.add_argument("--name", default="conn", help="file name prefix")
    ap.add_argument("--ready-file", help="written once listening")
    ap.add_argument("--max-conns", type=int, default=0, help="stop after N connections")
    a = ap.parse_args()

    os.makedirs(a.out, exist_ok=True)
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind(addr(a.listen))
    lst.listen(16)
    sel = selectors.DefaultSelector()
    sel.register(lst, selectors.EVENT_READ, None)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    if a.ready_file:
        with open(a.ready_file, "w") as f:
            f.write("%d\n" % os.getpid())
    nconn = ended = 0
    while not stop and not (a.max_conns and ended >= a.max_conns):
        for key, _ in sel.select(timeout=0.5):
            if key.data is None:
                client, _ = lst.accept()
                server = socket.create_connection(addr(a.target))
                for s in (client, server):
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                c = Conn(nconn, client, server, a.out, a.name)
                nconn += 1
                sel.register(client, selectors.EVENT_READ, (c, "c2s"))
                sel.register(server, selectors.EVENT_READ, (c, "s2c"))
                continue
            c, d = key.data
            try:
                data = c.sock[d].recv(65536)
            except OSError:
                data = b""
            if data:
                c.record(d, data)
                c.peer[d].sendall(data)
                continue
            sel.unregister(c.sock[d])
            c.open[d] = False
            try:
                c.peer[d].shutdown(socket.SHUT_WR)
            except OSError:
                pass
            if not any(c.open.values()):
                c.close()
                ended += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
