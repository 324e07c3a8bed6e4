// The rows of docs/semantics.md on llvm and emu: each operation on its ordinary and edge inputs,
// computed by JIT-compiled host code and by the interpreter, and compared with the table's
// results bit for bit (any NaN matches a NaN; -0 and +0 differ). The inputs are repeated so that
// LLVM's vectorized loop and its scalar remainder both see them. The CUDA side of every row is
// tests/lit/semantics_cuda.test (the generated source, and its NVRTC compile); the argument rows
// are argument_memory_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/tensor.h"
#include "tests/unit/jit/jit_test_util.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

template <typename T>
const char* dtype_name() {
  if constexpr (std::is_same_v<T, bool>) return "bool";
  if constexpr (std::is_same_v<T, int8_t>) return "int8";
  if constexpr (std::is_same_v<T, int32_t>) return "int32";
  if constexpr (std::is_same_v<T, int64_t>) return "int64";
  if constexpr (std::is_same_v<T, uint8_t>) return "uint8";
  if constexpr (std::is_same_v<T, uint32_t>) return "uint32";
  if constexpr (std::is_same_v<T, float>) return "float32";
  if constexpr (std::is_same_v<T, double>) return "float64";
}

template <typename T>
bool same(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
    return std::memcmp(&x, &y, sizeof(T)) == 0;
  } else {
    return x == y;
  }
}

constexpr int kRepeat = 8;
const Target kCpuBackends[] = {Target::llvm(), Target::emu()};

// The backends each row runs on: llvm and emu, and cuda where a GPU is present (the GPU bundle
// runs these tests on a GPU machine).
std::span<const Target> backends() {
  static const std::vector<Target> targets = [] {
    std::vector<Target> t(std::begin(kCpuBackends), std::end(kCpuBackends));
    if (test::have_gpu()) t.push_back(Jit::default_target());
    return t;
  }();
  return targets;
}

// C[i] = `expr` over A[i] and B[i] (of type In; C of type Out): a loop on the CPU, one thread
// per element on the GPU.
template <typename In, typename Out>
PrimFunc row_function(const std::string& expr, size_t n, bool gpu = false) {
  std::string size = "(" + std::to_string(n) + ",)";
  std::string body =
      gpu ? "    i = T.launch_thread(\"threadIdx.x\", " + std::to_string(n) +
                ")\n    C[i] = " + expr + "\n"
          : "    for i in range(" + std::to_string(n) + "):\n        C[i] = " + expr + "\n";
  return parse("@T.prim_func\ndef row(A: T.Buffer(" + size + ", \"" + dtype_name<In>() +
               "\"), B: T.Buffer(" + size + ", \"" + dtype_name<In>() + "\"), C: T.Buffer(" + size +
               ", \"" + dtype_name<Out>() + "\")):\n" +
               "    T.func_attr({\"target\": T.target(\"llvm\")})\n" + body)
      ->lookup("row");
}

// The outputs of `expr` on each of `targets` for the inputs (a[k], b[k]).
template <typename In, typename Out>
std::vector<std::vector<Out>> run(const std::string& expr, const std::vector<In>& a,
                                  const std::vector<In>& b, KernelOptions options,
                                  std::span<const Target> targets) {
  const size_t n = a.size() * kRepeat;
  std::vector<std::vector<Out>> out;
  Jit jit;
  for (const Target& target : targets) {
    const bool gpu = target->kind == "cuda";
    options.target = target;
    const int64_t size = static_cast<int64_t>(n);
    Tensor ta = Tensor::zeros({size}, DataType::parse(dtype_name<In>()));
    Tensor tb = Tensor::zeros({size}, DataType::parse(dtype_name<In>()));
    Tensor tc = Tensor::zeros({size}, DataType::parse(dtype_name<Out>()));
    for (size_t i = 0; i < n; ++i) {
      ta.data<In>()[i] = a[i % a.size()];
      tb.data<In>()[i] = b.empty() ? In{} : b[i % b.size()];
    }
    Kernel k = jit.kernel(row_function<In, Out>(expr, n, gpu), options);
    if (gpu) {
      Tensor dc = tc.to(test::kGpu);
      k(ta.to(test::kGpu), tb.to(test::kGpu), dc);
      tc = dc.to(test::kCpu);
    } else {
      k(ta, tb, tc);
    }
    out.emplace_back(tc.data<Out>(), tc.data<Out>() + n);
  }
  return out;
}

