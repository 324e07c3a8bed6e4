// Helpers shared by the runtime benchmarks (bench_dispatch, bench_launch, bench_kernels):
// clocks, the signatures that Kernel::lowered takes (to build baselines from the code the
// Jit compiles), a Kernel call with N tensors, and the rule that GPU benchmarks skip without a
// driver.
#pragma once

#include <time.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_main.h"
#include "jit/cuda/driver.h"
#include "primjit/error.h"
#include "primjit/ir.h"
#include "primjit/jit.h"

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

/// The signature of a call with tensor arguments `args`, for Kernel::lowered (the module the
/// kernel compiles for the call; compiled the same way, HostProgram or codegen_cuda + NVRTC,
/// it is the code the Kernel runs).
inline Signature signature_of(std::span<const Arg> args) {
  Signature signature;
  for (const Arg& a : args) {
    PRIMJIT_ICHECK(a.value.type_index == kPJDLTensorPtr) << "signature_of: tensors only";
    const auto* t = static_cast<const DLTensor*>(a.value.v_ptr);
    DataType dtype;
    PRIMJIT_ICHECK(DataType::from_dlpack(t->dtype.code, t->dtype.bits, t->dtype.lanes, &dtype));
    signature.push_back(ArgSpec::tensor(dtype, std::vector<int64_t>(t->shape, t->shape + t->ndim)));
  }
  return signature;
}

/// The signature of `kernel`'s function, whose buffer shapes are all constants.
inline Signature constant_signature(const Kernel& kernel) {
  const PrimFunc& func = kernel.function();
  Signature signature;
  for (const Var& p : func->params) {
    Buffer buffer = func->buffer_of(p);
    if (!buffer.defined()) {
      signature.push_back(ArgSpec::scalar(p.dtype()));
      continue;
    }
    std::vector<int64_t> shape;
    for (const Expr& extent : buffer->shape) {
      std::optional<int64_t> c = as_const_int(extent);
      PRIMJIT_ICHECK(c.has_value()) << "constant_signature: " << buffer->name << " has a "
                                    << "symbolic shape";
      shape.push_back(*c);
    }
    signature.push_back(ArgSpec::tensor(buffer->dtype, std::move(shape)));
  }
  return signature;
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
