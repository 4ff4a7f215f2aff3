#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A small Kafka broker for recordings and integration tests (stdlib only), on 127.0.0.1.

    /usr/bin/python3 tests/tools/kafka_broker.py --port 19094 --ready-file /tmp/ready \
        [--advertise 127.0.0.1:19095]

Speaks the versions modern clients ask (kcat/librdkafka with default settings, kafkajs):
ApiVersions v0-3 (v3 flexible: request header v2, response header v0), Metadata v0-12
(flexible from v9) and Produce v0-11 (flexible from v9), with field layouts from Kafka's
message schemas (clients/src/main/resources/common/message/*.json). One broker, node id 1,
topics "t" and "bad" with one partition each; producing to "bad" fails with
MESSAGE_TOO_LARGE (10), Metadata of any other topic says UNKNOWN_TOPIC_OR_PARTITION (3).
Produce with acks=0 gets no response, as from a real broker. Any other API key or version
closes the connection (what a broker does with a request it cannot parse).

--advertise: the host:port Metadata names for the broker (a recording proxy's), default its
own. Runs until SIGTERM or SIGINT, then writes to stderr one line per kind of request it
answered (or took, for acks=0), for tests to compare with what a profiler saw:
    counted API TOPIC CODE N
API its name (ApiVersions, Metadata, Produce), TOPIC the first topic of the request ("-": none),
CODE the first non-zero error code of the response (0: none; "-": no response); then
    records TOPIC N
the records its Produce requests carried.
"""
import argparse
import collections
import signal
import socketserver
import struct
import sys
import threading

API_PRODUCE, API_METADATA, API_API_VERSIONS = 0, 3, 18
API_NAMES = {API_PRODUCE: "Produce", API_METADATA: "Metadata", API_API_VERSIONS: "ApiVersions"}
# key: (min, max, first flexible version)
SUPPORTED = {API_PRODUCE: (0, 11, 9), API_METADATA: (0, 12, 9), API_API_VERSIONS: (0, 3, 3)}
TOPICS = {"t": 1, "bad": 1}
ERR_UNKNOWN_TOPIC = 3
ERR_MESSAGE_TOO_LARGE = 10
ERR_UNSUPPORTED_VERSION = 35
NODE_ID = 1


class Reader:
    def __init__(self, data, flex=False):
        self.d, self.o, self.flex = data, 0, flex

    def take(self, n):
        if self.o + n > len(self.d):
            raise ValueError("short message")
        b = self.d[self.o:self.o + n]
        self.o += n
        return b

    def int(self, fmt):
        return struct.unpack(">" + fmt, self.take(struct.calcsize(fmt)))[0]

    def uvarint(self):
        v, shift = 0, 0
        while True:
            b = self.take(1)[0]
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                return v
            shift += 7
            if shift > 28:
                raise ValueError("varint too long")

    def string(self, compact=None):
        compact = self.flex if compact is None else compact
        n = self.uvarint() - 1 if compact else self.int("h")
        return None if n < 0 else self.take(n).decode("utf-8", "replace")

    def array_len(self):
        return self.uvarint() - 1 if self.flex else self.int("i")

    def bytes_(self):
        n = self.uvarint() - 1 if self.flex else self.int("i")
        return None if n < 0 else self.take(n)

    def tags(self):
        if self.flex:
            for _ in range(self.uvarint()):
                self.uvarint()
                self.take(self.uvarint())


class Writer:
    def __init__(self, flex=False):
        self.b, self.flex = bytearray(), flex

    def int(self, fmt, v):
        self.b += struct.pack(">" + fmt, v)

    def uvarint(self, v):
        while v >= 0x80:
            self.b.append((v & 0x7F) | 0x80)
            v >>= 7
        self.b.append(v)

    def string(self, s):
        if s is None:
            if self.flex:
                self.uvarint(0)
            else:
                self.int("h", -1)
            return
        e = s.encode()
        if self.flex:
            self.uvarint(len(e) + 1)
        else:
            self.int("h", len(e))
        self.b += e

    def array_len(self, n):
        if self.flex:
            self.uvarint(n + 1)
        else:
            self.int("i", n)

    def int32s(self, vals):
        self.array_len(len(vals))
        for v in vals:
            self.int("i", v)

    def tags(self):
        if self.flex:
            self.uvarint(0)


def api_versions(v, w):
    w.int("h", 0)
    w.array_len(len(SUPPORTED))
    for key, (lo, hi, _) in sorted(SUPPORTED.items()):
        w.int("h", key)
        w.int("h", lo)
        w.int("h", hi)
        w.tags()
    if v >= 1:
        w.int("i", 0)  # throttle_time_ms
    w.tags()


def metadata(v, r, w, advertise):
    names = None
    n = r.array_len()
    if n >= 0:
        names = []
        for _ in range(n):
            if v >= 10:
                r.take(16)  # topic_id
            names.append(r.string())
            r.tags()
    asked = names[0] if names else None
    if not names:
        names = sorted(TOPICS)
    host, port = advertise
    if v >= 3:
        w.int("i", 0)  # throttle_time_ms
    w.array_len(1)
    w.int("i", NODE_ID)
    w.string(host)
    w.int("i", port)
    if v >= 1:
        w.string(None)  # rack
    w.tags()
    if v >= 2:
        w.string("rover-test-cluster")
    if v >= 1:
        w.int("i", NODE_ID)  # controller_id
    w.array_len(len(names))
    for name in names:
        parts = TOPICS.get(name)
        w.int("h", 0 if parts else ERR_UNKNOWN_TOPIC)
        w.string(name)
        if v >= 10:
            w.b += bytes(16)  # topic_id: zero, unknown
        if v >= 1:
            w.int("b", 0)  # is_internal
        w.array_len(parts or 0)
        for p in range(parts or 0):
            w.int("h", 0)
            w.int("i", p)
            w.int("i", NODE_ID)
            if v >= 7:
                w.int("i", 0)  # leader_epoch
            w.int32s([NODE_ID])
            w.int32s([NODE_ID])
            if v >= 5:
                w.int32s([])
            w.tags()
        if v >= 8:
            w.int("i", -2147483648)  # topic_authorized_operations
        w.tags()
    if 8 <= v <= 10:
        w.int("i", -2147483648)  # cluster_authorized_operations
    w.tags()
    return asked, 0 if all(n in TOPICS for n in names) else ERR_UNKNOWN_TOPIC


class Broker:
    def __init__(self):
        self.lock = threading.Lock()
        self.offsets = {}
        self.counts = collections.Counter()
        self.records = collections.Counter()

    def count(self, api, topic, code):
        with self.lock:
            self.counts[(api, topic or "-", "-" if code is None else str(code))] += 1

    def count_records(self, topic, data):
        """Adds the records of a partition's data to topic's: a record batch (magic 2) says
        how many it holds; a legacy message set (magic 0 or 1: librdkafka sends those to a
        broker that has no Fetch v4) has one per entry (a compressed wrapper counts as one)."""
        n, off = 0, 0
        while data and off + 17 <= len(data):
            length = struct.unpack_from(">i", data, off + 8)[0]
            if data[off + 16] == 2 and off + 61 <= len(data):
                n += struct.unpack_from(">i", data, off + 57)[0]
            else:
                n += 1
            off += 12 + length
        with self.lock:
            self.records[topic] += n

    def report(self, f):
        with self.lock:
            for (api, topic, code), n in sorted(self.counts.items()):
                f.write("counted %s %s %s %d\n" % (api, topic, code, n))
            for topic, n in sorted(self.records.items()):
                f.write("records %s %d\n" % (topic, n))
        f.flush()

    def produce(self, v, r, w):
        """(first topic, first error code), code None when no response is due (acks=0)."""
        if v >= 3:
            r.string()  # transactional_id
        acks = r.int("h")
        r.int("i")  # timeout_ms
        topics = []
        for _ in range(r.array_len()):
            name = r.string()
            parts = []
            for _ in range(r.array_len()):
                index = r.int("i")
                self.count_records(name, r.bytes_())
                r.tags()
                parts.append(index)
            r.tags()
            topics.append((name, parts))
        first = topics[0][0] if topics else None
        if acks == 0:
            return first, None
        first_err = 0
        w.array_len(len(topics))
        for name, parts in topics:
            w.string(name)
            w.array_len(len(parts))
            for p in parts:
                err = 0
                if name == "bad":
                    err = ERR_MESSAGE_TOO_LARGE
                elif name not in TOPICS:
                    err = ERR_UNKNOWN_TOPIC
                with self.lock:
                    base = self.offsets.get((name, p), 0)
                    if not err:
                        self.offsets[(name, p)] = base + 1
                first_err = first_err or err
                w.int("i", p)
                w.int("h", err)
                w.int("q", base if not err else -1)
                if v >= 2:
                    w.int("q", -1)  # log_append_time_ms
                if v >= 5:
                    w.int("q", 0)  # log_start_offset
                if v >= 8:
                    w.array_len(0)  # record_errors
                    w.string(None)  # error_message
                w.tags()
            w.tags()
        if v >= 1:
            w.int("i", 0)  # throttle_time_ms
        w.tags()
        return first, first_err


class Handler(socketserver.BaseRequestHandler):
    def recv_exact(self, n):
        b = bytearray()
        while len(b) < n:
            chunk = self.request.recv(n - len(b))
            if not chunk:
                return None
            b += chunk
        return bytes(b)

    def handle(self):
        srv = self.server
        while True:
            head = self.recv_exact(4)
            if head is None:
                return
            size = struct.unpack(">i", head)[0]
            if size < 8 or size > 100 << 20:
                return
            msg = self.recv_exact(size)
            if msg is None:
                return
            r = Reader(msg)
            key, v, corr = r.int("h"), r.int("h"), r.int("i")
            r.string(compact=False)  # client_id
            sup = SUPPORTED.get(key)
            if sup is None:
                return
            lo, hi, flex_from = sup
            if key == API_API_VERSIONS and not lo <= v <= hi:
                # KIP-511: answer a v0 body with UNSUPPORTED_VERSION, header v0.
                w = Writer()
                w.int("h", ERR_UNSUPPORTED_VERSION)
                w.array_len(len(SUPPORTED))
                for k, (klo, khi, _) in sorted(SUPPORTED.items()):
                    w.int("h", k)
                    w.int("h", klo)
                    w.int("h", khi)
                self.send(corr, bytes(w.b), False)
                srv.broker.count("ApiVersions", None, ERR_UNSUPPORTED_VERSION)
                continue
            if not lo <= v <= hi:
                return
            flex = v >= flex_from
            r.flex = flex
            r.tags()
            w = Writer(flex)
            try:
                if key == API_API_VERSIONS:
                    api_versions(v, w)
                    topic, code = None, 0
                elif key == API_METADATA:
                    topic, code = metadata(v, r, w, srv.advertise)
                elif key == API_PRODUCE:
                    topic, code = srv.broker.produce(v, r, w)
            except ValueError:
                return
            srv.broker.count(API_NAMES[key], topic, code)
            if code is None:
                continue
            # ApiVersions answers with a v0 header whatever the version (KIP-511).
            self.send(corr, bytes(w.b), flex and key != API_API_VERSIONS)

    def send(self, corr, body, tagged_header):
        hdr = struct.pack(">i", corr) + (b"\x00" if tagged_header else b"")
        self.request.sendall(struct.pack(">i", len(hdr) + len(body)) + hdr + body)


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=19094)
    ap.add_argument("--advertise", help="host:port in Metadata, default 127.0.0.1:PORT")
    ap.add_argument("--ready-file")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    srv = Server(("127.0.0.1", args.port), Handler)
    adv = args.advertise or "127.0.0.1:%d" % args.port
    host, port = adv.rsplit(":", 1)
    srv.advertise = (host, int(port))
    srv.broker = Broker()
    if args.ready_file:
        with open(args.ready_file, "w") as f:
            f.write("%d\n" % args.port)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()
        srv.broker.report(sys.stderr)


if __name__ == "__main__":
    main()
