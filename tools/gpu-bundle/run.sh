#!/usr/bin/env bash
# Runs the primjit GPU bundle (made by tools/gpu-bundle.sh) from wherever it lies, on a machine
# with an NVIDIA GPU, its driver and the CUDA toolkit (for NVRTC) and nothing else.
#   run.sh [tests|demo|bench|all]   (default: all)
#     tests   the test programs (GPU tests included; run from the bundle's folder, they read
#             their data in src/), then every GPU kernel of the text programs in src/ on cuda
#             against the interpreter (primjit-crosscheck)
#     demo    the main job (jit_demo, what the README's first command runs) on cuda, twice: the
#             second process loads its variants from the disk cache; and toolchain_demo
#     bench   launch overhead against raw cuLaunchKernel (bench_launch), kernels against NVRTC-
#             and nvcc-compiled hand-written CUDA and vector-add bandwidth against a device-to-
#             device copy (bench_kernels), NVRTC compile times (bench_compile,
#             bench_compile_latency)
#   run.sh cpu-tests   the bundle's check of itself on a machine without a GPU (tools/
#             gpu-bundle.sh --verify): the test programs (GPU tests skip) and the crosscheck
#             with emu for cuda (the tool and the programs work); no preflight
# Every command first checks the machine (preflight.sh: glibc, libraries, driver version, a
# GPU) and stops with a message and exit 1 when a check fails; it ends with a summary to paste
# into bench/README.md. Logs and benchmark JSON go to $OUT when it is set, else to a new
# directory under ${TMPDIR:-/tmp} (named at the end). Exit 1 when anything failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
what=${1:-all}
case "$what" in
  tests | demo | bench | all | cpu-tests) ;;
  *)
    echo "usage: run.sh [tests|demo|bench|all|cpu-tests]" >&2
    exit 2
    ;;
esac
logs=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/primjit-bundle.XXXXXX")}
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)
# Test programs find their data (src/) relative to the bundle.
cd "$here" || exit 1
# A disk cache of the run's own, empty at the start (and not among the logs).
PRIMJIT_CACHE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/primjit-bundle-cache.XXXXXX")
export PRIMJIT_CACHE_DIR
trap 'rm -rf "$PRIMJIT_CACHE_DIR"' EXIT
export PRIMJIT_HAND_KERNELS="$here/share/hand_kernels.fatbin"
[ -f "$PRIMJIT_HAND_KERNELS" ] || unset PRIMJIT_HAND_KERNELS
status=0

if [ "$what" != cpu-tests ]; then
  "$here/preflight.sh" "$here" | tee "$logs/preflight.log"
  if [ "${PIPESTATUS[0]}" -ne 0 ]; then
    echo "run.sh: this machine cannot run the bundle (see the failed check above); nothing ran"
    exit 1
  fi
fi

# Runs a command, its output to the terminal and to $logs/NAME.log; a failure marks the run.
step() {
  local name=$1
  shift
  echo "=== $*"
  "$@" 2>&1 | tee "$logs/$name.log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || { echo "=== FAILED (exit $rc): $*"; status=1; }
  return "$rc"
}

# --- tests -------------------------------------------------------------------------------------
tests_passed=0 tests_skipped=0 tests_failed=0 test_programs=0
cross=""
# The count on gtest's summary line "[  WORD  ] N tests..." of $logs/T.log, after the program's
# last "[==========] ... ran." line (child processes some tests start print summaries too).
gtest_count() {
  awk -v word="$2" '
    /^\[==========\] .* ran\./ { n = "" }
    $0 ~ "^\\[  " word " *\\] [0-9]+ tests?[,.]" { n = $4 }
    END { print n }' "$logs/$1.log"
}
run_tests() {
  local t n rc
  for t in "$here"/bin/primjit_*_tests; do
    t=$(basename "$t")
    test_programs=$((test_programs + 1))
    step "$t" "$here/bin/$t" --gtest_brief=1
    rc=$?
    n=$(gtest_count "$t" PASSED) && tests_passed=$((tests_passed + ${n:-0}))
    n=$(gtest_count "$t" SKIPPED) && tests_skipped=$((tests_skipped + ${n:-0}))
    n=$(gtest_count "$t" FAILED)
    # A program that died before its summary counts as one failure.
    [ -z "$n" ] && [ "$rc" -ne 0 ] && n=1
    tests_failed=$((tests_failed + ${n:-0}))
  done
  local target=$1
  mapfile -t programs < <(find "$here/src" -name '*.tir' | sort)
  step crosscheck "$here/bin/primjit-crosscheck" --target="$target" "${programs[@]}"
  cross=$(sed -n 's/^crosscheck (\(.*\)): \(.*\)/\2 (\1)/p' "$logs/crosscheck.log" | tail -n1)
}

# --- demo --------------------------------------------------------------------------------------
demo=""
run_demo() {
  step toolchain_demo "$here/bin/toolchain_demo"
  step jit_demo "$here/bin/jit_demo"
  step jit_demo_again "$here/bin/jit_demo"
  local where match=0 log loaded
  where=$(sed -n 's/.*GPU kernels on \([a-z]*\).*/\1/p' "$logs/jit_demo.log" | awk 'NR == 1')
  for log in jit_demo jit_demo_again; do
    grep -q 'all results match the C++ reference' "$logs/$log.log" && match=$((match + 1))
  done
  loaded=$(sed -n 's/.* \([0-9]*\) loaded from the disk cache/\1/p' "$logs/jit_demo_again.log" |
           awk '{ s += $1 } END { print s + 0 }')
  if [ "$where" != cuda ]; then
    echo "=== FAILED: jit_demo ran its GPU kernels on '${where:-?}', not on cuda"
    status=1
  fi
  [ "$match" = 2 ] || status=1
  demo="GPU kernels on ${where:-?}; results $([ "$match" = 2 ] && echo match || echo DIFFER)"
  demo+=" (2 runs); second run: $loaded variants from the disk cache"
}

