#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the JIT demo on this machine: GPU
# kernels on the GPU when a driver and a device exist, else in the interpreter (emu); CPU
# kernels compiled for this CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh default --target jit_demo
exec ./build/default/bin/jit_demo
