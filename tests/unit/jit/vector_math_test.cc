// Vector math (jit/llvm/vector_math.h): loops over the float math builtins vectorize through
// the vector math library, and the JIT-compiled vectorized kernels stay within the op table's
// ulp bound of the exactly rounded result over the whole float range, with special values
// (zeros, infinities, NaN, denormals, overflow and underflow) exactly as libm gives them
// (a finite non-zero result there may instead be the exactly rounded one).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "jit/llvm/codegen_llvm.h"
#include "jit/llvm/inline_math.h"
#include "jit/llvm/orc_engine.h"
#include "jit/llvm/vector_math.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/passes.h"
#include "primjit/tensor.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

using test::ulp_distance;

using Reference = std::function<long double(long double, long double)>;

// The exact function of each inexact float math op, in long double (64-bit significand).
const std::map<std::string, Reference>& references() {
  static const std::map<std::string, Reference> r = {
      {"exp", [](long double x, long double) { return expl(x); }},
      {"exp2", [](long double x, long double) { return exp2l(x); }},
      {"exp10", [](long double x, long double) { return exp10l(x); }},
      {"log", [](long double x, long double) { return logl(x); }},
      {"log2", [](long double x, long double) { return log2l(x); }},
      {"log10", [](long double x, long double) { return log10l(x); }},
      {"log1p", [](long double x, long double) { return log1pl(x); }},
      {"rsqrt", [](long double x, long double) { return 1.0L / sqrtl(x); }},
      {"sin", [](long double x, long double) { return sinl(x); }},
      {"cos", [](long double x, long double) { return cosl(x); }},
      {"tan", [](long double x, long double) { return tanl(x); }},
      {"tanh", [](long double x, long double) { return tanhl(x); }},
      {"sigmoid", [](long double x, long double) { return 1.0L / (1.0L + expl(-x)); }},
      {"erf", [](long double x, long double) { return erfl(x); }},
      {"pow", [](long double x, long double y) { return powl(x, y); }},
  };
  return r;
}

// The inexact float math ops of the table (max_ulp > 0): all of them vectorize.
std::vector<Op> inexact_ops() {
  std::vector<Op> ops;
  for (const Op& op : Op::all()) {
    if (op->is_math() && op->max_ulp > 0 && op->type_rule == OpTypeRule::kFirstArg) {
      ops.push_back(op);
    }
  }
  return ops;
}

// B = op(A[, C]) over n elements: a T.vectorized loop (lanes 1, the loop vectorizer picks the
// width) or explicit vectors of `lanes`.
std::string kernel_text(const Op& op, const std::string& dtype, int64_t n, int lanes) {
  std::string buf = "T.Buffer((" + std::to_string(n) + ",), \"" + dtype + "\")";
  std::string l = std::to_string(lanes);
  std::string at = lanes == 1 ? "[i]" : "[T.Ramp(i * " + l + ", 1, " + l + ")]";
  std::string call = "T." + op->name + "(A" + at + (op->num_args == 2 ? ", C" + at : "") + ")";
  std::string loop = lanes == 1 ? "T.vectorized(" + std::to_string(n) + ")"
                                : "range(" + std::to_string(n / lanes) + ")";
  return "@T.prim_func\ndef vm(A: " + buf + ", B: " + buf + ", C: " + buf +
         "):\n    T.func_attr({\"target\": T.target(\"llvm\")})\n    for i in " + loop +
         ":\n        B" + at + " = " + call + "\n";
}

template <typename F>
std::string hex(F v) {
  std::ostringstream out;
  out << std::hexfloat << v;
  return out.str();
}

template <typename F>
bool is_special(F v) {
  return !std::isfinite(v) || v == 0 || std::fpclassify(v) == FP_SUBNORMAL;
}