// One row of the table: `expr` on every backend gives `expected[k]` for (a[k], b[k]).
template <typename In, typename Out>
void expect_row(const std::string& expr, const std::vector<In>& a, const std::vector<In>& b,
                const std::vector<Out>& expected, KernelOptions options = {},
                std::span<const Target> targets = backends()) {
  ASSERT_EQ(a.size(), expected.size());
  std::vector<std::vector<Out>> out = run<In, Out>(expr, a, b, options, targets);
  for (size_t t = 0; t < out.size(); ++t) {
    for (size_t i = 0; i < out[t].size(); ++i) {
      size_t k = i % a.size();
      EXPECT_TRUE(same<Out>(out[t][i], expected[k]))
          << targets[t]->kind << ": " << expr << " with A = " << +a[k]
          << (b.empty() ? std::string() : ", B = " + std::to_string(+b[k])) << " gave "
          << +out[t][i] << ", the table says " << +expected[k] << " (element " << i << ")";
    }
  }
}

constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
constexpr int32_t kMax32 = std::numeric_limits<int32_t>::max();
constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// --- integers ---------------------------------------------------------------------------------

TEST(Semantics, IntegerArithmeticWraps) {
  expect_row<int32_t, int32_t>("A[i] + B[i]", {kMax32, kMin32, 5}, {1, -1, -7},
                               {kMin32, kMax32, -2});
  expect_row<int32_t, int32_t>("A[i] * B[i]", {65536, kMin32, -3}, {65536, -1, 7},
                               {0, kMin32, -21});
  expect_row<int8_t, int8_t>("A[i] * B[i]", {100, -128, 127}, {3, -1, 2}, {44, -128, -2});
}

// The division rows: ordinary signs, division by zero, MIN / -1.
const std::vector<int32_t> kDividends = {7, -7, 7, -7, 5, -5, 0, kMin32, kMin32, kMax32};
const std::vector<int32_t> kDivisors = {2, 2, -2, -2, 0, 0, 0, -1, 1, -1};

TEST(Semantics, FloorDivision) {
  expect_row<int32_t, int32_t>("A[i] // B[i]", kDividends, kDivisors,
                               {3, -4, -4, 3, -1, -1, -1, kMin32, kMin32, -kMax32});
  expect_row<int32_t, int32_t>("A[i] % B[i]", kDividends, kDivisors,
                               {1, 1, -1, -1, 5, -5, 0, 0, 0, 0});
}

TEST(Semantics, TruncatingDivision) {
  expect_row<int32_t, int32_t>("T.truncdiv(A[i], B[i])", kDividends, kDivisors,
                               {3, -3, -3, 3, -1, -1, -1, kMin32, kMin32, -kMax32});
  expect_row<int32_t, int32_t>("T.truncmod(A[i], B[i])", kDividends, kDivisors,
                               {1, -1, 1, -1, 5, -5, 0, 0, 0, 0});
}

TEST(Semantics, DivisionOfOtherWidthsAndLiteralDivisors) {
  expect_row<int8_t, int8_t>("A[i] // B[i]", {-128, 7, -7}, {-1, 0, 2}, {-128, -1, -4});
  expect_row<int64_t, int64_t>("A[i] // B[i] + A[i] % B[i]", {kMin64, 9, -9}, {-1, 0, 4},
                               {kMin64, -1 + 9, -3 + 3});
  expect_row<uint32_t, uint32_t>("A[i] // B[i]", {7, 7, 0}, {0, 2, 0},
                                 {0xffffffffu, 3, 0xffffffffu});
  expect_row<uint32_t, uint32_t>("A[i] % B[i]", {7, 7, 0}, {0, 2, 0}, {7, 1, 0});
  // Literal divisors: LLVM folds its selects, the simplifier leaves x // 0 alone.
  expect_row<int32_t, int32_t>("A[i] // 0 + A[i] % 0 * 2", {5, -5, 0}, {}, {9, -11, -1});
  expect_row<int32_t, int32_t>("T.truncdiv(A[i], -1) + A[i] % -1", {kMin32, 5, 0}, {},
                               {kMin32, -5, 0});
  expect_row<int32_t, int32_t>("T.truncdiv(T.int32(-2147483648), T.int32(-1)) + A[i]", {0}, {},
                               {kMin32});
}

