#!/usr/bin/env python3
"""Compares two Google Benchmark JSON result files, benchmark by benchmark.

    bench/compare.py [--threshold PCT] [--metric FIELD] OLD.json NEW.json

The files come from `--benchmark_out=FILE --benchmark_out_format=json`. Benchmarks are matched
by name. When a file holds aggregate rows (from --benchmark_repetitions), the median is used;
repeated plain rows without aggregates are reduced to their median here. Complexity rows
(_BigO, _RMS) are left out. The table shows name | old | new | new/old; a ratio further from
1 than the threshold (default 5 %) is flagged "slower" or "faster" (for a counter: "higher" or
"lower"). Benchmarks in only one file, or that failed in either, are listed without a ratio.

Exit status: 0 when both files were read (whatever the ratios); 2 with a message when a file
cannot be read or is not a Google Benchmark JSON result.
"""

import argparse
import json
import statistics
import sys

# Nanoseconds per unit of Google Benchmark's "time_unit".
TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
TIME_FIELDS = ("real_time", "cpu_time")


class InputError(Exception):
    """A file that cannot be read or is not a Google Benchmark JSON result."""


def load(path):
    """The rows of `path`'s "benchmarks" list."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from e
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not valid JSON: {e}") from e
    rows = data.get("benchmarks") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise InputError(
            f"{path}: not a Google Benchmark JSON result (no \"benchmarks\" list; write one with "
            "--benchmark_out=FILE --benchmark_out_format=json)")
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("name"), str):
            raise InputError(f"{path}: benchmark entry {i} has no name")
    return rows


def value_of(path, row, metric):
    """`metric` of `row` (times in ns), None when the row lacks it (e.g. a failed run)."""
    if row.get("error_occurred"):
        return None
    value = row.get(metric)
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise InputError(f"{path}: {row['name']}: {metric} is not a number: {value!r}")
    if metric in TIME_FIELDS:
        unit = row.get("time_unit", "ns")
        if unit not in TIME_UNITS:
            raise InputError(f"{path}: {row['name']}: unknown time_unit {unit!r}")
        value *= TIME_UNITS[unit]
    return float(value)


def summarize(path, rows, metric):
    """{benchmark name: value or None (failed)} in file order, medians where repeated."""
    medians, plain, errors, order = {}, {}, set(), []
    for row in rows:
        run_type = row.get("run_type", "iteration")
        if run_type == "aggregate":
            name = row.get("run_name", row["name"])
            if row.get("aggregate_name") != "median":
                continue  # mean, stddev, cv; BigO and RMS of complexity fits
        else:
            name = row.get("run_name", row["name"])
        if name not in order:
            order.append(name)
        if row.get("error_occurred"):
            errors.add(name)
            continue
        value = value_of(path, row, metric)
        if value is None:
            continue
        if run_type == "aggregate":
            medians[name] = value
        else:
            plain.setdefault(name, []).append(value)
    result = {}
    for name in order:
        if name in medians:
            result[name] = medians[name]
        elif name in plain and name not in errors:
            result[name] = statistics.median(plain[name])
        else:
            result[name] = None
    return result


def format_value(value, metric):
    if value is None:
        return "-"
    if metric in TIME_FIELDS:
        for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
            if value >= scale:
                return f"{value / scale:.3g} {unit}"
        return f"{value:.3g} ns"
    return f"{value:.4g}"


def compare(old, new, metric, threshold):
    """The table's rows: (name, old, new, ratio, flag)."""
    names = list(old) + [name for name in new if name not in old]
    table = []
    for name in names:
        a, b = old.get(name), new.get(name)
        ratio, flag = None, ""
        if name not in old:
            flag = "only in new"
        elif name not in new:
            flag = "only in old"
        elif a is None or b is None:
            flag = "failed or missing"
        elif a == 0:
            flag = "old is 0"
        else:
            ratio = b / a
            if abs(ratio - 1) > threshold:
                more = ratio > 1
                if metric in TIME_FIELDS:
                    flag = "slower" if more else "faster"
                else:
                    flag = "higher" if more else "lower"
        table.append((name, format_value(a, metric), format_value(b, metric),
                      "-" if ratio is None else f"{ratio:.3f}", flag))
    return table


def print_table(table, out):
    header = ("benchmark", "old", "new", "new/old", "")
    widths = [max(len(row[i]) for row in table + [header]) for i in range(4)]
    def line(row):
        cells = [row[0].ljust(widths[0])] + [row[i].rjust(widths[i]) for i in (1, 2, 3)]
        return " | ".join(cells) + ("  " + row[4] if row[4] else "")
    print(line(header), file=out)
    print("-+-".join("-" * w for w in widths), file=out)
    for row in table:
        print(line(row), file=out)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Compare two Google Benchmark JSON result files (medians where present).")
    parser.add_argument("old", help="baseline result (JSON)")
    parser.add_argument("new", help="result to compare with the baseline (JSON)")
    parser.add_argument("--threshold", type=float, default=5.0, metavar="PCT",
                        help="flag ratios further than PCT %% from 1 (default 5)")
    parser.add_argument("--metric", default="real_time", metavar="FIELD",
                        help="field to compare: real_time (default), cpu_time or a counter")
    args = parser.parse_args(argv)
    if args.threshold < 0:
        parser.error("--threshold must not be negative")
    try:
        old = summarize(args.old, load(args.old), args.metric)
        new = summarize(args.new, load(args.new), args.metric)
    except InputError as e:
        print(f"compare.py: error: {e}", file=sys.stderr)
        return 2
    table = compare(old, new, args.metric, args.threshold / 100)
    print(f"{args.metric}: {args.old} -> {args.new} (flagged beyond {args.threshold:g} %)")
    print_table(table, sys.stdout)
    flagged = sum(1 for row in table if row[4] in ("slower", "faster", "higher", "lower"))
    print(f"{flagged} of {len(table)} benchmarks changed by more than {args.threshold:g} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
