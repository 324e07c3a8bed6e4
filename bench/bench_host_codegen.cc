// JIT-compiled host loops against the same loops compiled by g++ -O3 -march=native in this
// binary, on the same arrays: an elementwise saxpy and an int32 sum, in L1 (1024, 4096), in L2
// (16384) and out of cache (1M). The JIT side is called through the packed calling convention,
// argument checks included (n = 1 shows that fixed cost): the entry point of the variant a
// primjit::Kernel compiles for the function under the dynamic policy (no length compiled in),
// from Kernel::compiled, called directly. The saxpy runs in both contraction
// modes (PipelineOptions::fp_contract: a * x + y as two roundings, or as T.fma), each against
// the g++ loop that rounds the same way.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "bench/host_reference.h"
#include "primjit/dlpack.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"

namespace primjit::bench {
namespace {

constexpr const char* kSaxpy = R"(
@T.prim_func
def saxpy(a: T.handle, b: T.handle, c: T.handle, alpha: T.float32):
    T.func_attr({"target": T.target("llvm")})
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    C = T.match_buffer(c, (n,), "float32")
    for i in range(n):
        C[i] = A[i] * alpha + B[i]
)";

constexpr const char* kSum = R"(
@T.prim_func
def total(a: T.handle) -> T.int32:
    T.func_attr({"target": T.target("llvm")})
    n = T.int64()
    A = T.match_buffer(a, (n,), "int32")
    acc = T.alloc_buffer((1,), "int32", scope="local")
    acc[0] = 0
    for i in range(n):
        acc[0] = acc[0] + A[i]
    return acc[0]
)";

// The JIT session, kept for the whole run (ORC sessions are not torn down during static
// destruction); no disk cache, so that every run compiles what it measures.
Jit& jit_session() {
  static Jit* j = new Jit({.disk_cache = DiskCacheMode::kDisabled});
  return *j;
}

// A compiled function's packed entry point and its `self` (primjit/abi.h), called as compiled
// code calls it: no dispatch; a failed call throws.
struct Packed {
  PJPackedFunc fn = nullptr;
  void* self = nullptr;

  PJValue operator()(const PJValue* args, int32_t num_args) const {
    PJValue result{};
    result.type_index = kPJNone;
    if (fn(self, args, num_args, &result) != 0) [[unlikely]] {
      throw std::runtime_error("the JIT-compiled function failed");
    }
    return result;
  }
};

// One compiled function, kept for the whole run: the variant Kernel `name` of `text` runs for
// 1-d tensors of any length (dynamic policy), then `scalars` float32 scalars.
Packed compile(const char* text, const char* name, DataType element, int tensors, int scalars,
               bool fp_contract = false) {
  static std::vector<CompiledVariant>* held = new std::vector<CompiledVariant>();
  Kernel kernel = jit_session().kernel(parse(text), name,
                                       {.policy = Policy::kDynamic, .fp_contract = fp_contract});
  Signature signature(tensors, ArgSpec::tensor(element, {1}));
  for (int i = 0; i < scalars; ++i) signature.push_back(ArgSpec::scalar(DataType::Float(32)));
  held->push_back(kernel.compiled(signature));
  return Packed{held->back().packed_function(), held->back().packed_self()};
}

Packed compile_saxpy(bool fp_contract) {
  return compile(kSaxpy, "saxpy", DataType::Float(32), 3, 1, fp_contract);
}

DLTensor tensor(void* data, int64_t* shape, DLDataType dtype) {
  DLTensor t{};
  t.data = data;
  t.device = {kDLCPU, 0};
  t.ndim = 1;
  t.dtype = dtype;
  t.shape = shape;
  return t;
}

PJValue ptr(DLTensor* t) {
  PJValue v{};
  v.type_index = kPJDLTensorPtr;
  v.v_ptr = t;
  return v;
}

