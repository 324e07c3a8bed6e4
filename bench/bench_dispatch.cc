// What a cached call through primjit::Kernel costs on top of the compiled code it runs.
//
// The kernel is a CPU function (target llvm) that does almost nothing: it takes 1, 3, 8 or 16 2-d
// float32 tensors of one shape (n, m) and increments X[N-1][0, 0]. Its compiled code still
// checks every tensor (packed API), so the difference between the two paths below is the
// runtime's own dispatch: its argument checks, building the key, the last-variant check or
// the Jit's map lookup, and copying the arguments.
//
// Baseline: the very variant the Kernel runs for the call (Kernel::compiled: lowered as the Jit
// lowers it, specialized to the shapes under exact/auto, symbolic under dynamic), called through
// its packed entry point (packed_function with packed_self, primjit/abi.h) with arguments packed
// once and its status checked. Each benchmark times Kernel::operator() (Time: wall time per call,
// all threads together; CPU: per thread), then, in the same thread, as many direct calls, and
// reports:
//   direct_ns        CPU time per direct packed call
//   overhead_ns      Kernel call - direct call (CPU time per call, same thread, same run)
//   ratio            Kernel call / direct call
//   allocs_per_call  operator new calls per Kernel call in the timed loop; anything but 0
//                    fails the run (a cached call must not allocate)
// Times are thread CPU time (clock_gettime), which other processes on a shared machine do not
// inflate; neither path blocks.
//
// Rows: exact policy with 1, 3, 8 and 16 tensors (the kernel's last-variant check answers; 16 as
// bench_launch's widest row, whose key must still fit the cached-call path's); dynamic
// and auto with 3; two shapes in turn with 3 (each call misses the last-variant check and
// finds its variant in the Jit's map; baseline: the two compiled variants in turn). Each runs
// with 1 .. hardware_concurrency threads sharing one Kernel, each thread with its own tensors
// (items_per_second is then the calls per second of all threads together).
#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "primjit/builder.h"
#include "primjit/jit.h"
#include "primjit/tensor.h"

// --- counting heap allocations ---------------------------------------------------------------
// The replaceable global allocation functions of this program, counting per thread. They
// replace operator new for the primjit library and everything else in the process.

namespace {

thread_local uint64_t t_allocations = 0;

void* counted_alloc(std::size_t size) {
  ++t_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}

void* counted_alloc(std::size_t size, std::align_val_t align) {
  ++t_allocations;
  const auto a = static_cast<std::size_t>(align);
  const std::size_t rounded = (std::max<std::size_t>(size, 1) + a - 1) / a * a;  // a multiple
  if (void* p = std::aligned_alloc(a, rounded)) return p;
  throw std::bad_alloc();
}

}  // namespace

