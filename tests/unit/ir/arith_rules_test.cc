// primjit::arith: the rules for builtin calls (simplify_call.cc), casts, divisions by a
// divisor that is not a literal, the soundness limits of float rules, and the log line of the
// pass cap. Rows are check(input, expected); a row whose expected value is its input says the
// rule must not fire.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ir/arith/simplify_internal.h"
#include "primjit/arith.h"
#include "primjit/ir.h"
#include "primjit/log.h"
#include "tests/unit/ir/arith_test_util.h"

namespace primjit::test {
namespace {

using arith::Analyzer;

E builtin(const char* name, DataType t, std::vector<Expr> args) {
  return Call::make(t, Op::get(name), std::move(args));
}
E f32c(double v) { return FloatImm::make(f32, v); }
E f64c(double v) { return FloatImm::make(f64, v); }

void check_in(Analyzer& an, const E& input, const E& expected, int line) {
  Expr in = input;
  Expr want = expected.literal ? expected.as(in.dtype()) : expected.e;
  Expr got = an.simplify(in);
  bool ok = structural_equal(got, want) && same(got, want);
  // Literal floats compare bit for bit (structural equality says -0.0 == 0.0).
  const auto* g = got.as<FloatImm>();
  const auto* w = want.as<FloatImm>();
  if (ok && g != nullptr && w != nullptr) ok = std::signbit(g->value) == std::signbit(w->value);
  EXPECT_TRUE(ok) << "line " << line << ": simplify(" << str(in) << ")\n   got: " << str(got)
                  << "\n  want: " << str(want);
  Expr again = an.simplify(got);
  EXPECT_TRUE(again.same_as(got)) << "line " << line << ": not a fixed point: " << str(got)
                                  << " -> " << str(again);
}

#define CHECK_ROW(input, expected) check_in(an, (input), (expected), __LINE__)

class ArithRules : public ::testing::Test {
 protected:
  ArithRules() {
    an.bind(i, c(i32, 0), c(i32, 64));
    an.bind(j, c(i32, 0), c(i32, 16));
  }
  E shl(const E& a, const E& b) { return builtin("shift_left", a.e.dtype(), {a.e, b.as(i32)}); }
  E shr(const E& a, const E& b) { return builtin("shift_right", a.e.dtype(), {a.e, b.as(i32)}); }
  E band(const E& a, const E& b) { return bits("bitwise_and", a, b); }
  E bor(const E& a, const E& b) { return bits("bitwise_or", a, b); }
  E bxor(const E& a, const E& b) { return bits("bitwise_xor", a, b); }
  E bnot(const E& a) { return builtin("bitwise_not", a.e.dtype(), {a.e}); }
  E bits(const char* name, const E& a, const E& b) {
    DataType t = a.literal ? b.e.dtype() : a.e.dtype();
    return builtin(name, t, {a.as(t), b.as(t)});
  }
  E ite(const E& cond, const E& a, const E& b) {
    return builtin("if_then_else", a.e.dtype(), {cond.e, a.e, b.e});
  }
  E math(const char* name, const E& a) { return builtin(name, a.e.dtype(), {a.e}); }
  // A call with an effect: rules must neither drop nor duplicate it.
  E effect() { return builtin("call_extern", i32, {StringImm::make("tick")}); }

