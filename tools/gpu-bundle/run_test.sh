#!/usr/bin/env bash
# Tests the GPU bundle's launcher without building a bundle (a CTest test): run.sh and
# preflight.sh from tools/gpu-bundle/ in a fake bundle whose programs are scripts, with a fake
# ldd and nvidia-smi first on PATH. Checks that every failing precondition stops the run with
# its message and exit 1 before anything runs, and that a run on a "GPU machine" sums the test
# counts, reads the crosscheck's totals and the benchmarks' JSON into the summary.
#   run_test.sh TOOLS_GPU_BUNDLE_DIR
set -uo pipefail
tools=$(cd "${1:?usage: run_test.sh TOOLS_GPU_BUNDLE_DIR}" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0
check() {  # check NAME CONDITION-COMMAND...: records a failure with the last output
  local name=$1
  shift
  if "$@"; then
    echo "ok: $name"
  else
    echo "FAILED: $name"
    sed 's/^/    /' "$scratch/out"
    failures=$((failures + 1))
  fi
}

# --- the fake machine ----------------------------------------------------------------------
fakebin=$scratch/path
mkdir -p "$fakebin"
cat > "$fakebin/ldd" <<'EOF'
#!/usr/bin/env bash
if [ "$1" = --version ]; then echo "ldd (GNU libc) ${FAKE_GLIBC:-2.36}"; exit 0; fi
for f in "$@"; do
  echo "$f:"
  echo "	libc.so.6 => /lib/libc.so.6 (0x0001)"
  [ -n "${FAKE_MISSING:-}" ] && echo "	$FAKE_MISSING => not found"
done
exit 0
EOF
cat > "$fakebin/nvidia-smi" <<'EOF'
#!/usr/bin/env bash
[ -n "${FAKE_SMI_FAIL:-}" ] && { echo "$FAKE_SMI_FAIL"; exit 9; }
echo "${FAKE_DRIVER:-580.65.06}, NVIDIA H100 80GB HBM3"
EOF
chmod +x "$fakebin"/*

# --- the fake bundle -----------------------------------------------------------------------
bundle=$scratch/bundle
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/src/tests" "$bundle/share"
cp "$tools/run.sh" "$tools/preflight.sh" "$bundle/"
cat > "$bundle/build-info" <<'EOF'
version primjit 0.1.0 (commit abc1234), built 2026-11-26 with CUDA 13.0, glibc 2.36
glibc 2.36
cuda 13.0
driver_api 13000
driver_release 580
EOF
touch "$bundle/lib/libprimjit_jit.so.0.1" "$bundle/src/tests/a.tir"
cat > "$bundle/bin/primjit-crosscheck" <<'EOF'
#!/usr/bin/env bash
if [ "$1" = --devices ]; then
  [ -n "${FAKE_NO_DRIVER:-}" ] && { echo "primjit-crosscheck: no CUDA driver: libcuda.so.1 not found"; exit 1; }
  [ -n "${FAKE_NO_DEVICE:-}" ] && { echo "primjit-crosscheck: the CUDA driver sees no GPU"; exit 1; }
  echo "driver API version: ${FAKE_API:-13000}"
  echo "device 0: NVIDIA H100 80GB HBM3 (sm_90, 132 multiprocessors)"
  exit 0
fi
echo "$@" > "$OUT/crosscheck.args"
echo "tests/a.tir: k: skipped: cuda cannot run it: reasons"
echo "crosscheck (${1#--target=} vs emu): 1 files, 5 kernels: 4 compared, 1 skipped, 0 failed"
EOF
for t in primjit_one_tests primjit_two_tests; do
  cat > "$bundle/bin/$t" <<'EOF'
#!/usr/bin/env bash
[ -d src/tests ] || { echo "not run from the bundle's folder: $PWD"; exit 1; }
echo "[==========] 1 test from 1 test suite ran. (2 ms total)"  # a child process's summary
echo "[  PASSED  ] 1 test."
echo "[  FAILED  ] 1 test, listed below:"
echo "[==========] 12 tests from 3 test suites ran. (5 ms total)"
echo "[  PASSED  ] 10 tests."
echo "[  SKIPPED ] 2 tests, listed below:"
echo "[  SKIPPED ] Gpu.Something"
EOF
done
# A bench program: JSON with the aggregates run.sh reads.
cat > "$bundle/bin/bench_fake" <<'EOF'
#!/usr/bin/env bash
out=$(printf '%s\n' "$@" | sed -n 's/^--benchmark_out=//p')
name=$(basename "$0")
row() {  # row NAME KEY VALUE...
  local n=$1; shift
  printf '    {\n      "name": "%s",\n      "run_name": "x",\n' "$n"
  while [ $# -gt 0 ]; do printf '      "%s": %s,\n' "$1" "$2"; shift 2; done
  printf '      "time_unit": "ms"\n    },\n'
}
{
  echo '{ "benchmarks": ['
  case $name in
    bench_launch)
      row BM_Launch/launch/args:1/manual_time_mean ratio 9.0
      row BM_Launch/launch/args:1/manual_time_median ratio 1.21
      row BM_Launch/launch/args:4/manual_time_median ratio 1.3
      row BM_Launch/launch/args:16/manual_time_median ratio 1.52
      row BM_Launch/launch_sync/args:1/manual_time_median ratio 1.04 ;;
    bench_kernels)
      row BM_VectorAdd/manual_time_median GBps 3012.4 copy_GBps 3300.0 ratio 0.9128 vs_nvcc 0.991
      row BM_TiledMatmul/1024/manual_time_median ratio 0.97 vs_nvcc 1.01
      row BM_TiledMatmul/4096/manual_time_median ratio 0.99 vs_nvcc 0.98 ;;
    bench_compile)
      row BM_NvrtcAlone/vector_add_cuda_median real_time 11.26
      row BM_NvrtcAlone/row_softmax_median real_time 20.04 ;;
    bench_compile_latency)
      row BM_NvrtcCompileVectorAdd/0_median real_time 9.5
      row BM_NvrtcCompileVectorAdd/1_median real_time 4.25 ;;
  esac
  echo '  {"name": "end"} ] }'
} > "$out"
echo "$name ran"
EOF
for b in bench_launch bench_kernels bench_compile bench_compile_latency; do
  cp "$bundle/bin/bench_fake" "$bundle/bin/$b"
done
rm "$bundle/bin/bench_fake"
chmod +x "$bundle/bin"/* "$bundle"/*.sh

run() {  # run [ENV=VALUE...] COMMAND: run.sh COMMAND on the fake machine; output in $scratch/out
  rm -rf "$scratch/logs"
  env PATH="$fakebin:$PATH" OUT="$scratch/logs" "$@" > "$scratch/out" 2>&1
}
has() { grep -qF -- "$1" "$scratch/out"; }
stopped() {  # the run failed, said why (a failed check saying $1), and ran nothing
  [ "$rc" -ne 0 ] && has "preflight: FAILED: " && has "$1" && has "nothing ran" && ! has "=== "
}

# --- preconditions -------------------------------------------------------------------------
run FAKE_NO_DRIVER=1 "$bundle/run.sh" tests; rc=$?
check "no driver stops tests" stopped "no GPU to run on: primjit-crosscheck: no CUDA driver"
run FAKE_NO_DEVICE=1 "$bundle/run.sh" demo; rc=$?
check "no device stops demo" stopped "the CUDA driver sees no GPU"
run FAKE_GLIBC=2.31 "$bundle/run.sh" bench; rc=$?
check "older glibc stops bench" stopped "glibc 2.31 on this machine is older than glibc 2.36"
run FAKE_GLIBC=2.40 FAKE_NO_DRIVER=1 "$bundle/run.sh" tests; rc=$?
check "newer glibc passes its check" stopped "no CUDA driver"
run FAKE_MISSING=libnvrtc.so.13 "$bundle/run.sh" all; rc=$?
check "a missing library stops all" stopped "libnvrtc.so.13 => not found"
run FAKE_DRIVER=550.54.15 "$bundle/run.sh" tests; rc=$?
check "an old driver (nvidia-smi) stops tests" \
  stopped "NVIDIA driver 550.54.15 is older than R580, which CUDA 13.0"
run FAKE_SMI_FAIL="NVIDIA-SMI has failed" "$bundle/run.sh" tests; rc=$?
check "a failing nvidia-smi stops tests" stopped "nvidia-smi fails (exit 9): NVIDIA-SMI has failed"
run FAKE_API=12080 "$bundle/run.sh" tests; rc=$?
check "an old driver API stops tests" \
  stopped "the CUDA driver supports API 12080, older than 13000 that CUDA 13.0"
mv "$bundle/build-info" "$bundle/build-info.away"
run "$bundle/run.sh" tests; rc=$?
check "a bundle without build-info stops" stopped "build-info is missing"
mv "$bundle/build-info.away" "$bundle/build-info"
run "$bundle/run.sh" nonsense; rc=$?
check "an unknown command is refused" test "$rc" -eq 2

# Without nvidia-smi on PATH the driver is still checked (through the devices list).
nosmi=$scratch/nosmi
mkdir -p "$nosmi"
cp "$fakebin/ldd" "$nosmi/"
for tool in bash env sed awk grep sort head cut tr wc tee mktemp mkdir rm dirname basename \
            date find cat printf; do
  p=$(command -v "$tool") && [ "$p" != "$tool" ] && ln -sf "$p" "$nosmi/$tool"
done
rm -rf "$scratch/logs"
env PATH="$nosmi" OUT="$scratch/logs" FAKE_NO_DRIVER=1 "$bundle/run.sh" tests > "$scratch/out" 2>&1
rc=$?
check "no nvidia-smi and no driver stops tests" stopped "no CUDA driver"
check "no nvidia-smi is noted" has "nvidia-smi: not on PATH"

# --- a run on a GPU machine ----------------------------------------------------------------
run "$bundle/run.sh" tests; rc=$?
check "tests passes" test "$rc" -eq 0
check "tests: counts summed" has "tests      : 20 passed, 4 skipped, 0 failed (2 programs)"
check "tests: crosscheck totals" \
  has "crosscheck : 1 files, 5 kernels: 4 compared, 1 skipped, 0 failed (cuda vs emu)"
check "tests: crosscheck gets the programs" grep -q -- "--target=cuda .*/src/tests/a.tir" \
  "$scratch/logs/crosscheck.args"
check "tests: device in the summary" has "device     : 0: NVIDIA H100 80GB HBM3 (sm_90"
check "tests: driver in the summary" has "driver     : API 13000, release 580.65.06 (needs 13000)"
check "tests: result" has "result     : passed"

run "$bundle/run.sh" bench; rc=$?
check "bench passes" test "$rc" -eq 0
check "bench: launch ratios (medians)" \
  has "launch     : Kernel / raw cuLaunchKernel: 1.21x args:1, 1.30x args:4, 1.52x args:16, round trip 1.04x"
check "bench: kernels vs nvcc" \
  has "primjit time (1 = as fast): vector add 0.99, matmul 1024 1.01, 4096 0.98"
check "bench: kernels vs NVRTC" has "hand-written / primjit: matmul 1024 0.97, 4096 0.99"
check "bench: bandwidth" has "bandwidth  : vector add 3012 GB/s = 91.3% of cuMemcpyDtoD (3300 GB/s)"
check "bench: nvrtc" \
  has "nvrtc ms   : vector_add_cuda 11.3, row_softmax 20.0, small kernel 9.5 (cubin) / 4.2 (ptx)"
check "bench: no test lines" bash -c "! grep -q '^tests  ' '$scratch/out'"

# A test program that fails, and one that dies without its summary.
cat > "$bundle/bin/primjit_two_tests" <<'EOF'
#!/usr/bin/env bash
echo "[  PASSED  ] 7 tests."
echo "[  FAILED  ] 3 tests, listed below:"
echo "[  FAILED  ] A.B"
exit 1
EOF
printf '#!/usr/bin/env bash\nexit 139\n' > "$bundle/bin/primjit_three_tests"
chmod +x "$bundle/bin"/*
run "$bundle/run.sh" tests; rc=$?
check "failing tests fail the run" test "$rc" -eq 1
check "failing tests: counts" has "tests      : 17 passed, 2 skipped, 4 failed (3 programs)"
check "failing tests: result" has "result     : FAILED"

if [ $failures -ne 0 ]; then
  echo "run_test: $failures checks failed"
  exit 1
fi
echo "run_test: all checks passed"
