// The cuda path against the fake driver (tests/fake_cuda/): code generation, NVRTC for the fake
// device's architecture, module load and launch, checked in the fake's log of driver calls.
// The test environment (tests/CMakeLists.txt) names the fake in PRIMJIT_CUDA_DRIVER_LIBRARY and
// gives it two devices, sm_90 and sm_80 (FAKE_CUDA_DEVICES=90,80). Kernels are not executed.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "examples/kernels.h"
#include "jit/cuda/driver.h"
#include "jit/cuda/nvrtc_compiler.h"
#include "primjit/error.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/tensor.h"
#include "tests/fake_cuda/fake_cuda.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

constexpr DLDevice kGpu0{kDLCUDA, 0};
constexpr DLDevice kGpu1{kDLCUDA, 1};  // the fake's second device, sm_80

// The fake's log lines that start with `prefix`.
std::vector<std::string> log_lines(const std::string& prefix) {
  return fake_cuda_log_lines(prefix);
}

class FakeGpu : public testing::Test {
 protected:
  void SetUp() override {
    const char* library = std::getenv("PRIMJIT_CUDA_DRIVER_LIBRARY");
    ASSERT_TRUE(library != nullptr && std::string(library).find("fake") != std::string::npos)
        << "run through ctest: PRIMJIT_CUDA_DRIVER_LIBRARY must name the fake driver";
    jit::CudaDriver::get();  // loads the fake (cuInit) before the log is cleared
    fake_cuda_reset();
  }
};

TEST_F(FakeGpu, VectorAddCompilesLoadsAndLaunchesOnce) {
  Jit jit;
  Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  Tensor a = Tensor::zeros({1000}, DataType::Float(32), kGpu0);
  Tensor b = Tensor::zeros({1000}, DataType::Float(32), kGpu0);
  Tensor c = Tensor::zeros({1000}, DataType::Float(32), kGpu0);
  fake_cuda_reset();
  k(a, b, c);
  // NVRTC made a CUBIN for the device's sm_90, which the driver loaded on device 0.
  EXPECT_EQ(log_lines("moduleLoad"),
            std::vector<std::string>{"moduleLoad ctx=0 kind=cubin arch=90"});
  // One launch: ceil(1000 / 256) = 4 blocks of 256 threads, no shared memory.
  EXPECT_EQ(log_lines("launch"),
            std::vector<std::string>{"launch fn=vector_add_cuda_kernel ctx=0 stream=0 grid=4,1,1 "
                                     "block=256,1,1 shared=0 static=0"});
  // The module stays loaded as long as the variant lives.
  EXPECT_EQ(fake_cuda_get("modules"), 1);
  // The second call reuses the loaded module.
  fake_cuda_reset();
  k(a, b, c);
  EXPECT_TRUE(log_lines("moduleLoad").empty());
  EXPECT_EQ(log_lines("launch").size(), 1u);
  EXPECT_EQ(k.stats().misses, 1u);
}

Tensor vector(int64_t n, DLDevice device) {
  return Tensor::zeros({n}, DataType::Float(32), device);
}

// ---- 1) shared memory: static and dynamic count together ------------------------------------

// A kernel of 128 threads with 256 floats of static shared memory (1024 bytes) and `dynamic`
// floats of dynamic shared memory.
Kernel shared_both(Jit& jit, int dynamic) {
  const std::string text = R"(
@T.prim_func
def shared_both(X: T.Buffer((128,), "float32"), Y: T.Buffer((128,), "float32")):
    T.func_attr({"target": T.target("cuda", host="llvm")})
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_buffer((256,), "float32", scope="shared")
    D = T.alloc_buffer(()" +
                           std::to_string(dynamic) +
                           R"(,), "float32", scope="shared.dyn")
    S[tx] = X[tx]
    D[tx] = S[tx]
    Y[tx] = D[tx]
)";
  return jit.kernel(parse(text)->lookup("shared_both"), {.target = Target::cuda()});
}

