#include "primjit/toolchain.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <chrono>
#include <vector>

#include "jit/cuda/driver.h"
#include "jit/cuda/nvrtc_compiler.h"
#include "jit/llvm/orc_engine.h"
#include "primjit/error.h"
#include "primjit/version.h"

namespace primjit {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// i32 add(i32 a, i32 b) { return a + b; } through IRBuilder.
std::unique_ptr<llvm::Module> build_add_module(llvm::LLVMContext& context) {
  auto module = std::make_unique<llvm::Module>("primjit_selftest", context);
  llvm::Type* i32 = llvm::Type::getInt32Ty(context);
  auto* type = llvm::FunctionType::get(i32, {i32, i32}, /*isVarArg=*/false);
  auto* function = llvm::Function::Create(type, llvm::Function::ExternalLinkage,
                                          "primjit_selftest_add", *module);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context, "entry", function));
  builder.CreateRet(builder.CreateAdd(function->getArg(0), function->getArg(1), "sum"));
  return module;
}

constexpr const char* kVectorAdd = R"(extern "C" __global__ void vadd(const float* __restrict__ a,
                                  const float* __restrict__ b,
                                  float* __restrict__ c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
)";

size_t run_vector_add_on_gpu(jit::CudaDriver& driver, const std::string& image, size_t n) {
  driver.make_current(0);
  std::vector<float> a(n), b(n), c(n, -1.0f);
  for (size_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 0.5f * static_cast<float>(i);
  }
  const size_t bytes = n * sizeof(float);
  jit::DevicePtr da = driver.alloc(bytes), db = driver.alloc(bytes), dc = driver.alloc(bytes);
  CUmod_st* module = driver.load_module(image);
  driver.copy_to_device(da, a.data(), bytes);
  driver.copy_to_device(db, b.data(), bytes);
  int count = static_cast<int>(n);
  void* args[] = {&da, &db, &dc, &count};
  driver.launch(driver.function(module, "vadd"), {static_cast<unsigned>((n + 127) / 128)}, {128}, 0,
                args);
  driver.synchronize();
  driver.copy_to_host(c.data(), dc, bytes);
  driver.unload_module(module);
  driver.free(da);
  driver.free(db);
  driver.free(dc);
  size_t correct = 0;
  for (size_t i = 0; i < n; ++i) correct += c[i] == a[i] + b[i] ? 1 : 0;
  return correct;
}

}  // namespace

ToolchainReport toolchain_report() {
  ToolchainReport report;
  report.primjit_version = version();
  report.llvm_version = jit::llvm_version();
  jit::HostTarget host = jit::detect_host_target();
  report.host_triple = host.triple;
  report.host_cpu = host.cpu;
  jit::NvrtcInfo nvrtc = jit::nvrtc_info();
  report.nvrtc_version = std::to_string(nvrtc.major) + "." + std::to_string(nvrtc.minor);
  report.nvrtc_archs = nvrtc.archs;
  report.cuda_include_dir = jit::cuda_include_dir();

  std::string reason;
  jit::CudaDriver* driver = jit::CudaDriver::try_get(&reason);
  if (driver == nullptr) {
    report.gpu_description = reason;
  } else if (driver->device_count() == 0) {
    report.gpu_description = "the CUDA driver reports no device";
  } else {
    jit::DeviceInfo device = driver->device_info(0);
    int version = driver->version();
    report.gpu_found = true;
    report.gpu_arch = device.arch();
    report.gpu_description = device.name + ", sm_" + std::to_string(device.arch()) + ", driver " +
                             std::to_string(version / 1000) + "." +
                             std::to_string(version % 1000 / 10);
  }
  return report;
}

SelfTestResult toolchain_selftest() {
  SelfTestResult result;
  result.toolchain = toolchain_report();

  auto start = Clock::now();
  jit::OrcEngine engine(jit::OrcOptions{.opt_level = 2});
  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = build_add_module(*context);
  engine.add_module(std::move(module), std::move(context));
  auto* add = reinterpret_cast<int (*)(int, int)>(engine.lookup("primjit_selftest_add"));
  result.host_add_result = add(40, 2);
  result.host_jit_ms = ms_since(start);

  jit::NvrtcOptions options;
  options.arch = result.toolchain.gpu_found ? result.toolchain.gpu_arch : 90;
  start = Clock::now();
  jit::DeviceImage cubin = jit::nvrtc_compile({"vadd.cu", kVectorAdd}, options);
  result.nvrtc_ms = ms_since(start);
  options.force_ptx = true;
  jit::DeviceImage ptx = jit::nvrtc_compile({"vadd.cu", kVectorAdd}, options);
  result.device_arch = cubin.arch;
  result.cubin_bytes = cubin.kind == jit::DeviceImage::Kind::kCubin ? cubin.data.size() : 0;
  result.ptx_bytes = ptx.data.size();

  if (result.toolchain.gpu_found) {
    result.gpu_elements = 4096;
    result.gpu_correct = run_vector_add_on_gpu(jit::CudaDriver::get(), cubin.data, 4096);
    result.gpu_ran = true;
  }
  return result;
}

}  // namespace primjit
