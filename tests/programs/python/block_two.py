# OFF_CPU workload: one thread blocks in two Python functions 3:1, in time.sleep and in a
# pipe read that a second thread answers, and measures its own split (monotonic clock).
# Prints "share <function> <percent>" after argv[1] seconds.
import os
import sys
import threading
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
rfd, wfd = os.pipe()
asked = threading.Event()
spent = {"wait_in_sleep": 0, "wait_in_pipe": 0}


def answerer():
    while True:
        asked.wait()
        asked.clear()
        time.sleep(0.010)
        os.write(wfd, b"x")


def wait_in_sleep():
    time.sleep(0.030)


def wait_in_pipe():
    asked.set()
    os.read(rfd, 1)


threading.Thread(target=answerer, daemon=True).start()
print("ready", flush=True)
end = time.monotonic() + SECONDS
while time.monotonic() < end:
    for fn in (wait_in_sleep, wait_in_pipe):
        t0 = time.monotonic_ns()
        fn()
        spent[fn.__name__] += time.monotonic_ns() - t0
total = sum(spent.values()) or 1
for k, v in sorted(spent.items()):
    print("share %s %.2f" % (k, 100.0 * v / total), flush=True)