// (On cuda a failed check traps the kernel: the launch fails with CUDA's error, which names
// neither; see docs/semantics.md.)
TEST(Semantics, CheckedArithmeticNamesTheFunctionAndTheDivision) {
  for (const Target& target : kCpuBackends) {
    Jit jit;
    PrimFunc f = row_function<int32_t, int32_t>("A[i] // B[i]", 4);
    Kernel k = jit.kernel(f, {.target = target, .checked_arithmetic = true});
    Tensor a = Tensor::zeros({4}, DataType::Int(32)), b = Tensor::zeros({4}, DataType::Int(32));
    Tensor c = Tensor::zeros({4}, DataType::Int(32));
    for (int i = 0; i < 4; ++i) {
      a.data<int32_t>()[i] = 9;
      b.data<int32_t>()[i] = 2;
    }
    k(a, b, c);
    EXPECT_EQ(c.data<int32_t>()[3], 4);
    b.data<int32_t>()[2] = 0;
    EXPECT_ERROR_CONTAINS(k(a, b, c),
                          "integer division by zero in `A[i] // B[i]` (function 'row')");
    b.data<int32_t>()[2] = -1;
    a.data<int32_t>()[2] = kMin32;
    EXPECT_ERROR_CONTAINS(k(a, b, c),
                          "integer division overflow in `A[i] // B[i]` (function 'row')");
  }
  // A division on the branch T.if_then_else does not take is not checked.
  expect_row<int32_t, int32_t>("T.if_then_else(B[i] != 0, A[i] // B[i], 7)", {9, 9}, {2, 0}, {4, 7},
                               {.checked_arithmetic = true}, kCpuBackends);
}

TEST(Semantics, Shifts) {
  // The amount, read as unsigned in the value's type: the width or more shifts everything out.
  expect_row<int32_t, int32_t>("T.shift_left(A[i], B[i])", {1, 1, 1, 1, -1, 3},
                               {0, 31, 32, 100, -1, 1}, {1, kMin32, 0, 0, 0, 6});
  expect_row<int32_t, int32_t>("T.shift_right(A[i], B[i])", {-8, -8, 8, -8, kMin32},
                               {1, 32, 32, -1, 31}, {-4, -1, 0, -1, -1});
  expect_row<uint32_t, uint32_t>("T.shift_right(A[i], B[i])", {0x80000000u, 0x80000000u, 5},
                                 {31, 32, 0xffffffffu}, {1, 0, 0});
  expect_row<int8_t, int8_t>("T.shift_left(A[i], B[i])", {1, 1, 3}, {7, 8, -1}, {-128, 0, 0});
}

TEST(Semantics, IntegerMinMax) {
  expect_row<int32_t, int32_t>("T.min(A[i], B[i]) * 2 + T.max(A[i], B[i])", {kMin32, -1, 5},
                               {kMax32, 1, 5}, {kMax32 /* MIN * 2 wraps to 0 */, -2 + 1, 15});
  expect_row<uint32_t, uint32_t>("T.min(A[i], B[i])", {0xffffffffu, 0}, {1, 7}, {1, 0});
}

TEST(Semantics, BitwiseLogicAndSelection) {
  expect_row<int8_t, int8_t>("T.bitwise_not(A[i])", {5, -128, 0}, {}, {-6, 127, -1});
  expect_row<int32_t, int32_t>("T.bitwise_xor(T.bitwise_and(A[i], B[i]), T.bitwise_or(A[i], B[i]))",
                               {12, -1}, {10, 0}, {12 ^ 10, -1});
  expect_row<int32_t, int32_t>(
      "T.Select(A[i] > B[i], A[i], B[i]) + T.Cast(\"int32\", A[i] > 0 and B[i] > 0) * 100 + "
      "T.Cast(\"int32\", not (A[i] > 0 or B[i] > 0)) * 1000 + T.Cast(\"int32\", T.Cast(\"bool\", "
      "A[i]))",
      {3, -4, 0}, {2, -5, -1}, {3 + 100 + 1, -4 + 1000 + 1, 0 + 1000});
}