// Special arguments: zeros, infinities, NaN, denormals, the extremes, and the overflow and
// underflow boundaries of exp (the other functions' boundaries lie in their sweeps).
template <typename F>
std::vector<F> special_values() {
  using L = std::numeric_limits<F>;
  std::vector<F> v = {0,
                      -F(0),
                      L::infinity(),
                      -L::infinity(),
                      L::quiet_NaN(),
                      -L::quiet_NaN(),
                      L::denorm_min(),
                      -L::denorm_min(),
                      L::min() / 2,
                      L::min(),
                      -L::min(),
                      L::max(),
                      -L::max(),
                      1,
                      -1,
                      F(0.5),
                      F(2),
                      F(3)};
  const F log_max = std::log(L::max()), log_min = std::log(L::min()),
          log_tiny = std::log(L::denorm_min());
  for (F b : {log_max, log_min, log_tiny, -log_max}) {
    v.push_back(std::nextafter(b, -L::infinity()));
    v.push_back(b);
    v.push_back(std::nextafter(b, L::infinity()));
  }
  for (F b : {F(L::max_exponent), F(L::min_exponent - L::digits), F(L::max_exponent10)}) {
    v.push_back(b);
    v.push_back(-b);
    v.push_back(std::nextafter(b, L::infinity()));
  }
  return v;
}

template <typename F, typename I>
struct Sweep {
  std::vector<F> x, y;
};

// Arguments over the whole range: the special values (each paired with every special second
// argument for pow), then bit patterns spread evenly over all floats (float32) or random
// (float64) and, for every other element, values of magnitude below 800 where most of the
// functions' results are neither 0 nor infinite.
template <typename F, typename I>
Sweep<F, I> sweep(int64_t n) {
  Sweep<F, I> s;
  std::vector<F> sp = special_values<F>();
  for (F a : sp) {
    for (F b : sp) {
      s.x.push_back(a);
      s.y.push_back(b);
    }
  }
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (int64_t k = static_cast<int64_t>(s.x.size()); k < n; ++k) {
    I bits[2];
    for (I& b : bits) {
      b = sizeof(F) == 4 ? static_cast<I>(static_cast<uint32_t>(k) * 4099u + (next() & 4095))
                         : static_cast<I>(next());
    }
    F v[2];
    std::memcpy(&v[0], &bits[0], sizeof(F));
    std::memcpy(&v[1], &bits[1], sizeof(F));
    if (k % 2 == 1) {
      v[0] = static_cast<F>(std::fmod(v[0], F(800)));
      v[1] = static_cast<F>(std::fmod(v[1], F(64)));
      if (std::isnan(v[0])) v[0] = F(k % 1600) / 2 - 400;
      if (std::isnan(v[1])) v[1] = F(k % 128) / 2 - 32;
    }
    s.x.push_back(v[0]);
    s.y.push_back(v[1]);
  }
  return s;
}

// libm's result in F: the scalar function the op table names (its float version for float32),
// or the formula of an op without one, as host code computes it.
template <typename F>
F libm_value(const Op& op, F x, F y) {
  const std::string& n = op->name;
  if (n == "sigmoid") return F(1) / (F(1) + std::exp(-x));
  if (n == "rsqrt") return F(1) / std::sqrt(x);
  if (n == "pow") return std::pow(x, y);
  static const std::map<std::string, F (*)(F)> f = {
      {"exp", std::exp},     {"exp2", std::exp2},   {"log", std::log}, {"log2", std::log2},
      {"log10", std::log10}, {"log1p", std::log1p}, {"sin", std::sin}, {"cos", std::cos},
      {"tan", std::tan},     {"tanh", std::tanh},   {"erf", std::erf}};
  if (n == "exp10") return static_cast<F>(sizeof(F) == 4 ? ::exp10f(x) : ::exp10(x));
  return f.at(n)(x);
}

