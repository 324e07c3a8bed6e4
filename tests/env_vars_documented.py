#!/usr/bin/env python3
"""Every environment variable primjit reads is documented, in the README and in --help.

Finds the names the library and tool sources read (getenv("NAME") and env_or_empty("NAME")
under include/, ir/, passes/, jit/ and tools/; tests/ has knobs of its own test programs) and
checks that each appears in the README and in the --help of primjit-opt, primjit-run and
primjit-cache. Fails, naming what is missing, otherwise; also fails when it finds too few
names (a stale pattern would pass vacuously).

usage: env_vars_documented.py SOURCE_DIR BIN_DIR
"""
import os
import re
import subprocess
import sys

SOURCE_DIRS = ("include", "ir", "passes", "jit", "tools")
TOOLS = ("primjit-opt", "primjit-run", "primjit-cache")
READ = re.compile(r'\b(?:getenv|env_or_empty)\("([A-Z][A-Z0-9_]*)"\)')


def read_names(source_dir):
    names = {}
    for top in SOURCE_DIRS:
        for root, _, files in os.walk(os.path.join(source_dir, top)):
            for f in files:
                if not f.endswith((".cc", ".h", ".cpp")):
                    continue
                path = os.path.join(root, f)
                for name in READ.findall(open(path, encoding="utf-8").read()):
                    names.setdefault(name, os.path.relpath(path, source_dir))
    return names


def main():
    source_dir, bin_dir = sys.argv[1:3]
    names = read_names(source_dir)
    primjit_names = [n for n in names if n.startswith("PRIMJIT_")]
    if len(primjit_names) < 8:
        raise SystemExit(f"only {sorted(primjit_names)} found: is the pattern stale?")
    readme = open(os.path.join(source_dir, "README.md"), encoding="utf-8").read()
    documents = {"README.md": readme}
    for tool in TOOLS:
        out = subprocess.run([os.path.join(bin_dir, tool), "--help"], capture_output=True,
                             text=True, timeout=60)
        if out.returncode != 0:
            raise SystemExit(f"{tool} --help failed: {out.stderr}")
        documents[f"{tool} --help"] = out.stdout
    missing = []
    for name in sorted(names):
        word = re.compile(r"(?<![A-Z0-9_])" + name + r"(?![A-Z0-9_])")
        for where, text in documents.items():
            if not word.search(text):
                missing.append(f"{name} (read in {names[name]}) is not in {where}")
    if missing:
        raise SystemExit("undocumented environment variables:\n  " + "\n  ".join(missing))
    print(f"{len(names)} environment variables documented: {', '.join(sorted(names))}")


if __name__ == "__main__":
    main()
