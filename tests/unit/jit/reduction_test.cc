// Unmarked float max/min reduction loops: LowerVectorReductions gives them lane-wise partials
// and a tree (docs/semantics.md, "Vector reductions"), which must leave the serial loop's
// value as it was: a NaN operand ignored, -0 below +0, at every length around the run-time
// switch (2W = 64 float32 lanes, 32 float64 ones), on llvm and emu, with the extent compiled
// in (kExact) and symbolic (kDynamic).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/passes.h"
#include "primjit/tensor.h"

namespace primjit {
namespace {

// out[0] and out[1] start the max and the min; a serial loop over A for each.
std::string kernel_text(const std::string& dtype) {
  return R"(
@T.prim_func
def maxmin(a: T.handle, out: T.Buffer((2,), ")" +
         dtype + R"(")):
    T.func_attr({"target": T.target("llvm")})
    n = T.int32()
    A = T.match_buffer(a, (n,), ")" +
         dtype + R"(")
    acc = T.alloc_buffer((2,), ")" +
         dtype + R"(", scope="local")
    acc[0] = out[0]
    acc[1] = out[1]
    for i in range(n):
        acc[0] = T.max(acc[0], A[i])
    for i in range(n):
        acc[1] = T.min(A[i], acc[1])
    out[0] = acc[0]
    out[1] = acc[1]
)";
}

// The semantics table's T.max and T.min on floats.
template <typename F>
F table_max(F a, F b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

template <typename F>
F table_min(F a, F b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

// Equal bits, or both NaN (which NaN is not specified).
template <typename F>
bool same(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<std::conditional_t<sizeof(F) == 4, uint32_t, uint64_t>>(a) ==
         std::bit_cast<std::conditional_t<sizeof(F) == 4, uint32_t, uint64_t>>(b);
}

// Inputs of length n: ordinary values with NaNs among them, all NaN, only zeros of both
// signs, infinities among ordinary values.
template <typename F>
std::vector<std::vector<F>> inputs(int64_t n) {
  const F nan = std::numeric_limits<F>::quiet_NaN(), inf = std::numeric_limits<F>::infinity();
  std::vector<std::vector<F>> out(4, std::vector<F>(static_cast<size_t>(n)));
  uint32_t state = 12345;
  for (int64_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    const F value = static_cast<F>(static_cast<int32_t>(state >> 8) % 2001 - 1000) / 7;
    const size_t k = static_cast<size_t>(i);
    out[0][k] = i % 5 == 2 ? nan : value;
    out[1][k] = nan;
    out[2][k] = (state >> 3) % 3 == 0 ? F(0) : -F(0);
    out[3][k] = i % 17 == 3 ? inf : i % 19 == 5 ? -inf : value;
  }
  return out;
}

template <typename F>
void check(const std::string& dtype) {
  const PrimFunc f = parse(kernel_text(dtype))->lookup("maxmin");
  const DataType t = DataType::Float(sizeof(F) * 8);
  const F nan = std::numeric_limits<F>::quiet_NaN();
  const int64_t two_groups = 2 * 128 / static_cast<int64_t>(sizeof(F));
  Jit jit;
  for (Target target : {Target::llvm(), Target::emu()}) {
    for (Policy policy : {Policy::kExact, Policy::kDynamic}) {
      Kernel k = jit.kernel(f, {.target = target, .policy = policy});
      for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{5}, two_groups - 1, two_groups,
                        two_groups + 1, two_groups + 33, int64_t{1000}}) {
        for (const std::vector<F>& xs : inputs<F>(n)) {
          for (F start : {nan, -F(0), F(0), F(0.5)}) {
            Tensor a = Tensor::zeros({n}, t), out = Tensor::zeros({2}, t);
            for (int64_t i = 0; i < n; ++i) a.data<F>()[i] = xs[static_cast<size_t>(i)];
            out.data<F>()[0] = out.data<F>()[1] = start;
            k(a, out);
            F want_max = start, want_min = start;
            for (F x : xs) {
              want_max = table_max(want_max, x);
              want_min = table_min(x, want_min);
            }
            const std::string where = dtype + " " + target.str() + " n=" + std::to_string(n) +
                                      (policy == Policy::kDynamic ? " dynamic" : " exact");
            EXPECT_TRUE(same(out.data<F>()[0], want_max))
                << where << ": max " << out.data<F>()[0] << ", want " << want_max;
            EXPECT_TRUE(same(out.data<F>()[1], want_min))
                << where << ": min " << out.data<F>()[1] << ", want " << want_min;
          }
        }
      }
    }
  }
}

TEST(Reductions, UnmarkedFloatMaxAndMinKeepTheSerialValue) {
  check<float>("float32");
  check<double>("float64");
}

// The loops above are lowered (so the values were checked through the partials): both, once
// behind the run-time test of the symbolic extent.
TEST(Reductions, UnmarkedFloatMaxAndMinAreLowered) {
  const std::string text =
      print(passes::run_passes(parse(kernel_text("float32")), passes::default_pipeline()));
  size_t partials = 0;
  for (size_t at = text.find("T.alloc_local((32,)"); at != std::string::npos;
       at = text.find("T.alloc_local((32,)", at + 1)) {
    ++partials;
  }
  EXPECT_EQ(partials, 2u) << text;
  EXPECT_NE(text.find("n >= 64"), std::string::npos) << text;  // (CSE names the test)
}

// A loop whose bounds call something with effects keeps its one evaluation of them: it is not
// lowered, marked or not (the lowering evaluates min for every element).
TEST(Reductions, BoundsWithEffectsAreEvaluatedOnce) {
  const std::string text = R"(
@T.prim_func
def counted(a: T.handle, out: T.Buffer((2,), "float32")):
    T.func_attr({"target": T.target("llvm")})
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    acc = T.alloc_buffer((2,), "float32", scope="local")
    acc[0] = out[0]
    acc[1] = out[1]
    for i in range(T.call_extern("int32", "next_count")):
        acc[0] = T.max(acc[0], A[i])
    for i in T.vectorized(T.call_extern("int32", "next_start"), n):
        acc[1] = T.min(acc[1], A[i])
    out[0] = acc[0]
    out[1] = acc[1]
)";
  const std::string lowered =
      print(passes::run_passes(parse(text), std::vector<std::string>{"LowerVectorReductions"}));
  EXPECT_EQ(lowered.find("_partial"), std::string::npos) << lowered;
}

}  // namespace
}  // namespace primjit
