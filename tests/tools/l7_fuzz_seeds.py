#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes seeds of the l7 fuzz targets, in the input format of tests/fuzz/l7_fuzz.h.

    l7_fuzz_seeds.py recording DIR/NAME OUT [--server] [--from N] [--cut SEG:CAPTURED]...
                     [--lost SEG]...
    l7_fuzz_seeds.py built [--corpus DIR]

recording: a recording of tests/tools/tcp_record.py (DIR/NAME.c2s and .s2c, with or without
times) as one seed: per segment an opcode (bit 7 ingress, a time step of 1), its length, a
gap byte and the bytes. As the client the client's segments are egress; --server swaps.
--from N starts at segment N; --cut SEG:CAPTURED captures only the first CAPTURED bytes of
segment SEG (the rest becomes the gap, rounded up to the gap byte's unit); --lost SEG
replaces segment SEG by a loss of unknown size; both may repeat. How the seeds of fuzz_mysql
and fuzz_cql were made from tests/unit/data/{mysql,cql}.

built: the seeds of fuzz_mongo and fuzz_kafka (DIR/fuzz_{mongo,kafka}/, DIR by default
tests/fuzz/corpus): recordings of tests/unit/data as segments, and a few conversations built
here for what the recordings lack (exhaust replies, legacy opcodes, compression, flexible
Kafka versions, gaps and losses). Needs /usr/bin/python3 with python3-pymongo (its bson
module).
"""
import argparse
import os
import struct
import sys

try:
    import bson  # only the built seeds need it
except ImportError:
    bson = None

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def seg(ingress, data, gap=0, shift=0, wide=True):
    """A segment operation: time step 1 unless shift says more (the gap is byte << shift*2);
    its length in two bytes if wide or longer than 255."""
    n = len(data)
    assert n < 65536 and gap < 256
    wide = wide or n > 255
    op = (0x80 if ingress else 0) | (0x40 if wide else 0) | (shift << 2)
    if shift == 0:
        op |= 1 << 2
        assert gap == 0
    return bytes([op, n & 0xFF]) + (bytes([n >> 8]) if wide else b"") + bytes([gap]) + data


def lost(ingress, n=0, shift=1):
    return bytes([(0x80 if ingress else 0) | 2 | (shift << 2), n])


def load(prefix):
    """The segments of a recording, (seq, c2s, bytes) in SEQ order: lines "SEQ HEX" or
    "SEQ SECONDS HEX" (a time has a dot, hex never does)."""
    segs = []
    for suffix, c2s in (("c2s", True), ("s2c", False)):
        with open("%s.%s" % (prefix, suffix)) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                cols = line.split()
                if len(cols) == 3 or (len(cols) == 2 and "." in cols[1]):
                    del cols[1]
                segs.append((int(cols[0]), c2s, bytes.fromhex(cols[1] if len(cols) > 1 else "")))
    segs.sort()
    return segs


def recording(proto, name, server=False):
    """A recording of tests/unit/data whole, every length in two bytes."""
    segs = load(os.path.join(ROOT, "tests/unit/data", proto, name))
    return b"".join(seg(c2s == server, data) for _, c2s, data in segs)


def recording_seed(a):
    cuts = dict(tuple(int(x) for x in c.split(":")) for c in a.cut)
    out = bytearray()
    for seq, c2s, data in load(a.recording):
        if seq < a.start:
            continue
        ingress = c2s == a.server
        if seq in a.lost:
            out += lost(ingress)
            continue
        if len(data) > 0xFFFF:
            sys.exit("segment %d too long" % seq)
        if seq not in cuts:
            out += seg(ingress, data, wide=False)
            continue
        captured = data[: cuts[seq]]
        rest = len(data) - len(captured)
        # the time step is the shift: at least 1, so the gap byte counts 4 bytes at least
        shift = 1
        while (rest + (1 << 2 * shift) - 1) >> 2 * shift > 255:
            shift += 1
        out += seg(ingress, captured, (rest + (1 << 2 * shift) - 1) >> 2 * shift, shift,
                   wide=False)
    with open(a.out, "wb") as f:
        f.write(out)


# --- MongoDB ---

def mongo_msg(req_id, resp_to, opcode, body):
    return struct.pack("<iiii", 16 + len(body), req_id, resp_to, opcode) + body


def op_msg(req_id, resp_to, doc, flags=0, seqs=(), checksum=False):
    body = struct.pack("<I", flags | (1 if checksum else 0))
    for ident, docs in seqs:
        payload = ident.encode() + b"\0" + b"".join(bson.encode(d) for d in docs)
        body += b"\x01" + struct.pack("<i", 4 + len(payload)) + payload
    body += b"\x00" + bson.encode(doc)
    if checksum:
        body += b"\xde\xad\xbe\xef"
    return mongo_msg(req_id, resp_to, 2013, body)


def mongo_seeds():
    seeds = {
        "pymongo": recording("mongo", "pymongo"),
        "node": recording("mongo", "node"),
        "server_side": recording("mongo", "pymongo", server=True),
    }
    q = op_msg(100, 0, {"getMore": bson.Int64(7), "collection": "k", "$db": "t"}, 1 << 16)
    seeds["exhaust"] = (seg(False, q) + seg(True, op_msg(1, 100, {"ok": 1.0}, 2)) +
                        seg(True, op_msg(2, 1, {"ok": 1.0}, 2)) +
                        seg(True, op_msg(3, 2, {"ok": 0.0, "code": 43})))
    legacy = (mongo_msg(1, 0, 2004, struct.pack("<i", 0) + b"db.$cmd\0" +
                        struct.pack("<ii", 0, -1) + bson.encode({"$query": {"count": "c"}})) +
              mongo_msg(2, 0, 2002, struct.pack("<i", 0) + b"db.c\0" + bson.encode({"a": 1})) +
              mongo_msg(3, 0, 2005, struct.pack("<i", 0) + b"db.c\0" + struct.pack("<iq", 0, 5)))
    replies = (mongo_msg(10, 1, 1, struct.pack("<iqii", 2, 0, 0, 1) +
                         bson.encode({"$err": "x", "code": 2})) +
               mongo_msg(11, 3, 1, struct.pack("<iqii", 1, 0, 0, 0)))
    seeds["legacy"] = seg(False, legacy) + seg(True, replies)
    comp = mongo_msg(5, 0, 2012, struct.pack("<iib", 2013, 50, 2) + b"\x00" * 12)
    seq = op_msg(6, 0, {"insert": "s", "$db": "t"}, 0, [("documents", [{"_id": 1}, {"_id": 2}])],
                 checksum=True)
    seeds["compressed_sequences"] = (seg(False, comp + seq) +
                                     seg(True, mongo_msg(7, 5, 2012, struct.pack("<iib", 2013, 9, 1) + b"\x01\x02")) +
                                     seg(True, op_msg(8, 6, {"n": 0, "writeErrors": [{"index": 0, "code": 11000}], "ok": 1.0})))
    big = op_msg(20, 0, {"insert": "big", "documents": [{"x": "y" * 3000}], "$db": "t"})
    seeds["capture_gap"] = (seg(False, big[:200], gap=(len(big) - 200) >> 6, shift=3) +
                            seg(False, big[200 + ((len(big) - 200) >> 6 << 6):]) +
                            seg(True, op_msg(21, 20, {"ok": 1.0})))
    f = op_msg(30, 0, {"find": "lost", "$db": "t"})
    f2 = op_msg(32, 0, {"find": "found", "$db": "t"})
    seeds["lost"] = (seg(False, f[:25]) + lost(False, 0) + seg(False, f[25:]) + seg(False, f2) +
                     seg(True, op_msg(31, 30, {"ok": 1.0})) +
                     seg(True, op_msg(33, 32, {"ok": 1.0})))
    trunc = bytearray(op_msg(40, 0, {"find": "c", "filter": {"a": "b"}, "$db": "t"}))
    struct.pack_into("<i", trunc, 21, 5000)
    seeds["bad_bson"] = seg(False, bytes(trunc)) + seg(True, op_msg(41, 40, {"ok": 1.0}))
    return seeds


# --- Kafka ---

class W:
    def __init__(self, flex=False):
        self.b, self.flex = bytearray(), flex

    def i(self, fmt, v):
        self.b += struct.pack(">" + fmt, v)
        return self

    def uv(self, v):
        while v >= 0x80:
            self.b.append((v & 0x7F) | 0x80)
            v >>= 7
        self.b.append(v)
        return self

    def s(self, v):
        if v is None:
            return self.uv(0) if self.flex else self.i("h", -1)
        e = v.encode()
        if self.flex:
            self.uv(len(e) + 1)
        else:
            self.i("h", len(e))
        self.b += e
        return self

    def arr(self, n):
        return self.uv(n + 1) if self.flex else self.i("i", n)

    def tags(self):
        if self.flex:
            self.uv(0)
        return self


def kreq(key, ver, corr, flex, body):
    h = W().i("h", key).i("h", ver).i("i", corr).s("fuzz")
    if flex:
        h.uv(0)
    m = bytes(h.b) + body
    return struct.pack(">i", len(m)) + m


def kresp(corr, tagged, body):
    m = struct.pack(">i", corr) + (b"\x00" if tagged else b"") + body
    return struct.pack(">i", len(m)) + m


def kafka_seeds():
    seeds = {}
    for name in ("kcat_v0_consume", "kpy_v0_produce", "kcat_produce", "kcat_unknown_topic",
                 "kafkajs", "kpy_v0_acks0"):
        seeds[name] = recording("kafka", name)
    seeds["broker_side"] = recording("kafka", "kcat_error", server=True)

    p = W(True).s(None).i("h", -1).i("i", 1000).arr(1).s("orders").arr(1).i("i", 0)
    p.uv(6).b += b"abcde"
    p.tags().tags().tags()
    r = W(True).arr(1).s("orders").arr(1).i("i", 0).i("h", 6).i("q", 1).i("q", -1).i("q", 0)
    r.arr(1).i("i", 0).s("bad").tags().s(None).tags().tags().i("i", 0).tags()
    seeds["produce_v9"] = (seg(False, kreq(0, 9, 7, True, bytes(p.b))) +
                           seg(True, kresp(7, True, bytes(r.b))))

    f = W(True).i("i", -1).i("i", 500).i("i", 1).i("i", 1 << 20).i("b", 0).i("i", 0).i("i", -1)
    f.arr(1).s("events").arr(1).i("i", 0).i("i", -1).i("q", 5).i("i", -1).i("q", 0).i("i", 1 << 20)
    f.tags().tags().arr(0).s("").tags()
    fr = W(True).i("i", 0).i("h", 0).i("i", 0).arr(1).s("events").arr(1).i("i", 0).i("h", 1)
    fr.i("q", 5).i("q", 5).i("q", 0).arr(0).i("i", -1).uv(1).tags().tags().tags()
    seeds["fetch_v12"] = (seg(False, kreq(1, 12, 8, True, bytes(f.b))) +
                          seg(True, kresp(8, True, bytes(fr.b))))

    m = W(True).arr(1).i("q", 0).i("q", 0).s("clicks").tags().i("b", 1).i("b", 0).tags()
    mr = W(True).i("i", 0).arr(1).i("i", 1).s("h").i("i", 9092).s(None).tags().s("c").i("i", 1)
    mr.arr(1).i("h", 3).s("clicks").i("q", 0).i("q", 0).i("b", 0).arr(0).i("i", 0).tags().tags()
    seeds["metadata_v12"] = (seg(False, kreq(3, 12, 9, True, bytes(m.b))) +
                             seg(True, kresp(9, True, bytes(mr.b))))

    hb = kreq(12, 4, 10, True, W(True).s("g").i("i", 1).s("m").s(None).tags().b)
    big = bytearray(kreq(0, 7, 12, False, W().s(None).i("h", 1).i("i", 100).arr(1).s("t")
                         .arr(1).i("i", 0).i("i", 4000).b))
    struct.pack_into(">i", big, 0, len(big) - 4 + 4000)
    seeds["pipelined_gap_lost"] = (
        seg(False, hb + kreq(18, 3, 11, True, W(True).s("c").s("1").tags().b)) +
        seg(True, kresp(10, True, struct.pack(">ih", 0, 27) + b"\x00")) +
        seg(True, kresp(11, False, struct.pack(">hi", 0, 0))) +
        seg(False, bytes(big), gap=4000 >> 4, shift=2) +
        lost(True, 0) +
        seg(True, kresp(12, False, W().arr(0).i("i", 0).b)))
    return seeds


def built(a):
    if bson is None:
        sys.exit("the built seeds need python3-pymongo's bson: run with /usr/bin/python3")
    for target, seeds in (("fuzz_mongo", mongo_seeds()), ("fuzz_kafka", kafka_seeds())):
        d = os.path.join(a.corpus, target)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds.items():
            assert len(data) < 4096, (target, name, len(data))
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        print("%s: %d seeds" % (target, len(seeds)), file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("recording", help="one recording as one seed")
    r.add_argument("recording", help="DIR/NAME of NAME.c2s and NAME.s2c")
    r.add_argument("out")
    r.add_argument("--server", action="store_true")
    r.add_argument("--from", dest="start", type=int, default=0)
    r.add_argument("--cut", action="append", default=[])
    r.add_argument("--lost", action="append", type=int, default=[])
    b = sub.add_parser("built", help="the seeds of fuzz_mongo and fuzz_kafka")
    b.add_argument("--corpus", default=os.path.join(ROOT, "tests/fuzz/corpus"))
    a = ap.parse_args()
    (recording_seed if a.cmd == "recording" else built)(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
