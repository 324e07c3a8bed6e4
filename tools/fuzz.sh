#!/usr/bin/env bash
# Runs the differential fuzzer (llvm vs emu, pass by pass, print/parse round trip) for as long as
# asked, from a seed; failures print a minimized reproducer as text IR.
#   tools/fuzz.sh [SECONDS] [SEED] [primjit_fuzz flags, e.g. --no-minimize]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-300}
seed=${2:-$(date +%s)}
shift 2 2>/dev/null || shift $#
bash tools/build.sh default --target primjit_fuzz >/dev/null
PRIMJIT_CACHE=0 PRIMJIT_LOG=off exec build/default/bin/primjit_fuzz --seed "$seed" --seconds "$seconds" "$@"
