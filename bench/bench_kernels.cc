// GPU kernels through primjit::Kernel against what the device does at best and a hand-written
// kernel.
//
// BM_VectorAdd: C = A + B (examples::vector_add_cuda) on 2^26 float32, 768 MiB read and written
//   per call, against a device-to-device copy (cuMemcpyDtoDAsync) of 384 MiB, which reads and
//   writes as many bytes. Counters: GBps (bytes read + written per second by the vector add),
//   copy_GBps, ratio = GBps / copy_GBps (goal: at least 0.90); with the nvcc image (below) also
//   nvcc_GBps and vs_nvcc = nvcc-compiled time / Kernel time.
// BM_TiledMatmul/n: C = A @ B on n x n float32 (n = 1024, 4096) with the tiling of
//   examples::matmul_relu's matmul (one 256-thread block per 16 x 16 tile of C, 16 x 16 tiles
//   of A and B staged through shared memory, one output per thread), there fixed at 128, here
//   for any multiple of 16; against the same tiling written by hand in CUDA C and compiled by
//   NVRTC for the device (ptxas -O3). Counters: TFLOPs (2 n^3 per call), hand_TFLOPs,
//   ratio = hand-written time / Kernel time (goal: at least 0.98); with the nvcc image also
//   nvcc_TFLOPs and vs_nvcc = nvcc-compiled time / Kernel time.
//
// The nvcc image: bench/hand_kernels.cu (the same kernels by hand, vector add included)
// compiled ahead of time by the toolkit's nvcc into a fatbin (sm_90 and PTX; the GPU bundle
// builds it). PRIMJIT_HAND_KERNELS=FILE names it; without it the nvcc counters are absent. A
// named file that is missing or does not load fails the run.
//
// Timing: CUDA events around one call that is enqueued while an untimed call of the same kind
// still runs, so the GPU goes from one to the next and the host's launch cost stays out (that is
// bench_launch's subject); the two sides alternate in every iteration. Time is the Kernel's.
// Before timing, the vector add is compared exactly with the CPU's sums, and both matmuls with
// a float64 CPU reference on 12 rows (every column), within float rounding; a mismatch fails
// the run. Without a CUDA driver or device every benchmark skips itself; the matmul's device
// code (generated and hand-written) is still compiled (NVRTC needs no GPU).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/tiled_matmul.h"
#include "examples/kernels.h"
#include "jit/cuda/codegen_cuda.h"
#include "jit/cuda/driver.h"
#include "jit/cuda/nvrtc_compiler.h"
#include "primjit/builder.h"
#include "primjit/jit.h"
#include "primjit/tensor.h"