// A float reduction over a 1-d tensor into out[0], marked T.vectorized (LowerVectorReductions:
// lane-wise partials and a fixed tree) or not (the exact serial order). `{combine}` is the
// update of acc[0] with A[i].
constexpr const char* kReduceTemplate = R"(
@T.prim_func
def reduce(a: T.handle, out: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    O = T.match_buffer(out, (1,), "float32")
    acc = T.alloc_buffer((1,), "float32", scope="local")
    acc[0] = A[0]
    for i in {kind}(n):
        acc[0] = {combine}
    O[0] = acc[0]
)";

std::string reduce_text(bool marked, bool is_max) {
  std::string text = kReduceTemplate;
  auto put = [&](const std::string& key, const std::string& value) {
    text.replace(text.find(key), key.size(), value);
  };
  put("{kind}", marked ? "T.vectorized" : "range");
  put("{combine}", is_max ? "T.max(acc[0], A[i])" : "acc[0] + A[i]");
  return text;
}

// An elementwise add as one T.parallel loop over every element, and the same loop chunked by
// hand into T.parallel chunks of 4096 with a serial loop inside.
constexpr const char* kParallelAdd = R"(
@T.prim_func
def add(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    C = T.match_buffer(c, (n,), "float32")
    for i in T.parallel(n):
        C[i] = A[i] + B[i]
)";