TEST(Semantics, IntegerConversionsWrap) {
  expect_row<int32_t, int8_t>("T.Cast(\"int8\", A[i])", {300, -129, 127, 128}, {},
                              {44, 127, 127, -128});
  expect_row<int32_t, uint8_t>("T.Cast(\"uint8\", A[i])", {-1, 256, 255}, {}, {255, 0, 255});
  expect_row<int64_t, int32_t>("T.Cast(\"int32\", A[i])", {(int64_t{1} << 32) + 5, -1}, {},
                               {5, -1});
  expect_row<int32_t, int64_t>("T.Cast(\"int64\", A[i])", {-1, kMin32}, {}, {-1, kMin32});
  expect_row<uint32_t, int64_t>("T.Cast(\"int64\", A[i])", {0xffffffffu}, {}, {0xffffffffll});
}

// --- floating point ---------------------------------------------------------------------------

TEST(Semantics, FloatArithmeticIsIeee) {
  expect_row<float, float>("A[i] / B[i]", {1, -1, 0, 1, 6}, {0, 0, 0, kInf, 3},
                           {kInf, -kInf, kNaN, 0.0f, 2});
  expect_row<float, float>("A[i] + B[i]", {-0.0f, 0.1f, kInf}, {0.0f, 0.2f, -kInf},
                           {0.0f, 0.1f + 0.2f, kNaN});
  expect_row<float, bool>("A[i] < B[i]", {kNaN, 1, -0.0f}, {1, kNaN, 0.0f}, {false, false, false});
  expect_row<float, bool>("A[i] != B[i]", {kNaN, 1, -0.0f}, {kNaN, 1, 0.0f}, {true, false, false});
}

TEST(Semantics, FloatMinMaxIgnoreOneNaNAndOrderZeros) {
  const std::vector<float> a = {1, kNaN, 1, kNaN, -0.0f, 0.0f, -kInf, 3};
  const std::vector<float> b = {2, 1, kNaN, kNaN, 0.0f, -0.0f, 3, 3};
  expect_row<float, float>("T.min(A[i], B[i])", a, b, {1, 1, 1, kNaN, -0.0f, -0.0f, -kInf, 3});
  expect_row<float, float>("T.max(A[i], B[i])", a, b, {2, 1, 1, kNaN, 0.0f, 0.0f, 3, 3});
  expect_row<double, double>("T.max(A[i], B[i])", {-0.0, std::nan("")}, {0.0, -1.0}, {0.0, -1.0});
}

TEST(Semantics, FloatFloorDivisionAndModulo) {
  const std::vector<float> a = {7.5f, -7.5f, 7.5f, 1, -1, 0, 5};
  const std::vector<float> b = {2, 2, -2, 0, 0, 0, kInf};
  expect_row<float, float>("A[i] // B[i]", a, b, {3, -4, -4, kInf, -kInf, kNaN, 0.0f});
  // a - floor(a / b) * b, each step rounded: b = 0 and b = inf give NaN.
  expect_row<float, float>("A[i] % B[i]", a, b, {1.5f, 0.5f, -0.5f, kNaN, kNaN, kNaN, kNaN});
  // Mod (truncmod) on floats is C's fmod: exact, sign of the dividend.
  expect_row<float, float>("T.truncmod(A[i], B[i])", a, b,
                           {1.5f, -1.5f, 1.5f, kNaN, kNaN, kNaN, 5});
}

TEST(Semantics, FloatToIntSaturatesAndNaNIsZero) {
  expect_row<float, int32_t>("T.Cast(\"int32\", A[i])",
                             {1.9f, -1.9f, 3e9f, -3e9f, kNaN, kInf, -kInf, 2147483520.0f}, {},
                             {1, -1, kMax32, kMin32, 0, kMax32, kMin32, 2147483520});
  expect_row<float, int8_t>("T.Cast(\"int8\", A[i])", {127.9f, 128, -129, -128.5f, kNaN}, {},
                            {127, 127, -128, -128, 0});
  expect_row<float, uint8_t>("T.Cast(\"uint8\", A[i])", {-1.5f, 255.9f, 256, kNaN, 0.5f}, {},
                             {0, 255, 255, 0, 0});
  expect_row<double, int64_t>("T.Cast(\"int64\", A[i])", {9.3e18, -9.3e18, std::nan(""), -1.5}, {},
                              {std::numeric_limits<int64_t>::max(), kMin64, 0, -1});
}