namespace primjit::bench {
namespace {

namespace pb = primjit::builder;

constexpr DLDevice kGpu{kDLCUDA, 0};
constexpr DLDevice kCpu{kDLCPU, 0};
constexpr int kDefaultArch = 90;  // without a device: the architecture CI checks
constexpr int64_t kVectorLength = int64_t{1} << 26;

// Deterministic values in [-1, 1): cheap enough for 2^27 of them.
float value(uint64_t i, uint64_t seed) {
  uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  return static_cast<float>(x >> 40) / static_cast<float>(1 << 23) - 1.0f;
}

Tensor filled(std::vector<int64_t> shape, uint64_t seed) {
  Tensor t = Tensor::zeros(std::move(shape), DataType::Float(32));
  float* data = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) data[i] = value(i, seed);
  return t;
}

// Two events, destroyed with the object.
struct EventPair {
  jit::CudaDriver& driver;
  CUevent_st* start = nullptr;
  CUevent_st* stop = nullptr;
  explicit EventPair(jit::CudaDriver& d) : driver(d) {
    start = driver.create_event();
    stop = driver.create_event();
  }
  ~EventPair() {
    driver.destroy_event(start);
    driver.destroy_event(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
};

// Seconds the GPU spends on one `op`, enqueued behind an untimed `op` on the same stream.
template <typename Op>
double gpu_seconds(jit::CudaDriver& driver, EventPair& events, Op&& op) {
  op();
  driver.record_event(events.start);
  op();
  driver.record_event(events.stop);
  driver.synchronize_event(events.stop);
  return static_cast<double>(driver.elapsed_ms(events.start, events.stop)) * 1e-3;
}

// --- the nvcc-compiled kernels ----------------------------------------------------------------

// Function `name` of the image PRIMJIT_HAND_KERNELS names (loaded once, on the first use);
// nullptr when the variable is unset. Throws primjit::Error when the image cannot be read or
// loaded, or lacks the function.
CUfunc_st* nvcc_function(jit::CudaDriver& driver, const std::string& name) {
  static CUmod_st* module = [&driver]() -> CUmod_st* {
    const char* path = std::getenv("PRIMJIT_HAND_KERNELS");
    if (path == nullptr || *path == '\0') return nullptr;
    std::ifstream in(path, std::ios::binary);
    PRIMJIT_USER_CHECK(in.good())
        << "PRIMJIT_HAND_KERNELS: cannot read '" << path
        << "' (the nvcc-compiled bench/hand_kernels.cu; unset the variable to run without it)";
    std::ostringstream image;
    image << in.rdbuf();
    return driver.load_module(image.str());
  }();
  return module == nullptr ? nullptr : driver.function(module, name);
}

// --- vector add ------------------------------------------------------------------------------

// Made at the first run on a GPU (and checked), kept for the whole run.
struct VectorAdd {
  Jit jit;
  Kernel kernel;
  Tensor a, b, c;
  jit::DevicePtr copy_from = 0, copy_to = 0;
  size_t copy_bytes = 0;
  std::string error;
};

VectorAdd& vector_add(jit::CudaDriver& driver) {
  static VectorAdd* v = [&driver] {
    auto* v = new VectorAdd();
    try {
      v->kernel = v->jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
      Tensor a = filled({kVectorLength}, 1), b = filled({kVectorLength}, 2);
      v->a = a.to(kGpu);
      v->b = b.to(kGpu);
      v->c = Tensor::zeros({kVectorLength}, DataType::Float(32), kGpu);
      v->kernel(v->a.dl(), v->b.dl(), v->c.dl());
      Tensor c = v->c.to(kCpu);
      const float *in_a = a.data<float>(), *in_b = b.data<float>(), *out = c.data<float>();
      for (int64_t i = 0; i < kVectorLength; ++i) {
        if (out[i] != in_a[i] + in_b[i]) {
          v->error = "vector add: C[" + std::to_string(i) + "] = " + std::to_string(out[i]) +
                     ", expected " + std::to_string(in_a[i] + in_b[i]);
          break;
        }
      }
      // The copy reads and writes as many bytes as the vector add (2 reads + 1 write).
      v->copy_bytes = 3 * sizeof(float) * kVectorLength / 2;
      v->copy_from = driver.alloc(v->copy_bytes);
      v->copy_to = driver.alloc(v->copy_bytes);
      driver.fill_async(v->copy_from, 0x3f, v->copy_bytes);
      driver.synchronize_stream(nullptr);
    } catch (const std::exception& e) {
      v->error = e.what();
    }
    return v;
  }();
  return *v;
}

void BM_VectorAdd(benchmark::State& state) {
  jit::CudaDriver* driver = gpu_or_skip(state);
  if (driver == nullptr) return;
  VectorAdd& v = vector_add(*driver);
  if (!v.error.empty()) return fail_benchmark(state, v.error);
  try {
    CUfunc_st* nvcc = nvcc_function(*driver, "hand_vector_add");
    int n = static_cast<int>(kVectorLength);
    void* nvcc_params[] = {&v.a.dl()->data, &v.b.dl()->data, &v.c.dl()->data, &n};
    const jit::Dim3 grid{static_cast<unsigned>(kVectorLength / 256), 1, 1}, block{256, 1, 1};
    EventPair events(*driver);
    double kernel_s = 0, copy_s = 0, nvcc_s = 0;
    for (auto _ : state) {
      const double t =
          gpu_seconds(*driver, events, [&] { v.kernel(v.a.dl(), v.b.dl(), v.c.dl()); });
      copy_s += gpu_seconds(*driver, events, [&] {
        driver->copy_device_async(v.copy_to, v.copy_from, v.copy_bytes);
      });
      if (nvcc != nullptr) {
        nvcc_s += gpu_seconds(*driver, events,
                              [&] { driver->launch(nvcc, grid, block, 0, nvcc_params); });
      }
      kernel_s += t;
      state.SetIterationTime(t);
    }
    const double bytes =
        3.0 * sizeof(float) * kVectorLength * static_cast<double>(state.iterations());
    state.counters["GBps"] = bytes / kernel_s * 1e-9;
    state.counters["copy_GBps"] = bytes / copy_s * 1e-9;
    state.counters["ratio"] = copy_s / kernel_s;
    if (nvcc != nullptr) {
      state.counters["nvcc_GBps"] = bytes / nvcc_s * 1e-9;
      state.counters["vs_nvcc"] = nvcc_s / kernel_s;
    }
  } catch (const std::exception& e) {
    fail_benchmark(state, e.what());
  }
}

// --- tiled matmul ----------------------------------------------------------------------------

// The launch of tiled_matmul(n), and of the hand-written kernel: a block per tile of C.
jit::Dim3 matmul_grid(int n) { return {static_cast<unsigned>((n / kTile) * (n / kTile)), 1, 1}; }
jit::Dim3 matmul_block() { return {kTile * kTile, 1, 1}; }

// The same tiling by hand; N is defined in front of it.
constexpr const char* kHandWrittenMatmul = R"(
extern "C" __global__ void __launch_bounds__(256)
hand_tiled_matmul(const float* __restrict__ A, const float* __restrict__ B,
                  float* __restrict__ C) {
  constexpr int kTiles = N / 16;
  __shared__ float A_tile[16][16];
  __shared__ float B_tile[16][16];
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const int row = blockIdx.x / kTiles * 16 + ty;
  const int col = blockIdx.x % kTiles * 16 + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < kTiles; ++k0) {
    A_tile[ty][tx] = A[row * N + k0 * 16 + tx];
    B_tile[ty][tx] = B[(k0 * 16 + ty) * N + col];
    __syncthreads();
#pragma unroll
    for (int k1 = 0; k1 < 16; ++k1) acc += A_tile[ty][k1] * B_tile[k1][tx];
    __syncthreads();
  }
  C[row * N + col] = acc;
}
)";

// "" when 12 rows of c (every column) match a @ b (n x n, row-major) within float rounding.
std::string check_matmul(const char* which, const float* a, const float* b, const float* c, int n) {
  const int rows[] = {0,     1,         kTile - 1,     kTile,     3 * kTile + 5, n / 2 - 1,
                      n / 2, n / 2 + 7, n - kTile - 1, n - kTile, n - 2,         n - 1};
  std::vector<double> expected(n), magnitude(n);
  for (int i : rows) {
    std::fill(expected.begin(), expected.end(), 0.0);
    std::fill(magnitude.begin(), magnitude.end(), 0.0);
    for (int k = 0; k < n; ++k) {
      const double x = a[int64_t{i} * n + k];
      const float* b_row = b + int64_t{k} * n;
      for (int j = 0; j < n; ++j) {
        expected[j] += x * b_row[j];
        magnitude[j] += std::fabs(x * b_row[j]);
      }
    }
    for (int j = 0; j < n; ++j) {
      const double got = c[int64_t{i} * n + j];
      // float accumulation of n products: far below 1e-5 of their magnitudes in practice.
      if (std::fabs(got - expected[j]) > 1e-3 + 1e-5 * magnitude[j]) {
        return std::string(which) + " matmul: C[" + std::to_string(i) + ", " + std::to_string(j) +
               "] = " + std::to_string(got) + ", expected " + std::to_string(expected[j]);
      }
    }
  }
  return "";
}

// One size: compiled at the first run (with or without a GPU), loaded and checked at the first
// run on a GPU, kept for the whole run.
struct Matmul {
  int n = 0;
  Jit jit;
  Kernel kernel;
  jit::DeviceImage hand_image;
  std::string error;
  // On a GPU:
  bool loaded = false;
  CUfunc_st* hand = nullptr;
  bool nvcc_checked = false;
  CUfunc_st* nvcc = nullptr;  // the nvcc-compiled one, when there is an image
  Tensor a, b, c, c_hand;
};

Matmul& matmul(int n) {
  static std::map<int, Matmul*> all;
  Matmul*& m = all[n];
  if (m != nullptr) return *m;
  m = new Matmul();
  m->n = n;
  try {
    m->kernel = m->jit.kernel(tiled_matmul(n), {.target = Target::cuda()});
    jit::NvrtcOptions options;
    options.arch = cuda_arch_or(kDefaultArch);
    // The generated code compiles as the runtime compiles it (checked here even without a GPU).
    IRModule lowered = m->kernel.lowered(constant_signature(m->kernel));
    jit::nvrtc_compile({"tiled_matmul.cu", jit::codegen_cuda(lowered).code}, options);
    // The hand-written kernel at ptxas's highest optimization level.
    options.extra_options = {"--ptxas-options=-O3"};
    m->hand_image =
        jit::nvrtc_compile({"hand_tiled_matmul.cu",
                            "constexpr int N = " + std::to_string(n) + ";\n" + kHandWrittenMatmul},
                           options);
  } catch (const std::exception& e) {
    m->error = e.what();
  }
  return *m;
}

// Loads the hand-written kernel, runs both kernels once and checks them (failures go to
// m.error).
void load(Matmul& m, jit::CudaDriver& driver) {
  const int n = m.n;
  m.loaded = true;
  try {
    m.hand = driver.function(driver.load_module(m.hand_image.data), "hand_tiled_matmul");
    Tensor a = filled({n, n}, 3), b = filled({n, n}, 4);
    m.a = a.to(kGpu);
    m.b = b.to(kGpu);
    m.c = Tensor::zeros({n, n}, DataType::Float(32), kGpu);
    m.c_hand = Tensor::zeros({n, n}, DataType::Float(32), kGpu);
    m.kernel(m.a.dl(), m.b.dl(), m.c.dl());
    void* params[] = {&m.a.dl()->data, &m.b.dl()->data, &m.c_hand.dl()->data};
    driver.launch(m.hand, matmul_grid(n), matmul_block(), 0, params);
    Tensor c = m.c.to(kCpu), c_hand = m.c_hand.to(kCpu);
    m.error = check_matmul("generated", a.data<float>(), b.data<float>(), c.data<float>(), n);
    if (m.error.empty()) {
      m.error =
          check_matmul("hand-written", a.data<float>(), b.data<float>(), c_hand.data<float>(), n);
    }
  } catch (const std::exception& e) {
    m.error = e.what();
  }
}

// Finds the nvcc-compiled kernel for m.n (if there is an image), runs it once into c_hand and
// checks it (failures go to m.error).
void check_nvcc(Matmul& m, jit::CudaDriver& driver) {
  const int n = m.n;
  m.nvcc_checked = true;
  try {
    m.nvcc = nvcc_function(driver, "hand_tiled_matmul_" + std::to_string(n));
    if (m.nvcc == nullptr) return;
    driver.fill_async(reinterpret_cast<jit::DevicePtr>(m.c_hand.dl()->data), 0, m.c_hand.nbytes());
    void* params[] = {&m.a.dl()->data, &m.b.dl()->data, &m.c_hand.dl()->data};
    driver.launch(m.nvcc, matmul_grid(n), matmul_block(), 0, params);
    Tensor a = m.a.to(kCpu), b = m.b.to(kCpu), c = m.c_hand.to(kCpu);
    m.error = check_matmul("nvcc-compiled", a.data<float>(), b.data<float>(), c.data<float>(), n);
  } catch (const std::exception& e) {
    m.error = e.what();
  }
}

void BM_TiledMatmul(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Matmul& m = matmul(n);
  if (!m.error.empty()) return fail_benchmark(state, m.error);
  jit::CudaDriver* driver = gpu_or_skip(state);
  if (driver == nullptr) return;
  try {
    if (!m.loaded) load(m, *driver);
    if (!m.error.empty()) return fail_benchmark(state, m.error);
    if (!m.nvcc_checked) check_nvcc(m, *driver);
    if (!m.error.empty()) return fail_benchmark(state, m.error);
    EventPair events(*driver);
    void* params[] = {&m.a.dl()->data, &m.b.dl()->data, &m.c_hand.dl()->data};
    double kernel_s = 0, hand_s = 0, nvcc_s = 0;
    for (auto _ : state) {
      const double t =
          gpu_seconds(*driver, events, [&] { m.kernel(m.a.dl(), m.b.dl(), m.c.dl()); });
      hand_s += gpu_seconds(*driver, events, [&] {
        driver->launch(m.hand, matmul_grid(n), matmul_block(), 0, params);
      });
      if (m.nvcc != nullptr) {
        nvcc_s += gpu_seconds(*driver, events, [&] {
          driver->launch(m.nvcc, matmul_grid(n), matmul_block(), 0, params);
        });
      }
      kernel_s += t;
      state.SetIterationTime(t);
    }
    const double flops = 2.0 * n * n * n * static_cast<double>(state.iterations());
    state.counters["TFLOPs"] = flops / kernel_s * 1e-12;
    state.counters["hand_TFLOPs"] = flops / hand_s * 1e-12;
    state.counters["ratio"] = hand_s / kernel_s;
    if (m.nvcc != nullptr) {
      state.counters["nvcc_TFLOPs"] = flops / nvcc_s * 1e-12;
      state.counters["vs_nvcc"] = nvcc_s / kernel_s;
    }
  } catch (const std::exception& e) {
    fail_benchmark(state, e.what());
  }
}

BENCHMARK(BM_VectorAdd)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TiledMatmul)->Arg(1024)->Arg(4096)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace primjit::bench

PRIMJIT_BENCHMARK_MAIN();
