// Prepared calls (Kernel::prepare, PreparedCall): a call's kernel launches recorded once and
// replayed, and the check that a kernel's host code does nothing a replay would leave out.
#pragma once

#include <string>

#include "jit/cuda/device_code.h"
#include "primjit/ir/function.h"
#include "primjit/jit.h"

namespace primjit {

struct PreparedCall::State {
  jit::LaunchRecording recording;
  CUstream_st* stream = nullptr;
};

namespace jit {

/// What the host part of function `name` of `module` (and of the module functions it calls)
/// does besides launching kernels, in words ("stores to buffer 'B'"), or "" when nothing: what
/// a replay of its launches would not repeat. Device code (thread extents) is not host work.
std::string host_work_besides_launches(const IRModule& module, const std::string& name);

}  // namespace jit
}  // namespace primjit
