#!/usr/bin/env python3
"""Runs the command lines the README (or another page, docs/guide.md) documents, so that none
of them rots.

- Every command in a ```sh block that calls a primjit tool (build/default/bin/primjit-*) runs
  as written, with the build's bin directory, and must exit 0.
- Every inline `primjit-opt FILE ...` runs with FILE replaced by a sample module.
- Every --flag the README mentions next to a tool (in its code spans and blocks, and the
  flags of the README's "IR text format" section for primjit-opt) appears in that tool's --help.

usage: readme_commands.py README BIN_DIR SOURCE_DIR
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

TOOLS = ("primjit-opt", "primjit-run", "primjit-cache")


def run(cmd, cwd, env):
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise SystemExit(
            f"README command failed ({result.returncode}): {' '.join(cmd)}\n"
            f"{result.stdout}\n{result.stderr}")
    return result.stdout


def main():
    readme, bin_dir, source_dir = sys.argv[1:4]
    text = open(readme, encoding="utf-8").read()
    env = dict(os.environ, PRIMJIT_CACHE="0", PRIMJIT_LOG="off")
    work = tempfile.mkdtemp(prefix="primjit_readme.")
    os.symlink(os.path.join(source_dir, "tests"), os.path.join(work, "tests"))
    sample = os.path.join(source_dir, "tests", "ir", "builder", "vector_add_cpu.tir")
    checked = 0

    # 1. ```sh blocks.
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line)
            if not words or not words[0].startswith("build/default/bin/primjit-"):
                continue
            words[0] = os.path.join(bin_dir, os.path.basename(words[0]))
            run(words, work, env)
            checked += 1

    # 2. Inline `primjit-opt FILE ...` spans.
    for span in re.findall(r"`(primjit-opt FILE[^`]*)`", text):
        words = shlex.split(span)
        words[0] = os.path.join(bin_dir, words[0])
        words[1] = sample
        run(words, work, env)
        checked += 1

    # 3. Documented flags appear in each tool's --help.
    helps = {t: run([os.path.join(bin_dir, t), "--help"], work, env) for t in TOOLS}
    documented = {t: set() for t in TOOLS}
    for span in re.findall(r"`([^`]*)`", text) + re.findall(r"```sh\n(.*?)```", text, re.S):
        for tool in TOOLS:
            if tool in span:
                documented[tool] |= set(re.findall(r"(--[a-z][a-z-]*)", span))
    if "## IR text format" in text:  # the README's section lists primjit-opt's flags
        section = text[text.index("## IR text format"):]
        section = section[:section.index("\n## ", 4)]
        documented["primjit-opt"] |= set(re.findall(r"`(--[a-z][a-z-]*)", section))
    missing = [(t, f) for t in TOOLS for f in sorted(documented[t]) if f not in helps[t]]
    if missing:
        raise SystemExit("documented but not in --help: " +
                         ", ".join(f"{t} {f}" for t, f in missing))
    checked += sum(len(v) for v in documented.values())
    if checked < 8:
        raise SystemExit(f"only {checked} README commands and flags found: is the parser stale?")
    print(f"{os.path.basename(readme)}: {checked} commands and flags checked")


if __name__ == "__main__":
    main()
