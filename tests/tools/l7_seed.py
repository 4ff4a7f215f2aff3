#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Turns a recording of tests/tools/record_conns.py into a seed of the l7 fuzz targets.

    l7_seed.py DIR/NAME OUT [--server] [--from N] [--cut SEG:CAPTURED] [--lost SEG]
               [--close-at SEG]

The seed is the input format of tests/fuzz/l7_fuzz.h: per segment an opcode (bit 7 ingress,
bit 6 two length bytes, a time step of 1), its length, a gap byte and the bytes. As the
client the client's segments are egress; --server swaps. --cut SEG:CAPTURED captures only the
first CAPTURED bytes of segment SEG (the rest becomes the gap, rounded up to the gap byte's
unit); --lost SEG replaces segment SEG by a loss of unknown size; both may repeat.
"""
import argparse
import sys


def load(prefix):
    segs = []
    for d in ("c2s", "s2c"):
        with open("%s.%s" % (prefix, d)) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                seq, hexs = line.split()
                segs.append((int(seq), d == "c2s", bytes.fromhex(hexs)))
    segs.sort()
    return segs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("recording")
    ap.add_argument("out")
    ap.add_argument("--server", action="store_true")
    ap.add_argument("--from", dest="start", type=int, default=0)
    ap.add_argument("--cut", action="append", default=[])
    ap.add_argument("--lost", action="append", type=int, default=[])
    a = ap.parse_args()
    cuts = dict(tuple(int(x) for x in c.split(":")) for c in a.cut)
    out = bytearray()
    for seq, c2s, data in load(a.recording):
        if seq < a.start:
            continue
        ingress = c2s == a.server
        if seq in a.lost:
            out += bytes([0x80 * ingress | 0x04 | 2, 0])
            continue
        captured, gap, shift = data, 0, 0
        if seq in cuts:
            captured = data[: cuts[seq]]
            rest = len(data) - len(captured)
            shift = 0
            while (rest + (1 << shift) - 1) >> shift > 255:
                shift += 2
            gap = (rest + (1 << shift) - 1) >> shift
        n = len(captured)
        if n > 0xFFFF:
            sys.exit("segment %d too long" % seq)
        op = 0x80 * ingress | (0x40 if n > 255 else 0) | (shift // 2) << 2
        if not shift:
            op |= 0x04
        out += bytes([op, n & 0xFF]) + (bytes([n >> 8]) if n > 255 else b"")
        out += bytes([gap]) + captured
    with open(a.out, "wb") as f:
        f.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
