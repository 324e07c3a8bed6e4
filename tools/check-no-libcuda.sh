#!/usr/bin/env bash
# Fails when any ELF file under the given build folders NEEDs libcuda: primjit must only ever
# dlopen the driver, so that it loads (and reports "no CUDA driver") on machines without one.
#   check-no-libcuda.sh DIR...            check every ELF file under DIR
#   check-no-libcuda.sh --self-test STUBS prove the check catches a binary linked to the stub
set -euo pipefail

check() {
  local checked=0 bad=0 file
  while IFS= read -r -d '' file; do
    grep -q 'ELF' < <(head -c 4 "$file" 2>/dev/null) || continue
    checked=$((checked + 1))
    if readelf -d "$file" 2>/dev/null | grep -E 'NEEDED.*\[libcuda\.so' >/dev/null; then
      echo "error: $file links libcuda; load the driver with dlopen only" >&2
      bad=$((bad + 1))
    fi
  done < <(find "$@" -type f \( -perm -u+x -o -name '*.so*' \) -print0)
  if [ "$checked" -eq 0 ]; then
    echo "error: no ELF files found under $*" >&2
    return 2
  fi
  echo "checked $checked ELF files, $bad link libcuda"
  [ "$bad" -eq 0 ]
}

if [ "${1:-}" = "--self-test" ]; then
  stubs=${2:?usage: check-no-libcuda.sh --self-test CUDA_STUBS_DIR}
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo 'extern "C" int cuInit(unsigned); int main() { return cuInit(0); }' > "$tmp/bad.cc"
  c++ "$tmp/bad.cc" -o "$tmp/bad" -L"$stubs" -Wl,--no-as-needed -lcuda
  if check "$tmp" >/dev/null 2>&1; then
    echo "error: the guard did not catch a binary that NEEDs libcuda" >&2
    exit 1
  fi
  echo "the guard catches a binary that NEEDs libcuda"
  exit 0
fi

check "$@"
