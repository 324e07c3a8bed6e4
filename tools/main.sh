#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the example on this machine's
# default target (the GPU when a driver and device exist, else the CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh default --target toolchain_demo
exec ./build/default/bin/toolchain_demo
