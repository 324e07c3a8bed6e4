// Uses the installed primjit: version, the error macros, the builder, a kernel through the JIT
// runtime with a DLPack tensor, and the toolchain self-test.
#include <primjit/builder.h>
#include <primjit/primjit.h>

#include <cstdio>

static int checked_square(int n) {
  PRIMJIT_USER_CHECK(n > 0) << "n must be positive, got " << n;
  return n * n;
}

int main() {
  std::printf("primjit %s\n", primjit::version());
  try {
    checked_square(-3);
    std::printf("no error raised\n");
    return 1;
  } catch (const primjit::Error& error) {
    std::printf("caught primjit::Error: %s\n", error.what());
  }
  namespace pb = primjit::builder;
  pb::FunctionBuilder f("scale");
  pb::Var n = f.dim("n");
  pb::BufferRef A = f.arg_buffer("A", {n});
  f.for_("i", n, [&](pb::Var i) { A[i] = A[i] * 2.0; });
  primjit::PrimFunc func = f.finish();
  std::printf("built %s with %zu params\n", func->global_symbol().c_str(), func->params.size());
  // The function through the JIT, called with a DLPack tensor, then the kernel's stats.
  primjit::Jit jit;
  primjit::Kernel kernel = jit.kernel(func, {.target = primjit::Target::llvm()});
  float data[5] = {1, 2, 3, 4, 5};
  int64_t shape[1] = {5};
  DLTensor tensor{data, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
  kernel(&tensor);
  kernel(&tensor);
  primjit::KernelStats stats = kernel.stats();
  std::printf("jit: data[4] = %g after %llu calls, %llu compile (%s)\n", data[4],
              static_cast<unsigned long long>(stats.calls),
              static_cast<unsigned long long>(stats.misses), stats.reasons.at(0).c_str());
  if (data[4] != 20.0f || stats.misses != 1) return 1;
  primjit::SelfTestResult result = primjit::toolchain_selftest();
  std::printf("add(40, 2) = %d\n", result.host_add_result);
  if (result.host_add_result != 42 || result.cubin_bytes == 0) return 1;
  std::printf("consumer ok\n");
  return 0;
}
