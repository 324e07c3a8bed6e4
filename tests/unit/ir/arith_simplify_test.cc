// primjit::arith: simplifier tables, check(input, expected) rows per operator family.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "primjit/arith.h"
#include "primjit/ir.h"
#include "primjit/ir/structural.h"
#include "tests/unit/ir/arith_test_util.h"

namespace primjit::test {
namespace {

using arith::Analyzer;

// One table row: `input` simplifies to `expected` (structurally, same variables), and
// simplifying the result again changes nothing.
void check_in(Analyzer& an, const E& input, const E& expected, int line) {
  Expr in = input;
  Expr want = expected.literal ? expected.as(in.dtype()) : expected.e;
  Expr got = an.simplify(in);
  EXPECT_TRUE(structural_equal(got, want) && same(got, want))
      << "line " << line << ": simplify(" << str(in) << ")\n   got: " << str(got)
      << "\n  want: " << str(want);
  Expr again = an.simplify(got);
  EXPECT_TRUE(same(again, got)) << "line " << line << ": not idempotent: " << str(got) << " -> "
                                << str(again);
  EXPECT_TRUE(again.same_as(got)) << "line " << line << ": re-simplifying " << str(got)
                                  << " rebuilt an unchanged expression";
}

#define CHECK_ROW(input, expected) check_in(an, (input), (expected), __LINE__)

class ArithTable : public ::testing::Test {
 protected:
  ArithTable() {
    an.bind(i, c(i32, 0), c(i32, 64));
    an.bind(j, c(i32, 0), c(i32, 16));
    an.bind(k, c(i32, 0), n);
    an.bind(p, c(i64, -8), c(i64, 16));
  }