  Var x = Var::make("x", i32);
  Var y = Var::make("y", i32);
  Var i = Var::make("i", i32);  // [0, 64)
  Var j = Var::make("j", i32);  // [0, 16)
  Var n = Var::make("n", i32);
  Var x16 = Var::make("x16", DataType::Int(16));
  Var x64 = Var::make("x64", i64);
  Var xu = Var::make("xu", DataType::UInt(32));
  Var xb = Var::make("xb", b1);
  Var xf = Var::make("xf", f32);
  Var xd = Var::make("xd", f64);
  Analyzer an;
};

TEST_F(ArithRules, ExactMathFoldsAsTheBackendsCompute) {
  CHECK_ROW(math("floor", f32c(2.5)), f32c(2));
  CHECK_ROW(math("floor", f64c(-2.5)), f64c(-3));
  CHECK_ROW(math("ceil", f32c(-2.5)), f32c(-2));
  CHECK_ROW(math("ceil", f32c(-0.5)), f32c(-0.0));  // the sign of zero survives
  CHECK_ROW(math("trunc", f64c(-2.7)), f64c(-2));
  // round is rint: halves go to even (the op table names rint; llvm.roundeven; CUDA rintf).
  CHECK_ROW(math("round", f32c(2.5)), f32c(2));
  CHECK_ROW(math("round", f32c(3.5)), f32c(4));
  CHECK_ROW(math("round", f64c(-0.5)), f64c(-0.0));
  CHECK_ROW(math("fabs", f32c(-3)), f32c(3));
  CHECK_ROW(math("sqrt", f32c(2)), f32c(static_cast<double>(std::sqrt(2.0f))));
  CHECK_ROW(math("sqrt", f64c(2)), f64c(std::sqrt(2.0)));
  CHECK_ROW(builtin("fmod", f32, {f32c(7), f32c(-3)}), f32c(1));
  CHECK_ROW(builtin("fma", f64, {f64c(2), f64c(3), f64c(1)}), f64c(7));
  // exp2 of an integer and log2 of a power of two: exact and normal.
  CHECK_ROW(math("exp2", f64c(10)), f64c(1024));
  CHECK_ROW(math("exp2", f32c(-3)), f32c(0.125));
  CHECK_ROW(math("log2", f32c(0.125)), f32c(-3));
  CHECK_ROW(math("log2", f64c(1)), f64c(0));
}

TEST_F(ArithRules, InexactOrNanMathStays) {
  for (const char* name : {"exp", "log", "sin", "tanh", "exp10"}) {
    E e = math(name, f32c(1));
    CHECK_ROW(e, e);
  }
  CHECK_ROW(math("sqrt", f32c(-1)), math("sqrt", f32c(-1)));  // NaN
  CHECK_ROW(builtin("fmod", f32, {f32c(1), f32c(0)}), builtin("fmod", f32, {f32c(1), f32c(0)}));
  CHECK_ROW(math("exp2", f32c(0.5)), math("exp2", f32c(0.5)));    // not a power of two
  CHECK_ROW(math("exp2", f32c(200)), math("exp2", f32c(200)));    // beyond float32
  CHECK_ROW(math("exp2", f32c(-140)), math("exp2", f32c(-140)));  // subnormal
  CHECK_ROW(math("log2", f32c(3)), math("log2", f32c(3)));
  CHECK_ROW(math("log2", f32c(0)), math("log2", f32c(0)));
  CHECK_ROW(math("floor", xf), math("floor", xf));
}

TEST_F(ArithRules, RoundingAnIntegralValueIsTheValue) {
  CHECK_ROW(math("floor", cast(f32, x)), cast(f32, x));
  CHECK_ROW(math("round", cast(f64, x64)), cast(f64, x64));
  CHECK_ROW(math("ceil", math("trunc", xf)), math("trunc", xf));
  CHECK_ROW(math("round", math("floor", xd)), math("floor", xd));
  CHECK_ROW(math("floor", math("sqrt", xf)), math("floor", math("sqrt", xf)));
  CHECK_ROW(math("floor", cast(f32, xd)), math("floor", cast(f32, xd)));
}

TEST_F(ArithRules, ShiftsOfLiteralsFollowTheSemanticsTable) {
  CHECK_ROW(shl(E(c(i32, 3)), 4), 48);
  CHECK_ROW(shl(E(c(i32, 1)), 31), c(i32, -2147483648.0));  // wraps
  CHECK_ROW(shl(E(c(i8, 100)), 1), c(i8, -56));
  CHECK_ROW(shr(E(c(i32, -16)), 2), -4);  // arithmetic
  CHECK_ROW(shr(E(c(i32, -1)), 31), -1);
  CHECK_ROW(shr(E(c(u8, 200)), 3), c(u8, 25));  // logical
  // Amounts out of [0, bits) are left as written, for literals too.
  CHECK_ROW(shl(E(c(i32, 1)), 32), shl(E(c(i32, 1)), 32));
  CHECK_ROW(shr(E(c(i32, -8)), 40), shr(E(c(i32, -8)), 40));
  CHECK_ROW(shl(E(c(i32, 1)), -1), shl(E(c(i32, 1)), -1));
}

TEST_F(ArithRules, LeftShiftsAreMultiplications) {
  CHECK_ROW(shl(x, 2), x * 4);
  CHECK_ROW(shl(x, 0), x);
  CHECK_ROW(shl(x, 3) + x * 8, x * 16);
  CHECK_ROW(shl(xu, 31), xu * E(c(DataType::UInt(32), 2147483648.0)));
  CHECK_ROW(shl(x, 31), shl(x, 31));  // 2^31 is no int32 literal
  CHECK_ROW(shl(x, 32), shl(x, 32));
  CHECK_ROW(shl(x, y), shl(x, y));
}

TEST_F(ArithRules, RightShiftsStayUnlessTheDivisionSimplifies) {
  CHECK_ROW(shr(i * 16 + j, 4), i);
  CHECK_ROW(shr(j, 4), 0);
  CHECK_ROW(shr(x, 0), x);
  CHECK_ROW(shr(x, 3), shr(x, 3));
  CHECK_ROW(shr(i * 16 + x, 4), shr(i * 16 + x, 4));
  CHECK_ROW(shr(x, 32), shr(x, 32));
}

TEST_F(ArithRules, BitwiseLogicWithZeroAndAllOnes) {
  CHECK_ROW(band(E(c(i32, 12)), E(c(i32, 10))), 8);
  CHECK_ROW(bor(E(c(i32, 12)), E(c(i32, 10))), 14);
  CHECK_ROW(bxor(E(c(i32, 12)), E(c(i32, 10))), 6);
  CHECK_ROW(bnot(E(c(i8, 5))), c(i8, -6));
  CHECK_ROW(band(x, 0), 0);
  CHECK_ROW(band(0, x), 0);
  CHECK_ROW(band(x, -1), x);
  CHECK_ROW(bor(x, 0), x);
  CHECK_ROW(bor(x, -1), -1);
  CHECK_ROW(bxor(x, 0), x);
  CHECK_ROW(bxor(x, -1), bnot(x));
  CHECK_ROW(bxor(xu, E(c(DataType::UInt(32), 4294967295.0))), bnot(xu));
  CHECK_ROW(band(x, x), x);
  CHECK_ROW(bor(x, x), x);
  CHECK_ROW(bxor(x, x), 0);
  CHECK_ROW(bnot(bnot(x)), x);
  CHECK_ROW(band(x, y), band(x, y));
  // A mask of low bits is a remainder, kept as the mask unless the remainder simplifies.
  CHECK_ROW(band(i * 16 + j, 15), j);
  CHECK_ROW(band(x, 15), band(x, 15));
  // An operand with an effect is neither dropped nor duplicated.
  CHECK_ROW(band(effect(), 0), band(effect(), 0));
  CHECK_ROW(bor(effect(), -1), bor(effect(), -1));
  CHECK_ROW(bor(effect(), 0), effect());
}

TEST_F(ArithRules, IfThenElseAndLikely) {
  CHECK_ROW(ite(tru(), x, y), x);
  CHECK_ROW(ite(fls(), x, y), y);
  CHECK_ROW(ite(xb, x + 1, 1 + x), x + 1);
  CHECK_ROW(ite(xb, x, y), ite(xb, x, y));
  // Each branch knows the condition's value: here both become x.
  CHECK_ROW(ite(x < y, min(x, y), max(x, y)), x);
  CHECK_ROW(ite(i < 8, min(i, 10), i), i);
  CHECK_ROW(ite(x < y, fdiv(x, y), y), ite(x < y, fdiv(x, y), y));
  // The untaken branch is never evaluated: dropping it (a division by zero here) is sound.
  CHECK_ROW(ite(tru(), x, fdiv(x, 0)), x);
  CHECK_ROW(builtin("likely", b1, {tru().e}), tru());
}

TEST_F(ArithRules, CastsOfLiterals) {
  CHECK_ROW(cast(i8, E(c(i32, 300))), c(i8, 44));
  CHECK_ROW(cast(u8, E(c(i32, -1))), c(u8, 255));
  CHECK_ROW(cast(b1, E(c(i32, 2))), tru());
  // Float to integer saturates, NaN is 0 (llvm.fptosi.sat, primjit_ftoi).
  CHECK_ROW(cast(i32, f32c(1e10)), c(i32, 2147483647.0));
  CHECK_ROW(cast(i32, f32c(-1e10)), c(i32, -2147483648.0));
  CHECK_ROW(cast(i32, f32c(std::nan(""))), 0);
  CHECK_ROW(cast(u8, f32c(-0.5)), c(u8, 0));
  CHECK_ROW(cast(u8, f64c(300.7)), c(u8, 255));
  CHECK_ROW(cast(i32, f64c(-2.9)), -2);
  CHECK_ROW(cast(b1, f32c(std::nan(""))), tru());
  CHECK_ROW(cast(b1, f32c(-0.0)), fls());
  // Integer to float rounds once, to nearest even.
  CHECK_ROW(cast(f32, E(c64(16777217))), f32c(16777216));
  CHECK_ROW(
      cast(f32, E(c64((int64_t(1) << 60) + (int64_t(1) << 36) + 1))),
      f32c(static_cast<double>(static_cast<float>((int64_t(1) << 60) + (int64_t(1) << 36) + 1))));
  CHECK_ROW(cast(f64, E(c64((int64_t(1) << 53) + 1))), f64c(9007199254740992.0));
}

TEST_F(ArithRules, NestedCastsOnlyWhereLossless) {
  CHECK_ROW(cast(f64, cast(i64, x)), cast(f64, x));
  CHECK_ROW(cast(i32, cast(i64, x)), x);
  CHECK_ROW(cast(i32, cast(f64, x)), x);
  CHECK_ROW(cast(f64, cast(f32, x16)), cast(f64, x16));
  CHECK_ROW(cast(i32, cast(f64, xf)), cast(i32, xf));
  CHECK_ROW(cast(f32, cast(f64, xf)), xf);
  // Lossy inner casts stay.
  CHECK_ROW(cast(i32, cast(DataType::Int(16), x)), cast(i32, cast(DataType::Int(16), x)));
  CHECK_ROW(cast(f64, cast(f32, x)), cast(f64, cast(f32, x)));
  CHECK_ROW(cast(f64, cast(f32, xd)), cast(f64, cast(f32, xd)));
  CHECK_ROW(cast(i64, cast(i32, x64)), cast(i64, cast(i32, x64)));
  // Through a float into a narrower integer: the direct cast would wrap, this one saturates.
  CHECK_ROW(cast(i8, cast(f32, x16)), cast(i8, cast(f32, x16)));
}

TEST_F(ArithRules, FloatRulesAreBitExact) {
  CHECK_ROW(xf * 1, xf);  // the literal adopts float32
  CHECK_ROW(xf - f32c(0), xf);
  CHECK_ROW(xf + f32c(-0.0), xf);
  CHECK_ROW(xf + f32c(0), xf + f32c(0));  // -0.0 + 0.0 is +0.0
  CHECK_ROW(xf - xf, xf - xf);            // NaN and infinities
  CHECK_ROW(xf * f32c(0), xf * f32c(0));  // NaN, infinities, -0.0
  CHECK_ROW(Div::make(xf, xf), Div::make(xf, xf));
  CHECK_ROW((xf + f32c(1)) + f32c(2), (xf + f32c(1)) + f32c(2));  // no reassociation
  CHECK_ROW(min(xf, xf), xf);
}

TEST_F(ArithRules, DivisionByAProvablyPositiveSymbol) {
  Var k = Var::make("k", i32);
  an.bind(n, c(i32, 1), c(i32, 1000));  // n in [1, 1000]
  an.bind(k, c(i32, 0), n);             // k in [0, n)
  CHECK_ROW(fdiv(i * n + k, n), i);
  CHECK_ROW(fmod(i * n + k, n), k);
  CHECK_ROW(fdiv(i * (n * 4) + k, n * 4), i);
  CHECK_ROW(fdiv(i * n + j, n), i + fdiv(j, n));  // j may reach n
  CHECK_ROW(fmod(i * n + j, n), fmod(j, n));
  CHECK_ROW(fdiv(i * n + x, n), fdiv(x + i * n, n));  // x unbounded: i * n + x may wrap
  CHECK_ROW(tdiv(i * n + k, n), i);
}

TEST_F(ArithRules, DivisionByAPossiblyZeroValueStays) {
  // x // 0 is -1 and x % 0 is x: nothing that needs the divisor nonzero may fire.
  CHECK_ROW(fdiv(x * y, y), fdiv(x * y, y));
  CHECK_ROW(fdiv(x * y + 1, y), fdiv(x * y + 1, y));
  CHECK_ROW(fdiv(x, x), fdiv(x, x));
  CHECK_ROW(tdiv(x, x), tdiv(x, x));
  CHECK_ROW(fdiv(x, 0), fdiv(x, 0));
  // x * y may wrap: its remainder by y need not be 0.
  CHECK_ROW(fmod(x * y, y), fmod(x * y, y));
  // The signed quotient that overflows folds to what the backends compute.
  CHECK_ROW(tdiv(E(c(i32, -2147483648.0)), E(c(i32, -1))), c(i32, -2147483648.0));
  CHECK_ROW(E(c(i32, 2147483647)) + 1, c(i32, -2147483648.0));
}

// With debug logging on, stopping at the pass cap before a fixed point is reported (a cap of
// 0 passes stops before the first), and nothing is reported when the cap was not what stopped.
TEST(ArithPassCap, StoppingBeforeAFixedPointIsLoggedAtDebugLevel) {
  std::vector<std::string> lines;
  LogLevel saved = log_level();
  set_log_sink([&](LogLevel, std::string_view text) { lines.emplace_back(text); });
  set_log_level(LogLevel::kDebug);
  Var x = Var::make("x", i32);
  Expr e = Add::make(x, make_const(i32, 0));
  arith::detail::AnalyzerImpl an;
  Expr capped = arith::detail::simplify_passes(an, e, 0);
  size_t after_capped = lines.size();
  Expr at_fixed_point = arith::detail::simplify_passes(an, x, 0);
  Expr full = Analyzer().simplify(e);
  set_log_level(LogLevel::kInfo);
  arith::detail::simplify_passes(an, e, 0);  // not at debug level: silent
  set_log_sink(nullptr);
  set_log_level(saved);
  EXPECT_TRUE(capped.same_as(e));
  EXPECT_TRUE(at_fixed_point.same_as(x));
  EXPECT_TRUE(full.same_as(x));
  EXPECT_EQ(after_capped, 1u);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("stopped after 0 passes before a fixed point"), std::string::npos)
      << lines[0];
}

}  // namespace
}  // namespace primjit::test
