#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A gRPC server or client over cleartext HTTP/2 (grpcio, no generated code: raw bytes).

  grpc_peer.py server PORT READY_FILE
      serves /rover.Test/Ok (answers b"ok"), /rover.Test/Fail (NOT_FOUND, code 5),
      /rover.Test/Echo (b"echo:" and the request, trailer x-rover: echo) and /rover.Test/Count
      (three replies) until SIGTERM; writes READY_FILE once it listens.
  grpc_peer.py client PORT N_OK N_FAIL [GO_FILE [BEFORE]]
      makes BEFORE (default 0) calls to Ok, waits for GO_FILE if given (printing "waiting"
      first), then makes N_OK and N_FAIL unary calls, all on one channel, and prints
      "ok=<calls that returned OK> fail=<calls that ended with NOT_FOUND>" (after the go file).
  grpc_peer.py conversation PORT
      calls Echo (with an sw8 header), Fail, Count and Echo again on one channel, printing
      each answer: the conversation recorded (tests/tools/tcp_record.py) as
      tests/unit/data/http2/grpc for the HTTP/2 parser's unit tests.
Run with /usr/bin/python3 (Debian's python3-grpcio).
"""
import os
import signal
import sys
import time

import grpc


def ident(b):
    return b


def serve(port, ready):
    from concurrent import futures

    def ok(req, ctx):
        return b"ok"

    def fail(req, ctx):
        ctx.abort(grpc.StatusCode.NOT_FOUND, "no such thing")

    def echo(req, ctx):
        ctx.set_trailing_metadata((("x-rover", "echo"),))
        return b"echo:" + req

    def count(req, ctx):
        for i in range(3):
            yield b"n%d" % i

    handlers = {
        "Ok": grpc.unary_unary_rpc_method_handler(ok, request_deserializer=ident,
                                                  response_serializer=ident),
        "Fail": grpc.unary_unary_rpc_method_handler(fail, request_deserializer=ident,
                                                    response_serializer=ident),
        "Echo": grpc.unary_unary_rpc_method_handler(echo, request_deserializer=ident,
                                                    response_serializer=ident),
        "Count": grpc.unary_stream_rpc_method_handler(count, request_deserializer=ident,
                                                      response_serializer=ident),
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("rover.Test", handlers),))
    server.add_insecure_port("127.0.0.1:%d" % port)
    server.start()
    with open(ready, "w") as f:
        f.write("ready\n")
    signal.signal(signal.SIGTERM, lambda *a: server.stop(0))
    server.wait_for_termination()


def client(port, n_ok, n_fail, go, before):
    ok = fail = 0
    with grpc.insecure_channel("127.0.0.1:%d" % port) as ch:
        call_ok = ch.unary_unary("/rover.Test/Ok", request_serializer=ident,
                                 response_deserializer=ident)
        call_fail = ch.unary_unary("/rover.Test/Fail", request_serializer=ident,
                                   response_deserializer=ident)
        for _ in range(before):
            call_ok(b"hello", timeout=10)
        if go:
            print("waiting", flush=True)
            for _ in range(400):
                if os.path.exists(go):
                    break
                time.sleep(0.05)
        for _ in range(n_ok):
            if call_ok(b"hello", timeout=10) == b"ok":
                ok += 1
        for _ in range(n_fail):
            try:
                call_fail(b"hello", timeout=10)
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.NOT_FOUND:
                    fail += 1
    print("ok=%d fail=%d" % (ok, fail), flush=True)


def conversation(port):
    sw8 = "1-dHJhY2U=-c2Vn-0-c3Zj-aW5zdA==-L0VjaG8=-MTI3LjAuMC4x"
    with grpc.insecure_channel("127.0.0.1:%d" % port) as ch:
        echo = ch.unary_unary("/rover.Test/Echo")
        print("Echo", echo(b"hi", metadata=(("sw8", sw8),)))
        try:
            ch.unary_unary("/rover.Test/Fail")(b"x")
        except grpc.RpcError as e:
            print("Fail", e.code(), e.details())
        print("Count", list(ch.unary_stream("/rover.Test/Count")(b"")))
        print("Echo", echo(b"again"))


if __name__ == "__main__":
    if sys.argv[1] == "server":
        serve(int(sys.argv[2]), sys.argv[3])
    elif sys.argv[1] == "conversation":
        conversation(int(sys.argv[2]))
    else:
        client(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]),
               sys.argv[5] if len(sys.argv) > 5 else None,
               int(sys.argv[6]) if len(sys.argv) > 6 else 0)
