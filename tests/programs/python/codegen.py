# Code objects freed and their addresses reused: compiles a new function in a loop, runs it
# for a while, drops it. Function n is "gen_<n>_<line>", compiled from the file name
# "gen_<n>.py" with its body on line <line>, so a frame names its code rightly only when
# name, file and line agree; each runs about 10 ms, so a profile meets most of them by name
# (a stale name would repeat a few). Runs for argv[1] seconds, then prints "generated <n>".
import sys
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0

TEMPLATE = "{pad}def gen_{n}_{line}():\n    x = 0\n    for i in range(150000): x += i\n    return x\n"

print("ready", flush=True)
end = time.monotonic() + SECONDS
n = 0
while time.monotonic() < end:
    line = 1 + n % 40
    src = TEMPLATE.format(pad="\n" * (line - 1), n=n, line=line)
    scope = {}
    exec(compile(src, "gen_%d.py" % n, "exec"), scope)
    fn = scope["gen_%d_%d" % (n, line)]
    fn()
    # The function's globals are the scope that holds it: break the cycle, so that the code
    # object and its strings are freed now and the next compile takes their addresses.
    scope.clear()
    del fn, scope
    n += 1
print("generated %d" % n, flush=True)