constexpr const char* kChunkedAdd = R"(
@T.prim_func
def add(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    C = T.match_buffer(c, (n,), "float32")
    for chunk in T.parallel((n + T.int64(4095)) // T.int64(4096)):
        base: T.int64 = chunk * T.int64(4096)
        for j in range(T.min(T.int64(4096), n - base)):
            C[base + j] = A[base + j] + B[base + j]
)";

// Names of race()'s counters: each side's time per call, and the second's time over the first's.
struct RaceCounters {
  const char* first = "jit_ns";
  const char* second = "gxx_ns";
  const char* ratio = "vs_gxx";
};

// The JIT's loop and g++'s take turns on the same arrays (where arrays lie changes loop speed
// through cache-set and 4K-aliasing effects, so each side must see the same), in batches timed
// by the steady clock. Time is the JIT's per batch; `jit_ns` and `gxx_ns` are per call,
// `vs_gxx` = g++ time / JIT time (the JIT's speed relative to g++).
template <typename Jit, typename Gxx>
void race(benchmark::State& state, int64_t bytes_per_call, Jit&& jit_call, Gxx&& gxx_call,
          RaceCounters names = {}) {
  using Clock = std::chrono::steady_clock;
  const int batch = bytes_per_call <= (int64_t{1} << 20) ? 64 : 1;
  double jit_s = 0, gxx_s = 0;
  int64_t calls = 0;
  for (auto _ : state) {
    Clock::time_point t0 = Clock::now();
    for (int r = 0; r < batch; ++r) {
      jit_call();
      benchmark::ClobberMemory();
    }
    Clock::time_point t1 = Clock::now();
    for (int r = 0; r < batch; ++r) {
      gxx_call();
      benchmark::ClobberMemory();
    }
    Clock::time_point t2 = Clock::now();
    double j = std::chrono::duration<double>(t1 - t0).count();
    jit_s += j;
    gxx_s += std::chrono::duration<double>(t2 - t1).count();
    calls += batch;
    state.SetIterationTime(j);
  }
  state.counters[names.first] = jit_s / static_cast<double>(calls) * 1e9;
  state.counters[names.second] = gxx_s / static_cast<double>(calls) * 1e9;
  state.counters[names.ratio] = gxx_s / jit_s;
  state.SetBytesProcessed(calls * bytes_per_call);
}

// `fused`: the JIT contracts (T.fma) and the reference calls fma; else neither does.
void saxpy(benchmark::State& state, bool fused) {
  static Packed unfused_fn = compile_saxpy(/*fp_contract=*/false);
  static Packed fused_fn = compile_saxpy(/*fp_contract=*/true);
  const Packed& fn = fused ? fused_fn : unfused_fn;
  auto reference = fused ? saxpy_fma_reference : saxpy_reference;
  int64_t n = state.range(0);
  std::vector<float> a(n), b(n), c(n), expected(n);
  // Values whose product is inexact, so that one and two roundings differ.
  for (int64_t i = 0; i < n; ++i) {
    a[i] = 1.0f + static_cast<float>(i % 1000) * 0.0137f;
    b[i] = static_cast<float>(i % 77) * -0.731f;
  }
  const float alpha = 0.3f;
  reference(n, alpha, a.data(), b.data(), expected.data());
  DLTensor ta = tensor(a.data(), &n, {kDLFloat, 32, 1}),
           tb = tensor(b.data(), &n, {kDLFloat, 32, 1}),
           tc = tensor(c.data(), &n, {kDLFloat, 32, 1});
  PJValue args[4] = {ptr(&ta), ptr(&tb), ptr(&tc), {}};
  args[3].type_index = kPJFloat;
  args[3].v_float64 = alpha;
  fn(args, 4);
  if (c != expected) {  // bit for bit: the JIT rounds as the reference does
    state.SkipWithError("JIT saxpy differs from the reference");
    fail();
    return;
  }
  race(
      state, n * 12, [&] { fn(args, 4); },
      [&] { reference(n, alpha, a.data(), b.data(), c.data()); });
}

void BM_Saxpy(benchmark::State& state) { saxpy(state, false); }
void BM_SaxpyFma(benchmark::State& state) { saxpy(state, true); }

// The contraction decision in one race: the JIT's fused saxpy (fp_contract) against its
// two-rounding one on the same arrays; `speedup` = unfused time / fused time.
void BM_SaxpyFusedVsUnfused(benchmark::State& state) {
  static Packed unfused = compile_saxpy(/*fp_contract=*/false);
  static Packed fused = compile_saxpy(/*fp_contract=*/true);
  int64_t n = state.range(0);
  std::vector<float> a(n, 1.5f), b(n, 0.25f), c(n);
  DLTensor ta = tensor(a.data(), &n, {kDLFloat, 32, 1}),
           tb = tensor(b.data(), &n, {kDLFloat, 32, 1}),
           tc = tensor(c.data(), &n, {kDLFloat, 32, 1});
  PJValue args[4] = {ptr(&ta), ptr(&tb), ptr(&tc), {}};
  args[3].type_index = kPJFloat;
  args[3].v_float64 = 0.3;
  race(
      state, n * 12, [&] { fused(args, 4); }, [&] { unfused(args, 4); },
      {"fused_ns", "unfused_ns", "speedup"});
}

void BM_Sum(benchmark::State& state) {
  static Packed fn = compile(kSum, "total", DataType::Int(32), 1, 0);
  int64_t n = state.range(0);
  std::vector<int32_t> a(n);
  for (int64_t i = 0; i < n; ++i) a[i] = static_cast<int32_t>(i % 97) - 40;
  DLTensor ta = tensor(a.data(), &n, {kDLInt, 32, 1});
  PJValue arg = ptr(&ta);
  int32_t expected = sum_reference(n, a.data());
  if (fn(&arg, 1).v_int64 != expected) {
    state.SkipWithError("JIT sum differs from the reference");
    fail();
    return;
  }
  race(
      state, n * 4, [&] { benchmark::DoNotOptimize(fn(&arg, 1).v_int64); },
      [&] { benchmark::DoNotOptimize(sum_reference(n, a.data())); });
}

// A float sum or max of 2^20 floats: the JIT's loop marked T.vectorized, or not, against g++
// -O3 -ffast-math (which reassociates as it likes). The marked sum is checked against the
// reference within a relative 1e-4 (another order of additions), the max exactly.
void reduce(benchmark::State& state, bool marked, bool is_max) {
  static std::vector<Packed>* fns = new std::vector<Packed>(4);
  Packed& fn = (*fns)[marked * 2 + is_max];
  if (fn.fn == nullptr) {
    fn = compile(reduce_text(marked, is_max).c_str(), "reduce", DataType::Float(32), 2, 0);
  }
  auto reference = is_max ? max_fast_math_reference : sum_fast_math_reference;
  int64_t n = state.range(0), one = 1;
  std::vector<float> a(n);
  for (int64_t i = 0; i < n; ++i) a[i] = static_cast<float>((i * 7919) % 1000) * 1e-3f - 0.25f;
  float out = 0;
  DLTensor ta = tensor(a.data(), &n, {kDLFloat, 32, 1}),
           tout = tensor(&out, &one, {kDLFloat, 32, 1});
  PJValue args[2] = {ptr(&ta), ptr(&tout)};
  fn(args, 2);
  float expected = reference(n, a.data());
  if (std::abs(out - expected) > (is_max ? 0.0f : 1e-4f * std::abs(expected))) {
    state.SkipWithError("JIT reduction differs from the reference");
    fail();
    return;
  }
  race(
      state, n * 4, [&] { fn(args, 2); }, [&] { benchmark::DoNotOptimize(reference(n, a.data())); },
      {"jit_ns", "gxx_fast_math_ns", "vs_gxx"});
}

void BM_SumF32Marked(benchmark::State& state) { reduce(state, true, false); }
void BM_SumF32Unmarked(benchmark::State& state) { reduce(state, false, false); }
void BM_MaxF32Marked(benchmark::State& state) { reduce(state, true, true); }
void BM_MaxF32Unmarked(benchmark::State& state) { reduce(state, false, true); }

// One T.parallel loop over every element against the same loop chunked by hand, both JIT
// compiled, on the same arrays; `vs_chunked` = chunked time / per-element time (>= 0.91: the
// per-element loop within 1.1x of the chunked one).
void BM_ParallelAddPerElement(benchmark::State& state) {
  static Packed per_element = compile(kParallelAdd, "add", DataType::Float(32), 3, 0);
  static Packed chunked = compile(kChunkedAdd, "add", DataType::Float(32), 3, 0);
  int64_t n = state.range(0);
  std::vector<float> a(n), b(n), c(n, 0.0f);
  for (int64_t i = 0; i < n; ++i) a[i] = static_cast<float>(i % 1000), b[i] = 0.5f;
  DLTensor ta = tensor(a.data(), &n, {kDLFloat, 32, 1}),
           tb = tensor(b.data(), &n, {kDLFloat, 32, 1}),
           tc = tensor(c.data(), &n, {kDLFloat, 32, 1});
  PJValue args[3] = {ptr(&ta), ptr(&tb), ptr(&tc)};
  for (const Packed* fn : {&per_element, &chunked}) {
    std::fill(c.begin(), c.end(), 0.0f);
    (*fn)(args, 3);
    for (int64_t i = 0; i < n; ++i) {
      if (c[i] != a[i] + b[i]) {
        state.SkipWithError("JIT parallel add differs from the reference");
        fail();
        return;
      }
    }
  }
  race(
      state, n * 12, [&] { per_element(args, 3); }, [&] { chunked(args, 3); },
      {"per_element_ns", "chunked_ns", "vs_chunked"});
}

// Row softmax of a rows x 256 float32 matrix (flat): the row max and sum marked T.vectorized
// (LowerVectorReductions), T.exp through the vector math library (jit/llvm/vector_math.h).
constexpr const char* kSoftmax = R"(
@T.prim_func
def softmax(a: T.handle, b: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    m = T.alloc_buffer((1,), "float32", scope="local")
    s = T.alloc_buffer((1,), "float32", scope="local")
    for r in range(n // T.int64(256)):
        m[0] = A[r * T.int64(256)]
        for j in T.vectorized(T.int64(256)):
            m[0] = T.max(m[0], A[r * T.int64(256) + j])
        for j in range(T.int64(256)):
            B[r * T.int64(256) + j] = T.exp(A[r * T.int64(256) + j] - m[0])
        s[0] = T.float32(0)
        for j in T.vectorized(T.int64(256)):
            s[0] = s[0] + B[r * T.int64(256) + j]
        for j in range(T.int64(256)):
            B[r * T.int64(256) + j] = B[r * T.int64(256) + j] / s[0]
)";

// exp, tanh and sigmoid elementwise.
constexpr const char* kExpTanhSigmoid = R"(
@T.prim_func
def activations(a: T.handle, b: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i in range(n):
        B[i] = T.exp(A[i]) + T.tanh(A[i]) + T.sigmoid(A[i])
)";

// The JIT's kernel against g++ -O3 -march=native (scalar libm calls: g++ vectorizes math only
// under -ffast-math) and against g++ -O3 -march=native -ffast-math (libmvec's float variants,
// up to 4 ulp). Results within 1e-5 * (|r| + 1) of the -O3 reference r (the softmax
// sum is reassociated).
void math_kernel(benchmark::State& state, const char* text, const char* name,
                 void (*reference)(int64_t, const float*, float*),
                 void (*fast_reference)(int64_t, const float*, float*)) {
  static std::map<std::string, Packed>* fns = new std::map<std::string, Packed>();
  Packed& fn = (*fns)[name];
  if (fn.fn == nullptr) fn = compile(text, name, DataType::Float(32), 2, 0);
  int64_t n = state.range(0);
  std::vector<float> a(n), b(n), expected(n);
  for (int64_t i = 0; i < n; ++i) a[i] = static_cast<float>((i * 7919) % 2000) * 8e-3f - 8.0f;
  DLTensor ta = tensor(a.data(), &n, {kDLFloat, 32, 1}),
           tb = tensor(b.data(), &n, {kDLFloat, 32, 1});
  PJValue args[2] = {ptr(&ta), ptr(&tb)};
  fn(args, 2);
  reference(n, a.data(), expected.data());
  for (int64_t i = 0; i < n; ++i) {
    if (!(std::abs(b[i] - expected[i]) <= 1e-5f * (std::abs(expected[i]) + 1.0f))) {
      state.SkipWithError("JIT math kernel differs from the reference");
      fail();
      return;
    }
  }
  if (state.range(1) == 1) {
    race(
        state, n * 8, [&] { fn(args, 2); }, [&] { fast_reference(n, a.data(), expected.data()); },
        {"jit_ns", "gxx_fast_math_ns", "vs_gxx_fast_math"});
  } else {
    race(
        state, n * 8, [&] { fn(args, 2); }, [&] { reference(n, a.data(), expected.data()); });
  }
}

void BM_Softmax(benchmark::State& state) {
  math_kernel(state, kSoftmax, "softmax", softmax_reference, softmax_fast_math_reference);
}
void BM_ExpTanhSigmoid(benchmark::State& state) {
  math_kernel(state, kExpTanhSigmoid, "activations", activations_reference,
              activations_fast_math_reference);
}

BENCHMARK(BM_Saxpy)->Arg(1)->Arg(1024)->Arg(4096)->Arg(16384)->Arg(1 << 20)->UseManualTime();
BENCHMARK(BM_SaxpyFma)->Arg(1024)->Arg(4096)->Arg(16384)->Arg(1 << 20)->UseManualTime();
BENCHMARK(BM_SaxpyFusedVsUnfused)->Arg(1024)->Arg(4096)->Arg(16384)->Arg(1 << 20)->UseManualTime();
BENCHMARK(BM_Sum)->Arg(4096)->Arg(16384)->Arg(1 << 20)->UseManualTime();
BENCHMARK(BM_SumF32Marked)->Arg(1 << 20)->UseManualTime();
BENCHMARK(BM_SumF32Unmarked)->Arg(1 << 20)->UseManualTime();
BENCHMARK(BM_MaxF32Marked)->Arg(1 << 20)->UseManualTime();
BENCHMARK(BM_MaxF32Unmarked)->Arg(1 << 20)->UseManualTime();
BENCHMARK(BM_ParallelAddPerElement)->Arg(1 << 16)->Arg(1 << 22)->UseManualTime();
// Second argument 1: against g++ -ffast-math.
BENCHMARK(BM_Softmax)->Args({1024 * 256, 0})->Args({1024 * 256, 1})->UseManualTime();
BENCHMARK(BM_ExpTanhSigmoid)->Args({1 << 16, 0})->Args({1 << 16, 1})->UseManualTime();

}  // namespace
}  // namespace primjit::bench

PRIMJIT_BENCHMARK_MAIN();