template <typename F, typename I>
void check_accuracy(const std::string& dtype, int64_t n, const std::vector<int>& lanes_list) {
  DataType t = DataType::Float(sizeof(F) * 8);
  Sweep<F, I> s = sweep<F, I>(n);
  Jit jit;
  for (const Op& op : inexact_ops()) {
    auto ref = references().find(op->name);
    ASSERT_NE(ref, references().end()) << "no reference function for T." << op->name;
    Tensor a = Tensor::zeros({n}, t), c = Tensor::zeros({n}, t);
    std::memcpy(a.data<F>(), s.x.data(), sizeof(F) * static_cast<size_t>(n));
    std::memcpy(c.data<F>(), s.y.data(), sizeof(F) * static_cast<size_t>(n));
    for (int lanes : lanes_list) {
      PrimFunc f = parse(kernel_text(op, dtype, n, lanes))->lookup("vm");
      Tensor b = Tensor::zeros({n}, t);
      jit.kernel(f, {.target = Target::llvm()})(a, b, c);
      int64_t worst = 0, special_mismatches = 0;
      F worst_x = 0, worst_y = 0, got_at_worst = 0;
      std::string first_special;
      for (int64_t i = 0; i < n; ++i) {
        F x = s.x[i], y = op->num_args == 2 ? s.y[i] : F(0), got = b.data<F>()[i];
        F lib = libm_value<F>(op, x, y);
        // Special arguments, and zero, infinite or NaN results, as libm gives them; so are
        // subnormal arguments and results, but for inline exp's, exp2's, log's and erf's, which
        // are held to the bound like any other (they may be 1 ulp off).
        const bool bounded =
            (op->name == "exp" || op->name == "exp2" || op->name == "log" || op->name == "erf") &&
            jit::has_inline_math(*op, static_cast<int>(sizeof(F)) * 8);
        const bool bounded_subnormal =
            bounded && (std::fpclassify(lib) == FP_SUBNORMAL || std::fpclassify(x) == FP_SUBNORMAL);
        if (((is_special(x) || is_special(lib)) && !bounded_subnormal) ||
            (op->num_args == 2 && is_special(y))) {
          // A finite non-zero result may differ from libm's where it is the exactly rounded
          // one (glibc's erff rounds some results of denormal arguments 0.54 ulp off).
          bool exactly_rounded = std::isfinite(got) && got != 0 && std::isfinite(lib) && lib != 0 &&
                                 ulp_distance<F, I>(got, static_cast<F>(ref->second(x, y))) == 0;
          if (ulp_distance<F, I>(got, lib) != 0 && !exactly_rounded) {
            if (special_mismatches++ == 0) {
              first_special = hex(x) + ", " + hex(y) + ": " + hex(got) + " vs libm " + hex(lib);
            }
          }
          continue;
        }
        F exact = static_cast<F>(ref->second(x, y));
        int64_t d = ulp_distance<F, I>(got, exact);
        if (d > worst) {
          worst = d;
          worst_x = x;
          worst_y = y;
          got_at_worst = got;
        }
      }
      std::string where = dtype + " T." + op->name + " lanes " + std::to_string(lanes);
      EXPECT_LE(worst, op->max_ulp)
          << where << ": at (" << hex(worst_x) << ", " << hex(worst_y) << ") " << hex(got_at_worst)
          << " vs exactly rounded " << hex(static_cast<F>(ref->second(worst_x, worst_y)));
      EXPECT_EQ(special_mismatches, 0) << where << ": special value " << first_special;
    }
  }
}

TEST(VectorMath, Float32KernelsAreWithinTheBoundAndExactOnSpecialValues) {
  // 1: a T.vectorized loop (the loop vectorizer's width); 3, 4, 8, 16: explicit vectors.
  check_accuracy<float, int32_t>("float32", int64_t{3} << 18, {1, 3, 4, 8, 16});
}

TEST(VectorMath, Float64KernelsAreWithinTheBoundAndExactOnSpecialValues) {
  check_accuracy<double, int64_t>("float64", int64_t{3} << 16, {1, 3, 4, 8});
}

