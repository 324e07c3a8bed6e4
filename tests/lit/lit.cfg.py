# lit configuration for primjit's FileCheck tests.
import os

import lit.formats

config.name = "primjit"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.primjit_build_dir, "tests", "lit")

config.environment["PATH"] = os.pathsep.join(
    [config.primjit_bin_dir, config.llvm_tools_dir, config.environment.get("PATH", "")]
)
config.environment["PRIMJIT_LOG"] = "off"
# Tests do not read or write the user's persistent cache.
config.environment["PRIMJIT_CACHE"] = "0"
for name in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS", "HOME"):
    if name in os.environ:
        config.environment[name] = os.environ[name]

config.substitutions.append(("%toolchain_demo", os.path.join(config.primjit_bin_dir, "toolchain_demo")))

# GPU-less machines: tests of the "no driver" behaviour require this feature.
import ctypes

try:
    ctypes.CDLL("libcuda.so.1")
except OSError:
    config.available_features.add("no-cuda-driver")
