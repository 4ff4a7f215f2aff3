#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A logging TCP proxy for recording real protocol conversations (test tool, stdlib only).

Listens on 127.0.0.1:--listen, connects each accepted client to 127.0.0.1:--target and
forwards both ways. Connection N is written as OUT.N.c2s (what the client sent) and OUT.N.s2c
(what the server sent): one line per recv() the proxy made, "SEQ HEX", where SEQ numbers the
chunks of both files of that connection in the order the proxy got them (so a reader can
interleave the two directions again). Lines starting with '#' are comments.

    /usr/bin/python3 tests/tools/record_chunks.py --listen 17018 --target 17017 \
        --out /tmp/rec/mongo --ready-file /tmp/rec/ready

Runs until SIGTERM or SIGINT; files are flushed after every chunk.
"""
import argparse
import os
import selectors
import signal
import socket
import sys


class Conn:
    def __init__(self, n, client, server, out):
        self.n = n
        self.seq = 0
        self.socks = {client: server, server: client}
        self.files = {
            client: open("%s.%d.c2s" % (out, n), "w"),
            server: open("%s.%d.s2c" % (out, n), "w"),
        }
        for f, what in ((self.files[client], "client to server"),
                        (self.files[server], "server to client")):
            f.write("# connection %d, %s: SEQ HEX per recv()\n" % (n, what))
            f.flush()

    def close(self, sel):
        for s in self.socks:
            try:
                sel.unregister(s)
            except (KeyError, ValueError):
                pass
            s.close()
        for f in self.files.values():
            f.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", type=int, required=True)
    ap.add_argument("--target", type=int, required=True)
    ap.add_argument("--out", required=True, help="path prefix of the recordings")
    ap.add_argument("--ready-file")
    args = ap.parse_args()

    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    sel = selectors.DefaultSelector()
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", args.listen))
    lsock.listen(16)
    sel.register(lsock, selectors.EVENT_READ, None)
    if args.ready_file:
        with open(args.ready_file, "w") as f:
            f.write("%d\n" % os.getpid())
    nconn = 0
    try:
        while True:
            for key, _ in sel.select():
                s = key.fileobj
                if s is lsock:
                    client, _ = lsock.accept()
                    server = socket.create_connection(("127.0.0.1", args.target))
                    conn = Conn(nconn, client, server, args.out)
                    nconn += 1
                    sel.register(client, selectors.EVENT_READ, conn)
                    sel.register(server, selectors.EVENT_READ, conn)
                    continue
                conn = key.data
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    conn.close(sel)
                    continue
                f = conn.files[s]
                f.write("%d %s\n" % (conn.seq, data.hex()))
                f.flush()
                conn.seq += 1
                conn.socks[s].sendall(data)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