TEST_F(FakeGpu, DynamicSharedMemoryMayUseWhatStaticSharedMemoryLeaves) {
  Jit jit;
  Kernel k = shared_both(jit, 50000);  // 200,000 bytes dynamic + 1,024 static
  Tensor x = vector(128, kGpu0), y = vector(128, kGpu0);
  fake_cuda_reset();
  k(x, y);
  // The driver refuses a limit that, with the static part, exceeds the device's 232,448 bytes.
  EXPECT_EQ(
      log_lines("funcSetAttribute"),
      std::vector<std::string>{"funcSetAttribute fn=shared_both_kernel maxDynamicShared=231424"});
  EXPECT_EQ(log_lines("launch"),
            std::vector<std::string>{"launch fn=shared_both_kernel ctx=0 stream=0 grid=1,1,1 "
                                     "block=128,1,1 shared=200000 static=1024"});
}

TEST_F(FakeGpu, StaticAndDynamicSharedMemoryBeyondTheDeviceIsAnErrorNamingBoth) {
  Jit jit;
  Kernel k = shared_both(jit, 58000);  // 232,000 bytes dynamic: fits alone, not with static
  Tensor x = vector(128, kGpu0), y = vector(128, kGpu0);
  fake_cuda_reset();
  EXPECT_ERROR_CONTAINS(k(x, y),
                        "launching kernel 'shared_both_kernel': needs 233024 bytes of shared "
                        "memory per block (1024 static + 232000 dynamic); the device allows "
                        "232448 per block");
  EXPECT_TRUE(log_lines("launch").empty());  // refused before the driver sees it
}

TEST_F(FakeGpu, KernelsWithoutDynamicSharedMemoryKeepTheDriversDefaultLimit) {
  Jit jit;
  Kernel k = jit.kernel(examples::row_softmax(), {.target = Target::cuda()});
  Tensor x = Tensor::zeros({4, 256}, DataType::Float(32), kGpu0);
  Tensor y = Tensor::zeros({4, 256}, DataType::Float(32), kGpu0);
  fake_cuda_reset();
  k(x, y);
  EXPECT_TRUE(log_lines("funcSetAttribute").empty());
  EXPECT_EQ(log_lines("launch"),
            std::vector<std::string>{"launch fn=row_softmax_kernel ctx=0 stream=0 grid=4,1,1 "
                                     "block=256,1,1 shared=0 static=1024"});
}

// ---- 3) the driver must be as new as NVRTC --------------------------------------------------

TEST_F(FakeGpu, ADriverOlderThanNvrtcIsAnErrorWithBothVersionsAndTheFix) {
  // FAKE_CUDA_DRIVER_VERSION=12080 at run time: a CUDA 12.8 driver (R570).
  ASSERT_EQ(fake_cuda_set("driver_version", 12080), 0);
  Jit jit;
  Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  Tensor a = vector(256, kGpu0), b = vector(256, kGpu0), c = vector(256, kGpu0);
  const std::string error = test::error_of([&] { k(a, b, c); });
  fake_cuda_reset();
  for (const char* part :
       {"the NVIDIA driver supports CUDA 12.8 (driver API version 12080)", "NVRTC 13.0",
        "needs driver API version 13000 or newer", "update the NVIDIA driver", "(R580 or newer)",
        "or build primjit with a CUDA toolkit no newer than 12.8"}) {
    EXPECT_NE(error.find(part), std::string::npos) << "'" << part << "' missing in: " << error;
  }
  EXPECT_TRUE(log_lines("launch").empty());
}

// ---- 4) devices: module per context, image per architecture ---------------------------------

TEST_F(FakeGpu, EachDeviceCompilesForItsArchitectureAndLaunchesOnItsOwnContext) {
  Jit jit;
  Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  Tensor a1 = vector(1000, kGpu1), b1 = vector(1000, kGpu1), c1 = vector(1000, kGpu1);
  Tensor a0 = vector(1000, kGpu0), b0 = vector(1000, kGpu0), c0 = vector(1000, kGpu0);
  fake_cuda_reset();
  k(a1, b1, c1);  // device 1 (sm_80): its own image, loaded and launched in its context
  k(a0, b0, c0);  // device 0 (sm_90): another image; this thread's context is now device 0's
  k(a1, b1, c1);  // device 1 again: no compile, and the launch switches back to its context
  EXPECT_EQ(log_lines("moduleLoad"),
            (std::vector<std::string>{"moduleLoad ctx=1 kind=cubin arch=80",
                                      "moduleLoad ctx=0 kind=cubin arch=90"}));
  const std::string launch = " grid=4,1,1 block=256,1,1 shared=0 static=0";
  EXPECT_EQ(log_lines("launch"),
            (std::vector<std::string>{"launch fn=vector_add_cuda_kernel ctx=1 stream=0" + launch,
                                      "launch fn=vector_add_cuda_kernel ctx=0 stream=0" + launch,
                                      "launch fn=vector_add_cuda_kernel ctx=1 stream=0" + launch}));
  EXPECT_EQ(k.stats().misses, 2u);
  EXPECT_EQ(k.stats().variants, 2u);
}

