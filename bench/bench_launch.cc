// What launching a GPU kernel through primjit::Kernel costs against launching the same compiled
// kernel with the driver directly.
//
// The kernel: N int32 tensors of 32 elements (N = 1, 4, 16), one block of 32 threads, each
// thread adds 1 to its element of every tensor, so the kernel has N parameters and does next to
// nothing. Baseline: the same function lowered the way the Jit lowers it, its CUDA source
// (codegen_cuda) compiled by NVRTC for the device with the Jit's options, loaded by the driver
// and launched with cuLaunchKernel (jit::CudaDriver::try_launch, what the runtime calls) on the
// same tensors. Both paths run in turn in every iteration (which goes first alternates), each
// timed by the wall clock; Time is the Kernel path, and the counters are
//   raw_ns       the direct driver launch
//   overhead_ns  Kernel - raw
//   ratio        Kernel / raw (goal: at most 1.05)
// BM_PreparedLaunch measures PreparedCall::launch (Kernel::prepare once, outside the timing)
// the same way, against the same raw launch in the same run.
// Rows:
//   launch       an asynchronous launch (host cost); the stream is drained every 64 iterations,
//                outside the timing, so the launch queue never fills
//   launch_sync  a launch and cuStreamSynchronize: the round trip
// Before timing, one launch of each must have added 1 to every element, and after it every
// element must count every launch (a mismatch fails the run). Without a CUDA driver or device
// every benchmark skips itself; the device code is still generated and compiled (NVRTC needs
// no GPU), so a broken kernel fails even there.
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_util.h"
#include "jit/cuda/codegen_cuda.h"
#include "jit/cuda/driver.h"
#include "jit/cuda/nvrtc_compiler.h"
#include "primjit/builder.h"
#include "primjit/jit.h"
#include "primjit/tensor.h"

namespace primjit::bench {
namespace {

namespace pb = primjit::builder;

constexpr int kThreads = 32;
constexpr DLDevice kGpu{kDLCUDA, 0};
constexpr DLDevice kCpu{kDLCPU, 0};
// Without a device the code is compiled for this architecture (the one CI checks).
constexpr int kDefaultArch = 90;
// Asynchronous launches between two drains of the stream.
constexpr int64_t kDrainEvery = 64;

// bumpN(X0, ..., X{N-1}): X_i[tx] += 1 for every tensor, one block of kThreads threads.
PrimFunc bump(int tensors) {
  pb::FunctionBuilder f("bump" + std::to_string(tensors));
  std::vector<pb::BufferRef> x;
  for (int i = 0; i < tensors; ++i) {
    x.push_back(f.arg_buffer("X" + std::to_string(i), {kThreads}, pb::i32));
  }
  f.target(Target::cuda());
  f.launch_thread("blockIdx.x", 1);
  pb::Var tx = f.launch_thread("threadIdx.x", kThreads);
  for (const pb::BufferRef& b : x) b[tx] += 1;
  return f.finish();
}

// The Kernel and the baseline's device code for one N; made once and kept for the whole run.
struct Launcher {
  Jit jit;
  Kernel kernel;
  jit::CudaKernelInfo info;
  jit::DeviceImage image;         // compiled when the Launcher is made, with or without a GPU
  CUfunc_st* function = nullptr;  // loaded at the first run on a GPU
  std::string error;              // why preparing it failed
};

template <size_t N>
Launcher& launcher() {
  static Launcher* l = [] {
    auto* l = new Launcher();
    try {
      l->kernel = l->jit.kernel(bump(static_cast<int>(N)), {.target = Target::cuda()});
      // Shapes are constant: the signature is the function's.
      IRModule lowered = l->kernel.lowered(constant_signature(l->kernel));
      jit::CudaModuleSource source = jit::codegen_cuda(lowered);
      PRIMJIT_USER_CHECK(source.kernels.size() == 1)
          << "expected one kernel, got " << source.kernels.size() << ":\n"
          << source.code;
      l->info = source.kernels.front();
      const std::vector<std::string> launch = {"blockIdx.x", "threadIdx.x"};
      PRIMJIT_USER_CHECK(l->info.param_types.size() == N && l->info.launch_params == launch &&
                         l->info.static_threads == kThreads)
          << "expected " << N << " pointer parameters launched over blockIdx.x (1) and "
          << "threadIdx.x (" << kThreads << "):\n"
          << source.code;
      for (const DataType& t : l->info.param_types) {
        PRIMJIT_USER_CHECK(t.is_handle()) << "a kernel parameter is not a pointer:\n"
                                          << source.code;
      }
      // As the runtime compiles a variant's kernels (jit/runtime/device_code.cc).
      jit::NvrtcOptions options;
      options.arch = cuda_arch_or(kDefaultArch);
#ifndef NDEBUG
      options.line_info = true;
#endif
      l->image = jit::nvrtc_compile({"bench_launch.cu", source.code}, options);
    } catch (const std::exception& e) {
      l->error = e.what();
    }
    return l;
  }();
  return *l;
}

// One run's tensors, their device pointers as kernel parameters, and the launches they count.
// (The kernel's parameters are in name order, X0, X1, X10, ...; every tensor gets the same
// update, so the baseline may pass the pointers in any order.)
template <size_t N>
struct Operands {
  std::vector<Tensor> tensors;
  std::array<DLTensor*, N> dl{};
  std::array<jit::DevicePtr, N> pointers{};
  std::array<void*, N> params{};
  int64_t launches = 0;