  Var x = Var::make("x", i32);
  Var y = Var::make("y", i32);
  Var z = Var::make("z", i32);
  Var i = Var::make("i", i32);  // [0, 64)
  Var j = Var::make("j", i32);  // [0, 16)
  Var k = Var::make("k", i32);  // [0, n)
  Var n = Var::make("n", i32, /*is_size_var=*/true);
  Var p = Var::make("p", i64);  // [-8, 8)
  Var q = Var::make("q", i64);
  Var xb = Var::make("xb", b1);
  Var yb = Var::make("yb", b1);
  Var xf = Var::make("xf", f32);
  Var yf = Var::make("yf", f32);
  Analyzer an;
};

// ---------------------------------------------------------------------------------------------
// Tables
// ---------------------------------------------------------------------------------------------

TEST_F(ArithTable, AddSubCancellationAndOrder) {
  CHECK_ROW(x + 0, x);
  CHECK_ROW(0 + x, x);
  CHECK_ROW(x - 0, x);
  CHECK_ROW(x - x, 0);
  CHECK_ROW(x + y - x, y);
  CHECK_ROW(y + x, x + y);
  CHECK_ROW(x * 4 + y - x * 4, y);
  CHECK_ROW((x + 3) + (y - 3), x + y);
  CHECK_ROW((x + y) - (y + x), 0);
  CHECK_ROW(x + x, x * 2);
  CHECK_ROW(x * 3 - x, x * 2);
  CHECK_ROW(3 + x, x + 3);
  CHECK_ROW(x - 5 + 2, x - 3);
  CHECK_ROW(5 - x, 5 - x);
  CHECK_ROW((5 - x) + x, 5);
  CHECK_ROW(0 - x, x * -1);
  CHECK_ROW(y - x, y - x);
  CHECK_ROW(z + (y - x), y - x + z);
  CHECK_ROW((x - y) - (x - y), 0);
  CHECK_ROW(x * 2 + x * 3, x * 5);
  CHECK_ROW(z + y + x, x + y + z);
  CHECK_ROW((z + 1) + (y + 2) + (x + 3), x + y + z + 6);
  CHECK_ROW(0 - x - y - 3, x * -1 - y - 3);
  CHECK_ROW(10 - x - y, 10 - x - y);
  CHECK_ROW(x - (y - (x - y)), x * 2 - y * 2);
  CHECK_ROW((x + 1) - (x - 1), 2);
  CHECK_ROW(x - 2147483647 - 1, x + std::numeric_limits<int32_t>::min());
  CHECK_ROW(q + c64(5) - q, c64(5));
}

TEST_F(ArithTable, Mul) {
  CHECK_ROW(x * 1, x);
  CHECK_ROW(1 * x, x);
  CHECK_ROW(x * 0, 0);
  CHECK_ROW(0 * x, 0);
  CHECK_ROW(4 * x, x * 4);
  CHECK_ROW((x + 1) * 4, x * 4 + 4);
  CHECK_ROW(4 * (x + 1) - 4, x * 4);
  CHECK_ROW((x * 2) * 3, x * 6);
  CHECK_ROW(y * x, x * y);
  CHECK_ROW(x * y - y * x, 0);
  CHECK_ROW(x * y + y * x, x * y * 2);
  CHECK_ROW((x * 2) * (y * 3), x * y * 6);
  CHECK_ROW(z * y * x, x * y * z);
  CHECK_ROW(x * (y * z) - (z * x) * y, 0);
  CHECK_ROW((x - x) * y, 0);
  CHECK_ROW(x * -1 * -1, x);
  CHECK_ROW(x * 65536 * 65536, 0);  // 2^32 wraps to 0 in int32
  CHECK_ROW(y * (x + 1), y * (x + 1));
}

TEST_F(ArithTable, ConstantFolding) {
  CHECK_ROW(E(3) + 4, 7);
  CHECK_ROW(E(3) - 10, -7);
  CHECK_ROW(E(6) * -7, -42);
  CHECK_ROW(E(2147483647) + 1, std::numeric_limits<int32_t>::min());
  CHECK_ROW(E(65536) * 65536, 0);
  CHECK_ROW(c64(std::numeric_limits<int64_t>::max()) + c64(1),
            c64(std::numeric_limits<int64_t>::min()));
  CHECK_ROW(c(i8, 127) + c(i8, 1), c(i8, -128));
  CHECK_ROW(c(i8, -128) - c(i8, 1), c(i8, 127));
  CHECK_ROW(c(i8, 16) * c(i8, 16), c(i8, 0));
  CHECK_ROW(c(i8, -128) * c(i8, -1), c(i8, -128));
  CHECK_ROW(fdiv(c(i8, -128), c(i8, -1)), c(i8, -128));
  CHECK_ROW(c(u8, 255) + c(u8, 1), c(u8, 0));
  CHECK_ROW(c(u8, 0) - c(u8, 1), c(u8, 255));
  CHECK_ROW(c(u8, 200) * c(u8, 2), c(u8, 144));
  CHECK_ROW(fdiv(c(u8, 255), c(u8, 16)), c(u8, 15));
  CHECK_ROW(fmod(c(u8, 255), c(u8, 16)), c(u8, 15));
  CHECK_ROW(c(u8, 200) < c(u8, 100), fls());
  CHECK_ROW(max(c(u8, 200), c(u8, 100)), c(u8, 200));
  CHECK_ROW(tdiv(c(u8, 200), c(u8, 7)), c(u8, 28));
  CHECK_ROW(tmod(c(u8, 200), c(u8, 7)), c(u8, 4));
  CHECK_ROW(c(DataType::Int(16), 32767) + c(DataType::Int(16), 1), c(DataType::Int(16), -32768));
  const DataType u64 = DataType::UInt(64);
  E u64_max = IntImm::make(u64, -1);  // 2^64 - 1, stored in two's complement
  CHECK_ROW(u64_max + IntImm::make(u64, 1), IntImm::make(u64, 0));
  CHECK_ROW(fdiv(u64_max, IntImm::make(u64, 2)),
            IntImm::make(u64, std::numeric_limits<int64_t>::max()));
  CHECK_ROW(u64_max > IntImm::make(u64, 1), tru());
  CHECK_ROW(cast(i32, u64_max), -1);
  CHECK_ROW(cast(i64, c(u8, 255)), c64(255));
  CHECK_ROW(cast(i8, c(u8, 255)), c(i8, -1));
  CHECK_ROW(min(E(3), 5), 3);
  CHECK_ROW(max(E(-3), 5), 5);
  CHECK_ROW(E(3) < 4, tru());
  CHECK_ROW(E(3) >= 4, fls());
  CHECK_ROW(E(3) == 3, tru());
  CHECK_ROW(E(3) != 3, fls());
  CHECK_ROW(tru() && fls(), fls());
  CHECK_ROW(tru() || fls(), tru());
  CHECK_ROW(!tru(), fls());
  CHECK_ROW(select(tru(), E(1), E(2)), 1);
  CHECK_ROW(c(f32, 1.5) + c(f32, 2.25), c(f32, 3.75));
  CHECK_ROW(c(f32, 1.0) / c(f32, 3.0), c(f32, static_cast<double>(1.0f / 3.0f)));
  CHECK_ROW(c(f64, 0.1) + c(f64, 0.2), c(f64, 0.1 + 0.2));
  CHECK_ROW(c(f32, 1.1f) * c(f32, 3.0), c(f32, static_cast<double>(1.1f * 3.0f)));
  CHECK_ROW(c(f32, 1.0) < c(f32, 2.0), tru());
  CHECK_ROW(c(f32, NAN) == c(f32, NAN), fls());
  CHECK_ROW(c(f32, NAN) != c(f32, NAN), tru());
  // float16 arithmetic is not folded (its rounding is not modelled), comparisons are.
  CHECK_ROW(c(f16, 1.0) + c(f16, 2.0), c(f16, 1.0) + c(f16, 2.0));
  CHECK_ROW(c(f16, 1.0) < c(f16, 2.0), tru());
  CHECK_ROW(c(f32, 1.0) / c(f32, 0.0), c(f32, 1.0) / c(f32, 0.0));
}

TEST_F(ArithTable, FloatsAreNotReassociated) {
  CHECK_ROW(xf + c(f32, 0.0), xf + c(f32, 0.0));  // -0.0 + 0.0 is +0.0
  CHECK_ROW(xf - c(f32, 0.0), xf);
  CHECK_ROW(xf * c(f32, 1.0), xf);
  CHECK_ROW(c(f32, 1.0) * xf, xf);
  CHECK_ROW(xf * c(f32, 0.0), xf * c(f32, 0.0));  // NaN * 0 is NaN
  CHECK_ROW(xf - xf, xf - xf);
  CHECK_ROW((xf + yf) - yf, (xf + yf) - yf);
  CHECK_ROW(yf + xf, xf + yf);  // commutative operands are ordered
  CHECK_ROW(yf * xf, xf * yf);
  CHECK_ROW(yf == xf, xf == yf);
  CHECK_ROW(yf - xf, yf - xf);
  CHECK_ROW(min(yf, xf), min(yf, xf));  // min with a NaN operand depends on the order
  CHECK_ROW((yf + xf) + c(f32, 1.0), (xf + yf) + c(f32, 1.0));
  CHECK_ROW(c(f32, 1.0) + (yf + c(f32, 2.0)), (yf + c(f32, 2.0)) + c(f32, 1.0));  // not 3.0
  CHECK_ROW(xf == xf, xf == xf);                                                  // NaN != NaN
  CHECK_ROW(min(xf, xf), xf);
  CHECK_ROW(tdiv(xf, c(f32, 1.0)), xf);
  CHECK_ROW(!(xf < yf), !(xf < yf));  // not (NaN < y) is not NaN >= y
  CHECK_ROW(!(xf == yf), xf != yf);
}

TEST_F(ArithTable, FloorDivFloorMod) {
  // Floor semantics on negative numbers, positive and negative divisors.
  CHECK_ROW(fdiv(E(7), 2), 3);
  CHECK_ROW(fdiv(E(-7), 2), -4);
  CHECK_ROW(fdiv(E(7), -2), -4);
  CHECK_ROW(fdiv(E(-7), -2), 3);
  CHECK_ROW(fmod(E(7), 2), 1);
  CHECK_ROW(fmod(E(-7), 2), 1);
  CHECK_ROW(fmod(E(7), -2), -1);
  CHECK_ROW(fmod(E(-7), -2), -1);
  CHECK_ROW(fdiv(E(9), -4), -3);
  CHECK_ROW(fmod(E(9), -4), -3);
  CHECK_ROW(fdiv(E(std::numeric_limits<int32_t>::min()), -1), std::numeric_limits<int32_t>::min());
  CHECK_ROW(fmod(E(std::numeric_limits<int32_t>::min()), -1), 0);
  CHECK_ROW(fdiv(E(7), 0), fdiv(E(7), 0));  // division by zero is left alone
  // Identities.
  CHECK_ROW(fdiv(x, 1), x);
  CHECK_ROW(fmod(x, 1), 0);
  CHECK_ROW(fdiv(x, -1), x * -1);
  CHECK_ROW(fmod(x, -1), 0);
  // Division by zero has a result (x // 0 is -1, x % 0 is x): a division by a variable is
  // dropped only where the divisor is provably nonzero. x % x is 0 even for x == 0.
  CHECK_ROW(fdiv(x, x), fdiv(x, x));
  CHECK_ROW(fdiv(E(i) + 1, E(i) + 1), 1);
  CHECK_ROW(fmod(x, x), 0);
  CHECK_ROW(fdiv(E(0), x), fdiv(E(0), x));
  CHECK_ROW(fdiv(E(0), E(i) + 1), 0);
  CHECK_ROW(fmod(E(0), x), 0);
  CHECK_ROW(fdiv(x, -4), fdiv(x, -4));
  // Divisibility: residues modulo powers of two survive wraparound.
  CHECK_ROW(fmod(x * 8, 4), 0);
  CHECK_ROW(fmod(x * 8 + 3, 4), 3);
  CHECK_ROW(fmod(x * 4 + y, 2), fmod(y, 2));
  CHECK_ROW(fmod(x + 5, 4), fmod(x + 1, 4));
  CHECK_ROW(fmod(x * 3, 3), fmod(x * 3, 3));  // x*3 may wrap; 3 does not divide 2^32
  CHECK_ROW(fmod(fmod(x, 16), 4), fmod(x, 4));
  CHECK_ROW(fmod(fmod(x, 4), 16), fmod(x, 4));
  CHECK_ROW(fdiv(fdiv(x, 4), 8), fdiv(x, 32));
  // Recombination of quotient and remainder.
  CHECK_ROW(fdiv(x, 16) * 16 + fmod(x, 16), x);
  CHECK_ROW(fmod(x, 16) + fdiv(x, 16) * 16 + y, x + y);
  CHECK_ROW(x - fdiv(x, 16) * 16, fmod(x, 16));
  CHECK_ROW(tdiv(x, 8) * 8 + tmod(x, 8), x);
  // With bounds: i in [0, 64), j in [0, 16).
  CHECK_ROW(fdiv(i * 16 + j, 16), i);
  CHECK_ROW(fmod(i * 16 + j, 16), j);
  CHECK_ROW(fdiv(j + i * 16, 16), i);
  CHECK_ROW(fdiv(i * 16 + j + 32, 16), i + 2);
  CHECK_ROW(fmod(i * 16 + j + 32, 16), j);
  CHECK_ROW(fdiv(i * 8, 4), i * 2);
  CHECK_ROW(fdiv(i, 64), 0);
  CHECK_ROW(fmod(i, 64), i);
  CHECK_ROW(fdiv(i + 64, 64), 1);
  CHECK_ROW(fmod(i + 64, 64), i);
  CHECK_ROW(fdiv(i * 4 + 2, 4), i);
  CHECK_ROW(fdiv(i * 4 + j, 4), i + fdiv(j, 4));
  CHECK_ROW(fdiv(i * 6 + 4, 3), i * 2 + 1);
  CHECK_ROW(fmod(i * 3, 3), 0);
  CHECK_ROW(fdiv(i - 1, 64), fdiv(i - 1, 64));  // -1 // 64 == -1, 62 // 64 == 0
  CHECK_ROW(fdiv(p, 16), fdiv(p, 16));          // p in [-8, 8): -1 or 0
  CHECK_ROW(fdiv(p + c64(8), c64(16)), c64(0));
  CHECK_ROW(fdiv(x * 8, 4), fdiv(x * 8, 4));  // x*8 may wrap
}

TEST_F(ArithTable, TruncDivTruncMod) {
  CHECK_ROW(tdiv(E(-7), 2), -3);
  CHECK_ROW(tdiv(E(7), -2), -3);
  CHECK_ROW(tmod(E(-7), 2), -1);
  CHECK_ROW(tmod(E(7), -2), 1);
  CHECK_ROW(tdiv(E(std::numeric_limits<int32_t>::min()), -1), std::numeric_limits<int32_t>::min());
  CHECK_ROW(tmod(E(std::numeric_limits<int32_t>::min()), -1), 0);
  CHECK_ROW(tdiv(x, 1), x);
  CHECK_ROW(tmod(x, 1), 0);
  CHECK_ROW(tdiv(x, -1), x * -1);
  CHECK_ROW(tdiv(x, x), tdiv(x, x));  // x may be 0: truncdiv(0, 0) is -1
  CHECK_ROW(tdiv(E(j) + 1, E(j) + 1), 1);
  CHECK_ROW(tmod(x, x), 0);  // truncmod(0, 0) is 0 too
  CHECK_ROW(tdiv(E(0), x), tdiv(E(0), x));
  CHECK_ROW(tmod(E(0), x), 0);
  CHECK_ROW(tdiv(x, 4), tdiv(x, 4));  // x may be negative
  CHECK_ROW(tdiv(i, 4), fdiv(i, 4));  // non-negative: floor and trunc agree
  CHECK_ROW(tmod(i, 4), fmod(i, 4));
  CHECK_ROW(tdiv(i * 16 + j, 16), i);
  CHECK_ROW(tmod(i * 16 + j, 16), j);
  CHECK_ROW(tdiv(p, c64(16)), c64(0));
  CHECK_ROW(tmod(p, c64(16)), p);
  CHECK_ROW(tdiv(p, c64(-16)), c64(0));
}

TEST_F(ArithTable, MinMax) {
  CHECK_ROW(min(x, x), x);
  CHECK_ROW(max(x, x), x);
  CHECK_ROW(min(y, x), min(x, y));
  CHECK_ROW(max(y, x), max(x, y));
  CHECK_ROW(min(min(x, y), x), min(x, y));
  CHECK_ROW(max(y, max(x, y)), max(x, y));
  CHECK_ROW(min(x, min(y, 3)), min(min(x, y), 3));
  CHECK_ROW(min(min(x, 2), 5), min(x, 2));
  CHECK_ROW(max(3, max(x, 7)), max(x, 7));
  CHECK_ROW(min(x, y) - min(y, x), 0);
  CHECK_ROW(min(i, 64), i);
  CHECK_ROW(max(i, 0), i);
  CHECK_ROW(min(i, -1), -1);
  CHECK_ROW(max(i, 100), 100);
  CHECK_ROW(min(i + 2, i), i);
  CHECK_ROW(max(i + 2, i), i + 2);
  CHECK_ROW(min(i, j), min(i, j));
  CHECK_ROW(max(j, i * 16 + j), i * 16 + j);
  CHECK_ROW(min(k, n), k);
  CHECK_ROW(max(k + 1, n), n);
  CHECK_ROW(min(x + 2, x), min(x, x + 2));  // x + 2 may wrap below x
  CHECK_ROW(min(x, 2147483647), x);
  CHECK_ROW(max(x, -2147483647 - 1), x);
}

TEST_F(ArithTable, Comparisons) {
  CHECK_ROW(x < x, fls());
  CHECK_ROW(x <= x, tru());
  CHECK_ROW(x == x, tru());
  CHECK_ROW(x != x, fls());
  CHECK_ROW(i < 64, tru());
  CHECK_ROW(i >= 0, tru());
  CHECK_ROW(i < 0, fls());
  CHECK_ROW(i > 63, fls());
  CHECK_ROW(i == 64, fls());
  CHECK_ROW(i != 64, tru());
  CHECK_ROW(i * 16 + j < 1024, tru());
  CHECK_ROW(k < n, tru());
  CHECK_ROW(k + 1 <= n, tru());
  CHECK_ROW(n - k > 0, tru());
  CHECK_ROW(k >= n, fls());
  CHECK_ROW(x * 2 < x * 2 + 1, tru());  // x*2 is even: +1 never wraps
  CHECK_ROW(x * 2 + 1 > x * 2, tru());
  CHECK_ROW(x < x + 1, x < x + 1);  // false for x == INT32_MAX
  CHECK_ROW(x * 2 == 1, fls());
  CHECK_ROW(x * 2 == x * 2 + 1, fls());
  CHECK_ROW(x * 4 + 2 == 8, fls());
  CHECK_ROW(x + y == y + x, tru());
  CHECK_ROW(x + 3 == 7, x == 4);
  CHECK_ROW(E(7) == x + 3, x == 4);
  CHECK_ROW(y == x, x == y);
  CHECK_ROW(y != x, x != y);
  CHECK_ROW(x - y == 0, x == y);
  CHECK_ROW(x * 2 + 1 == y, x * 2 == y - 1);
  CHECK_ROW(x + 1 < y, x + 1 < y);  // x + 1 may wrap: left as it is
  CHECK_ROW(i + 1 < j, i < j - 1);
  CHECK_ROW(i * 2 < 5, i < 3);
  CHECK_ROW(i * 3 >= 7, i >= 3);
  CHECK_ROW(i > 3, i > 3);
  CHECK_ROW(E(3) < i, E(3) < i);
  CHECK_ROW(i * 2 + 2 <= j * 2, i <= j - 1);
  CHECK_ROW(c(u8, 0) <= Var::make("u", u8), tru());
  CHECK_ROW(xb == tru(), xb);
  CHECK_ROW(xb == fls(), !xb);
  CHECK_ROW(xb != fls(), xb);
  CHECK_ROW(yb == xb, xb == yb);
}

TEST_F(ArithTable, Logical) {
  CHECK_ROW(tru() && xb, xb);
  CHECK_ROW(fls() && xb, fls());
  CHECK_ROW(xb || tru(), tru());
  CHECK_ROW(xb || fls(), xb);
  CHECK_ROW(xb && xb, xb);
  CHECK_ROW(xb && !xb, fls());
  CHECK_ROW(xb || !xb, tru());
  CHECK_ROW(yb && xb, xb && yb);
  CHECK_ROW(yb || xb, xb || yb);
  CHECK_ROW((x < 4) && (x >= 4), fls());
  CHECK_ROW((x < 4) || (x >= 4), tru());
  CHECK_ROW((x < 4) && (x < 6), x < 4);
  CHECK_ROW((x < 6) && (x < 4), x < 4);
  CHECK_ROW((x < 6) || (x < 4), x < 6);
  CHECK_ROW((x < y) && (y <= x), fls());
  CHECK_ROW((x == 3) && (x + 1 == 4), x == 3);
  CHECK_ROW((x == 3) && (x == 4), fls());
  CHECK_ROW(!(x < 4), x >= 4);
  CHECK_ROW(!(x == y), x != y);
  CHECK_ROW(!!xb, xb);
  CHECK_ROW(!(i < 64), fls());
  CHECK_ROW((i < 64) && xb, xb);
  CHECK_ROW((x < 4) && xb && (x < 2), xb && (x < 2));
}

TEST_F(ArithTable, Select) {
  CHECK_ROW(select(tru(), x, y), x);
  CHECK_ROW(select(fls(), x, y), y);
  CHECK_ROW(select(xb, x, x), x);
  CHECK_ROW(select(x < 4, 1, 2), select(x < 4, 1, 2));
  CHECK_ROW(select(i < 64, i, 0), i);
  CHECK_ROW(select(x < 4, min(x, 4), 4), select(x < 4, x, 4));
  CHECK_ROW(select(x == 3, x + 1, 0), select(x == 3, 4, 0));
  CHECK_ROW(select(xb, tru(), fls()), xb);
  CHECK_ROW(select(xb, fls(), tru()), !xb);
  CHECK_ROW(select(x < 4, x + 0, y * 1), select(x < 4, x, y));
}

TEST_F(ArithTable, Cast) {
  CHECK_ROW(cast(i32, x), x);
  CHECK_ROW(cast(i64, cast(i32, p)), p);
  CHECK_ROW(cast(i32, cast(i64, x)), x);
  CHECK_ROW(cast(i64, cast(i32, q)), cast(i64, cast(i32, q)));  // q may not fit int32
  CHECK_ROW(cast(i8, 300), c(i8, 44));
  CHECK_ROW(cast(u8, -1), c(u8, 255));
  CHECK_ROW(cast(i32, c(f32, 3.7)), 3);
  CHECK_ROW(cast(i32, c(f64, -3.7)), -3);
  CHECK_ROW(cast(i32, c(f64, 1e10)), 2147483647);  // out of range: saturates (docs/semantics.md)
  CHECK_ROW(cast(f32, 3), c(f32, 3.0));
  CHECK_ROW(cast(f32, c(f64, 0.1)), c(f32, static_cast<double>(0.1f)));
  CHECK_ROW(cast(b1, 5), tru());
  CHECK_ROW(cast(i32, tru()), 1);
  CHECK_ROW(cast(i64, x + 0), cast(i64, x));
}

TEST_F(ArithTable, Let) {
  Var v = Var::make("v", i32);
  CHECK_ROW(let(v, 3, v + x), x + 3);
  CHECK_ROW(let(v, x, v * 2), x * 2);
  CHECK_ROW(let(v, x + 1, v - v), 0);
  CHECK_ROW(let(v, x + 1, v * 2), let(v, x + 1, v * 2));
  CHECK_ROW(let(v, i + 1, v <= 64), tru());
  CHECK_ROW(let(v, i + 0, v * 1), i);
  Expr impure = Call::make(i32, Op::get("call_extern"), {StringImm::make("f")});
  CHECK_ROW(let(v, impure, 0), let(v, impure, 0));
}

TEST_F(ArithTable, Vectors) {
  CHECK_ROW(bcast(x, 4) + bcast(y, 4), bcast(x + y, 4));
  CHECK_ROW(ramp(x, 1, 4) + bcast(y, 4), ramp(x + y, 1, 4));
  CHECK_ROW(bcast(y, 4) + ramp(x, 1, 4), ramp(x + y, 1, 4));
  CHECK_ROW(ramp(x, 1, 4) - bcast(x, 4), ramp(0, 1, 4));
  CHECK_ROW(bcast(x, 4) - ramp(y, 2, 4), ramp(x - y, -2, 4));
  CHECK_ROW(ramp(x, 2, 4) * bcast(3, 4), ramp(x * 3, 6, 4));
  CHECK_ROW(ramp(x, 1, 4) + ramp(y, 2, 4), ramp(x + y, 3, 4));
  CHECK_ROW(ramp(x, 0, 4), bcast(x, 4));
  CHECK_ROW(bcast(2, 4) * bcast(3, 4), bcast(6, 4));
  CHECK_ROW(bcast(x, 4) < bcast(y, 4), bcast(x < y, 4));
  CHECK_ROW(ramp(x, 1, 4) + bcast(0, 4), ramp(x, 1, 4));
  CHECK_ROW(bcast(xf, 4) * bcast(c(f32, 1.0), 4), bcast(xf, 4));
  Buffer A = Buffer::make("A", f32, {c(i32, 1024)});
  CHECK_ROW(BufferLoad::make(A, {ramp(x * 4 - x * 4, 1, 4)}), BufferLoad::make(A, {ramp(0, 1, 4)}));
}

TEST_F(ArithTable, CallsAndLoads) {
  Buffer A = Buffer::make("A", i32, {c(i32, 1024)});
  Expr load = BufferLoad::make(A, {x + 0});
  CHECK_ROW(load, BufferLoad::make(A, {x}));
  CHECK_ROW(load - load, 0);  // loads are pure
  Expr f = Call::make(i32, Op::get("call_extern"), {StringImm::make("f"), x + 0});
  Expr f_simplified = Call::make(i32, Op::get("call_extern"), {StringImm::make("f"), x});
  CHECK_ROW(f, f_simplified);
  CHECK_ROW(E(f) - f, E(f_simplified) - f_simplified);  // never dropped
  CHECK_ROW(E(f) * 0, E(f_simplified) * 0);             // never dropped
  CHECK_ROW(E(f) + f, E(f_simplified) + f_simplified);  // never merged into f * 2
  CHECK_ROW(E(f) + 0, f_simplified);                    // dropping a literal is fine
  CHECK_ROW(min(E(f), f), min(E(f_simplified), f_simplified));
  CHECK_ROW(select(fls(), E(f), 1), select(fls(), E(f_simplified), 1));
  // Select evaluates both branches and And both operands: a branch is not simplified under the
  // condition when that could make it fault (a load out of bounds, a division by zero).
  Expr guarded = select(x < n, BufferLoad::make(A, {min(x, E(n) - 1)}), 0);
  CHECK_ROW(guarded, guarded);
  Expr divide = select(x > 0, fdiv(y, max(x, 1)), 0);
  CHECK_ROW(divide, divide);
  Expr both = (x < n) && (BufferLoad::make(A, {min(x, E(n) - 1)}) > 0);
  CHECK_ROW(both, both);
  CHECK_ROW(select(x < 4, min(x, 4) * 2, 0), select(x < 4, x * 2, 0));  // safe: simplified
  Expr g = Call::make(i32, Op::get("call_pure_extern"), {StringImm::make("g"), x});
  CHECK_ROW(E(g) - g, 0);
  CHECK_ROW(Call::make(f32, Op::get("exp"), {xf * c(f32, 1.0)}),
            Call::make(f32, Op::get("exp"), {xf}));
}

}  // namespace
}  // namespace primjit::test
