// The device side of a variant: its kernels compiled and loaded for cuda, or prepared for the
// interpreter (emu), each behind the KernelHandle the host code launches.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "jit/runtime/launch.h"
#include "primjit/ir/function.h"
#include "primjit/ir/target.h"
#include "primjit/jit.h"

namespace primjit::jit {

struct DeviceCode {
  std::map<std::string, std::unique_ptr<KernelHandle>> kernels;  // by kernel symbol
  std::shared_ptr<void> owner;  // modules etc.; released after the kernels
  ~DeviceCode() { kernels.clear(); }
};

/// Compiles and loads the kernels (calling_conv 2) of a lowered module for `device` (cuda or
/// emu), adding the time of each stage to `times`. No kernels: an empty DeviceCode.
struct DeviceOptions {
  bool fast_math = false;
  void* stream = nullptr;  // CUstream
};
std::unique_ptr<DeviceCode> load_device_code(const IRModule& lowered, const Target& device,
                                             const DeviceOptions& options, StageTimes* times);

}  // namespace primjit::jit
