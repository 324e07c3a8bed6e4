#!/usr/bin/env bash
# Enforces the dependency direction ir <- passes <- jit/{llvm,cuda,emu} <- runtime <- tools:
#  - no LLVM or CUDA header is included from include/, ir/, passes/, tools/ or examples/;
#  - the ir layer (ir/, include/primjit/ir/ and the ir layer's public headers) includes nothing
#    of passes/, jit/ or tools/, nor the public headers of the passes or jit layers;
#  - the passes layer (passes/, primjit/passes.h) includes nothing of jit/ or tools/, nor the
#    jit layer's public headers;
#  - inside jit/, one direction: the runtime orchestrates the backends (llvm, cuda, emu), which
#    include nothing from jit/runtime/ nor from each other; what they share (the host ABI,
#    launch limits) is in jit/common/, which includes none of them;
#  - the built primjit_ir and primjit_passes libraries need neither libLLVM nor NVRTC, and
#    neither needs a library of a layer above it.
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

# The public headers of the jit layer (primjit_jit) and of the passes layer.
jit_headers='primjit/(jit|tensor|dlpack|toolchain|benchmark|primjit)\.h'
passes_headers='primjit/passes\.h'
# Files of a layer that include something of a layer above it.
upward() {  # upward REGEX FILES...
  local regex=$1
  shift
  grep -nE "#\s*include\s*[<\"]($regex)" "$@" || true
}
ir_files=$(find ir include/primjit/ir -name '*.h' -o -name '*.cc' -o -name '*.def' | sort)
ir_files+=" $(ls include/primjit/{error,log,abi,arith,float_formats,ir,builder}.h \
                 include/primjit/version.h.in)"
# shellcheck disable=SC2086
hits=$(upward "(passes|jit|tools)/|$passes_headers|$jit_headers" $ir_files)
if [ -n "$hits" ]; then
  echo "error: the ir layer includes from a layer above it (passes, jit, tools):" >&2
  echo "$hits" >&2
  status=1
fi
passes_files="$(find passes -name '*.h' -o -name '*.cc' | sort) include/primjit/passes.h"
# shellcheck disable=SC2086
hits=$(upward "(jit|tools)/|$jit_headers" $passes_files)
if [ -n "$hits" ]; then
  echo "error: the passes layer includes from a layer above it (jit, tools):" >&2
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
    above='libprimjit_jit'
    [ "$(basename "$lib")" = libprimjit_ir.so ] && above='libprimjit_(passes|jit)'
    if readelf -d "$lib" | grep -E "NEEDED.*$above" >/dev/null; then
      echo "error: $lib depends on a library of a layer above it" >&2
      status=1
    fi
  done
fi
[ $status -eq 0 ] && echo "layering: ok"
exit $status
