# Python calling C calling Python: libc's qsort through ctypes with a Python comparison that
# burns the CPU, and sorted() with a Python key that does. Runs for argv[1] seconds.
import ctypes
import ctypes.util
import sys
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
libc = ctypes.CDLL(ctypes.util.find_library("c"))
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))


def burn_in_compare(a, b):
    x = 0
    for i in range(300):
        x += i
    return a[0] - b[0]


def burn_in_key(v):
    x = 0
    for i in range(300):
        x += i
    return -v


def sort_with_qsort():
    arr = (ctypes.c_int * 64)(*range(64, 0, -1))
    libc.qsort(arr, len(arr), ctypes.sizeof(ctypes.c_int), CMP(burn_in_compare))


def sort_with_key():
    sorted(range(64), key=burn_in_key)


print("ready", flush=True)
end = time.monotonic() + SECONDS
while time.monotonic() < end:
    sort_with_qsort()
    sort_with_key()
