// Kernels through the whole JIT on the GPU (target cuda), compared with C++ references. They
// skip without a driver and a device; the GPU bundle runs them on a GPU machine. Without a
// driver, the first call of a cuda kernel must say so.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "examples/kernels.h"
#include "jit/cuda/driver.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "tests/unit/jit/cuda_graph_api.h"
#include "tests/unit/jit/jit_test_util.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

using test::have_gpu;
using test::kCpu;
using test::kGpu;
using test::TempDir;

#define REQUIRE_GPU() \
  if (!have_gpu()) GTEST_SKIP() << "no CUDA driver or device"

Tensor filled(std::vector<int64_t> shape, uint32_t seed) {
  Tensor t = Tensor::zeros(std::move(shape), DataType::Float(32));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// Checks matmul_relu's outputs: C = A * B (the first launch) and D = max(C, 0) (the second).
void expect_matmul_relu(const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& d) {
  int negatives = 0;
  for (int i = 0; i < 128; ++i) {
    for (int j = 0; j < 128; ++j) {
      double acc = 0;
      for (int p = 0; p < 128; ++p)
        acc += a.data<float>()[i * 128 + p] * b.data<float>()[p * 128 + j];
      ASSERT_NEAR(c.data<float>()[i * 128 + j], acc, 1e-3) << "C " << i << "," << j;
      ASSERT_NEAR(d.data<float>()[i * 128 + j], std::max(acc, 0.0), 1e-3) << i << "," << j;
      negatives += acc < 0;
    }
  }
  EXPECT_GT(negatives, 0);  // the ReLU did something
}

TEST(JitCuda, WithoutADriverTheFirstCallSaysSo) {
  if (have_gpu()) GTEST_SKIP() << "a GPU is present";
  Jit jit;
  Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  // Never dereferenced: three distinct, 64-byte aligned "device" arrays (the call checks
  // alignment and overlap before it needs the driver).
  alignas(64) static float host[3][16];
  int64_t n = 8;
  DLTensor a{host[0], kGpu, 1, {kDLFloat, 32, 1}, &n, nullptr, 0};
  DLTensor b{host[1], kGpu, 1, {kDLFloat, 32, 1}, &n, nullptr, 0};
  DLTensor c{host[2], kGpu, 1, {kDLFloat, 32, 1}, &n, nullptr, 0};
  // PRIMJIT_DUMP=cuda gets the source even so: it is generated before the driver is needed.
  TempDir temp("primjit_dump_cuda_test");
  const std::filesystem::path& dir = temp.path();
  setenv("PRIMJIT_DUMP", "cuda", 1);
  setenv("PRIMJIT_DUMP_DIR", dir.c_str(), 1);
  EXPECT_ERROR_CONTAINS(k(&a, &b, &c), "no CUDA driver");
  unsetenv("PRIMJIT_DUMP");
  unsetenv("PRIMJIT_DUMP_DIR");
  EXPECT_EQ(k.stats().misses, 1u);  // it tried to compile: nothing is cached
  const std::filesystem::path source = dir / "vector_add_cuda.v0" / "device.cu";
  ASSERT_TRUE(std::filesystem::exists(source));
  std::ifstream in(source);
  std::string code((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(code.find("__global__ void __launch_bounds__(256) vector_add_cuda_kernel("),
            std::string::npos)
      << code;
}

TEST(JitCuda, VectorAddWithASymbolicGrid) {
  REQUIRE_GPU();
  Jit jit;
  Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  for (int64_t n : {1, 1000, 65537}) {
    Tensor a = filled({n}, 1), b = filled({n}, 2);
    Tensor da = a.to(kGpu), db = b.to(kGpu), dc = Tensor::zeros({n}, DataType::Float(32), kGpu);
    k(da, db, dc);
    Tensor c = dc.to(kCpu);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(c.data<float>()[i], a.data<float>()[i] + b.data<float>()[i]);
  }
  EXPECT_EQ(k.stats().misses, 3u);
}

TEST(JitCuda, RowSoftmaxWithSharedMemory) {
  REQUIRE_GPU();
  Jit jit;
  Kernel k = jit.kernel(examples::row_softmax(), {.target = Target::cuda()});
  Tensor x = filled({37, 256}, 3);
  Tensor dy = Tensor::zeros({37, 256}, DataType::Float(32), kGpu);
  k(x.to(kGpu), dy);
  Tensor y = dy.to(kCpu);
  for (int r = 0; r < 37; ++r) {
    const float* row = x.data<float>() + r * 256;
    float mx = *std::max_element(row, row + 256);
    double sum = 0;
    for (int j = 0; j < 256; ++j) sum += std::exp(row[j] - mx);
    for (int j = 0; j < 256; ++j) {
      ASSERT_NEAR(y.data<float>()[r * 256 + j], std::exp(row[j] - mx) / sum, 1e-6);
    }
  }
}

TEST(JitCuda, TwoLaunchMatmulReluWithMergedSharedMemory) {
  REQUIRE_GPU();
  Jit jit;
  Kernel k = jit.kernel(examples::matmul_relu(), {.target = Target::cuda()});
  Tensor a = filled({128, 128}, 4), b = filled({128, 128}, 5);
  Tensor dc = Tensor::zeros({128, 128}, DataType::Float(32), kGpu);
  Tensor dd = Tensor::zeros({128, 128}, DataType::Float(32), kGpu);
  k(a.to(kGpu), b.to(kGpu), dc, dd);
  expect_matmul_relu(a, b, dc.to(kCpu), dd.to(kCpu));
}

TEST(JitCuda, MoreThan48KBOfDynamicSharedMemory) {
  REQUIRE_GPU();
  // 64 KB of shared memory per block: each block reverses 16384 floats through it.
  Jit jit;
  Kernel k = jit.kernel(parse(R"(
@T.prim_func
def reverse_big(A: T.Buffer((32768,), "float32"), B: T.Buffer((32768,), "float32")):
    T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 1024)
    S = T.alloc_buffer((16384,), "float32", scope="shared.dyn")
    for k in range(16):
        S[k * 1024 + tx] = A[bx * 16384 + k * 1024 + tx]
    T.tvm_storage_sync("shared.dyn")
    for k in range(16):
        B[bx * 16384 + k * 1024 + tx] = S[16383 - (k * 1024 + tx)]
)")
                            ->lookup("reverse_big"),
                        {.target = Target::cuda()});
  Tensor a = filled({32768}, 6);
  Tensor db = Tensor::zeros({32768}, DataType::Float(32), kGpu);
  k(a.to(kGpu), db);
  Tensor b = db.to(kCpu);
  for (int blk = 0; blk < 2; ++blk) {
    for (int i = 0; i < 16384; ++i) {
      ASSERT_EQ(b.data<float>()[blk * 16384 + i], a.data<float>()[blk * 16384 + 16383 - i]);
    }
  }
}

// Static and dynamic shared memory together above 48 KB: the dynamic limit set at load leaves
// room for the static part (the driver refuses the opt-in maximum for a kernel with static
// shared memory), and the result is right.
TEST(JitCuda, StaticAndDynamicSharedMemoryTogetherAbove48KB) {
  REQUIRE_GPU();
  const int64_t optin =
      static_cast<int64_t>(jit::CudaDriver::get().device_info(0).max_shared_per_block_optin);
  if (optin <= 64 * 1024) GTEST_SKIP() << "the device offers " << optin << " bytes per block";
  const int64_t dynamic = (optin - 4096) / 4;  // floats: leaves room for 1 KB static and more
  Jit jit;
  Kernel k = jit.kernel(parse(R"(
@T.prim_func
def shared_both(X: T.Buffer((128,), "float32"), Y: T.Buffer((128,), "float32")):
    T.func_attr({"target": T.target("cuda", host="llvm")})
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_buffer((256,), "float32", scope="shared")
    D = T.alloc_buffer(()" + std::to_string(dynamic) +
                              R"(,), "float32", scope="shared.dyn")
    S[tx] = X[tx]
    D[tx] = S[tx] * T.float32(2)
    Y[tx] = D[tx]
)")
                            ->lookup("shared_both"),
                        {.target = Target::cuda()});
  Tensor x = filled({128}, 7);
  Tensor dy = Tensor::zeros({128}, DataType::Float(32), kGpu);
  k(x.to(kGpu), dy);
  Tensor y = dy.to(kCpu);
  for (int i = 0; i < 128; ++i) ASSERT_EQ(y.data<float>()[i], 2 * x.data<float>()[i]) << i;
}

TEST(JitCuda, TensorZerosOnTheGpuIsZero) {
  REQUIRE_GPU();
  Tensor filled_once = filled({4096}, 8).to(kGpu);  // leaves non-zero memory behind
  filled_once = Tensor();
  Tensor t = Tensor::zeros({4096}, DataType::Float(32), kGpu).to(kCpu);
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(t.data<float>()[i], 0.0f) << i;
}

// With two GPUs, a kernel called with tensors on device 1 compiles and runs there.
TEST(JitCuda, KernelsRunOnTheDeviceOfTheirTensors) {
  REQUIRE_GPU();
  if (jit::CudaDriver::get().device_count() < 2) GTEST_SKIP() << "one GPU";
  const DLDevice gpu1{kDLCUDA, 1};
  Jit jit;
  Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  Tensor a = filled({1000}, 9), b = filled({1000}, 10);
  for (DLDevice device : {gpu1, kGpu, gpu1}) {
    Tensor c = Tensor::zeros({1000}, DataType::Float(32), device);
    k(a.to(device), b.to(device), c);
    Tensor host = c.to(kCpu);
    for (int i = 0; i < 1000; ++i) {
      ASSERT_EQ(host.data<float>()[i], a.data<float>()[i] + b.data<float>()[i]) << i;
    }
  }
  EXPECT_EQ(k.stats().misses, 2u);  // one variant per device
}

// A second session loads the CUBIN and launch layout from the disk cache: no NVRTC, no LLVM,
// and the kernels (two launches, merged shared memory) still compute the right result.
TEST(JitCuda, DiskCacheHitLoadsDeviceCodeWithoutNvrtc) {
  REQUIRE_GPU();
  TempDir dir("primjit_gpu_disk_cache");
  JitOptions options;
  options.disk_cache = DiskCacheMode::kEnabled;
  options.cache_dir = dir.str();
  Tensor a = filled({128, 128}, 7), b = filled({128, 128}, 8);
  for (int session = 0; session < 2; ++session) {
    SCOPED_TRACE("session " + std::to_string(session));
    Jit jit(options);
    Kernel k = jit.kernel(examples::matmul_relu(), {.target = Target::cuda()});
    Tensor dc = Tensor::zeros({128, 128}, DataType::Float(32), kGpu);
    Tensor dd = Tensor::zeros({128, 128}, DataType::Float(32), kGpu);
    k(a.to(kGpu), b.to(kGpu), dc, dd);
    expect_matmul_relu(a, b, dc.to(kCpu), dd.to(kCpu));
    if (HasFatalFailure()) return;
    KernelStats s = k.stats();
    if (session == 0) {
      EXPECT_EQ(s.misses, 1u);
      EXPECT_EQ(s.disk_hits, 0u);
      EXPECT_GT(s.compile.device_compile_ms, 0.0);
      EXPECT_EQ(dir.files(".pjv").size(), 1u);  // the variant was written
    } else {
      EXPECT_EQ(s.misses, 0u);
      EXPECT_EQ(s.disk_hits, 1u);
      EXPECT_EQ(s.compile.device_compile_ms, 0.0);  // no NVRTC
      EXPECT_EQ(s.compile.host_ms, 0.0);            // no LLVM
      EXPECT_EQ(s.reasons, std::vector<std::string>{"first call (disk cache)"});
    }
  }
}

// Row softmax of `x` (rows of 256), in double.
void expect_row_softmax(const Tensor& x, const Tensor& y, int rows) {
  for (int r = 0; r < rows; ++r) {
    const float* row = x.data<float>() + r * 256;
    float mx = *std::max_element(row, row + 256);
    double sum = 0;
    for (int j = 0; j < 256; ++j) sum += std::exp(row[j] - mx);
    for (int j = 0; j < 256; ++j) {
      ASSERT_NEAR(y.data<float>()[r * 256 + j], std::exp(row[j] - mx) / sum, 1e-6) << r;
    }
  }
}

void expect_vector_add(const Tensor& a, const Tensor& b, const Tensor& c) {
  for (int64_t i = 0; i < a.numel(); ++i) {
    ASSERT_EQ(c.data<float>()[i], a.data<float>()[i] + b.data<float>()[i]) << i;
  }
}

// A stream of the test's own, non-blocking (it does not wait for the default stream).
struct Stream {
  CUstream stream = nullptr;
  Stream() {
    jit::CudaDriver::get().make_current(0);
    test::cuda_ok(test::CudaGraphApi::get().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
                  "cuStreamCreate");
  }
  ~Stream() { test::CudaGraphApi::get().cuStreamDestroy(stream); }
  void synchronize() const {
    test::cuda_ok(test::CudaGraphApi::get().cuStreamSynchronize(stream), "cuStreamSynchronize");
  }
};

// The stream is part of the call: the same variant runs on any stream, without a compile.
TEST(JitCuda, CallsOnOtherStreamsShareTheVariant) {
  REQUIRE_GPU();
  Jit jit;
  Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  Tensor a = filled({5000}, 11), b = filled({5000}, 12);
  Tensor da = a.to(kGpu), db = b.to(kGpu);
  Stream s1, s2;
  for (CUstream s : {s1.stream, s2.stream}) {
    Tensor dc = Tensor::zeros({5000}, DataType::Float(32), kGpu);
    k(da, db, dc, CallOptions{.cuda_stream = s});
    test::cuda_ok(test::CudaGraphApi::get().cuStreamSynchronize(s), "cuStreamSynchronize");
    expect_vector_add(a, b, dc.to(kCpu));
  }
  EXPECT_EQ(k.stats().misses, 1u);
  // A kernel whose default stream is s2 shares the variant too.
  Kernel on_s2 =
      jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda(), .cuda_stream = s2.stream});
  Tensor dc = Tensor::zeros({5000}, DataType::Float(32), kGpu);
  on_s2(da, db, dc);
  s2.synchronize();
  expect_vector_add(a, b, dc.to(kCpu));
  EXPECT_EQ(on_s2.stats().misses, 0u);
}

// Launches of two kernels captured into a CUDA graph on a stream, then replayed: the graph
// computes what the calls compute. A first call during the capture refuses to compile.
TEST(JitCuda, LaunchesCaptureIntoACudaGraph) {
  REQUIRE_GPU();
  const test::CudaGraphApi& api = test::CudaGraphApi::get();
  Jit jit;
  Kernel add = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  Kernel softmax = jit.kernel(examples::row_softmax(), {.target = Target::cuda()});
  Tensor a = filled({3000}, 13), b = filled({3000}, 14), x = filled({37, 256}, 15);
  Tensor da = a.to(kGpu), db = b.to(kGpu), dx = x.to(kGpu);
  Tensor dc = Tensor::zeros({3000}, DataType::Float(32), kGpu);
  Tensor dy = Tensor::zeros({37, 256}, DataType::Float(32), kGpu);
  // Allocated before the capture (no allocation during it), for a call with new shapes.
  Tensor s1 = Tensor::zeros({100}, DataType::Float(32), kGpu);
  Tensor s2 = Tensor::zeros({100}, DataType::Float(32), kGpu);
  Tensor s3 = Tensor::zeros({100}, DataType::Float(32), kGpu);
  Stream s;
  CallOptions on_s{.cuda_stream = s.stream};
  add(da, db, dc, on_s);  // compiled and loaded before the capture
  softmax(dx, dy, on_s);
  s.synchronize();

  test::cuda_ok(api.cuStreamBeginCapture(s.stream, CU_STREAM_CAPTURE_MODE_GLOBAL),
                "cuStreamBeginCapture");
  add(da, db, dc, on_s);
  EXPECT_ERROR_CONTAINS(add(s1, s2, s3, on_s), "capturing a CUDA graph");
  softmax(dx, dy, on_s);
  CUgraph graph = nullptr;
  test::cuda_ok(api.cuStreamEndCapture(s.stream, &graph), "cuStreamEndCapture");
  CUgraphExec exec = nullptr;
  test::cuda_ok(api.cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiate");

  jit::CudaDriver& driver = jit::CudaDriver::get();
  driver.fill_async(reinterpret_cast<jit::DevicePtr>(dc.dl()->data), 0, dc.nbytes(), s.stream);
  driver.fill_async(reinterpret_cast<jit::DevicePtr>(dy.dl()->data), 0, dy.nbytes(), s.stream);
  test::cuda_ok(api.cuGraphLaunch(exec, s.stream), "cuGraphLaunch");
  s.synchronize();
  expect_vector_add(a, b, dc.to(kCpu));
  expect_row_softmax(x, dy.to(kCpu), 37);
  api.cuGraphExecDestroy(exec);
  api.cuGraphDestroy(graph);
  EXPECT_EQ(add.stats().misses, 1u);  // the refused call compiled nothing
  EXPECT_EQ(add.stats().variants, 1u);
  EXPECT_EQ(softmax.stats().misses, 1u);
}

// A prepared call replays the call's two launches: the same results, also on another stream.
TEST(JitCuda, PreparedCallReplaysTheLaunches) {
  REQUIRE_GPU();
  Jit jit;
  Kernel k = jit.kernel(examples::matmul_relu(), {.target = Target::cuda()});
  Tensor a = filled({128, 128}, 16), b = filled({128, 128}, 17);
  Tensor da = a.to(kGpu), db = b.to(kGpu);
  Tensor dc = Tensor::zeros({128, 128}, DataType::Float(32), kGpu);
  Tensor dd = Tensor::zeros({128, 128}, DataType::Float(32), kGpu);
  Stream s;
  PreparedCall p = k.prepare(da, db, dc, dd, CallOptions{.cuda_stream = s.stream});
  EXPECT_EQ(p.num_launches(), 2u);
  s.synchronize();
  EXPECT_EQ(dd.to(kCpu).data<float>()[0], 0.0f);  // prepare records, it runs nothing
  p.launch();
  s.synchronize();
  expect_matmul_relu(a, b, dc.to(kCpu), dd.to(kCpu));
  jit::CudaDriver::get().fill_async(reinterpret_cast<jit::DevicePtr>(dd.dl()->data), 0, dd.nbytes(),
                                    s.stream);
  s.synchronize();
  Stream other;
  p.launch(other.stream);
  other.synchronize();
  expect_matmul_relu(a, b, dc.to(kCpu), dd.to(kCpu));
}

}  // namespace
}  // namespace primjit
