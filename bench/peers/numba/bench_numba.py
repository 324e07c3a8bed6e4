#!/usr/bin/env python3
"""Numba peer of bench_peers_halide: the same kernels, sizes and table rows, in Numba.

Each kernel is the loop nest of the primjit text (bench/peers/halide/primjit_kernels.cc)
written for Numba: unscheduled variants as @njit loops (exact order, no fastmath), scheduled
ones with prange over rows or chunks (parallel=True), the scheduled softmax with fastmath=True
(the reassociation primjit's T.vectorized asks for). Every output is checked against NumPy in
float64 before and after timing; times are medians over rounds of batches (a batch lasts
about 2 ms), in ms per call, as in the C++ benchmark.

    bench_numba.py [--sizes small,large|tiny] [--rounds 9] [--kernels SUBSTRING]
                   [--csv FILE] [--with PEERS_CSV]

--with reads bench_peers_halide's --csv output and prints both side by side, with each ratio
primjit time / peer time (<= 1.0: primjit at least as fast). Exit status 0 when every row
verified.
"""

import argparse
import csv
import math
import os
import platform
import sys
import time

import numpy as np
from numba import njit, prange

import numba

KERNELS = ["saxpy_naive", "saxpy_scheduled", "matmul_naive", "matmul_ikj",
           "matmul_parallel", "matmul_tiled", "softmax_plain", "softmax_scheduled"]
SIZES = {  # the same as bench_peers_halide.cc's make_row
    "saxpy": {"tiny": 1000, "small": 65536, "large": 1 << 24},
    "matmul": {"tiny": 32, "small": 64, "large": 256},
    "softmax": {"tiny": (5, 100), "small": (64, 256), "large": (4096, 256)},
}
SAXPY_CHUNK = 8192
TILE_ROWS, TILE_COLS = 4, 16


@njit(cache=False)
def saxpy_naive(alpha, a, b, c):
    for i in range(a.shape[0]):
        c[i] = a[i] * alpha + b[i]