// Every inexact op vectorizes, in float32 and in float64: the optimized loop calls a vector
// helper, which calls the library's variant (float64 sin and cos: which computes them inline);
// rsqrt is a vector square root and division; exp and tanh on float32 and the other float64
// ops (and sigmoid through exp) are inline vector arithmetic (jit/llvm/inline_math.h).
TEST(VectorMath, LoopsOverMathOpsCallTheVectorVariants) {
  jit::OrcEngine engine(jit::OrcOptions{.opt_level = 3, .keep_optimized_ir = true});
  int vectorized = 0;
  for (const std::string dtype : {"float32", "float64"}) {
    const int bits = dtype == "float32" ? 32 : 64;
    for (const Op& op : inexact_ops()) {
      Op computed = op->name == "sigmoid" ? Op::get("exp") : op;
      if (!computed->libm.empty() && !jit::has_vector_math(*computed, bits)) continue;
      IRModule m = passes::run_passes(parse(kernel_text(op, dtype, 1024, 1)),
                                      passes::default_pipeline(), {});
      std::string text = jit::to_llvm_text(jit::codegen_llvm(passes::lower_for_host(m)));
      auto key = engine.add_ir_text(text, "vm");
      std::string ir = engine.optimized_ir(key);
      engine.remove(key);
      std::string where = dtype + " T." + op->name;
      if (computed->libm.empty()) {
        EXPECT_NE(ir.find("@llvm.sqrt.v"), std::string::npos) << where << "\n" << ir;
        continue;
      }
      if (jit::has_inline_math(*computed, bits)) {
        // Inline: vector arithmetic (exp in lanes of its own type, float32 tanh in float64
        // lanes rounded to float32), no call at all.
        const bool widened = computed->name == "tanh" && bits == 32;
        const std::string lanes = bits == 32 ? "float" : "double";
        EXPECT_TRUE(std::regex_search(ir, std::regex(widened ? "fptrunc <[0-9]+ x double>"
                                                             : "fmul <[0-9]+ x " + lanes + ">")))
            << where << ir;
        if (!widened && bits == 32) {  // float32 exp: float32 lanes throughout
          EXPECT_FALSE(std::regex_search(ir, std::regex("<[0-9]+ x double>"))) << where << ir;
        }
        EXPECT_EQ(ir.find("call " + lanes + " @" + computed->libm), std::string::npos)
            << where << ir;
        EXPECT_EQ(ir.find("primjit_vmath_"), std::string::npos) << where << "\n" << ir;
        EXPECT_EQ(ir.find("@_ZGV"), std::string::npos) << where << "\n" << ir;
        ++vectorized;
        continue;
      }
      // A call of a helper (a definition reads "define internal <8 x float> @...").
      std::regex call("call <[0-9]+ x (float|double)> @primjit_vmath_" + computed->libm +
                      (bits == 32 ? "f_" : "_"));
      EXPECT_TRUE(std::regex_search(ir, call)) << where << ": no vector call\n" << ir;
      if (jit::has_ranged_math(*computed, bits)) {
        // Float64 sin and cos: the helper computes them inline, libm only for lanes beyond
        // the range.
        EXPECT_EQ(ir.find("@_ZGV"), std::string::npos) << where << "\n" << ir;
        EXPECT_TRUE(std::regex_search(ir, std::regex("fmul <[0-9]+ x double>"))) << where << ir;
      } else {
        EXPECT_NE(ir.find("@_ZGV"), std::string::npos) << where << "\n" << ir;
      }
      ++vectorized;
    }
  }
  // Every op, float32 and float64 (rsqrt is counted apart).
  EXPECT_EQ(vectorized, 2 * (static_cast<int>(inexact_ops().size()) - 1));
}

uint32_t bits_of(float x) { return std::bit_cast<uint32_t>(x); }

// Appends the floats whose bits run from `from` to `to` (either direction) in `step`s.
void add_bits(std::vector<float>& xs, float from, float to, uint32_t step) {
  uint32_t lo = std::min(bits_of(from), bits_of(to)), hi = std::max(bits_of(from), bits_of(to));
  for (uint64_t u = lo; u <= hi; u += step) xs.push_back(std::bit_cast<float>(uint32_t(u)));
}

// What check_inline holds an inline function to, beyond every result within 1 ulp of the
// exactly rounded one: the largest share of results that are not exactly rounded, and whether
// results of subnormal arguments and subnormal results must be exactly rounded too (zero,
// infinite and NaN results, and those of zero, infinite and NaN arguments, always must).
struct InlineAccuracy {
  double misrounded_share;
  bool subnormals_exact;
  int64_t max_ulp = 1;  // the largest distance allowed (float64 tanh: its bound, 2)
};