TEST_F(FakeGpu, TensorsOnTwoDevicesInOneCallAreAnErrorNamingThem) {
  Jit jit;
  Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  Tensor a0 = vector(64, kGpu0), b1 = vector(64, kGpu1), c0 = vector(64, kGpu0);
  EXPECT_ERROR_CONTAINS(k(a0, b1, c0),
                        "argument #1 ('B') of 'vector_add_cuda' is on CUDA device 1, but argument "
                        "#0 ('A') is on CUDA device 0: a kernel runs on one device");
  EXPECT_EQ(k.stats().misses, 0u);  // refused before anything compiled
}

TEST_F(FakeGpu, TensorZerosAllocatesOnItsDevice) {
  Tensor t = vector(16, kGpu1);
  ASSERT_EQ(log_lines("memsetD8").size(), 1u);
  EXPECT_EQ(log_lines("memsetD8")[0].rfind("memsetD8 ctx=1 stream=0 ", 0), 0u)
      << log_lines("memsetD8")[0];
}

// ---- 5) unloading waits for the device; asynchronous faults name the kernel -----------------

TEST_F(FakeGpu, AModuleIsUnloadedOnlyAfterItsDeviceFinishedItsWork) {
  {
    Jit jit;
    Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
    Tensor a = vector(64, kGpu0), b = vector(64, kGpu0), c = vector(64, kGpu0);
    k(a, b, c);
    fake_cuda_reset();
  }  // the variant goes with the Jit and the kernel
  std::vector<std::string> lines;
  for (const std::string& line : log_lines("")) {
    if (line.rfind("ctxSynchronize", 0) == 0 || line.rfind("moduleUnload", 0) == 0) {
      lines.push_back(line);
    }
  }
  EXPECT_EQ(lines, (std::vector<std::string>{"ctxSynchronize ctx=0", "moduleUnload ctx=0"}));
}

TEST_F(FakeGpu, AnAsynchronousFaultNamesTheKernelLaunchedLast) {
  Jit jit;
  Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  Tensor a = vector(64, kGpu0), b = vector(64, kGpu0), c = vector(64, kGpu0);
  k(a, b, c);
  ASSERT_EQ(fake_cuda_set("fault_next_sync", 1), 0);  // the kernel "faulted"
  const std::string error = test::error_of([&] { c.to({kDLCPU, 0}); });
  for (const char* part : {"cuMemcpyDtoH failed: CUDA_ERROR_ILLEGAL_ADDRESS",
                           "the last kernel launched on device 0 was 'vector_add_cuda_kernel'",
                           "CUDA_LAUNCH_BLOCKING=1"}) {
    EXPECT_NE(error.find(part), std::string::npos) << "'" << part << "' missing in: " << error;
  }
}

TEST_F(FakeGpu, LaunchBlockingReportsAFaultAtTheLaunchOfItsKernel) {
  setenv("CUDA_LAUNCH_BLOCKING", "1", 1);  // read when kernels are loaded
  Jit jit;
  Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  Tensor a = vector(64, kGpu0), b = vector(64, kGpu0), c = vector(64, kGpu0);
  k(a, b, c);
  unsetenv("CUDA_LAUNCH_BLOCKING");
  std::vector<std::string> all = log_lines("");
  ASSERT_GE(all.size(), 2u);
  EXPECT_EQ(all[all.size() - 2].rfind("launch fn=vector_add_cuda_kernel", 0), 0u)
      << all[all.size() - 2];
  EXPECT_EQ(all.back(), "streamSynchronize stream=0");  // right after the launch
  ASSERT_EQ(fake_cuda_set("fault_next_sync", 1), 0);
  EXPECT_ERROR_CONTAINS(k(a, b, c),
                        "launching kernel 'vector_add_cuda_kernel': (CUDA_LAUNCH_BLOCKING=1: "
                        "synchronized after the launch) CUDA driver call cuStreamSynchronize "
                        "failed: CUDA_ERROR_ILLEGAL_ADDRESS");
}

