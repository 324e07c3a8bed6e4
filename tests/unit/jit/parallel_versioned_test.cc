// Parallel loops under symbolic shapes: the task of VersionLoops' fast path recomputes the
// values it is made of (`N_32 = N // 32`) instead of capturing them, so LLVM knows their range
// and vectorizes the task's inner loops as it does the serial loops; the results are those of
// the general path and of the exact variants under one and many threads, for shapes that are
// and are not multiples of the tile, empty and single-element ones, and index arithmetic that
// wraps in int32 (which must wrap the same way in the task).
#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench/parallel_matmul.h"
#include "jit/llvm/codegen_llvm.h"
#include "jit/llvm/orc_engine.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/passes.h"
#include "primjit/tensor.h"
#include "tests/unit/jit/jit_test_util.h"

namespace primjit {
namespace {

// C = A @ B in 32 x 32 tiles of C with guards for partial tiles, tile rows in parallel
// (bench_policy's kernel).

// Tiles in parallel whose values come from int32 arithmetic that wraps for large indices and
// for an offset near 2^31 (`off` is bound before the loop, so the task recomputes it).
constexpr const char* kWrappingTiles = R"(
@T.prim_func
def wrapping_tiles(c: T.handle, base: T.int32):
    T.func_attr({"target": T.target("llvm")})
    n = T.int32()
    C = T.match_buffer(c, (n,), "int32")
    off: T.int32 = base * 3 + 7
    for io in T.parallel((n + 31) // 32):
        for ii in range(32):
            if io * 32 + ii < n:
                C[io * 32 + ii] = ((io * 32 + ii) * 65599 + off) % 1024
)";

// Runs `f` on one thread (threads == 1) or on the default arena.
template <typename F>
void on_threads(int threads, F f) {
  if (threads == 1) {
    tbb::task_arena(1).execute(f);
  } else {
    f();
  }
}

// The optimized LLVM IR of function `name` (its definition) in the host code of `m`.
std::string optimized_function(const IRModule& m, const std::string& name) {
  const std::string ir = test::optimized_ir_of(m);
  // The task's definition (its name may carry the module's suffix).
  size_t begin = 0;
  while ((begin = ir.find("define ", begin)) != std::string::npos) {
    size_t at = ir.find("@" + name, begin);
    const char after = at == std::string::npos ? 0 : ir[at + 1 + name.size()];
    if (at != std::string::npos && at < ir.find('\n', begin) && (after == '(' || after == '.')) {
      break;
    }
    ++begin;
  }
  if (begin == std::string::npos) return "";
  return ir.substr(begin, ir.find("\n}\n", begin) - begin);
}

TEST(ParallelVersioned, FastPathTaskRecomputesItsTileCountAndVectorizes) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(parse(bench::tiled_matmul_text(true))->lookup("tiled_matmul"),
                        {.policy = Policy::kDynamic});
  Signature shapes = {ArgSpec::tensor(DataType::Float(32), {384, 384}),
                      ArgSpec::tensor(DataType::Float(32), {384, 384}),
                      ArgSpec::tensor(DataType::Float(32), {384, 384})};
  IRModule lowered = k.lowered(shapes);
  // The first task is the fast path's (M and N multiples of 32): it binds N_32 itself.
  IRModule host = passes::lower_for_host(lowered);
  PrimFunc task = host->find("tiled_matmul_compute__parallel_0");
  ASSERT_TRUE(task.defined()) << print(host);
  std::string task_text = print(task);
  EXPECT_NE(task_text.find("N_32: T.let[T.int32] = N // 32"), std::string::npos) << task_text;
  for (const Var& param : task->params) EXPECT_NE(param->name, "N_32") << task_text;
  // Its inner loops are vectorized: vector loads, multiplies and stores of C's rows.
  std::string ir = optimized_function(lowered, "tiled_matmul_compute__parallel_0");
  ASSERT_FALSE(ir.empty());
  EXPECT_NE(ir.find("fmul <"), std::string::npos) << ir;
  EXPECT_NE(ir.find("load <"), std::string::npos) << ir;
  EXPECT_NE(ir.find("store <"), std::string::npos) << ir;
}

// Exact small integers: every product and sum is exact in float32, whatever the order.
std::vector<float> matmul_reference(int64_t m, int64_t n, int64_t k) {
  std::vector<float> c(static_cast<size_t>(m * n), 0.0f);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      int64_t sum = 0;
      for (int64_t l = 0; l < k; ++l) sum += ((i * k + l) % 7 - 3) * ((l * n + j) % 5 - 2);
      c[static_cast<size_t>(i * n + j)] = static_cast<float>(sum);
    }
  }
  return c;
}

