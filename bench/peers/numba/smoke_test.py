#!/usr/bin/env python3
"""ctest peers_numba_smoke: bench_numba.py on the tiny sizes, every row verified.

Numba may live in another Python than the one CMake found (a distribution's python3-numba
beside a user's interpreter first on PATH), so this runs the first python3 on PATH (this
interpreter first) that imports numba. Exits 77 (ctest SKIP_RETURN_CODE) when none does.
"""

import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def interpreters():
    seen = []
    for candidate in [sys.executable] + [shutil.which("python3", path=d) for d in
                                         os.environ.get("PATH", "").split(os.pathsep) if d]:
        if candidate and os.path.realpath(candidate) not in [os.path.realpath(s) for s in seen]:
            seen.append(candidate)
    return seen


def main():
    for python in interpreters():
        probe = subprocess.run([python, "-c", "import numba, numpy"], capture_output=True)
        if probe.returncode == 0:
            break
    else:
        print("skipped: no python3 on PATH imports numba; install it (Debian: python3-numba, "
              "or pip install numba) to run the Numba peer")
        return 77
    done = subprocess.run([python, os.path.join(HERE, "bench_numba.py"), "--sizes", "tiny",
                           "--rounds", "1"], capture_output=True, text=True)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    if done.returncode != 0 or "8 rows, 8 verified against NumPy, 0 failed" not in done.stdout:
        print(f"bench_numba.py with {python} did not verify every row (exit {done.returncode})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
