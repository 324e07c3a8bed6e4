#!/usr/bin/env bash
# The GPU bundle's checks of the machine it is about to run on (run.sh runs them before every
# command). Each prints one line; the first that fails prints what is wrong and what to do, and
# the script exits 1.
#   preflight.sh BUNDLE_DIR
# 1. the bundle is complete: BUNDLE_DIR/build-info (written by tools/gpu-bundle.sh) names the
#    build machine's glibc, the CUDA version of the NVRTC the bundle was built against, the
#    driver API version and driver release that NVRTC's code needs;
# 2. glibc here >= the build machine's (`ldd --version`);
# 3. every library the programs need resolves (`ldd`; NVRTC comes from the toolkit here);
# 4. the NVIDIA driver: nvidia-smi's driver version >= the release needed (skipped, with a note,
#    when there is no nvidia-smi);
# 5. the driver as primjit loads it (bin/primjit-crosscheck --devices): loadable, its API
#    version >= the one needed, and at least one GPU.
# Lines that run.sh's summary reads: "preflight: driver: ..." and "preflight: device 0: ...".
set -uo pipefail
dir=${1:?usage: preflight.sh BUNDLE_DIR}

fail() {
  echo "preflight: FAILED: $*"
  exit 1
}
# The value of KEY in build-info.
info() { awk -v k="$1" '$1 == k && !found { print $2; found = 1 }' "$dir/build-info"; }
# Whether version $1 >= version $2 (dotted numbers).
at_least() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | awk 'NR == 1')" = "$2" ]; }

# 1. The bundle.
[ -r "$dir/build-info" ] ||
  fail "$dir/build-info is missing: not a complete bundle (make it with tools/gpu-bundle.sh)"
build_glibc=$(info glibc)
cuda=$(info cuda)
need_api=$(info driver_api)
need_release=$(info driver_release)
for key in glibc cuda driver_api driver_release; do
  [ -n "$(info $key)" ] || fail "$dir/build-info has no '$key': remake the bundle"
done
echo "preflight: bundle: built with glibc $build_glibc against CUDA $cuda (NVRTC)"

# 2. glibc.
glibc=$(ldd --version 2>/dev/null | awk 'NR == 1 { print $NF }')
[ -n "$glibc" ] || fail "cannot tell this machine's glibc version ('ldd --version' printed nothing)"
at_least "$glibc" "$build_glibc" ||
  fail "glibc $glibc on this machine is older than glibc $build_glibc of the machine that built" \
       "the bundle: build the bundle on a system with glibc $glibc or older, or run it on a" \
       "newer system"
echo "preflight: glibc: $glibc (bundle built with $build_glibc)"

# 3. Libraries.
missing=$(ldd "$dir"/bin/* "$dir"/lib/*.so* 2>/dev/null | grep 'not found' | sort -u)
[ -z "$missing" ] ||
  fail "libraries the bundle needs are not found: $(echo "$missing" | tr -s '\n\t' '  ')--" \
       "NVRTC comes from the CUDA" \
       "$cuda toolkit: install it at /usr/local/cuda (or put its lib64 on LD_LIBRARY_PATH)"
echo "preflight: libraries: all found"

# 4. The driver release, from nvidia-smi.
if command -v nvidia-smi >/dev/null 2>&1; then
  smi=$(nvidia-smi --query-gpu=driver_version,name --format=csv,noheader 2>&1)
  rc=$?
  [ $rc -eq 0 ] && [ -n "$smi" ] ||
    fail "nvidia-smi fails (exit $rc): $smi -- no GPU is visible or the NVIDIA driver is not" \
         "loaded"
  release=$(echo "$smi" | awk -F, 'NR == 1 { gsub(/ /, "", $1); print $1 }')
  at_least "$release" "$need_release" ||
    fail "NVIDIA driver $release is older than R$need_release, which CUDA $cuda (the bundle's" \
         "NVRTC) needs: install driver $need_release or newer"
  echo "preflight: nvidia-smi: driver $release, $(echo "$smi" | wc -l) GPU(s)"
else
  echo "preflight: nvidia-smi: not on PATH; the driver is checked through libcuda below"
fi

# 5. The driver through primjit's loader, and the devices.
devices=$("$dir/bin/primjit-crosscheck" --devices 2>&1)
rc=$?
[ $rc -eq 0 ] ||
  fail "no GPU to run on: $devices -- run the bundle on a machine with an NVIDIA GPU and" \
       "driver R$need_release or newer"
api=$(echo "$devices" | awk -F': ' '/^driver API version:/ && !found { print $2; found = 1 }')
[ -n "$api" ] || fail "primjit-crosscheck --devices printed no driver API version: $devices"
[ "$api" -ge "$need_api" ] ||
  fail "the CUDA driver supports API $api, older than $need_api that CUDA $cuda (the bundle's" \
       "NVRTC) needs: install driver R$need_release or newer"
echo "preflight: driver: API $api${release:+, release $release} (needs $need_api)"
echo "$devices" | sed -n 's/^device /preflight: device /p'
exit 0