// ---- 6) Tensor::zeros fills on the device ---------------------------------------------------

TEST_F(FakeGpu, TensorZerosOnAGpuIsADriverMemsetNotAHostCopy) {
  Tensor t = Tensor::zeros({1000}, DataType::Float(32), kGpu0);
  std::vector<std::string> fills = log_lines("memsetD8");
  ASSERT_EQ(fills.size(), 1u);
  EXPECT_EQ(fills[0].rfind("memsetD8 ctx=0 stream=0 ptr=", 0), 0u) << fills[0];
  EXPECT_NE(fills[0].find(" value=0 bytes=4000"), std::string::npos) << fills[0];
  EXPECT_TRUE(log_lines("memcpyHtoD").empty());
  // The memory is zero (the fake's device memory is host memory).
  Tensor host = t.to({kDLCPU, 0});
  for (int64_t i = 0; i < host.numel(); ++i) ASSERT_EQ(host.data<float>()[i], 0.0f) << i;
}

// ---- the fake itself: stream capture and graphs, as the launch path's tests use them ------

// An entry point of the fake, as the runtime gets it.
template <typename F>
F entry(const char* name, int version) {
  void* pointer = nullptr;
  CUdriverProcAddressQueryResult status{};
  EXPECT_EQ(cuGetProcAddress_v2(name, &pointer, version, 0, &status), CUDA_SUCCESS) << name;
  return reinterpret_cast<F>(pointer);
}

struct FakeApi {
  decltype(&cuStreamCreate) stream_create = entry<decltype(stream_create)>("cuStreamCreate", 2000);
  decltype(&cuStreamDestroy_v2) stream_destroy =
      entry<decltype(stream_destroy)>("cuStreamDestroy", 4000);
  CUresult (*begin_capture)(CUstream, CUstreamCaptureMode) =
      entry<decltype(begin_capture)>("cuStreamBeginCapture", 10010);
  decltype(&cuStreamEndCapture) end_capture =
      entry<decltype(end_capture)>("cuStreamEndCapture", 10000);
  decltype(&cuStreamIsCapturing) is_capturing =
      entry<decltype(is_capturing)>("cuStreamIsCapturing", 10000);
  decltype(&cuGraphInstantiateWithFlags) instantiate =
      entry<decltype(instantiate)>("cuGraphInstantiateWithFlags", 11040);
  decltype(&cuGraphLaunch) graph_launch = entry<decltype(graph_launch)>("cuGraphLaunch", 10000);
  decltype(&cuGraphDestroy) graph_destroy = entry<decltype(graph_destroy)>("cuGraphDestroy", 10000);
  decltype(&cuGraphExecDestroy) exec_destroy =
      entry<decltype(exec_destroy)>("cuGraphExecDestroy", 10000);
  decltype(&cuLaunchKernel) launch = entry<decltype(launch)>("cuLaunchKernel", 4000);
  CUresult (*ctx_synchronize)() = entry<decltype(ctx_synchronize)>("cuCtxSynchronize", 2000);
  decltype(&cuMemAlloc_v2) mem_alloc = entry<decltype(mem_alloc)>("cuMemAlloc", 3020);
};

// A loaded kernel `k` of the fake's device `device`.
CUfunc_st* fake_kernel(int device) {
  jit::CudaDriver& driver = jit::CudaDriver::get();
  driver.make_current(device);
  jit::DeviceImage image =
      jit::nvrtc_compile({"k.cu", "extern \"C\" __global__ void k(float* x) { x[0] = 1; }"},
                         {.arch = driver.device_info(device).arch()});
  return driver.function(driver.load_module(image.data), "k");
}

