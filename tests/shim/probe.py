"""Python's clocks for run.sh: time.time, time.monotonic, their _ns twins and time.sleep,
read for ~300 ms. CPython calls clock_gettime from libpython, and time.sleep computes its
deadline on the monotonic clock, so a shim that served MONOTONIC wrongly would shorten or
stretch sleeps. Checks that no reading goes back and that a sleep lasts what was asked;
prints `pid N`, `realtime NAME NS GRAIN_NS` and, for every clock it can read, `clock LABEL
CLOCK NS REAL1_NS REAL2_NS GRAIN_NS REAL_GRAIN_NS` (a reading between two REALTIME ones) for
run.sh's kernel brackets."""
import os
import sys
import time


def main():
    last = {}

    def check(name, value):
        if value < last.get(name, value):
            sys.exit(f"FAIL: {name} went back: {value} after {last[name]}")
        last[name] = value

    end = time.monotonic_ns() + 300_000_000
    n = 0
    while True:
        mono_ns = time.monotonic_ns()
        check("monotonic_ns", mono_ns)
        check("monotonic", time.monotonic())
        check("time_ns", time.time_ns())
        check("time", time.time())
        if mono_ns >= end:
            break
        n += 1
        if n % 2000 == 0:
            before = time.monotonic()
            time.sleep(0.001)
            # The kernel sleeps on its own MONOTONIC; vclock's may differ by tens of ns.
            if time.monotonic() - before < 0.001 - 50e-6:
                sys.exit(f"FAIL: time.sleep(0.001) lasted {time.monotonic() - before} s")
    print(f"pid {os.getpid()}")
    print(f"realtime time_ns {last['time_ns']} 1")
    # A double holds ~0.25 us at today's epoch: the float may round either way by that much.
    print(f"realtime time {int(last['time'] * 1e9)} 1000")
    # Every clock Python can name (the coarse ones by number: the time module has no name for
    # them), each between two REALTIME readings.
    clocks = [("MONOTONIC", time.CLOCK_MONOTONIC), ("MONOTONIC_RAW", time.CLOCK_MONOTONIC_RAW),
              ("BOOTTIME", time.CLOCK_BOOTTIME), ("TAI", getattr(time, "CLOCK_TAI", 11)),
              ("REALTIME_COARSE", 5), ("MONOTONIC_COARSE", 6)]
    real = time.CLOCK_REALTIME
    r1, x, r2 = time.time_ns(), time.monotonic_ns(), time.time_ns()
    print(f"clock monotonic_ns MONOTONIC {x} {r1} {r2} 1 1")
    for name, clock in clocks:
        r1 = time.clock_gettime_ns(real)
        x = time.clock_gettime_ns(clock)
        r2 = time.clock_gettime_ns(real)
        print(f"clock clock_gettime_ns({name}) {name} {x} {r1} {r2} 1 1")


main()