// T.<op> computed inline (jit/llvm/inline_math.h) on `xs` (float32 or float64), by a
// T.vectorized loop and by 256-bit vectors, against `accuracy`.
template <typename F>
void check_inline(const std::string& name, std::vector<F> xs, InlineAccuracy accuracy) {
  using I = std::conditional_t<sizeof(F) == 4, int32_t, int64_t>;
  const int bits = static_cast<int>(sizeof(F)) * 8;
  const DataType t = DataType::Float(bits);
  Op op = Op::get(name);
  ASSERT_TRUE(jit::has_inline_math(*op, bits) || jit::has_ranged_math(*op, bits))
      << "T." << name << " is not computed inline";
  const Reference& exact_value = references().at(name);
  while (xs.size() % 16 != 0) xs.push_back(F(0));
  const int64_t n = static_cast<int64_t>(xs.size());
  Tensor a = Tensor::zeros({n}, t), c = Tensor::zeros({n}, t);
  std::memcpy(a.data<F>(), xs.data(), sizeof(F) * xs.size());
  Jit jit;
  for (int lanes : {1, 32 / static_cast<int>(sizeof(F))}) {
    Tensor b = Tensor::zeros({n}, t);
    jit.kernel(parse(kernel_text(op, "float" + std::to_string(bits), n, lanes))->lookup("vm"),
               {.target = Target::llvm()})(a, b, c);
    int64_t misrounded = 0, far = 0, special = 0;
    std::string first;
    for (int64_t i = 0; i < n; ++i) {
      F x = xs[static_cast<size_t>(i)], got = b.data<F>()[i];
      if (ulp_distance<F, I>(got, libm_value<F>(op, x, 0)) == 0) continue;
      F exact = static_cast<F>(exact_value(x, 0));
      int64_t d = ulp_distance<F, I>(got, exact);
      if (d == 0) continue;
      misrounded++;
      if (first.empty()) first = hex(x) + ": " + hex(got) + " vs exactly rounded " + hex(exact);
      far += d > accuracy.max_ulp;
      const bool subnormal =
          std::fpclassify(x) == FP_SUBNORMAL || std::fpclassify(exact) == FP_SUBNORMAL;
      special += (is_special(x) || is_special(exact)) && (!subnormal || accuracy.subnormals_exact);
    }
    std::string where = "float" + std::to_string(bits) + " T." + name + " lanes " +
                        std::to_string(lanes) + ", first at " + first;
    EXPECT_EQ(far, 0) << where;
    EXPECT_EQ(special, 0) << where;
    EXPECT_LE(misrounded, static_cast<int64_t>(static_cast<double>(n) * accuracy.misrounded_share))
        << where;
  }
}

// Float32 T.exp: every 509th float of [-105, 90], every float of [-105, -87.4] (subnormal and
// zero results), the overflow and underflow boundaries, the special values. Checked on all
// 2.24 billion floats of [-105, 90] (Float32ExpOnEveryFloat): 0.77 % are 1 ulp off, none
// further. This sample is mostly subnormal results, 1.15 % of them 1 ulp off.
TEST(VectorMath, Float32ExpIsWithinOneUlpEverywhere) {
  std::vector<float> xs = special_values<float>();
  add_bits(xs, 0.0f, 90.0f, 509);
  add_bits(xs, -0.0f, -87.4f, 509);
  add_bits(xs, -87.4f, -105.0f, 1);
  for (float b : {88.72283935546875f, -87.33654022216796875f, -103.972084045410156f}) {
    add_bits(xs, std::bit_cast<float>(bits_of(b) - 64), std::bit_cast<float>(bits_of(b) + 64), 1);
  }
  check_inline<float>("exp", std::move(xs), {.misrounded_share = 0.015, .subnormals_exact = false});
}

// Float32 T.exp on every float of [-105, 90] (2.24 billion, about a minute): the check behind
// the figures above, run where PRIMJIT_EXHAUSTIVE=1. The reference is expl rounded to float.
TEST(VectorMath, Float32ExpOnEveryFloat) {
  if (std::getenv("PRIMJIT_EXHAUSTIVE") == nullptr) GTEST_SKIP() << "set PRIMJIT_EXHAUSTIVE=1";
  constexpr int64_t kChunk = int64_t{1} << 24;
  Tensor a = Tensor::zeros({kChunk}, DataType::Float(32)),
         b = Tensor::zeros({kChunk}, DataType::Float(32)),
         c = Tensor::zeros({kChunk}, DataType::Float(32));
  Jit jit;
  Kernel k = jit.kernel(parse(kernel_text(Op::get("exp"), "float32", kChunk, 1))->lookup("vm"),
                        {.target = Target::llvm()});
  int64_t total = 0, off_by_one = 0, further = 0;
  std::string first_far;
  auto run = [&](uint32_t lo, uint32_t hi) {  // the floats whose bits are in [lo, hi]
    for (uint64_t start = lo; start <= hi; start += kChunk) {
      const int64_t count = std::min<int64_t>(kChunk, static_cast<int64_t>(hi - start + 1));
      for (int64_t i = 0; i < kChunk; ++i) {
        a.data<float>()[i] =
            std::bit_cast<float>(static_cast<uint32_t>(start + std::min(i, count - 1)));
      }
      k(a, b, c);
      for (int64_t i = 0; i < count; ++i) {
        const float x = a.data<float>()[i], got = b.data<float>()[i];
        const int64_t d = ulp_distance<float, int32_t>(got, static_cast<float>(expl(x)));
        off_by_one += d == 1;
        if (d > 1 && further++ == 0) first_far = hex(x) + ": " + hex(got);
      }
      total += count;
    }
  };
  run(0, bits_of(90.0f));
  run(bits_of(-0.0f), bits_of(-105.0f));
  std::printf("float32 exp: %lld floats, %lld 1 ulp off (%.2f %%), %lld further\n",
              static_cast<long long>(total), static_cast<long long>(off_by_one),
              100.0 * static_cast<double>(off_by_one) / static_cast<double>(total),
              static_cast<long long>(further));
  EXPECT_EQ(further, 0) << "first at " << first_far;
  EXPECT_LE(off_by_one, total / 100);
}