TEST_F(FakeGpu, CapturedLaunchesRunWhenTheGraphIsLaunched) {
  FakeApi api;
  CUfunc_st* k = fake_kernel(0);
  CUstream stream = nullptr;
  ASSERT_EQ(api.stream_create(&stream, 0), CUDA_SUCCESS);
  fake_cuda_reset();
  ASSERT_EQ(api.begin_capture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  ASSERT_EQ(api.is_capturing(stream, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  void* args[] = {nullptr};
  ASSERT_EQ(api.launch(k, 2, 1, 1, 32, 1, 1, 0, stream, args, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(api.launch(k, 3, 1, 1, 64, 1, 1, 0, stream, args, nullptr), CUDA_SUCCESS);
  EXPECT_TRUE(log_lines("launch").empty());  // captured, not run
  CUgraph graph = nullptr;
  ASSERT_EQ(api.end_capture(stream, &graph), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(api.instantiate(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.graph_launch(exec, stream), CUDA_SUCCESS);
  ASSERT_EQ(api.graph_launch(exec, stream), CUDA_SUCCESS);
  const std::string id = log_lines("beginCapture stream=")[0].substr(20);
  const std::string first = "launch fn=k ctx=0 stream=" + id + " grid=2,1,1 block=32,1,1";
  const std::string second = "launch fn=k ctx=0 stream=" + id + " grid=3,1,1 block=64,1,1";
  EXPECT_EQ(log_lines("launch"), (std::vector<std::string>{
                                     first + " shared=0 static=0", second + " shared=0 static=0",
                                     first + " shared=0 static=0", second + " shared=0 static=0"}));
  EXPECT_EQ(log_lines("graphLaunch").size(), 2u);
  EXPECT_EQ(api.exec_destroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(api.graph_destroy(graph), CUDA_SUCCESS);
  EXPECT_EQ(api.stream_destroy(stream), CUDA_SUCCESS);
}

TEST_F(FakeGpu, WhatTheDriverForbidsDuringACaptureFailsAndInvalidatesIt) {
  FakeApi api;
  CUfunc_st* k = fake_kernel(0);
  CUstream stream = nullptr;
  ASSERT_EQ(api.stream_create(&stream, 0), CUDA_SUCCESS);
  void* args[] = {nullptr};
  CUdeviceptr memory = 0;
  const std::vector<std::pair<std::string, std::function<CUresult()>>> forbidden = {
      {"synchronize", [&] { return api.ctx_synchronize(); }},
      {"allocate", [&] { return api.mem_alloc(&memory, 64); }},
      {"launch on the legacy stream",
       [&] { return api.launch(k, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr); }},
  };
  for (const auto& [what, call] : forbidden) {
    ASSERT_EQ(api.begin_capture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS) << what;
    const CUresult result = call();
    EXPECT_TRUE(result == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED ||
                result == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
        << what << ": " << result;
    CUgraph graph = nullptr;
    EXPECT_EQ(api.end_capture(stream, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) << what;
    EXPECT_EQ(graph, nullptr) << what;
  }
  EXPECT_EQ(api.ctx_synchronize(), CUDA_SUCCESS);  // allowed again after the capture
  EXPECT_EQ(api.stream_destroy(stream), CUDA_SUCCESS);
}

TEST_F(FakeGpu, AFunctionLaunchedInAContextThatDidNotLoadItIsAnInvalidHandle) {
  FakeApi api;
  CUfunc_st* k = fake_kernel(0);
  jit::CudaDriver::get().make_current(1);
  void* args[] = {nullptr};
  EXPECT_EQ(api.launch(k, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr), CUDA_ERROR_INVALID_HANDLE);
  jit::CudaDriver::get().make_current(0);
  EXPECT_EQ(api.launch(k, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
}

// ---- 2) NVRTC finds its builtins library without the loader's search path ------------------

TEST(NvrtcBuiltins, CompileWorksWithoutTheToolkitInTheLoaderPath) {
  // The dynamic loader started without its cache (--inhibit-cache) and without
  // LD_LIBRARY_PATH: libnvrtc-builtins.so.* is found only if primjit loads it by path.
  const char* loader = "/lib64/ld-linux-x86-64.so.2";
  if (std::FILE* f = std::fopen(loader, "r")) {
    std::fclose(f);
  } else {
    GTEST_SKIP() << "no " << loader << " on this machine";
  }
  const std::string command =
      // (LeakSanitizer, in sanitized builds, counts the loader's own dlopen bookkeeping as a
      // leak when the loader is run as a program: not primjit's.)
      std::string("env -u LD_LIBRARY_PATH -u CUDA_HOME ASAN_OPTIONS=detect_leaks=0 ") + loader +
      " --inhibit-cache " PRIMJIT_BIN_DIR
      "/primjit-opt --pipeline=default --target=cuda --emit=ptx " PRIMJIT_SOURCE_DIR
      "/tests/lit/Inputs/two_launches.tir 2>&1";
  std::FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) output.append(buffer, n);
  const int status = pclose(pipe);
  EXPECT_EQ(status, 0) << output;
  EXPECT_NE(output.find(".entry main_kernel("), std::string::npos) << output;
}

}  // namespace
}  // namespace primjit

// ---- after the merge: contexts switched by other code, prepared launches, device checks ---

namespace primjit {
namespace {

// Code outside primjit (cudaSetDevice, a framework's device guard) switched this thread's
// context since primjit's last launch: the launch still runs in the kernel's own context.
TEST_F(FakeGpu, ALaunchAfterOtherCodeSwitchedTheContextRunsInTheKernelsOwn) {
  Jit jit;
  Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  Tensor a = vector(64, kGpu0), b = vector(64, kGpu0), c = vector(64, kGpu0);
  k(a, b, c);
  auto device_get = entry<CUresult (*)(CUdevice*, int)>("cuDeviceGet", 2000);
  auto retain = entry<CUresult (*)(CUcontext*, CUdevice)>("cuDevicePrimaryCtxRetain", 7000);
  auto set_current = entry<CUresult (*)(CUcontext)>("cuCtxSetCurrent", 4000);
  CUdevice device1 = 0;
  CUcontext context1 = nullptr;
  ASSERT_EQ(device_get(&device1, 1), CUDA_SUCCESS);
  ASSERT_EQ(retain(&context1, device1), CUDA_SUCCESS);
  ASSERT_EQ(set_current(context1), CUDA_SUCCESS);
  fake_cuda_reset();
  k(a, b, c);
  EXPECT_EQ(log_lines("launch"),
            std::vector<std::string>{"launch fn=vector_add_cuda_kernel ctx=0 stream=0 grid=1,1,1 "
                                     "block=256,1,1 shared=0 static=0"});
}

// A cached call's launch, and a prepared call's, ask the driver for the current context once:
// the check above (is the module's context still current?) without a second one in the launch.
TEST_F(FakeGpu, ALaunchAsksTheDriverForTheCurrentContextOnce) {
  Jit jit;
  Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  Tensor a = vector(64, kGpu0), b = vector(64, kGpu0), c = vector(64, kGpu0);
  k(a, b, c);  // compiles and loads
  PreparedCall p = k.prepare(a, b, c);
  fake_cuda_reset();
  for (int i = 0; i < 4; ++i) k(a, b, c);
  EXPECT_EQ(fake_cuda_get("launches"), 4);
  EXPECT_EQ(fake_cuda_get("context_queries"), 4);
  fake_cuda_reset();
  for (int i = 0; i < 3; ++i) p.launch();
  EXPECT_EQ(fake_cuda_get("launches"), 3);
  EXPECT_EQ(fake_cuda_get("context_queries"), 3);
}

// A fault after a prepared launch names the prepared kernel, as after a call.
TEST_F(FakeGpu, AFaultAfterAPreparedLaunchNamesItsKernel) {
  Jit jit;
  Kernel add = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  Kernel matmul = jit.kernel(examples::matmul_relu(), {.target = Target::cuda()});
  Tensor a = Tensor::zeros({128, 128}, DataType::Float(32), kGpu0);
  Tensor b = Tensor::zeros({128, 128}, DataType::Float(32), kGpu0);
  Tensor c = Tensor::zeros({128, 128}, DataType::Float(32), kGpu0);
  Tensor d = Tensor::zeros({128, 128}, DataType::Float(32), kGpu0);
  PreparedCall p = matmul.prepare(a, b, c, d);
  Tensor x = vector(64, kGpu0), y = vector(64, kGpu0), z = vector(64, kGpu0);
  add(x, y, z);
  p.launch();
  ASSERT_EQ(fake_cuda_set("fault_next_sync", 1), 0);
  const std::string error = test::error_of([&] { d.to({kDLCPU, 0}); });
  EXPECT_NE(error.find("the last kernel launched on device 0 was 'matmul_relu_kernel"),
            std::string::npos)
      << error;
}

// A compiled variant is loaded on one device: tensors of another are refused before any launch.
TEST_F(FakeGpu, ACompiledVariantRefusesTensorsOfAnotherDevice) {
  Jit jit;
  Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  Signature signature(3, ArgSpec::tensor(DataType::Float(32), {64}));
  CompiledVariant v = k.compiled(signature);  // device 0
  Tensor a = vector(64, kGpu1), b = vector(64, kGpu1), c = vector(64, kGpu1);
  fake_cuda_reset();
  Arg args[] = {a, b, c};
  EXPECT_ERROR_CONTAINS(v.call(args),
                        "this compiled variant was loaded on CUDA device 0, but the call's "
                        "tensors are on device 1");
  EXPECT_TRUE(log_lines("launch").empty());
}

// ---- host code and device memory ------------------------------------------------------------

// Host code of a cuda function that writes a parameter buffer would dereference a device address
// on the CPU (a segmentation fault on a real GPU): the Jit refuses it before compiling, and
// nothing is launched.
TEST_F(FakeGpu, HostCodeTouchingDeviceMemoryIsRefusedBeforeAnyLaunch) {
  const IRModule module = parse(R"(
@T.prim_func
def main(A: T.Buffer((64,), "float32")):
    A[0] = T.float32(0)
    with T.launch_thread("threadIdx.x", 32) as tx:
        A[tx + 1] = T.float32(1)
)");
  Jit jit;
  Kernel k = jit.kernel(module, "main", {.target = Target::cuda()});
  Tensor a = vector(64, kGpu0);
  fake_cuda_reset();
  try {
    k(a);
    FAIL() << "the call should have been refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("host code writes buffer 'A' in `A[0] = T.float32(0.0)`, "
                                         "but parameter buffer 'A' lives in cuda device memory"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(log_lines("moduleLoad").empty());
  EXPECT_TRUE(log_lines("launch").empty());
}

// A kernel compiles only the functions its entry reaches: another function of the module (here
// a kernel for sm_80, which one translation unit for sm_90 could not hold) stays out.
TEST_F(FakeGpu, AKernelCompilesOnlyTheFunctionsItsEntryReaches) {
  const IRModule module = parse(R"(
@I.ir_module
class Module:
    @T.prim_func
    def other(A: T.Buffer((1024,), "float32")):
        T.func_attr({"target": T.target("cuda", arch="sm_80")})
        bx = T.launch_thread("blockIdx.x", 8)
        tx = T.launch_thread("threadIdx.x", 128)
        A[bx * 128 + tx] = T.float32(0)

    @T.prim_func
    def main(A: T.Buffer((1024,), "float32")):
        T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
        bx = T.launch_thread("blockIdx.x", 8)
        tx = T.launch_thread("threadIdx.x", 128)
        A[bx * 128 + tx] = A[bx * 128 + tx] + T.float32(1)
)");
  Jit jit;
  Kernel k = jit.kernel(module, "main", {.target = Target::cuda()});
  Tensor a = vector(1024, kGpu0);
  fake_cuda_reset();
  k(a);
  EXPECT_EQ(log_lines("moduleLoad"),
            std::vector<std::string>{"moduleLoad ctx=0 kind=cubin arch=90"});
  ASSERT_EQ(log_lines("launch").size(), 1u);
  EXPECT_NE(log_lines("launch")[0].find("fn=main_kernel "), std::string::npos)
      << log_lines("launch")[0];
}

}  // namespace
}  // namespace primjit
