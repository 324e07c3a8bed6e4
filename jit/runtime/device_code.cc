#include "jit/runtime/device_code.h"

#include "primjit/error.h"

namespace primjit::jit {

std::unique_ptr<DeviceCode> load_device_code(const IRModule& lowered, const Target& device,
                                             StageTimes* /*times*/) {
  auto code = std::make_unique<DeviceCode>();
  bool has_kernels = false;
  for (const auto& [gvar, func] : lowered->functions) {
    const AttrValue* cc = func->attr("calling_conv");
    has_kernels |= cc != nullptr && cc->is_int() && cc->as_int() == 2;
  }
  if (!has_kernels) return code;
  PRIMJIT_USER_ERROR() << "running kernels on target " << device.str()
                       << " is not available in this build yet; use the llvm target for "
                          "CPU functions";
}

}  // namespace primjit::jit