// Appends the 129 doubles nearest each of `points` (64 on either side and the point itself).
void add_around(std::vector<double>& xs, const std::vector<double>& points) {
  for (double p : points) {
    for (int k = -64; k <= 64; ++k) {
      xs.push_back(std::bit_cast<double>(std::bit_cast<uint64_t>(p) + static_cast<uint64_t>(k)));
    }
  }
}

// Float64 T.exp and T.exp2 (one scheme): 2^21 random arguments over the range where the result
// is neither 0 nor infinite, 2^19 where it is subnormal or 0, 2^18 near 0, the overflow and
// underflow boundaries, the special values. Offline, on 140 million such arguments each: exp
// 6.8 % 1 ulp off (7.1 % without fused multiply-add), exp2 7.1 % (7.4 %), none further.
void check_float64_exp(const std::string& name, double low, double subnormal_from, double high,
                       std::vector<double> boundaries) {
  std::vector<double> xs = special_values<double>();
  uint64_t state = 0x243f6a8885a308d3ull;
  auto uniform = [&](double lo, double hi) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * static_cast<double>(state >> 11) * 0x1p-53;
  };
  for (int i = 0; i < (1 << 21); ++i) xs.push_back(uniform(low, high));
  for (int i = 0; i < (1 << 19); ++i) xs.push_back(uniform(low, subnormal_from));
  for (int i = 0; i < (1 << 18); ++i) xs.push_back(uniform(-1e-3, 1e-3));
  add_around(xs, boundaries);
  check_inline<double>(name, std::move(xs), {.misrounded_share = 0.1, .subnormals_exact = false});
}

TEST(VectorMath, Float64ExpIsWithinOneUlp) {
  check_float64_exp("exp", -746, -708, 710,
                    {709.782712893384, -708.3964185322641, -744.4400719213812, -745.1332191019411});
}

TEST(VectorMath, Float64Exp2IsWithinOneUlp) {
  check_float64_exp("exp2", -1076, -1022, 1025, {1024.0, -1022.0, -1074.0, -1075.0});
}

// Float64 T.log: 2^21 arguments of random bits over the positive doubles, 2^20 uniform over
// [0.5, 2] and 2^18 within 1e-6 of 1 (where the result is smallest relative to f), 2^18 random
// subnormals, the special values. Offline, on 120 million such arguments: 2.6 % 1 ulp off,
// none further (the op table allows 1).
TEST(VectorMath, Float64LogIsWithinOneUlp) {
  std::vector<double> xs = special_values<double>();
  uint64_t state = 0x13198a2e03707344ull;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state;
  };
  auto uniform = [&](double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1p-53;
  };
  for (int i = 0; i < (1 << 21); ++i) {
    xs.push_back(std::bit_cast<double>(next() & 0x7fefffffffffffffull));
  }
  for (int i = 0; i < (1 << 20); ++i) xs.push_back(uniform(0.5, 2.0));
  for (int i = 0; i < (1 << 18); ++i) xs.push_back(uniform(1 - 1e-6, 1 + 1e-6));
  for (int i = 0; i < (1 << 18); ++i) {
    xs.push_back(std::bit_cast<double>(next() & 0x000fffffffffffffull));
  }
  check_inline<double>("log", std::move(xs), {.misrounded_share = 0.05, .subnormals_exact = false});
}

