#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A real gRPC conversation for the HTTP/2 parser's unit tests (grpcio, no protoc).

    grpc_peer.py server PORT          serves /rover.Test/{Echo,Fail,Count} until killed
    grpc_peer.py client PORT          calls Echo, Fail (NOT_FOUND), Count (3 replies), Echo

Messages are raw bytes (no serializer). Debian's python (/usr/bin/python3) with
python3-grpcio; the recording goes through tests/tools/tcp_record.py.
"""
import sys
import time
from concurrent import futures

import grpc


def echo(request, context):
    context.set_trailing_metadata((("x-rover", "echo"),))
    return b"echo:" + request


def fail(request, context):
    context.abort(grpc.StatusCode.NOT_FOUND, "no such thing")


def count(request, context):
    for i in range(3):
        yield b"n%d" % i


def server(port):
    handlers = {
        "Echo": grpc.unary_unary_rpc_method_handler(echo),
        "Fail": grpc.unary_unary_rpc_method_handler(fail),
        "Count": grpc.unary_stream_rpc_method_handler(count),
    }
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    srv.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("rover.Test", handlers),))
    srv.add_insecure_port("127.0.0.1:%d" % port)
    srv.start()
    print("ready", flush=True)
    srv.wait_for_termination()


def client(port):
    with grpc.insecure_channel("127.0.0.1:%d" % port) as ch:
        echo_call = ch.unary_unary("/rover.Test/Echo")
        print("Echo", echo_call(b"hi", metadata=(("sw8", "1-dHJhY2U=-c2Vn-0-c3Zj-aW5zdA==-L0VjaG8=-MTI3LjAuMC4x"),)))
        try:
            ch.unary_unary("/rover.Test/Fail")(b"x")
        except grpc.RpcError as e:
            print("Fail", e.code(), e.details())
        print("Count", list(ch.unary_stream("/rover.Test/Count")(b"")))
        print("Echo", echo_call(b"again"))


if __name__ == "__main__":
    {"server": server, "client": client}[sys.argv[1]](int(sys.argv[2]))
