#!/usr/bin/env python3
"""The scheduler's cost while nothing is due (issue 12), printed as a markdown table.

  bench/scheduler_bench.py [--scale X]

A release `ck-basal serve` with 1000 scheduled flows (cron "0 3 1 1 *" in ten zones:
nothing is due during the measurement), installed and approved through the ops socket.
Once every schedule is set (1000 schedule_set log lines), serve is left alone for a
window (30 s at scale 1) and the CPU time of each of its threads is read from
/proc/PID/task/TID/schedstat (nanoseconds on the CPU) before and after, with the
scheduler thread's wake-ups (voluntary context switches). The reference in the same run
is the same serve with no scheduled flow. Goal: under 1 ms of CPU per minute per 100
flows, and no wake-up of the scheduler while nothing is due.
A measurement, not a test: the exit status says only whether it ran.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_bench import CK, request  # noqa: E402

ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Kathmandu", "Australia/Lord_Howe",
         "Asia/Tokyo", "Europe/London", "America/Los_Angeles", "Africa/Cairo", "Pacific/Auckland"]


def threads(pid):
    """{tid: (name, cpu_ns, voluntary_switches)} of every thread of pid."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                cpu = int(f.read().split()[0])
            switches = 0
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        switches = int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            continue
        out[tid] = (name, cpu, switches)
    return out


def measure(flows, window_s):
    """Starts serve with `flows` scheduled flows; returns (process ms/min, scheduler ms/min,
    scheduler wake-ups in the window, seconds to set every schedule)."""
    work = tempfile.mkdtemp(prefix="basal-sched-bench-")
    home = os.path.join(work, "home")
    try:
        subprocess.run([CK, "--home", home, "setup"], check=True, capture_output=True)
        p = subprocess.Popen([CK, "--home", home, "serve", "--max-runs", "2"],
                             stderr=subprocess.PIPE, text=True)
        lines = []
        ready = threading.Event()
        all_set = threading.Event()

        def read():
            set_count = 0
            for line in p.stderr:
                lines.append(line)
                if "event=ready" in line:
                    ready.set()
                if "event=schedule_set" in line:
                    set_count += 1
                    if set_count >= flows:
                        all_set.set()
        threading.Thread(target=read, daemon=True).start()
        ready.wait(60)
        start = time.monotonic()
        for i in range(flows):
            d = os.path.join(work, f"f{i}")
            os.makedirs(d)
            with open(os.path.join(d, "flow.js"), "w") as f:
                f.write("return 1;\n")
            with open(os.path.join(d, "manifest.json"), "w") as f:
                json.dump({"format": 1, "id": f"f{i}", "version": 1, "purpose": "bench",
                           "trigger": {"schedule": {"cron": "0 3 1 1 *",
                                                    "tz": ZONES[i % len(ZONES)]}}}, f)
            got = request(home, "flow.install", {"dir": d})
            request(home, "flow.approve", {"id": f"f{i}", "version": 1,
                                           "code_hash": got["code_hash"]})
        if flows > 0 and not all_set.wait(300):
            raise RuntimeError("the schedules were not all set: " + "".join(lines[-5:]))
        set_s = time.monotonic() - start
        time.sleep(1.0)  # let the last sync's tail settle before the window
        before = threads(p.pid)
        time.sleep(window_s)
        after = threads(p.pid)
        p.terminate()
        p.wait(60)
        total_ns = sum(after[t][1] - before[t][1] for t in after if t in before)
        sched = [t for t in after if after[t][0] == "scheduler" and t in before]
        sched_ns = sum(after[t][1] - before[t][1] for t in sched)
        wakeups = sum(after[t][2] - before[t][2] for t in sched)
        per_min = 60.0 / window_s
        return (total_ns / 1e6 * per_min, sched_ns / 1e6 * per_min, wakeups, set_s)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    scale = 1.0
    if len(sys.argv) == 3 and sys.argv[1] == "--scale":
        scale = float(sys.argv[2])
    window = max(5.0, 30.0 * scale)
    flows = 1000
    base_total, base_sched, base_wake, _ = measure(0, window)
    total, sched, wake, set_s = measure(flows, window)
    goal = flows / 100 * 1.0
    print(f"Idle serve, nothing due, a {window:.0f} s window; CPU from /proc/PID/task/*/schedstat.")
    print()
    print("| serve | CPU of the whole process | CPU of the scheduler thread | scheduler wake-ups | goal |")
    print("|---|---|---|---|---|")
    print(f"| no scheduled flow (reference) | {base_total:.2f} ms/min | {base_sched:.3f} ms/min "
          f"| {base_wake} | |")
    print(f"| {flows} scheduled flows | {total:.2f} ms/min | {sched:.3f} ms/min | {wake} "
          f"| scheduler < {goal:.0f} ms/min ({sched / goal:.3f}x the goal), no wake-up |")
    print()
    print(f"Setting up the {flows} schedules through the socket (an install and an approval "
          f"each, every approval a sync of the scheduler): {set_s:.1f} s.")
    print("The process column includes the main thread's once-a-second pool upkeep, the "
          "same with or without schedules.")


if __name__ == "__main__":
    main()
