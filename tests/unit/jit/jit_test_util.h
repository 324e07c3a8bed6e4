// Shared by the JIT runtime's tests: a CPU kernel B = A * s with a symbolic length, and a pair
// of tensors to call it with; a vector add; whether a GPU is there, and its and the host's
// DLDevice.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "jit/cuda/driver.h"
#include "jit/llvm/codegen_llvm.h"
#include "jit/llvm/orc_engine.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/log.h"
#include "primjit/passes.h"
#include "primjit/tensor.h"

namespace primjit::test {

/// `llvm_text` (host LLVM IR) after the JIT's optimizer, as the JIT runs it.
inline std::string optimized_ir_of(const std::string& llvm_text) {
  jit::OrcEngine engine(jit::OrcOptions{.opt_level = 3, .keep_optimized_ir = true});
  jit::OrcEngine::ModuleKey key = engine.add_ir_text(llvm_text, "optimized");
  std::string ir = engine.optimized_ir(key);
  engine.remove(key);
  return ir;
}

/// The host code of `lowered` (a module through the default pipeline) as LLVM IR, before and
/// after the JIT's optimizer.
inline std::string host_llvm_text(const IRModule& lowered) {
  return jit::to_llvm_text(jit::codegen_llvm(passes::lower_for_host(lowered)));
}
inline std::string optimized_ir_of(const IRModule& lowered) {
  return optimized_ir_of(host_llvm_text(lowered));
}

/// Whether two float outputs are the same bits (NaN payloads and signed zeros included).
inline bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  // memcmp must not see the null data() of an empty vector.
  return x.size() == y.size() &&
         (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0);
}

inline PrimFunc scale_function() {
  return parse(R"(
@T.prim_func
def scale(a: T.handle, b: T.handle, s: T.float32):
    T.func_attr({"target": T.target("llvm")})
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i in range(n):
        B[i] = A[i] * s
)")
      ->lookup("scale");
}

// C = A + B over float32 vectors of a symbolic length: reads A and B, writes C.
inline constexpr const char* kVectorAddText = R"(
@T.prim_func
def vadd(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    C = T.match_buffer(c, (n,), "float32")
    for i in range(n):
        C[i] = A[i] + B[i]
)";

struct Pair {
  Tensor a, b;
  explicit Pair(int64_t n) {
    a = Tensor::zeros({n}, DataType::Float(32));
    b = Tensor::zeros({n}, DataType::Float(32));
    std::iota(a.data<float>(), a.data<float>() + n, 1.0f);
  }
  void expect_scaled(float s) const {
    for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(b.data<float>()[i], a.data<float>()[i] * s);
  }
};

/// The CUDA driver when it loads and reports a device; otherwise null, with the reason in
/// `*why_not` when given. GPU tests skip with that reason.
inline jit::CudaDriver* gpu_driver(std::string* why_not = nullptr) {
  std::string reason;
  jit::CudaDriver* driver = jit::CudaDriver::try_get(&reason);
  if (driver != nullptr && driver->device_count() == 0) {
    driver = nullptr;
    reason = "the driver reports no device";
  }
  if (driver == nullptr && why_not != nullptr) *why_not = reason;
  return driver;
}

inline bool have_gpu() { return gpu_driver() != nullptr; }

inline constexpr DLDevice kGpu{kDLCUDA, 0};
inline constexpr DLDevice kCpu{kDLCPU, 0};

// Collects the lines of one level while alive (and sets the level to it).
class LogLines {
 public:
  explicit LogLines(LogLevel level) : saved_(log_level()) {
    set_log_level(level);
    set_log_sink([this, level](LogLevel l, std::string_view text) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (l == level) lines_.emplace_back(text);
    });
  }
  ~LogLines() {
    set_log_sink({});
    set_log_level(saved_);
  }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lock(mutex_);
    return lines_;
  }

 private:
  LogLevel saved_;
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

}  // namespace primjit::test
