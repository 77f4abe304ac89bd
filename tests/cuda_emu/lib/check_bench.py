#!/usr/bin/python3
"""check_bench.py: runs a benchmark program on the emulated GPU and checks its output.

  check_bench.py --report bench/report.py --expect NAME[,NAME...] -- PROGRAM ARGS...

The GPU benchmarks first run on a lent GPU whose time is scarce; a crash, a
failed self-check or output report.py cannot read would waste that run. This
runs the program (small sizes, a tiny budget: timings mean nothing here) and
fails unless it exits 0, every stdout line is a JSON object, no line is an
{"error": ...} row, every expected workload has a timing row, and report.py
renders the lines. Standard library only.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", required=True, help="bench/report.py")
    ap.add_argument("--expect", required=True, help="workloads that must have a timing row")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        ap.error("no program given after --")

    run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sys.stderr.write(run.stderr)
    problems = []
    if run.returncode != 0:
        problems.append(f"{cmd[0]} exited with {run.returncode}")
    timed, errors = set(), []
    for n, line in enumerate(run.stdout.splitlines(), 1):
        try:
            rec = json.loads(line)
        except ValueError:
            problems.append(f"stdout line {n} is not JSON: {line[:120]!r}")
            continue
        if not isinstance(rec, dict):
            problems.append(f"stdout line {n} is not a JSON object: {line[:120]!r}")
        elif "error" in rec:
            errors.append(f"{rec.get('bench')} / {rec.get('impl')}: {rec['error']}")
        elif "meta" in rec:
            continue  # metadata (device, allocator statistics), as report.py reads it
        elif "bench" in rec:
            if not (rec.get("median_s", 0) > 0 and rec.get("samples", 0) > 0):
                problems.append(f"stdout line {n}: no positive median_s/samples: {line[:160]}")
            timed.add(rec["bench"])
    problems += [f"error row: {e}" for e in errors]
    missing = [w for w in a.expect.split(",") if w and w not in timed]
    if missing:
        problems.append(f"no timing row for {', '.join(missing)} (timed: {', '.join(sorted(timed))})")

    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write(run.stdout)
    try:
        rep = subprocess.run([sys.executable, a.report, f.name], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    finally:
        os.unlink(f.name)
    if rep.returncode != 0 or not rep.stdout.strip():
        problems.append(f"report.py failed ({rep.returncode}): {rep.stderr.strip()[-400:]}")

    print(f"{len(timed)} workloads timed: {', '.join(sorted(timed))}")
    if problems:
        for p in problems:
            print("FAIL:", p)
        return 1
    print(f"ok: {cmd[0]}: every self-check passed and report.py renders the output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
