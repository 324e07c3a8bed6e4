#!/usr/bin/env python3
"""Runs test_primjit.py against the built module under a Python interpreter that has NumPy.

The module is built for one Python version (its file name says which, e.g. cpython-311); the
interpreter CMake found may lack NumPy (a private installation ahead of the system's on PATH),
so this tries that one first, then every `python3` on PATH, and uses the first one of the
module's version that imports NumPy.

usage: run_python_tests.py MODULE_DIR TEST_DIR
"""
import glob
import os
import re
import shutil
import subprocess
import sys


def candidates():
    seen = []
    for path in [sys.executable] + [os.path.join(d, "python3")
                                    for d in os.environ.get("PATH", "").split(os.pathsep)]:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            real = os.path.realpath(path)
            if real not in seen:
                seen.append(real)
                yield path


def main():
    module_dir, test_dir = sys.argv[1:3]
    built = glob.glob(os.path.join(module_dir, "primjit.cpython-*.so"))
    if not built:
        raise SystemExit(f"no primjit.cpython-*.so in {module_dir}: build target primjit_python")
    tag = re.search(r"cpython-(\d)(\d+)", os.path.basename(built[0]))
    version = f"{tag.group(1)}.{tag.group(2)}"
    probe = ("import sys, numpy; "
             f"sys.exit(0 if '%d.%d' % sys.version_info[:2] == '{version}' else 1)")
    tried = []
    for python in candidates():
        if subprocess.run([python, "-c", probe], capture_output=True).returncode == 0:
            env = dict(os.environ, PYTHONPATH=module_dir, PYTHONDONTWRITEBYTECODE="1")
            result = subprocess.run(
                [python, "-m", "unittest", "-v", "test_primjit"], cwd=test_dir, env=env)
            sys.exit(result.returncode)
        tried.append(python)
    raise SystemExit(f"no Python {version} with NumPy among {', '.join(tried)}: install "
                     "python3-numpy (bash tools/deps.sh does)")


if __name__ == "__main__":
    main()
