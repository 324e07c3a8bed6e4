#!/usr/bin/env bash
# Enforces the dependency direction primjit_ir <- primjit_passes <- primjit_jit:
#  - no LLVM or CUDA header is included from include/, ir/, passes/, tools/ or examples/;
#  - the built primjit_ir and primjit_passes libraries need neither libLLVM nor NVRTC.
#   check-layering.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
status=0

dirs=()
for d in include ir passes tools examples; do [ -d "$d" ] && dirs+=("$d"); done
if hits=$(grep -rnE '#\s*include\s*[<"](llvm/|llvm-c/|cuda|nvrtc|nvJitLink)' "${dirs[@]}" \
            --include='*.h' --include='*.cc' --include='*.in'); then
  echo "error: LLVM/CUDA headers outside jit/:" >&2
  echo "$hits" >&2
  status=1
fi

build=${1:-}
if [ -n "$build" ]; then
  for lib in "$build"/lib/libprimjit_ir.so "$build"/lib/libprimjit_passes.so; do
    [ -e "$lib" ] || { echo "error: $lib was not built" >&2; status=1; continue; }
    if readelf -d "$lib" | grep -E 'NEEDED.*(libLLVM|libnvrtc|libcuda|libtbb)' >/dev/null; then
      echo "error: $lib depends on LLVM, NVRTC, CUDA or TBB" >&2
      status=1
    fi
  done
fi
[ $status -eq 0 ] && echo "layering: ok"
exit $status