# --- bench -------------------------------------------------------------------------------------
# One benchmark program, 3 repetitions (mean, median, stddev), JSON to $logs/NAME.json.
bench() {
  local b=$1
  shift
  step "$b" "$here/bin/$b" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
       --benchmark_out="$logs/$b.json" --benchmark_out_format=json "$@"
}
run_bench() {
  bench bench_launch
  bench bench_kernels
  bench bench_compile --benchmark_filter='BM_NvrtcAlone|BM_FirstCall'
  bench bench_compile_latency --benchmark_filter='Nvrtc'
}

# The value of KEY in benchmark NAME of a --benchmark_out JSON file (nothing if absent).
json_value() {
  awk -v want="$2" -v key="\"$3\": " '
    index($0, "\"name\": ") { n = $0; sub(/^[^:]*: "/, "", n); sub(/",?[ \t\r]*$/, "", n); name = n }
    name == want && index($0, key) {
      v = $0; sub(/^[^:]*: /, "", v); sub(/,?[ \t\r]*$/, "", v); gsub(/"/, "", v); print v; exit
    }' "$1" 2>/dev/null
}
# printf of a number, or n/a.
num() {
  local format=$1 value=$2
  if [ -n "$value" ]; then printf "$format" "$value"; else printf 'n/a'; fi
}
# "x.xx" of BENCH.json's NAME (median of the repetitions) KEY, or n/a.
median() { num "%.${4:-2}f" "$(json_value "$logs/$1.json" "$2_median" "$3")"; }

bench_lines() {
  local line a
  line="Kernel / raw cuLaunchKernel:"
  for a in 1 4 16; do
    line+=" $(median bench_launch "BM_Launch/launch/args:$a/manual_time" ratio)x args:$a,"
  done
  line+=" round trip $(median bench_launch BM_Launch/launch_sync/args:1/manual_time ratio)x"
  # The prepared launch, where the build has it.
  a=$(json_value "$logs/bench_launch.json" "BM_PreparedLaunch/args:1/manual_time_median" ratio)
  [ -n "$a" ] && line+=", prepared $(num %.2f "$a")x"
  echo "launch     : $line"
  echo "kernels    : nvcc-compiled time / primjit time (1 = as fast): vector add" \
       "$(median bench_kernels BM_VectorAdd/manual_time vs_nvcc)," \
       "matmul 1024 $(median bench_kernels BM_TiledMatmul/1024/manual_time vs_nvcc)," \
       "4096 $(median bench_kernels BM_TiledMatmul/4096/manual_time vs_nvcc)"
  echo "             NVRTC-compiled hand-written / primjit: matmul 1024" \
       "$(median bench_kernels BM_TiledMatmul/1024/manual_time ratio)," \
       "4096 $(median bench_kernels BM_TiledMatmul/4096/manual_time ratio)"
  local ratio
  ratio=$(json_value "$logs/bench_kernels.json" BM_VectorAdd/manual_time_median ratio)
  echo "bandwidth  : vector add" \
       "$(median bench_kernels BM_VectorAdd/manual_time GBps 0) GB/s =" \
       "$(num %.1f "$(awk -v r="$ratio" 'BEGIN { if (r != "") print 100 * r }')")% of" \
       "cuMemcpyDtoD ($(median bench_kernels BM_VectorAdd/manual_time copy_GBps 0) GB/s)"
  line=""
  for a in $(sed -n 's/.*"name": "BM_NvrtcAlone\/\([^"]*\)_median".*/\1/p' \
               "$logs/bench_compile.json" 2>/dev/null); do
    line+=" $a $(median bench_compile "BM_NvrtcAlone/$a" real_time 1),"
  done
  echo "nvrtc ms   :${line:- n/a,} small kernel $(median bench_compile_latency \
       BM_NvrtcCompileVectorAdd/0 real_time 1) (cubin) / $(median bench_compile_latency \
       BM_NvrtcCompileVectorAdd/1 real_time 1) (ptx)"
}

summary() {
  local ran=$1
  echo
  echo "==== primjit GPU bundle: run.sh $what ($(date -u +%Y-%m-%dT%H:%MZ)) ===="
  echo "bundle     : $(awk '$1 == "version" { $1 = ""; print substr($0, 2) }' "$here/build-info")"
  if [ -f "$logs/preflight.log" ]; then
    echo "device     : $(sed -n 's/^preflight: device \(.*\)/\1/p' "$logs/preflight.log" |
                          head -n1)"
    echo "driver     : $(sed -n 's/^preflight: driver: //p' "$logs/preflight.log")"
  else
    echo "device     : none checked (cpu-tests: GPU tests skip, the crosscheck runs emu for cuda)"
  fi
  if [[ $ran == *tests* ]]; then
    echo "tests      : $tests_passed passed, $tests_skipped skipped, $tests_failed failed" \
         "($test_programs programs)"
    echo "crosscheck : ${cross:-did not finish}"
  fi
  [[ $ran == *demo* ]] && echo "demo       : $demo"
  [[ $ran == *bench* ]] && bench_lines
  echo "result     : $([ $status -eq 0 ] && echo passed || echo FAILED) in" \
       "$((SECONDS / 60))m$((SECONDS % 60))s; logs in $logs"
}

case "$what" in
  tests) run_tests cuda; summary tests ;;
  demo) run_demo; summary demo ;;
  bench) run_bench; summary bench ;;
  all) run_tests cuda; run_demo; run_bench; summary "tests demo bench" ;;
  cpu-tests) run_tests emu; summary tests ;;
esac
exit $status
