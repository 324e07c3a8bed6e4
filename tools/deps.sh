#!/usr/bin/env bash
# Installs the Debian packages primjit builds with, when any is missing. Idempotent and quiet
# when everything is present. The CUDA 13 toolkit is expected at /usr/local/cuda (or CUDA_HOME).
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache python3 binutils file
  llvm-19-dev llvm-19-tools libzstd-dev
  libtbb-dev libdlpack-dev libgtest-dev libgmock-dev libbenchmark-dev
  clang-format libsodium-dev libhiredis-dev redis-server doxygen
  pybind11-dev python3-dev python3-numpy
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "primjit: installing missing packages: ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "primjit: run as root or install sudo" >&2; exit 1; }
    sudo=sudo
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda/include/nvrtc.h" ]; then
  echo "primjit: the CUDA toolkit (NVRTC) was not found at $cuda; set CUDA_HOME" >&2
  exit 1
fi
