#!/usr/bin/python3
"""A Python TLS peer for the NETWORK TLS tests (stdlib only; run with Debian's /usr/bin/python3).

CPython's _ssl calls only SSL_read_ex and SSL_write_ex of libssl.so.3 (3.10 and later), and
libssl is mapped only when ssl is first imported (http.client imports it).

  tls_py.py client URL N [GOFILE]  with GOFILE, first waits (20 s at most) for that file to
                                   exist, and only then imports ssl: a profiler started before
                                   it sees libssl mapped after its task began; then makes
                                   GOFILE.PID and waits for GOFILE.next. Then N GETs over
                                   one kept-alive HTTPS connection, certificate not verified;
                                   prints "totals CODE=N ..." of the responses read
  tls_py.py server PORT CERT KEY   https on 127.0.0.1:PORT, HTTP/1.1 keep-alive: /ok* -> 200,
                                   /missing -> 404, /fail -> 500, others 404; prints "ready",
                                   and on SIGTERM "totals 200=N 404=N 500=N", then exits
"""
import os
import signal
import sys
import threading
import time

totals = {200: 0, 404: 0, 500: 0}
lock = threading.Lock()


def count(code):
    with lock:
        totals[code] = totals.get(code, 0) + 1


def line():
    with lock:
        return "totals " + " ".join("%d=%d" % (c, totals[c]) for c in sorted(totals))


def client(url, n, gofile):
    if gofile:
        for _ in range(400):
            if os.path.exists(gofile):
                break
            time.sleep(0.05)
    import http.client
    import ssl
    import urllib.parse

    if gofile:
        # libssl is mapped now: say so, and wait for the go-ahead (a profiler finds it).
        with open("%s.%d" % (gofile, os.getpid()), "w"):
            pass
        for _ in range(400):
            if os.path.exists(gofile + ".next"):
                break
            time.sleep(0.05)
    u = urllib.parse.urlsplit(url)
    ctx = ssl._create_unverified_context()
    conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=30)
    path = u.path or "/"
    if u.query:
        path += "?" + u.query
    err = None
    for _ in range(n):
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            resp.read()
        except (OSError, http.client.HTTPException) as e:
            err = e
            break
        count(resp.status)
    conn.close()
    print(line(), flush=True)
    if err:
        print("tls_py:", err, file=sys.stderr)
        sys.exit(1)


def server(port, cert, key):
    import http.server
    import ssl

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, with Content-Length

        def do_GET(self):
            path = self.path.split("?")[0]
            code, body = 404, b"missing\n"
            if path.startswith("/ok"):
                code, body = 200, b"ok\n"
            elif path == "/fail":
                code, body = 500, b"fail\n"
            self.send_response(code)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            count(code)

        def log_message(self, *args):
            pass

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["http/1.1"])
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    srv.daemon_threads = True
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)

    def on_term(signum, frame):
        print(line(), flush=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    print("ready", flush=True)
    srv.serve_forever()


def main():
    a = sys.argv[1:]
    if len(a) == 4 and a[0] == "server":
        server(int(a[1]), a[2], a[3])
    elif len(a) in (3, 4) and a[0] == "client":
        client(a[1], int(a[2]), a[3] if len(a) == 4 else None)
    else:
        print("usage: tls_py.py client URL N [GOFILE] | server PORT CERT KEY", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