// Float32 T.tanh: every 509th float of [-10.5, 10.5] (subnormal arguments included), every
// float around the switch to the series at 1/16 and around 9.01, where tanh rounds to 1.
// Checked offline on all 1.09 billion floats of [0, 10.5]: 264 are 1 ulp off, none further
// (glibc's tanhf differs from the exactly rounded result on 59 million of them).
TEST(VectorMath, Float32TanhIsExactlyRoundedAlmostEverywhere) {
  std::vector<float> xs = special_values<float>();
  add_bits(xs, 0.0f, 10.5f, 509);
  add_bits(xs, -0.0f, -10.5f, 509);
  add_bits(xs, 0.0624f, 0.0627f, 1);
  add_bits(xs, -0.0624f, -0.0627f, 1);
  add_bits(xs, 9.0f, 9.02f, 1);
  check_inline<float>("tanh", std::move(xs), {.misrounded_share = 1e-5, .subnormals_exact = true});
}

// Random float64 arguments for the accuracy samples below (a 64-bit LCG: the same sample on
// every run).
struct Sampler {
  uint64_t state;
  uint64_t next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state;
  }
  double uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1p-53;
  }
  // Random bits: any finite double of either sign (`sign` 0) or of one sign (+1, -1).
  double bits(int sign) {
    uint64_t b = next();
    if ((b >> 52 & 0x7ff) == 0x7ff) b ^= uint64_t{1} << 62;  // not inf or NaN: exponent 0x3ff
    if (sign != 0) b = (b & ~(uint64_t{1} << 63)) | (sign < 0 ? uint64_t{1} << 63 : 0);
    return std::bit_cast<double>(b);
  }
  // |x| below 2^-e for e random in [0, 64), either sign.
  double small() { return std::ldexp(uniform(-1, 1), -static_cast<int>(next() >> 58)); }
};

// Float64 T.log2: log's parts, hi = f - f^2/2 cut to 21 bits so that its product with 1/ln 2's
// leading part is exact. The arguments of the log test. Offline, on 60 million such
// arguments: 0.69 % 1 ulp off (the same without FMA), worst 0.87 ulp.
TEST(VectorMath, Float64Log2IsWithinOneUlp) {
  std::vector<double> xs = special_values<double>();
  Sampler r{0x452821e638d01377ull};
  for (int i = 0; i < (1 << 21); ++i) xs.push_back(r.bits(1));
  for (int i = 0; i < (1 << 20); ++i) xs.push_back(r.uniform(0.5, 2.0));
  for (int i = 0; i < (1 << 18); ++i) xs.push_back(r.uniform(1 - 1e-6, 1 + 1e-6));
  for (int i = 0; i < (1 << 18); ++i) xs.push_back(std::bit_cast<double>(r.next() >> 12));
  for (int k = -1074; k <= 1023; ++k) xs.push_back(std::ldexp(1.0, k));  // exact results
  check_inline<double>("log2", std::move(xs),
                       {.misrounded_share = 0.02, .subnormals_exact = false});
}

// Float64 T.log1p: random bits (either sign: below -1 NaN), [-1, 1], small arguments of either
// sign (below 2^-e, e up to 63), up to 1e6, just above -1. Offline, on 70 million such
// arguments: 2.3 % 1 ulp off (2.5 % without FMA), worst 0.86 ulp.
TEST(VectorMath, Float64Log1pIsWithinOneUlp) {
  std::vector<double> xs = special_values<double>();
  Sampler r{0xbe5466cf34e90c6cull};
  for (int i = 0; i < (1 << 20); ++i) xs.push_back(r.bits(0));
  for (int i = 0; i < (1 << 20); ++i) xs.push_back(r.uniform(-1.0, 1.0));
  for (int i = 0; i < (1 << 19); ++i) xs.push_back(r.small());
  for (int i = 0; i < (1 << 18); ++i) xs.push_back(r.uniform(-1.0, 1e6));
  for (int i = 0; i < (1 << 18); ++i) xs.push_back(-1.0 + std::fabs(r.small()));
  check_inline<double>("log1p", std::move(xs),
                       {.misrounded_share = 0.04, .subnormals_exact = true});
}

// Float64 T.tanh: e / (e + 2) with e = e^2|x| - 1. Uniform over [-20, 20], over [-1, 1], small
// arguments, random bits; the clamp at 22 and where the result reaches 1. Offline, on 70
// million such arguments: 7.6 % 1 ulp off, none further, worst 1.46 ulp; without FMA 13 %,
// 0.05 % 2 ulp off (worst 1.93), within the table's bound of 2.
TEST(VectorMath, Float64TanhIsWithinTheBound) {
  std::vector<double> xs = special_values<double>();
  Sampler r{0x3f84d5b5b5470917ull};
  for (int i = 0; i < (1 << 20); ++i) xs.push_back(r.uniform(-20, 20));
  for (int i = 0; i < (1 << 20); ++i) xs.push_back(r.uniform(-1, 1));
  for (int i = 0; i < (1 << 19); ++i) xs.push_back(r.small());
  for (int i = 0; i < (1 << 18); ++i) xs.push_back(r.bits(0));
  add_around(xs, {19.0615, 22.0});
  check_inline<double>("tanh", std::move(xs),
                       {.misrounded_share = 0.15, .subnormals_exact = true, .max_ulp = 2});
}