TEST(ParallelVersioned, MatmulIsRightOnBothPathsUnderOneAndManyThreads) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  PrimFunc f = parse(bench::tiled_matmul_text(true))->lookup("tiled_matmul");
  // Multiples of the tile (fast path), others (general path), empty, one element, and a large
  // row count (many chunks per thread).
  const std::vector<std::vector<int64_t>> shapes = {{64, 64, 48}, {96, 32, 5}, {33, 64, 7},
                                                    {64, 50, 3},  {0, 32, 4},  {32, 0, 4},
                                                    {32, 32, 0},  {1, 1, 1},   {4096, 32, 2}};
  for (Policy policy : {Policy::kDynamic, Policy::kBucketed, Policy::kExact}) {
    Kernel kernel = jit.kernel(f, {.policy = policy});
    for (int threads : {1, 0}) {
      for (const std::vector<int64_t>& s : shapes) {
        const int64_t m = s[0], n = s[1], k = s[2];
        Tensor a = Tensor::zeros({m, k}, DataType::Float(32));
        Tensor b = Tensor::zeros({k, n}, DataType::Float(32));
        Tensor c = Tensor::zeros({m, n}, DataType::Float(32));
        for (int64_t i = 0; i < m * k; ++i) a.data<float>()[i] = static_cast<float>(i % 7 - 3);
        for (int64_t i = 0; i < k * n; ++i) b.data<float>()[i] = static_cast<float>(i % 5 - 2);
        for (int64_t i = 0; i < m * n; ++i) c.data<float>()[i] = 1e9f;  // overwritten
        on_threads(threads, [&] { kernel(a, b, c); });
        std::vector<float> want = matmul_reference(m, n, k);
        const std::string where = "policy " + std::to_string(static_cast<int>(policy)) +
                                  ", threads " + std::to_string(threads) + ", " +
                                  std::to_string(m) + "x" + std::to_string(n) + "x" +
                                  std::to_string(k);
        for (int64_t i = 0; i < m * n; ++i) {
          ASSERT_EQ(c.data<float>()[i], want[static_cast<size_t>(i)]) << where << ", element " << i;
        }
      }
    }
  }
}

TEST(ParallelVersioned, WrappingIndexArithmeticWrapsInTheTask) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  PrimFunc f = parse(kWrappingTiles)->lookup("wrapping_tiles");
  // 2^31 - 5: base * 3 + 7 wraps; n = 2^20: (index * 65599) wraps from index 32737 on.
  const int32_t base = 2147483643;
  for (Policy policy : {Policy::kDynamic, Policy::kExact}) {
    Kernel kernel = jit.kernel(f, {.policy = policy});
    for (int threads : {1, 0}) {
      for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{31}, int64_t{64}, int64_t{1} << 20}) {
        Tensor c = Tensor::zeros({n}, DataType::Int(32));
        on_threads(threads, [&] { kernel(c, base); });
        // The same arithmetic modulo 2^32, then the floor remainder.
        const uint32_t off = static_cast<uint32_t>(base) * 3u + 7u;
        for (int64_t i = 0; i < n; ++i) {
          auto v = static_cast<int32_t>(static_cast<uint32_t>(i) * 65599u + off);
          int32_t want = ((v % 1024) + 1024) % 1024;
          ASSERT_EQ(c.data<int32_t>()[i], want)
              << "policy " << static_cast<int>(policy) << ", threads " << threads << ", n " << n
              << ", element " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace primjit