TEST(Semantics, FloatConversions) {
  // Round to nearest even; overflow to infinity; NaN stays NaN; to bool: x != 0 (NaN is true).
  expect_row<int32_t, float>("T.Cast(\"float32\", A[i])", {16777217, 16777219, -3}, {},
                             {16777216.0f, 16777220.0f, -3.0f});
  expect_row<double, float>("T.Cast(\"float32\", A[i])", {1e300, -1e300, std::nan(""), 0.1}, {},
                            {kInf, -kInf, kNaN, 0.1f});
  expect_row<float, bool>("T.Cast(\"bool\", A[i])", {kNaN, 0.0f, -0.0f, 0.5f}, {},
                          {true, false, false, true});
}

TEST(Semantics, ContractionIsAnExplicitFmaAndOnlyWhenAsked) {
  // Inputs whose product is inexact: one rounding and two differ.
  const std::vector<float> a = {1.0f + 0x1p-12f, 3.1f, 1e30f};
  const std::vector<float> b = {1.0f + 0x1p-12f, 0.7f, 1e30f};
  std::vector<float> unfused, fused;
  for (size_t k = 0; k < a.size(); ++k) {
    volatile float product = a[k] * b[k];  // rounded here, whatever this compiler contracts
    unfused.push_back(product + -1.0f);
    fused.push_back(std::fma(a[k], b[k], -1.0f));
  }
  ASSERT_NE(unfused[0], fused[0]);
  expect_row<float, float>("A[i] * B[i] + T.float32(-1)", a, b, unfused);
  expect_row<float, float>("A[i] * B[i] + T.float32(-1)", a, b, fused, {.fp_contract = true});
  expect_row<float, float>("T.fma(A[i], B[i], T.float32(-1))", a, b, fused);
  // float64: T.fma is exact to the last bit too.
  expect_row<double, double>("T.fma(A[i], B[i], T.float64(-1))", {1.0 + 0x1p-30}, {1.0 + 0x1p-30},
                             {std::fma(1.0 + 0x1p-30, 1.0 + 0x1p-30, -1.0)});
}

// Every math op of the table on special inputs: llvm and emu agree on NaN, infinities and the
// sign of zeros, and on other results within the op's max_ulp each (2 * max_ulp of each other).
TEST(Semantics, MathOpsAgreeOnSpecialInputs) {
  const std::vector<float> special = {kNaN, kInf, -kInf, 0.0f, -0.0f, 1.0f, -1.0f, 0.5f};
  for (const Op& op : Op::all()) {
    if (!op->is_math() || op->type_rule != OpTypeRule::kFirstArg) continue;
    std::string call = "T." + op->name + "(A[i]";
    for (int k = 1; k < op->num_args; ++k) call += ", B[i]";
    call += ")";
    std::vector<float> a, b;
    for (float x : special) {
      for (float y : special) {
        a.push_back(x);
        b.push_back(y);
      }
    }
    // The CPU backends (their C libraries agree on special values; CUDA's math functions are
    // compiled for every op by op_lowering_test).
    std::vector<std::vector<float>> out = run<float, float>(call, a, b, {}, kCpuBackends);
    for (size_t i = 0; i < a.size(); ++i) {
      float x = out[0][i], y = out[1][i];
      bool agree = same(x, y) ||
                   (std::isfinite(x) && std::isfinite(y) && x != 0 && y != 0 &&
                    std::fabs(x - y) <=
                        2 * op->max_ulp * std::numeric_limits<float>::epsilon() * std::fabs(y));
      EXPECT_TRUE(agree) << call << " with A = " << a[i] << ", B = " << b[i] << ": llvm " << x
                         << ", emu " << y;
    }
  }
}

}  // namespace
}  // namespace primjit
