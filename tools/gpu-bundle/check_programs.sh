#!/usr/bin/env bash
# Checks the GPU bundle's program list against the build's targets (a CTest test):
#   check_programs.sh SOURCE_DIR BUILD_DIR NINJA [PROGRAMS_FILE]
# PROGRAMS_FILE (default SOURCE_DIR/tools/gpu-bundle/programs.txt) must name only executable
# targets of the build (the ninja build in BUILD_DIR), and every executable built from a source
# that talks to the CUDA driver (CudaDriver, have_gpu(), gpu_or_skip()) must be in it, or on a
# "# not carried: NAME (reason)" line. Prints each problem and exits 1 if there is one.
#   check_programs.sh --self-test SOURCE_DIR BUILD_DIR NINJA
# checks that a list naming a program that is no target, and a list lacking a GPU program,
# are both refused, and that the real list passes.
set -uo pipefail
if [ "${1:-}" = --self-test ]; then
  shift
  src=$1
  self=$(cd "$(dirname "$0")" && pwd)/check_programs.sh
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  list=$src/tools/gpu-bundle/programs.txt
  bash "$self" "$@" "$list" || { echo "self-test: the real list fails"; exit 1; }
  { cat "$list"; echo no_such_program; } > "$scratch/extra.txt"
  if bash "$self" "$@" "$scratch/extra.txt" > "$scratch/out" 2>&1; then
    echo "self-test: a list naming no_such_program passed"
    exit 1
  fi
  grep -q "'no_such_program' is no executable target" "$scratch/out" || { cat "$scratch/out"; exit 1; }
  grep -v '^bench_launch$' "$list" > "$scratch/missing.txt"
  if bash "$self" "$@" "$scratch/missing.txt" > "$scratch/out" 2>&1; then
    echo "self-test: a list without bench_launch passed"
    exit 1
  fi
  grep -q "bench_launch .*is not in" "$scratch/out" || { cat "$scratch/out"; exit 1; }
  echo "self-test: passed"
  exit 0
fi

src=${1:?usage: check_programs.sh SOURCE_DIR BUILD_DIR NINJA [PROGRAMS_FILE]}
build=${2:?BUILD_DIR}
ninja=${3:?NINJA}
list=${4:-$src/tools/gpu-bundle/programs.txt}
targets=$("$ninja" -C "$build" -t targets all) || { echo "cannot list the targets of $build"; exit 1; }
# Executable targets: bin/NAME built by an executable linker rule.
executables=$(echo "$targets" | sed -n 's/^bin\/\([^:/]*\): .*EXECUTABLE_LINKER.*/\1/p' | sort -u)
programs=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$list" | tr -d ' \t' | sort -u)
not_carried=$(sed -n 's/^#[[:space:]]*not carried:[[:space:]]*\([^[:space:]]*\).*/\1/p' "$list")
problems=0
for p in $programs; do
  if ! grep -qx "$p" <<< "$executables"; then
    echo "$list: '$p' is no executable target of the build in $build: rename or remove it"
    problems=$((problems + 1))
  fi
done
# Sources that talk to the driver, and the executables they are compiled into.
cd "$src" || exit 1
for source in $(grep -rlE 'CudaDriver|have_gpu\(|gpu_or_skip\(' --include='*.cc' \
                  tests bench examples tools | sort); do
  top=${source%%/*}
  rest=${source#*/}
  for target in $(echo "$targets" |
                  sed -n "s|^$top/CMakeFiles/\([^/]*\)\.dir/$rest\.o:.*|\1|p" | sort -u); do
    grep -qx "$target" <<< "$executables" || continue  # a library: its users are checked
    if ! grep -qx "$target" <<< "$programs" && ! grep -qx "$target" <<< "$not_carried"; then
      echo "$target (built from $source, which uses the CUDA driver) is not in $list: add it," \
           "or a '# not carried: $target (why)' line"
      problems=$((problems + 1))
    fi
  done
done
[ $problems -eq 0 ] && echo "gpu-bundle programs: $(echo "$programs" | wc -w) programs, consistent with the build"
[ $problems -eq 0 ]
