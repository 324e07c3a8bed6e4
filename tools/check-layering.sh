#!/usr/bin/env bash
# Enforces the dependency direction primjit_ir <- primjit_passes <- primjit_jit:
#  - no LLVM or CUDA header is included from include/, ir/, passes/, tools/ or examples/;
#  - inside jit/, one direction: the runtime orchestrates the backends (llvm, cuda, emu), which
#    include nothing from jit/runtime/ nor from each other; what they share (the host ABI,
#    launch limits) is in jit/common/, which includes none of them;
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

# Includes of "jit/<part>/" from jit/<dir> that break the direction.
forbid() {
  local dir=$1 parts=$2
  [ -d "jit/$dir" ] || return 0
  local hits
  if hits=$(grep -rnE "#\s*include\s*\"jit/($parts)/" "jit/$dir" --include='*.h' --include='*.cc'); then
    echo "error: jit/$dir includes jit/{$parts}/ (the runtime depends on the backends, not back):" >&2
    echo "$hits" >&2
    status=1
  fi
}
forbid common 'runtime|llvm|cuda|emu'
forbid llvm 'runtime|cuda|emu'
forbid cuda 'runtime|llvm|emu'
forbid emu 'runtime|llvm|cuda'

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
