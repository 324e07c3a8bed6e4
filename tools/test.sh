#!/usr/bin/env bash
# Runs every test: installs what is missing, builds the preset, runs ctest.
#   tools/test.sh                  default preset (RelWithDebInfo) + style and layering checks
#   tools/test.sh --preset asan    the same tests under ASan+UBSan (also: debug, tsan)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=default
while [ $# -gt 0 ]; do
  case "$1" in
    --preset) preset=${2:?--preset needs a name}; shift 2 ;;
    --preset=*) preset=${1#--preset=}; shift ;;
    *) echo "usage: tools/test.sh [--preset NAME]" >&2; exit 2 ;;
  esac
done

bash tools/build.sh "$preset"
if [ "$preset" = default ]; then
  bash tools/check-layering.sh build/default
  cmake --build --preset default --target format-check >/dev/null
  echo "style: clang-format clean"
fi
ctest --preset "$preset" -j "$(nproc)"
