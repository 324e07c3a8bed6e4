"""Checks a primjit-run --bench-json file against the schema documented in README.md
("Benchmark a kernel"): every field present with its type, statistics in order, and the
values the command line asked for. Prints "bench json: ok" or exits non-zero naming the
first problem."""
import argparse
import json
import math
import sys

STATS = ("count", "min", "median", "mean", "p90", "max", "stddev")
FIELDS = {
    "schema": str,
    "primjit_version": str,
    "kernel": str,
    "target": str,
    "device_name": str,
    "timer": str,
    "args": list,
    "warmup_calls": int,
    "l2_flushed": bool,
    "device_ms": dict,
    "host_ms": dict,
    "bytes": (int, float),
    "flops": (int, float),
    "gb_per_s": (int, float, type(None)),
    "gflop_per_s": (int, float, type(None)),
    "samples_ms": list,
}


def fail(message):
    sys.exit("bench json: " + message)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--kernel", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--count", type=int, help="expected number of timed calls")
    parser.add_argument("--bytes", type=float, default=0)
    parser.add_argument("--flops", type=float, default=0)
    args = parser.parse_args()
    with open(args.file) as f:
        data = json.load(f)

    for name, kind in FIELDS.items():
        if name not in data:
            fail(f"missing field '{name}'")
        if isinstance(data[name], bool) and kind is not bool:
            fail(f"field '{name}' is a bool")
        if not isinstance(data[name], kind):
            fail(f"field '{name}' has type {type(data[name]).__name__}")
    extra = set(data) - set(FIELDS)
    if extra:
        fail(f"undocumented fields {sorted(extra)}")

    if data["schema"] != "primjit-bench/1":
        fail(f"schema is {data['schema']!r}")
    if data["kernel"] != args.kernel or data["target"] != args.target:
        fail(f"kernel/target are {data['kernel']!r}/{data['target']!r}")
    expected_timer = "cuda_event" if args.target == "cuda" else "steady_clock"
    if data["timer"] != expected_timer:
        fail(f"timer is {data['timer']!r}, expected {expected_timer!r}")
    if data["warmup_calls"] < 2:
        fail("fewer than 2 warm-up calls (the compiling call and one more)")
    if not all(isinstance(a, str) for a in data["args"]):
        fail("args are not all strings")

    for part in ("device_ms", "host_ms"):
        stats = data[part]
        for key in STATS:
            if not isinstance(stats.get(key), (int, float)) or isinstance(stats.get(key), bool):
                fail(f"{part}.{key} is missing or not a number")
        if not stats["min"] <= stats["median"] <= stats["p90"] <= stats["max"]:
            fail(f"{part}: min <= median <= p90 <= max does not hold: {stats}")
        if not stats["min"] <= stats["mean"] <= stats["max"] or stats["min"] <= 0:
            fail(f"{part}: mean outside [min, max] or a non-positive time: {stats}")
    count = data["device_ms"]["count"]
    if data["host_ms"]["count"] != count or len(data["samples_ms"]) != count or count < 1:
        fail(f"counts disagree: {count}, {data['host_ms']['count']}, {len(data['samples_ms'])}")
    if args.count is not None and count != args.count:
        fail(f"{count} timed calls, expected {args.count}")
    samples = sorted(data["samples_ms"])
    if samples[0] != data["device_ms"]["min"] or samples[-1] != data["device_ms"]["max"]:
        fail("samples_ms do not match min and max")

    median_s = data["device_ms"]["median"] * 1e-3
    for field, rate, given in (("bytes", "gb_per_s", args.bytes), ("flops", "gflop_per_s", args.flops)):
        if data[field] != given:
            fail(f"{field} is {data[field]}, expected {given}")
        if given == 0:
            if data[rate] is not None:
                fail(f"{rate} should be null without {field}")
        elif not math.isclose(data[rate], given / median_s * 1e-9, rel_tol=1e-6):
            fail(f"{rate} is {data[rate]}, expected {given} / median")
    print("bench json: ok")


if __name__ == "__main__":
    main()
