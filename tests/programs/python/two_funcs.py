# ON_CPU workload: two threads, each calling one of two Python functions at random, which burn
# the CPU 3:1, measuring their own split with time.thread_time_ns(). Prints the shares it
# measured as "share <function> <percent>" once it has run for argv[1] seconds.
import random
import sys
import threading
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
spent = {"hot_outer_a": 0, "hot_outer_b": 0}
lock = threading.Lock()


def spin(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def hot_inner(n):
    return spin(n)


def hot_outer_a():
    return hot_inner(30000)


def hot_outer_b():
    return hot_inner(10000)


def worker():
    mine = {"hot_outer_a": 0, "hot_outer_b": 0}
    rng = random.Random()
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        # In random order: a fixed a, b, a, b... cycle of about the sampling period would
        # lock the profiler's samples to a phase of it (the split then off by 4 points).
        fn = hot_outer_a if rng.random() < 0.5 else hot_outer_b
        t0 = time.thread_time_ns()
        fn()
        mine[fn.__name__] += time.thread_time_ns() - t0
    with lock:
        for k, v in mine.items():
            spent[k] += v


print("ready", flush=True)
threads = [threading.Thread(target=worker, name="burn%d" % i) for i in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
total = sum(spent.values()) or 1
for k, v in sorted(spent.items()):
    print("share %s %.2f" % (k, 100.0 * v / total), flush=True)
