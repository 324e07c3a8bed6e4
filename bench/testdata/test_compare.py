#!/usr/bin/env python3
"""Checks bench/compare.py on the result files next to this script (run by ctest)."""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
COMPARE = os.path.join(HERE, "..", "compare.py")
failures = []


def run(*args):
    files = [os.path.join(HERE, a) if a.endswith(".json") else a for a in args]
    p = subprocess.run([sys.executable, COMPARE, *files], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def rows(stdout):
    """{benchmark: [old, new, new/old, flag]} from the printed table."""
    table = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.split(" | ")]
        if len(cells) == 4:
            ratio, _, flag = cells[3].partition("  ")
            table[cells[0]] = cells[1:3] + [ratio.strip(), flag.strip()]
    return table


def expect(what, actual, expected):
    if actual != expected:
        failures.append(f"{what}: expected {expected!r}, got {actual!r}")


code, out, err = run("compare_old.json", "compare_new.json")
expect("exit status", code, 0)
table = rows(out)
# Aggregates: the median (100 -> 110 us), not the mean (200 -> 50 us).
expect("BM_A/1", table.get("BM_A/1"), ["100 us", "110 us", "1.100", "slower"])
# Units differ between the files (ns and us); 2 % is within the default 5 %.
expect("BM_B", table.get("BM_B"), ["1 us", "980 ns", "0.980", ""])
# Repeated plain rows without aggregates: their median (20 -> 14 us).
expect("BM_C", table.get("BM_C"), ["20 us", "14 us", "0.700", "faster"])
expect("BM_Gone", table.get("BM_Gone"), ["5 ns", "-", "-", "only in old"])
expect("BM_Added", table.get("BM_Added"), ["-", "7 ns", "-", "only in new"])
expect("BM_Failed", table.get("BM_Failed"), ["50 ns", "-", "-", "failed or missing"])
expect("BM_Same", table.get("BM_Same"), ["1 ms", "1.04 ms", "1.040", ""])
expect("rows (no mean, stddev, BigO or RMS rows)", sorted(table),
       sorted(["benchmark", "BM_A/1", "BM_B", "BM_C", "BM_Gone", "BM_Added", "BM_Failed",
               "BM_Same"]))
expect("summary", out.splitlines()[-1], "2 of 7 benchmarks changed by more than 5 %")

code, out, err = run("--threshold", "3", "compare_old.json", "compare_new.json")
expect("--threshold 3: exit status", code, 0)
table = rows(out)
# 4 % is now beyond the threshold; 2 % still is not.
expect("--threshold 3: BM_Same", table.get("BM_Same"), ["1 ms", "1.04 ms", "1.040", "slower"])
expect("--threshold 3: BM_B", table.get("BM_B"), ["1 us", "980 ns", "0.980", ""])
expect("--threshold 3: summary", out.splitlines()[-1] if out else "",
       "3 of 7 benchmarks changed by more than 3 %")

code, out, err = run("--metric", "per_alloc", "compare_old.json", "compare_new.json")
expect("--metric per_alloc: exit status", code, 0)
table = rows(out)
expect("--metric per_alloc: BM_A/1", table.get("BM_A/1"), ["2e-06", "1e-06", "0.500", "lower"])
# Only BM_A/1 has the counter in both files.
expect("--metric per_alloc: BM_B", table.get("BM_B"), ["-", "-", "-", "failed or missing"])
expect("--metric per_alloc: summary", out.splitlines()[-1] if out else "",
       "1 of 7 benchmarks changed by more than 5 %")

for name, message in (("compare_malformed.json", "not valid JSON"),
                      ("compare_not_benchmark.json", 'no "benchmarks" list'),
                      ("compare_missing.json", "cannot read")):
    code, out, err = run("compare_old.json", name)
    expect(f"{name}: exit status", code, 2)
    expect(f"{name}: message", message in err and err.startswith("compare.py: error:"), True)

if failures:
    print("\n".join(["compare.py test FAILED:"] + failures))
    sys.exit(1)
print("compare.py test passed")
