#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seeds of fuzz_mongo and fuzz_kafka (tests/fuzz/corpus/fuzz_{mongo,kafka}/) in the
input format of tests/fuzz/fuzz_l7.h: recordings of tests/unit/data as segments, and a few
conversations built here for what the recordings lack (exhaust replies, legacy opcodes,
compression, flexible Kafka versions, gaps and losses). Needs /usr/bin/python3 with
python3-pymongo (its bson module).

    /usr/bin/python3 tests/tools/l7_fuzz_seeds.py
"""
import os
import struct
import sys

import bson

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def seg(ingress, data, gap=0, shift=0):
    """A segment operation: time step 1 unless shift says more (the gap is byte << shift*2)."""
    assert len(data) < 65536 and gap < 256
    op = (0x80 if ingress else 0) | 0x40 | (shift << 2)
    if shift == 0:
        op |= 1 << 2
        assert gap == 0
    return bytes([op, len(data) & 0xFF, len(data) >> 8, gap]) + data


def lost(ingress, n=0, shift=1):
    return bytes([(0x80 if ingress else 0) | 2 | (shift << 2), n])


def recording(proto, name, server=False):
    chunks = []
    for suffix, c2s in (("c2s", True), ("s2c", False)):
        path = os.path.join(ROOT, "tests/unit/data", proto, "%s.%s" % (name, suffix))
        for line in open(path):
            if line.startswith("#") or not line.strip():
                continue
            seq, hexs = line.split()
            chunks.append((int(seq), c2s, bytes.fromhex(hexs)))
    chunks.sort()
    return b"".join(seg(c2s == server, data) for _, c2s, data in chunks)


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


def main():
    for target, seeds in (("fuzz_mongo", mongo_seeds()), ("fuzz_kafka", kafka_seeds())):
        d = os.path.join(ROOT, "tests/fuzz/corpus", target)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds.items():
            assert len(data) < 4096, (target, name, len(data))
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        print("%s: %d seeds" % (target, len(seeds)), file=sys.stderr)


if __name__ == "__main__":
    main()