  Operands() {
    for (size_t i = 0; i < N; ++i) {
      tensors.push_back(Tensor::zeros({kThreads}, DataType::Int(32), kGpu));
      dl[i] = tensors[i].dl();
      pointers[i] = reinterpret_cast<jit::DevicePtr>(dl[i]->data);
      params[i] = &pointers[i];
    }
  }

  // "" when every element of every tensor equals the number of launches.
  std::string check() const {
    for (size_t i = 0; i < N; ++i) {
      Tensor host = tensors[i].to(kCpu);
      for (int j = 0; j < kThreads; ++j) {
        if (host.data<int32_t>()[j] != launches) {
          return "X" + std::to_string(i) + "[" + std::to_string(j) +
                 "] = " + std::to_string(host.data<int32_t>()[j]) + " after " +
                 std::to_string(launches) + " launches";
        }
      }
    }
    return "";
  }
};

template <size_t N>
void BM_Launch(benchmark::State& state, bool sync, bool prepared) {
  Launcher& l = launcher<N>();
  if (!l.error.empty()) return fail_benchmark(state, l.error);
  jit::CudaDriver* driver = gpu_or_skip(state);
  if (driver == nullptr) return;
  try {
    if (l.function == nullptr) {
      l.function = driver->function(driver->load_module(l.image.data), l.info.name);
    }
    const jit::Dim3 grid{1, 1, 1}, block{kThreads, 1, 1};
    Operands<N> ops;
    std::string error;
    auto raw = [&] {
      if (!driver->try_launch(l.function, grid, block, 0, ops.params.data(), nullptr, &error)) {
        PRIMJIT_USER_ERROR() << "cuLaunchKernel: " << error;
      }
      ++ops.launches;
    };
    call_kernel(l.kernel, ops.dl);  // compiles the variant
    ++ops.launches;
    PreparedCall call;
    if (prepared) {
      call = [&]<size_t... I>(std::index_sequence<I...>) { return l.kernel.prepare(ops.dl[I]...); }
      (std::make_index_sequence<N>());
    }
    auto through_kernel = [&] {
      if (prepared) {
        call.launch();
      } else {
        call_kernel(l.kernel, ops.dl);
      }
      ++ops.launches;
    };

    raw();
    driver->synchronize_stream(nullptr);
    if (std::string wrong = ops.check(); !wrong.empty()) {
      return fail_benchmark(state, "before timing: " + wrong);
    }

    int64_t kernel_ns = 0, raw_ns = 0;
    bool kernel_first = true;
    for (auto _ : state) {
      int64_t t0 = wall_ns();
      if (kernel_first) {
        through_kernel();
      } else {
        raw();
      }
      if (sync) driver->synchronize_stream(nullptr);
      int64_t t1 = wall_ns();
      if (kernel_first) {
        raw();
      } else {
        through_kernel();
      }
      if (sync) driver->synchronize_stream(nullptr);
      int64_t t2 = wall_ns();
      const int64_t kernel = kernel_first ? t1 - t0 : t2 - t1;
      kernel_ns += kernel;
      raw_ns += kernel_first ? t2 - t1 : t1 - t0;
      state.SetIterationTime(static_cast<double>(kernel) * 1e-9);
      kernel_first = !kernel_first;
      if (!sync && ops.launches % (2 * kDrainEvery) == 0) driver->synchronize_stream(nullptr);
    }
    driver->synchronize_stream(nullptr);
    if (std::string wrong = ops.check(); !wrong.empty()) {
      return fail_benchmark(state, "after timing: " + wrong);
    }
    const double iterations = static_cast<double>(state.iterations());
    state.counters["raw_ns"] = static_cast<double>(raw_ns) / iterations;
    state.counters["overhead_ns"] = static_cast<double>(kernel_ns - raw_ns) / iterations;
    state.counters["ratio"] = static_cast<double>(kernel_ns) / static_cast<double>(raw_ns);
  } catch (const std::exception& e) {
    fail_benchmark(state, e.what());
  }
}

// Named BM_Launch/<launch|launch_sync>/args:N and BM_PreparedLaunch/....
template <size_t N>
void add(bool sync, bool prepared) {
  std::string name = std::string(prepared ? "BM_PreparedLaunch/" : "BM_Launch/") +
                     (sync ? "launch_sync" : "launch") + "/args:" + std::to_string(N);
  benchmark::RegisterBenchmark(name.c_str(), [sync, prepared](benchmark::State& state) {
    BM_Launch<N>(state, sync, prepared);
  })->UseManualTime();
}

const bool registered = [] {
  for (bool prepared : {false, true}) {
    for (bool sync : {false, true}) {
      add<1>(sync, prepared);
      add<4>(sync, prepared);
      add<16>(sync, prepared);
    }
  }
  return true;
}();

}  // namespace
}  // namespace primjit::bench

PRIMJIT_BENCHMARK_MAIN();
