#!/usr/bin/env python3
"""Keeps the user guide's examples honest: every example is compiled, run or parsed by a test.

Fenced blocks of a markdown file, by their info string:
- ```cpp: a whole program (it has main). `extract` writes each as NAME_NN.cc, for CMake to build
  and CTest to run. When the next fenced block after it is ```text, that block is the program's
  expected standard output, written as NAME_NN.expected and compared exactly by `run`.
- ```tir: a module in the text format; `check` parses and verifies it with primjit-opt (and
  runs it in the reference interpreter before and after the default pipeline when its first
  line is `# check-semantics`).
- ```sh: command lines; tests/readme_commands.py runs the ones that call a primjit tool.
`check` also requires every PRIMJIT_* environment variable named in its "## Environment
variables" section to appear, quoted, in the library's or the tools' sources, so that the guide
cannot document a variable nobody reads.

usage: doc_examples.py extract MARKDOWN OUT_DIR NAME   (prints the example names, one a line)
       doc_examples.py run EXE [EXPECTED]
       doc_examples.py check MARKDOWN BIN_DIR SOURCE_DIR
"""
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```([a-z+]*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)


def blocks(path):
    """(info string, body) of every fenced block, in order."""
    text = open(path, encoding="utf-8").read()
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def write_if_changed(path, text):
    # An unchanged example keeps its timestamp, so reconfiguring rebuilds nothing.
    if os.path.exists(path) and open(path, encoding="utf-8").read() == text:
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def extract(markdown, out_dir, name):
    os.makedirs(out_dir, exist_ok=True)
    found = blocks(markdown)
    names = []
    for index, (info, body) in enumerate(found):
        if info != "cpp":
            continue
        if "int main(" not in body:
            raise SystemExit(f"{markdown}: a ```cpp block is not a whole program (no main): every "
                             f"C++ example is compiled and run; mark fragments ```text:\n{body}")
        example = f"{name}_{len(names) + 1:02d}"
        write_if_changed(os.path.join(out_dir, example + ".cc"),
                         f"// Extracted from {os.path.basename(markdown)}; edit it there.\n" + body)
        expected = os.path.join(out_dir, example + ".expected")
        following = found[index + 1] if index + 1 < len(found) else None
        if following and following[0] == "text":
            write_if_changed(expected, following[1])
        elif os.path.exists(expected):
            os.remove(expected)
        names.append(example)
    if not names:
        raise SystemExit(f"{markdown} has no ```cpp example: is the parser stale?")
    print("\n".join(names))


def run(exe, expected=None):
    env = dict(os.environ, PRIMJIT_LOG="off")
    result = subprocess.run([exe], capture_output=True, text=True, timeout=300, env=env)
    if result.returncode != 0:
        raise SystemExit(f"{exe} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    if expected and os.path.exists(expected):
        want = open(expected, encoding="utf-8").read()
        if result.stdout != want:
            raise SystemExit(f"{exe} printed:\n{result.stdout}\nthe guide says it prints:\n{want}")
    print(result.stdout, end="")


def check(markdown, bin_dir, source_dir):
    opt = os.path.join(bin_dir, "primjit-opt")
    work = tempfile.mkdtemp(prefix="primjit_guide.")
    env = dict(os.environ, PRIMJIT_CACHE="0", PRIMJIT_LOG="off")
    modules = 0
    for info, body in blocks(markdown):
        if info != "tir":
            continue
        modules += 1
        path = os.path.join(work, f"module_{modules}.tir")
        with open(path, "w", encoding="utf-8") as f:
            f.write(body)
        command = [opt, path]
        if body.startswith("# check-semantics"):
            command += ["--pipeline=default", "--check-semantics"]
        result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
        if result.returncode != 0:
            raise SystemExit(f"{markdown}: ```tir block {modules} fails `{command[0]} FILE "
                             f"{' '.join(command[2:])}`:\n{result.stdout}{result.stderr}\n{body}")
    if modules == 0:
        raise SystemExit(f"{markdown} has no ```tir block: is the parser stale?")

    text = open(markdown, encoding="utf-8").read()
    section = re.search(r"^## Environment variables\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if not section:
        raise SystemExit(f"{markdown} has no '## Environment variables' section")
    sources = []
    for folder in ("jit", "ir", "passes", "tools"):
        for root, _, files in os.walk(os.path.join(source_dir, folder)):
            sources += [os.path.join(root, f) for f in files if f.endswith((".cc", ".h"))]
    corpus = "".join(open(f, encoding="utf-8", errors="replace").read() for f in sources)
    variables = sorted(set(re.findall(r"\bPRIMJIT_[A-Z_]+[A-Z]\b", section.group(1))))
    unread = [v for v in variables if f'"{v}"' not in corpus]
    if unread:
        raise SystemExit(f"{markdown} documents environment variables no source reads: "
                         + ", ".join(unread))
    print(f"{markdown}: {modules} modules parsed and verified, {len(variables)} environment "
          "variables found in the sources")


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "extract" and len(sys.argv) == 5:
        extract(*sys.argv[2:5])
    elif command == "run" and len(sys.argv) in (3, 4):
        run(*sys.argv[2:])
    elif command == "check" and len(sys.argv) == 5:
        check(*sys.argv[2:5])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
