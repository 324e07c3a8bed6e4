// Helpers shared by the runtime benchmarks (bench_dispatch, bench_launch, bench_kernels):
// clocks, the lowering the Jit does for a call (to build baselines from the same code), a
// Kernel call with N tensors, and the rule that GPU benchmarks skip without a driver.
#pragma once

#include <time.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>

#include "bench/bench_main.h"
#include "jit/cuda/driver.h"
#include "primjit/error.h"
#include "primjit/jit.h"
#include "primjit/passes.h"

namespace primjit::bench {

/// CPU time of the calling thread in nanoseconds: what a thread that never blocks spends,
/// unaffected by other processes on a shared machine.
inline int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

/// Wall-clock nanoseconds (steady clock), for code that waits on a device.
inline int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Marks the run as failed and skips the benchmark with `message`.
inline void fail_benchmark(benchmark::State& state, const std::string& message) {
  fail();
  state.SkipWithError(message.c_str());
}

/// The module the Jit compiles for a call of `kernel` with `args`: the kernel's function with
/// its resolved target, its shape variables bound to the tensors' dimensions when `specialize`
/// (Policy::kExact, and kAuto while no dimension is symbolic), through the default pipeline.
/// Compiled the same way (HostProgram, codegen_cuda + NVRTC), it is the code the Kernel runs.
inline IRModule lower_like_jit(const Kernel& kernel, std::span<const Arg> args, bool specialize) {
  const PrimFunc& original = kernel.function();
  std::string name = original->global_symbol().empty() ? "main" : original->global_symbol();
  PrimFunc func = original.with_attr(attr::kTarget, AttrValue(kernel.target()));
  if (original->global_symbol().empty()) func = func.with_attr(attr::kGlobalSymbol, name);
  PRIMJIT_ICHECK(args.size() == func->params.size())
      << "lower_like_jit: " << args.size() << " arguments for " << func->params.size()
      << " parameters";
  if (specialize) {
    std::unordered_map<const VarNode*, Expr> values;
    for (size_t i = 0; i < args.size(); ++i) {
      Buffer buffer = func->buffer_of(func->params[i]);
      if (!buffer.defined()) continue;
      const auto* tensor = static_cast<const DLTensor*>(args[i].value.v_ptr);
      for (size_t d = 0; d < buffer->shape.size(); ++d) {
        const auto* var = buffer->shape[d].as<VarNode>();
        if (var != nullptr && !values.count(var)) {
          values.emplace(var, IntImm::make(var->dtype, tensor->shape[d]));
        }
      }
    }
    func = passes::specialize(func, values);
  }
  return passes::run_passes(IRModule::from_function(name, func), passes::default_pipeline());
}

/// `kernel(tensors[0], ..., tensors[N-1])`: Kernel::operator() with N tensor arguments.
template <size_t N>
PJValue call_kernel(const Kernel& kernel, const std::array<DLTensor*, N>& tensors) {
  return [&]<size_t... I>(std::index_sequence<I...>) { return kernel(tensors[I]...); }
  (std::make_index_sequence<N>());
}

/// The architecture (major * 10 + minor) of CUDA device 0, or `fallback` without a driver or
/// device: device code can be compiled (NVRTC needs no GPU) before a benchmark skips itself.
inline int cuda_arch_or(int fallback) {
  jit::CudaDriver* driver = jit::CudaDriver::try_get();
  try {
    if (driver != nullptr && driver->device_count() > 0) return driver->device_info(0).arch();
  } catch (const Error&) {
  }
  return fallback;
}

/// The CUDA driver when it is there with a device; otherwise skips the benchmark with the
/// reason ("no CUDA driver: ...") and returns nullptr. A missing GPU is not a failure.
inline jit::CudaDriver* gpu_or_skip(benchmark::State& state) {
  std::string reason;
  jit::CudaDriver* driver = jit::CudaDriver::try_get(&reason);
  if (driver == nullptr) {
    const std::string prefix = "no CUDA driver";
    if (reason.compare(0, prefix.size(), prefix) != 0) reason = prefix + ": " + reason;
    state.SkipWithError(reason.c_str());
    return nullptr;
  }
  int devices = 0;
  try {
    devices = driver->device_count();
  } catch (const Error& e) {
    state.SkipWithError((std::string("no CUDA device: ") + e.what()).c_str());
    return nullptr;
  }
  if (devices == 0) {
    state.SkipWithError("no CUDA device: the driver reports none");
    return nullptr;
  }
  return driver;
}

}  // namespace primjit::bench