void* operator new(std::size_t size) { return counted_alloc(size); }
void* operator new[](std::size_t size) { return counted_alloc(size); }
void* operator new(std::size_t size, std::align_val_t align) { return counted_alloc(size, align); }
void* operator new[](std::size_t size, std::align_val_t align) {
  return counted_alloc(size, align);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(size);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return operator new(size, std::nothrow);
}
void* operator new(std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(size, align);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  return operator new(size, align, std::nothrow);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

namespace primjit::bench {
namespace {

namespace pb = primjit::builder;

// The two argument shapes; the second only in the alternating benchmark.
constexpr std::array<std::array<int64_t, 2>, 2> kShapes = {{{4, 8}, {8, 4}}};

// touchN(X0, ..., X{N-1}): X{N-1}[0, 0] += 1, all tensors (n, m) float32.
PrimFunc touch(int tensors) {
  pb::FunctionBuilder f("touch" + std::to_string(tensors));
  pb::Var n = f.dim("n"), m = f.dim("m");
  std::vector<pb::BufferRef> x;
  for (int i = 0; i < tensors; ++i) x.push_back(f.arg_buffer("X" + std::to_string(i), {n, m}));
  f.target(Target::llvm());
  x.back()(0, 0) += 1.0;
  return f.finish();
}

// One thread's tensors for one shape, as Kernel arguments and packed for the direct call.
template <size_t N>
struct Operands {
  std::vector<Tensor> tensors;
  std::array<DLTensor*, N> dl{};
  std::array<PJValue, N> packed{};

  explicit Operands(const std::array<int64_t, 2>& shape) {
    for (size_t i = 0; i < N; ++i) {
      tensors.push_back(Tensor::zeros({shape[0], shape[1]}, DataType::Float(32)));
      dl[i] = tensors[i].dl();
      packed[i] = Arg(dl[i]).value;
    }
  }
  float counter() const { return tensors.back().data<float>()[0]; }
};

// A variant's packed entry point, called as compiled code calls it: no dispatch at all.
struct Direct {
  PJPackedFunc fn = nullptr;
  void* self = nullptr;

  // True when the call succeeded.
  bool operator()(const PJValue* args, int32_t num_args) const {
    PJValue result{};
    return fn(self, args, num_args, &result) == 0;
  }
};

// What the threads of one benchmark share: the Jit, the Kernel, and its variants with their
// packed entry points (one per shape). Made once per configuration and kept for the whole run:
// ORC sessions are not torn down during static destruction.
struct Shared {
  Jit jit;
  Kernel kernel;
  std::array<CompiledVariant, 2> variants;
  std::array<Direct, 2> direct{};
  std::string error;  // why the setup failed, if it did
};

template <size_t N>
Shared& shared(Policy policy, bool alternating) {
  static std::mutex mutex;
  static std::map<std::pair<Policy, bool>, Shared*> all;
  std::lock_guard<std::mutex> lock(mutex);
  Shared*& s = all[{policy, alternating}];
  if (s != nullptr) return *s;
  s = new Shared();
  try {
    PrimFunc func = touch(static_cast<int>(N));
    s->kernel = s->jit.kernel(func, {.policy = policy});
    for (int v = 0; v < (alternating ? 2 : 1); ++v) {
      Operands<N> ops(kShapes[v]);
      const std::vector<Arg> args(ops.dl.begin(), ops.dl.end());
      // The first call compiles: it must allocate, or the counting above is not in effect.
      uint64_t before = t_allocations;
      call_kernel(s->kernel, ops.dl);
      if (t_allocations == before) {
        s->error = "operator new is not replaced: a compiling call counted no allocation";
      }
      s->variants[v] = s->kernel.compiled(signature_of(args));
      s->direct[v] = {s->variants[v].packed_function(), s->variants[v].packed_self()};
    }
  } catch (const std::exception& e) {
    s->error = e.what();
  }
  return *s;
}

// Fails the benchmark in this thread. The thread still goes through the (empty) timed loop:
// its start and end wait for the benchmark's other threads.
void fail_thread(benchmark::State& state, const std::string& message) {
  fail_benchmark(state, message);
  for (auto _ : state) {
  }
}

template <size_t N>
void BM_Dispatch(benchmark::State& state, Policy policy, bool alternating) {
  Shared& s = shared<N>(policy, alternating);
  if (!s.error.empty()) return fail_thread(state, s.error);
  const int variants = alternating ? 2 : 1;
  std::vector<Operands<N>> ops;
  for (int v = 0; v < variants; ++v) ops.emplace_back(kShapes[v]);

  // Both paths run the function: each call adds 1 to the last tensor's first element.
  try {
    for (int v = 0; v < variants; ++v) {
      call_kernel(s.kernel, ops[v].dl);
      if (!s.direct[v](ops[v].packed.data(), N)) {
        return fail_thread(state, "the direct packed call failed");
      }
      if (ops[v].counter() != 2.0f) {
        return fail_thread(state, "the kernel and the direct call do not both increment X[" +
                                      std::to_string(N - 1) + "][0, 0]");
      }
    }
  } catch (const std::exception& e) {
    return fail_thread(state, e.what());
  }

  int flip = 0;  // the shape of the next call: always 0 with one shape, 0 and 1 in turn with two
  const uint64_t allocations_before = t_allocations;
  const int64_t kernel_start = thread_cpu_ns();
  for (auto _ : state) {
    call_kernel(s.kernel, ops[flip].dl);
    flip ^= variants - 1;
  }
  const int64_t kernel_ns = thread_cpu_ns() - kernel_start;
  const uint64_t allocations = t_allocations - allocations_before;

  const int64_t calls = state.iterations();
  flip = 0;
  bool direct_ok = true;
  const int64_t direct_start = thread_cpu_ns();
  for (int64_t i = 0; i < calls; ++i) {
    direct_ok &= s.direct[flip](ops[flip].packed.data(), N);
    flip ^= variants - 1;
  }
  const int64_t direct_ns = thread_cpu_ns() - direct_start;
  if (!direct_ok) fail_benchmark(state, "a direct packed call failed in the timed loop");

  auto per_call = [&](double total) {
    return benchmark::Counter(total / static_cast<double>(calls), benchmark::Counter::kAvgThreads);
  };
  state.counters["direct_ns"] = per_call(static_cast<double>(direct_ns));
  state.counters["overhead_ns"] = per_call(static_cast<double>(kernel_ns - direct_ns));
  state.counters["ratio"] = benchmark::Counter(
      static_cast<double>(kernel_ns) / static_cast<double>(direct_ns > 0 ? direct_ns : 1),
      benchmark::Counter::kAvgThreads);
  state.counters["allocs_per_call"] = per_call(static_cast<double>(allocations));
  state.SetItemsProcessed(calls);
  if (allocations != 0) {
    fail_benchmark(state, std::to_string(allocations) + " heap allocations in " +
                              std::to_string(calls) +
                              " cached Kernel calls; a hit must not allocate");
  }
}

// Named BM_Dispatch/<policy>/tensors:N/threads:T.
template <size_t N>
void add(const std::string& name, Policy policy, bool alternating) {
  const int max_threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  benchmark::RegisterBenchmark(
      ("BM_Dispatch/" + name + "/tensors:" + std::to_string(N)).c_str(),
      [=](benchmark::State& state) { BM_Dispatch<N>(state, policy, alternating); })
      ->ThreadRange(1, max_threads)
      ->UseRealTime();  // items_per_second: the calls of all threads per second
}

const bool registered = [] {
  add<1>("exact", Policy::kExact, false);
  add<3>("exact", Policy::kExact, false);
  add<8>("exact", Policy::kExact, false);
  add<16>("exact", Policy::kExact, false);
  add<3>("dynamic", Policy::kDynamic, false);
  add<3>("auto", Policy::kAuto, false);
  add<3>("alternating_shapes", Policy::kExact, true);
  return true;
}();

}  // namespace
}  // namespace primjit::bench

PRIMJIT_BENCHMARK_MAIN();