@njit(parallel=True, cache=False)
def saxpy_scheduled(alpha, a, b, c):
    n = a.shape[0]
    for chunk in prange((n + SAXPY_CHUNK - 1) // SAXPY_CHUNK):
        base = chunk * SAXPY_CHUNK
        for j in range(base, min(base + SAXPY_CHUNK, n)):
            c[j] = a[j] * alpha + b[j]


@njit(cache=False)
def matmul_naive(a, b, c):
    n = a.shape[0]
    for i in range(n):
        for j in range(n):
            acc = np.float32(0)
            for k in range(n):
                acc += a[i, k] * b[k, j]
            c[i, j] = acc


@njit(cache=False)
def matmul_ikj(a, b, c):
    n = a.shape[0]
    for i in range(n):
        for j in range(n):
            c[i, j] = 0
        for k in range(n):
            aik = a[i, k]
            for j in range(n):
                c[i, j] += aik * b[k, j]


@njit(parallel=True, cache=False)
def matmul_parallel(a, b, c):
    n = a.shape[0]
    for i in prange(n):
        for j in range(n):
            c[i, j] = 0
        for k in range(n):
            aik = a[i, k]
            for j in range(n):
                c[i, j] += aik * b[k, j]


@njit(parallel=True, cache=False)
def matmul_tiled(a, b, c):
    n = a.shape[0]
    for io in prange(n // TILE_ROWS):
        acc = np.empty((TILE_ROWS, TILE_COLS), np.float32)
        for jo in range(n // TILE_COLS):
            acc[:, :] = 0
            for k in range(n):
                for ii in range(TILE_ROWS):
                    aik = a[io * TILE_ROWS + ii, k]
                    for ji in range(TILE_COLS):
                        acc[ii, ji] += aik * b[k, jo * TILE_COLS + ji]
            for ii in range(TILE_ROWS):
                for ji in range(TILE_COLS):
                    c[io * TILE_ROWS + ii, jo * TILE_COLS + ji] = acc[ii, ji]


@njit(cache=False)
def _softmax_row(x, y):
    mx = x[0]
    for j in range(x.shape[0]):
        mx = max(mx, x[j])
    for j in range(x.shape[0]):
        y[j] = math.exp(x[j] - mx)
    s = np.float32(0)
    for j in range(x.shape[0]):
        s += y[j]
    for j in range(x.shape[0]):
        y[j] = y[j] / s


@njit(cache=False)
def softmax_plain(x, y):
    for r in range(x.shape[0]):
        _softmax_row(x[r], y[r])


@njit(fastmath=True, cache=False)
def _softmax_row_fast(x, y):
    mx = x[0]
    for j in range(x.shape[0]):
        mx = max(mx, x[j])
    for j in range(x.shape[0]):
        y[j] = math.exp(x[j] - mx)
    s = np.float32(0)
    for j in range(x.shape[0]):
        s += y[j]
    for j in range(x.shape[0]):
        y[j] = y[j] / s


@njit(parallel=True, fastmath=True, cache=False)
def softmax_scheduled(x, y):
    for r in prange(x.shape[0]):
        _softmax_row_fast(x[r], y[r])


def family(kernel):
    return kernel.split("_")[0]


def shape_text(kernel, size):
    s = SIZES[family(kernel)][size]
    if family(kernel) == "saxpy":
        return str(s)
    if family(kernel) == "matmul":
        return f"{s}^3"
    return f"{s[0]}x{s[1]}"


def make_case(kernel, size):
    """(call, output, expected float64 result, atol, rtol) for one row."""
    rng = np.random.default_rng(42)
    fn = globals()[kernel]
    s = SIZES[family(kernel)][size]
    if family(kernel) == "saxpy":
        a = rng.uniform(-1, 1, s).astype(np.float32)
        b = rng.uniform(-1, 1, s).astype(np.float32)
        c = np.full(s, np.nan, np.float32)
        alpha = np.float32(1.5)
        want = a.astype(np.float64) * float(alpha) + b
        return (lambda: fn(alpha, a, b, c)), c, want, 1e-6, 1e-5
    if family(kernel) == "matmul":
        a = rng.uniform(-1, 1, (s, s)).astype(np.float32)
        b = rng.uniform(-1, 1, (s, s)).astype(np.float32)
        c = np.full((s, s), np.nan, np.float32)
        want = a.astype(np.float64) @ b.astype(np.float64)
        return (lambda: fn(a, b, c)), c, want, 1e-6 * s, 1e-4
    x = rng.uniform(-8, 8, s).astype(np.float32)
    y = np.full(s, np.nan, np.float32)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    return (lambda: fn(x, y)), y, want, 1e-7, 1e-4


def mismatch(got, want, atol, rtol):
    bad = ~(np.abs(got.astype(np.float64) - want) <= atol + rtol * np.abs(want))
    if not bad.any():
        return ""
    i = np.flatnonzero(bad.ravel())[0]
    return f"element {i}: {got.ravel()[i]}, NumPy has {want.ravel()[i]}"


def run_row(kernel, size, rounds):
    call, out, want, atol, rtol = make_case(kernel, size)
    t0 = time.perf_counter()
    call()  # compiles
    compile_s = time.perf_counter() - t0
    failure = mismatch(out, want, atol, rtol)
    t0 = time.perf_counter()
    call()
    once = time.perf_counter() - t0
    reps = int(min(max(2e-3 / max(once, 1e-9), 1), 10000))
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            call()
        times.append((time.perf_counter() - t0) * 1e3 / reps)
    if not failure:
        failure = mismatch(out, want, atol, rtol)
    times.sort()
    mid = len(times) // 2
    ms = times[mid] if len(times) % 2 else 0.5 * (times[mid - 1] + times[mid])
    return ms, failure, compile_s


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def read_peers(path):
    with open(path, newline="") as f:
        return {(r["kernel"], r["size"]): r for r in csv.DictReader(f)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="small,large")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--kernels", default="")
    parser.add_argument("--csv", help="write kernel,size,shape,numba_ms,verified rows here")
    parser.add_argument("--with", dest="peers", help="bench_peers_halide --csv output to "
                        "print beside the Numba times")
    args = parser.parse_args()
    sizes = args.sizes.split(",")
    for s in sizes:
        if s not in ("tiny", "small", "large"):
            parser.error(f"--sizes: '{s}' is not tiny, small or large")
    if args.rounds < 1:
        parser.error("--rounds: give a count of at least 1 (9 or more for the table)")
    peers = read_peers(args.peers) if args.peers else {}

    print("primjit peer benchmark: Numba")
    print(f"machine : {cpu_model()}, {os.cpu_count()} hardware "
          f"threads, load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"peers   : Numba {numba.__version__} (NumPy {np.__version__}, Python "
          f"{platform.python_version()}), {numba.config.NUMBA_NUM_THREADS} threads")
    print(f"timing  : median over {args.rounds} rounds, ms per call\n")
    if peers:
        print(f"{'kernel':<18} {'size':<6} {'shape':<10} {'primjit ms':>11} {'Halide ms':>11} "
              f"{'Numba ms':>11} {'g++ ms':>11} {'pj/Halide':>9} {'pj/Numba':>9} "
              f"{'pj/g++':>9}  check")
    else:
        print(f"{'kernel':<18} {'size':<6} {'shape':<10} {'Numba ms':>11}  check")
    rows, failed = [], 0
    for size in sizes:
        for kernel in KERNELS:
            if args.kernels not in kernel:
                continue
            try:
                ms, failure, _ = run_row(kernel, size, args.rounds)
            except Exception as e:  # a kernel that fails to compile or run is a failed row
                ms, failure = float("nan"), f"failed: {type(e).__name__}: {e}"
            failed += 1 if failure else 0
            check = failure or "verified"
            shape = shape_text(kernel, size)
            peer = peers.get((kernel, size))
            if peers and peer:
                pj, hl, gx = (float(peer[k]) for k in ("primjit_ms", "halide_ms", "gxx_ms"))
                if peer.get("verified") != "1":
                    check += " (C++ row not verified)"
                print(f"{kernel:<18} {size:<6} {shape:<10} {pj:11.4f} {hl:11.4f} {ms:11.4f} "
                      f"{gx:11.4f} {pj / hl:9.2f} {pj / ms:9.2f} {pj / gx:9.2f}  {check}")
            else:
                print(f"{kernel:<18} {size:<6} {shape:<10} {ms:11.4f}  {check}"
                      + ("  (no C++ row)" if peers else ""))
            sys.stdout.flush()
            rows.append((kernel, size, shape, ms, 0 if failure else 1))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["kernel", "size", "shape", "numba_ms", "verified"])
            w.writerows(rows)
    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel kernel ran
        layer = "none used"
    print(f"\nthreading layer: {layer}")
    print(f"{len(rows)} rows, {len(rows) - failed} verified against NumPy, {failed} failed")
    return 0 if rows and failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
