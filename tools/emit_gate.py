#!/usr/bin/env python3
"""Behaviour gate for refactorings: records what primjit-opt prints for every text program in the
tree (--emit=tir, and after the default pipeline --emit=llvm and --emit=cuda), the programs the
builder examples print included, and later compares.

  tools/emit_gate.py record OUT_DIR [--opt build/default/bin/primjit-opt]
  tools/emit_gate.py compare OUT_DIR [--opt ...]     exit 1 and a diff when any output changed

Golden files with several programs separated by '# -----' are split into one program each.
"""
import argparse
import difflib
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIRS = ["tests/passes", "tests/ir/roundtrip", "tests/ir/builder", "tests/ir/malformed",
        "tests/emu", "tests/lit/Inputs", "tests/tvmscript"]
MODES = {
    "tir": ["--emit=tir"],
    "llvm": ["--pipeline=default", "--target=llvm", "--emit=llvm"],
    "cuda": ["--pipeline=default", "--target=cuda", "--emit=cuda"],
}


def programs(opt):
    examples = pathlib.Path(opt).parent / "builder_examples"
    if examples.exists():
        text = subprocess.run([examples], capture_output=True, text=True, check=True).stdout
        header = "# from tvm.script import tir as T\n"
        for i, chunk in enumerate(text.split(header)):
            if chunk.strip():
                yield f"examples/builder_examples#{i}", header + chunk
    for d in DIRS:
        base = ROOT / d
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.tir")):
            chunks = path.read_text().split("# -----\n")
            for i, chunk in enumerate(chunks):
                if chunk.strip():
                    yield f"{path.relative_to(ROOT)}#{i}", chunk


def run(opt, text, mode):
    with tempfile.NamedTemporaryFile("w", suffix=".tir", delete=False) as f:
        f.write(text)
        name = f.name
    try:
        p = subprocess.run([opt, name] + MODES[mode], capture_output=True, text=True, timeout=60)
        err = p.stderr.replace(name, "<input>")
        return f"rc={p.returncode}\n--- stdout\n{p.stdout}--- stderr\n{err}"
    finally:
        os.unlink(name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("action", choices=["record", "compare"])
    ap.add_argument("dir")
    ap.add_argument("--opt", default=str(ROOT / "build/default/bin/primjit-opt"))
    a = ap.parse_args()
    out = pathlib.Path(a.dir)
    out.mkdir(parents=True, exist_ok=True)
    changed = 0
    count = 0
    for key, text in programs(a.opt):
        for mode in MODES:
            got = run(a.opt, text, mode)
            f = out / (key.replace("/", "__").replace("#", "_") + "." + mode)
            count += 1
            if a.action == "record":
                f.write_text(got)
            elif not f.exists():
                print(f"new: {key} {mode}")
            elif f.read_text() != got:
                changed += 1
                sys.stdout.writelines(difflib.unified_diff(
                    f.read_text().splitlines(True), got.splitlines(True), f"{key} {mode} (recorded)",
                    f"{key} {mode} (now)"))
    print(f"{a.action}: {count} outputs, {changed} changed")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
