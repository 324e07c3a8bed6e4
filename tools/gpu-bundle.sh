#!/usr/bin/env bash
# Builds the GPU bundle: a folder (at most 60 MiB) that runs on a GPU machine that has only the
# NVIDIA driver and the CUDA 13 toolkit (no LLVM, TBB, GoogleTest, Google Benchmark):
#   bin/       the programs of tools/gpu-bundle/programs.txt, LLVM linked statically into
#              libprimjit_jit, stripped
#   lib/       primjit's libraries and the few shared libraries the GPU machine lacks (oneTBB,
#              Google Benchmark, libsodium, hiredis, zlib/zstd, this libstdc++)
#   src/       the data the test programs read (tests/{ir,tvmscript,passes,emu,lit/Inputs},
#              docs/semantics.md; the build points them here, relative to the bundle), whose
#              text programs run.sh tests' crosscheck also runs
#   share/hand_kernels.fatbin   bench/hand_kernels.cu compiled by the toolkit's nvcc (sm_90 and
#              compute_90 PTX) for bench_kernels' nvcc baseline; absent (and those rows without
#              it) when nvcc is missing here
#   build-info the build machine's glibc, the CUDA version of the NVRTC built against and the
#              driver it needs, for run.sh's checks of the machine
#   run.sh, preflight.sh   (tools/gpu-bundle/): run.sh [tests|demo|bench|all]
#
#   tools/gpu-bundle.sh [--verify] [OUT_DIR]   (default: gpu-bundle/, git-ignored)
# --verify then checks the bundle here, as the GPU machine would use it: from a copy in another
# directory with an empty LD_LIBRARY_PATH, `run.sh tests` must stop at its GPU check (this
# machine has none) and `run.sh cpu-tests` must pass (test programs with the GPU tests
# skipping, the crosscheck with emu for cuda). Takes ~20 minutes on 2 cores with a cold ccache; not part
# of the test suite (tools/gpu-bundle/*_test.sh test its pieces without building it).
set -euo pipefail
cd "$(dirname "$0")/.."
verify=0
if [ "${1:-}" = --verify ]; then verify=1; shift; fi
out=${1:-gpu-bundle}
mapfile -t programs < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' tools/gpu-bundle/programs.txt)
limit=$((60 * 1024 * 1024))
cuda_home=${CUDA_HOME:-/usr/local/cuda}

# Test programs read their data relative to the bundle (run.sh runs them from its folder).
bash tools/deps.sh
cmake --preset gpu-bundle -DPRIMJIT_TEST_DATA_ROOT=src >/dev/null
bash tools/build.sh gpu-bundle --target "${programs[@]}"
build=build/gpu-bundle

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/src/tests" "$out/src/docs" "$out/share"
for p in "${programs[@]}"; do cp "$build/bin/$p" "$out/bin/"; done
# primjit's own libraries under their sonames (what the programs NEED).
for lib in "$build"/lib/libprimjit_*.so.*; do
  [ -L "$lib" ] && continue
  soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  cp "$lib" "$out/lib/$soname"
done
# Third-party libraries that the GPU machine does not have.
copy_dependency() {
  local name=$1 path
  path=$(ldd "$out/bin/primjit_jit_tests" "$out/bin/bench_compile_latency" 2>/dev/null |
         awk -v n="$name" '$1 == n && !found { print $3; found = 1 }')
  [ -n "$path" ] || { echo "gpu-bundle: $name is not a dependency" >&2; exit 1; }
  cp -L "$path" "$out/lib/$name"
}
for dep in libtbb.so.12 libsodium.so.23 libhiredis.so.0.14 libbenchmark.so.1debian libstdc++.so.6 libgcc_s.so.1 libz.so.1 libzstd.so.1; do
  copy_dependency "$dep"
done
strip --strip-unneeded "$out"/bin/* "$out"/lib/*

# The test programs' data, with every text program that has GPU kernels.
for d in ir tvmscript passes emu lit/Inputs; do
  mkdir -p "$out/src/tests/$(dirname "$d")"
  cp -r "tests/$d" "$out/src/tests/$d"
done
cp docs/semantics.md "$out/src/docs/"

# The nvcc baseline of bench_kernels.
nvcc=$(command -v nvcc || echo "$cuda_home/bin/nvcc")
if [ -x "$nvcc" ]; then
  "$nvcc" -O3 -fatbin -gencode 'arch=compute_90,code=[sm_90,compute_90]' \
          -o "$out/share/hand_kernels.fatbin" bench/hand_kernels.cu
else
  echo "gpu-bundle: no nvcc (looked on PATH and in $cuda_home/bin): bench_kernels runs without" \
       "its nvcc baseline" >&2
fi

# What run.sh's preflight checks against: this glibc, the CUDA version NVRTC comes from, the
# driver API version and driver release that version needs.
glibc=$(ldd --version | awk 'NR == 1 { print $NF }')
driver_api=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$cuda_home/include/cuda.h")
[ -n "$driver_api" ] || { echo "gpu-bundle: no CUDA_VERSION in $cuda_home/include/cuda.h" >&2; exit 1; }
cuda="$((driver_api / 1000)).$((driver_api % 1000 / 10))"
# The minimum driver of each CUDA major version (minor version compatibility).
case "$((driver_api / 1000))" in
  13) driver_release=580 ;;
  12) driver_release=525 ;;
  *) echo "gpu-bundle: no known minimum driver for CUDA $cuda" >&2; exit 1 ;;
esac
version=$(sed -n 's/^project(primjit VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
cat > "$out/build-info" <<INFO
version primjit $version (commit $commit), built $(date -u +%Y-%m-%d) with CUDA $cuda, glibc $glibc
glibc $glibc
cuda $cuda
driver_api $driver_api
driver_release $driver_release
INFO
cp tools/gpu-bundle/run.sh tools/gpu-bundle/preflight.sh "$out/"

size=$(du -sb "$out" | cut -f1)
echo "gpu-bundle: $out is $((size / 1024 / 1024)) MiB ($size bytes)," \
     "$(find "$out/src" -name '*.tir' | wc -l) text programs"
if [ "$size" -gt "$limit" ]; then
  echo "gpu-bundle: over the 60 MiB the bundle may take" >&2
  exit 1
fi

if [ $verify -eq 1 ]; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  cp -r "$out" "$scratch/bundle"
  echo "gpu-bundle: run.sh tests must stop at its GPU check here"
  if (cd / && env LD_LIBRARY_PATH= OUT="$scratch/tests" "$scratch/bundle/run.sh" tests) \
       > "$scratch/tests.log" 2>&1; then
    cat "$scratch/tests.log"
    echo "gpu-bundle: run.sh tests passed on a machine without a GPU" >&2
    exit 1
  fi
  grep 'preflight: FAILED' "$scratch/tests.log"
  grep -q 'nothing ran' "$scratch/tests.log" || { cat "$scratch/tests.log"; exit 1; }
  (cd / && env LD_LIBRARY_PATH= OUT="$scratch/cpu" "$scratch/bundle/run.sh" cpu-tests)
fi
