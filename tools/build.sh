#!/usr/bin/env bash
# Configures and builds one CMake preset (default: "default") with all cores.
#   tools/build.sh [PRESET] [extra cmake --build arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
shift || true
bash tools/deps.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)" "$@"
