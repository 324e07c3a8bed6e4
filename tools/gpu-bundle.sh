#!/usr/bin/env bash
# Builds the GPU bundle: the GPU-relevant test, benchmark and example programs with LLVM linked
# statically into libprimjit_jit, plus the few shared libraries the GPU machine lacks (oneTBB,
# Google Benchmark, zlib/zstd, this libstdc++), stripped, in one folder with a run.sh. The GPU machine has
# CUDA 13 and the driver but no LLVM, TBB or GoogleTest; it finds NVRTC in its own toolkit.
#   tools/gpu-bundle.sh [--verify] [OUT_DIR]   (default: gpu-bundle/, git-ignored)
# --verify then runs the bundle's tests here, as the GPU machine would: from a copy in another
# directory with an empty LD_LIBRARY_PATH (GPU tests skip without a driver).
# Then, on the GPU machine:  OUT_DIR/run.sh [tests|bench|demo|all]
set -euo pipefail
cd "$(dirname "$0")/.."
verify=0
if [ "${1:-}" = --verify ]; then verify=1; shift; fi
out=${1:-gpu-bundle}
programs=(primjit_ir_tests primjit_structural_tests primjit_text_tests primjit_jit_tests primjit_emu_tests
          bench_compile_latency bench_dispatch bench_host_codegen bench_compile bench_launch bench_kernels
          toolchain_demo jit_demo primjit-run)
limit=$((64 * 1024 * 1024))

bash tools/build.sh gpu-bundle --target "${programs[@]}"
build=build/gpu-bundle

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
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
         awk -v n="$name" '$1 == n { print $3; exit }')
  [ -n "$path" ] || { echo "gpu-bundle: $name is not a dependency" >&2; exit 1; }
  cp -L "$path" "$out/lib/$name"
}
for dep in libtbb.so.12 libsodium.so.23 libhiredis.so.0.14 libbenchmark.so.1debian libstdc++.so.6 libgcc_s.so.1 libz.so.1 libzstd.so.1; do
  copy_dependency "$dep"
done
strip --strip-unneeded "$out"/bin/* "$out"/lib/*

cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the primjit GPU bundle from wherever it lies. GPU tests skip when no driver is present.
#   run.sh [tests|bench|demo|all]    (default: all)
# Benchmark JSON goes to $OUT/bench_*.json when OUT is set.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
what=${1:-all}
status=0
missing=$(ldd "$here"/bin/* "$here"/lib/libprimjit_jit.so.* 2>/dev/null | grep 'not found' | sort -u)
if [ -n "$missing" ]; then
  echo "run.sh: unresolved libraries (is the CUDA toolkit at /usr/local/cuda?):" >&2
  echo "$missing" >&2
  exit 1
fi
step() {
  echo "=== $*"
  "$@" || { echo "=== FAILED: $*"; status=1; }
}
if [ "$what" = demo ] || [ "$what" = all ]; then
  step "$here/bin/toolchain_demo"
  step "$here/bin/jit_demo"
fi
if [ "$what" = tests ] || [ "$what" = all ]; then
  for t in primjit_ir_tests primjit_structural_tests primjit_text_tests; do
    step "$here/bin/$t" --gtest_brief=1
  done
  step "$here/bin/primjit_jit_tests" --gtest_brief=1
  step "$here/bin/primjit_emu_tests" --gtest_brief=1
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  json=()
  [ -n "${OUT:-}" ] && json=(--benchmark_out="$OUT/bench_compile_latency.json" --benchmark_out_format=json)
  step "$here/bin/bench_compile_latency" --benchmark_repetitions=3 \
       --benchmark_report_aggregates_only=true "${json[@]}"
  for b in bench_launch bench_kernels bench_compile bench_dispatch bench_host_codegen; do
    json=()
    [ -n "${OUT:-}" ] && json=(--benchmark_out="$OUT/$b.json" --benchmark_out_format=json)
    step "$here/bin/$b" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true "${json[@]}"
  done
fi
echo "=== run.sh: $([ $status -eq 0 ] && echo passed || echo FAILED)"
exit $status
RUN
chmod +x "$out/run.sh"

size=$(du -sb "$out" | cut -f1)
echo "gpu-bundle: $out is $((size / 1024 / 1024)) MiB ($size bytes)"
if [ "$size" -ge "$limit" ]; then
  echo "gpu-bundle: over the 64 MiB a run can carry" >&2
  exit 1
fi

if [ $verify -eq 1 ]; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  cp -r "$out" "$scratch/bundle"
  (cd / && env LD_LIBRARY_PATH= "$scratch/bundle/run.sh" tests)
fi
