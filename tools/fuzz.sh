#!/usr/bin/env bash
# Runs the differential fuzzer (llvm vs emu, pass by pass, print/parse round trip) for as long as
# asked, from a seed; failures print a minimized reproducer as text IR.
#   tools/fuzz.sh [SECONDS] [SEED] [primjit_fuzz flags, e.g. --no-minimize]
# With --cuda-on-cpu it instead runs random programs as GPU kernels whose generated CUDA C runs
# on the CPU against the interpreter (tests/cuda_on_cpu/), about one program per second.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-300}
seed=${2:-$(date +%s)}
shift 2 2>/dev/null || shift $#
if [[ " $* " == *" --cuda-on-cpu "* ]]; then
  bash tools/build.sh default --target primjit_cuda_on_cpu_tests >/dev/null
  PRIMJIT_CUDA_ON_CPU_FUZZ_COUNT=$seconds PRIMJIT_CUDA_ON_CPU_FUZZ_SEED=$seed PRIMJIT_LOG=off \
    exec build/default/bin/primjit_cuda_on_cpu_tests --gtest_filter='*FuzzerPrograms*'
fi
bash tools/build.sh default --target primjit_fuzz >/dev/null
PRIMJIT_CACHE=0 PRIMJIT_LOG=off exec build/default/bin/primjit_fuzz --seed "$seed" --seconds "$seconds" "$@"