// Float64 T.erf: the series below 0.875, 1 - e^-x^2 g(x) up to 6 (g a polynomial in
// 1 / (1 + x)). Uniform over [-6.5, 6.5] and [-2, 2], small arguments, random bits, around
// 0.875, where erf reaches 1 and 6. Offline, on 80 million such arguments: 5.7 % 1 ulp off
// (6.6 % without FMA), none further, worst 0.96 ulp.
TEST(VectorMath, Float64ErfIsWithinOneUlp) {
  std::vector<double> xs = special_values<double>();
  Sampler r{0x9216d5d98979fb1bull};
  for (int i = 0; i < (1 << 20); ++i) xs.push_back(r.uniform(-6.5, 6.5));
  for (int i = 0; i < (1 << 20); ++i) xs.push_back(r.uniform(-2, 2));
  for (int i = 0; i < (1 << 19); ++i) xs.push_back(r.small());
  for (int i = 0; i < (1 << 18); ++i) xs.push_back(r.bits(0));
  add_around(xs, {0.875, 5.9215, 6.0});
  check_inline<double>("erf", std::move(xs), {.misrounded_share = 0.07, .subnormals_exact = false});
}

// Float64 T.sin and T.cos: reduction by pi/2 in three parts for |x| <= 2^20, libm beyond. Uniform
// over [-10, 10] and [-2^20, 2^20], small arguments, random bits (mostly beyond the range), the
// doubles nearest to k pi/2 for k below 2^18 and their neighbours (where the reduced argument is
// smallest). Offline, on 52 million such arguments: sin 2.5 %, cos 2.5 % 1 ulp off (2.6 %
// without FMA), none further, worst 1.06 ulp.
void check_float64_trig(const std::string& name) {
  std::vector<double> xs = special_values<double>();
  Sampler r{0xd1310ba698dfb5acull};
  for (int i = 0; i < (1 << 20); ++i) xs.push_back(r.uniform(-10, 10));
  for (int i = 0; i < (1 << 20); ++i) xs.push_back(r.uniform(-0x1p20, 0x1p20));
  for (int i = 0; i < (1 << 18); ++i) xs.push_back(r.small());
  for (int i = 0; i < (1 << 17); ++i) xs.push_back(r.bits(0));
  const long double pio2 = acosl(0.0L);
  for (int64_t k = 1; k < (1 << 18); k += 3) {
    const double x = static_cast<double>(static_cast<long double>(k) * pio2);
    for (double v : {x, std::nextafter(x, 0.0), std::nextafter(x, 1e9)}) xs.push_back(v);
  }
  add_around(xs, {0x1p20, 0x1p-27});
  check_inline<double>(name, std::move(xs), {.misrounded_share = 0.04, .subnormals_exact = true});
}

TEST(VectorMath, Float64SinIsWithinOneUlp) { check_float64_trig("sin"); }

TEST(VectorMath, Float64CosIsWithinOneUlp) { check_float64_trig("cos"); }

// A vector symbol the library lacks (an older glibc) fails the link with an error naming the
// library and the symbol.
TEST(VectorMath, AMissingVectorSymbolNamesTheLibrary) {
  jit::OrcEngine engine;
  engine.add_ir_text(R"(
declare <4 x double> @_ZGVdN4v_primjit_missing(<4 x double>)
define <4 x double> @f(<4 x double> %x) {
  %r = call <4 x double> @_ZGVdN4v_primjit_missing(<4 x double> %x)
  ret <4 x double> %r
}
)",
                     "missing");
  std::string message = test::error_of([&] { engine.lookup("f"); });
  EXPECT_NE(message.find(jit::kVectorMathLibrary), std::string::npos) << message;
  EXPECT_NE(message.find("_ZGVdN4v_primjit_missing"), std::string::npos) << message;
}

}  // namespace
}  // namespace primjit
