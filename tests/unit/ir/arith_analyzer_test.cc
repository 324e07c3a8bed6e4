// primjit::arith: bounds, congruences, proofs, scoping, and the Analyzer API.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "primjit/arith.h"
#include "primjit/ir.h"
#include "primjit/ir/structural.h"
#include "tests/unit/ir/arith_test_util.h"

namespace primjit::test {
namespace {

using arith::Analyzer;
using arith::ConstIntBound;
using arith::ModularSet;

// ---------------------------------------------------------------------------------------------
// Bounds, congruences, proofs, scopes
// ---------------------------------------------------------------------------------------------

ConstIntBound bound(int64_t lo, int64_t hi) { return {lo, hi}; }

TEST(ArithBound, LoopVariables) {
  Analyzer an;
  Var n = Var::make("n", i32, /*is_size_var=*/true);
  Var i = Var::make("i", i32);
  Var k = Var::make("k", i32);
  an.bind(i, c(i32, 0), c(i32, 64));
  an.bind(k, c(i32, 0), n);
  EXPECT_EQ(an.const_int_bound(n), bound(0, std::numeric_limits<int32_t>::max()));
  EXPECT_EQ(an.const_int_bound(k), bound(0, std::numeric_limits<int32_t>::max() - 1));
  EXPECT_EQ(an.const_int_bound(i), bound(0, 63));
  EXPECT_EQ(an.const_int_bound(E(i) * 4 + 3), bound(3, 255));
  EXPECT_EQ(an.const_int_bound(fdiv(i, 8)), bound(0, 7));
  EXPECT_EQ(an.const_int_bound(fmod(i, 8)), bound(0, 7));
  EXPECT_EQ(an.const_int_bound(fmod(i, 100)), bound(0, 63));
  EXPECT_EQ(an.const_int_bound(E(i) - 64), bound(-64, -1));
  EXPECT_EQ(an.const_int_bound(min(i, 10)), bound(0, 10));
  EXPECT_EQ(an.const_int_bound(max(i, 10)), bound(10, 63));
  EXPECT_EQ(an.const_int_bound(E(i) * -2), bound(-126, 0));
  EXPECT_EQ(an.const_int_bound(E(i) * i), bound(0, 3969));
  EXPECT_EQ(an.const_int_bound(fdiv(E(i) - 64, 8)), bound(-8, -1));
  EXPECT_EQ(an.const_int_bound(tdiv(E(i) - 63, 8)), bound(-7, 0));
  EXPECT_EQ(an.const_int_bound(tmod(E(i) - 63, 8)), bound(-7, 0));
  EXPECT_EQ(an.const_int_bound(fdiv(100, E(i) + 1)), bound(1, 100));
  // A divisor that may be 0 adds the results of a division by zero: -1 and the dividend.
  EXPECT_EQ(an.const_int_bound(fdiv(100, i)), bound(-1, 100));
  EXPECT_EQ(an.const_int_bound(tdiv(100, i)), bound(-1, 100));
  EXPECT_EQ(an.const_int_bound(fmod(E(i) + 100, i)), bound(0, 163));
  EXPECT_EQ(an.const_int_bound(tmod(E(i) + 100, i)), bound(0, 163));
  EXPECT_EQ(an.const_int_bound(fmod(E(i) - 100, E(i) - 10)), bound(-100, 52));
  EXPECT_EQ(an.const_int_bound(select(E(i) < 3, E(i), 100)), bound(0, 100));
  EXPECT_EQ(an.const_int_bound(cast(i64, i)), bound(0, 63));
  EXPECT_EQ(an.const_int_bound(i < 3), bound(0, 1));
  EXPECT_EQ(an.const_int_bound(ramp(i, 2, 4)), bound(0, 69));
}

TEST(ArithBound, ThreadExtentsAndScopes) {
  Analyzer an;
  Var bx = Var::make("blockIdx.x", i32);
  Var tx = Var::make("threadIdx.x", i32);
  Expr global = E(bx) * 128 + tx;
  an.with_scope([&] {
    an.bind(bx, c(i32, 0), c(i32, 4));
    an.bind(tx, c(i32, 0), c(i32, 128));
    EXPECT_EQ(an.const_int_bound(global), bound(0, 511));
    EXPECT_TRUE(an.can_prove(E(global) < 512));
    EXPECT_TRUE(an.can_prove_equal(fdiv(global, 128), bx));
    EXPECT_TRUE(an.can_prove_equal(fmod(global, 128), tx));
    {
      Analyzer::Scope inner(an);
      an.assume(E(tx) < 32);
      EXPECT_EQ(an.const_int_bound(tx), bound(0, 31));
    }
    EXPECT_EQ(an.const_int_bound(tx), bound(0, 127));
  });
  // Out of the scope the ranges are gone.
  EXPECT_EQ(an.const_int_bound(tx),
            bound(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
  EXPECT_FALSE(an.can_prove(E(global) < 512));
}

TEST(ArithBound, WraparoundAndDtypes) {
  Analyzer an;
  Var x = Var::make("x", i32);
  Var q = Var::make("q", i64);
  Var u = Var::make("u", u8);
  Var b = Var::make("b", b1);
  Var f = Var::make("f", f32);
  const int64_t lo32 = std::numeric_limits<int32_t>::min();
  const int64_t hi32 = std::numeric_limits<int32_t>::max();
  EXPECT_EQ(an.const_int_bound(x), bound(lo32, hi32));
  EXPECT_EQ(an.const_int_bound(E(x) + 1), bound(lo32, hi32));  // may wrap: whole range
  EXPECT_EQ(an.const_int_bound(cast(i64, x)), bound(lo32, hi32));
  EXPECT_EQ(an.const_int_bound(cast(i64, x) + c64(1)), bound(lo32 + 1, hi32 + 1));
  EXPECT_EQ(an.const_int_bound(fmod(x, 16)), bound(0, 15));
  EXPECT_EQ(an.const_int_bound(tmod(x, 16)), bound(-15, 15));
  EXPECT_EQ(an.const_int_bound(fdiv(x, 65536)), bound(-32768, 32767));
  EXPECT_TRUE(an.const_int_bound(q).is_everything());
  EXPECT_EQ(an.const_int_bound(u), bound(0, 255));
  EXPECT_EQ(an.const_int_bound(E(u) + c(u8, 1)), bound(0, 255));
  EXPECT_EQ(an.const_int_bound(b), bound(0, 1));
  EXPECT_TRUE(an.const_int_bound(f).is_everything());
  EXPECT_EQ(an.const_int_bound(c(i32, 7)), bound(7, 7));
  EXPECT_TRUE(an.const_int_bound(c(i32, 7)).is_const());
}

TEST(ArithBound, BindExpression) {
  Analyzer an;
  Var i = Var::make("i", i32);
  Var v = Var::make("v", i32);
  Var w = Var::make("w", i32);
  an.bind(i, c(i32, 0), c(i32, 64));
  an.bind(v, E(i) * 2);
  an.bind(w, c(i32, 5));
  EXPECT_EQ(an.const_int_bound(v), bound(0, 126));
  EXPECT_EQ(an.modular_set(v), (ModularSet{2, 0}));
  EXPECT_TRUE(an.can_prove(E(v) < 128));
  EXPECT_TRUE(an.can_prove(fmod(v, 2) == 0));
  EXPECT_TRUE(an.can_prove(E(v) >= i));  // through the value: 2i >= i for i >= 0
  EXPECT_TRUE(an.can_prove(E(v) == E(i) * 2));
  EXPECT_TRUE(structural_equal(an.simplify(E(v) + 1), E(v) + 1));   // not inlined
  EXPECT_TRUE(structural_equal(an.simplify(E(w) + 1), c(i32, 6)));  // constants substitute
  EXPECT_EQ(an.const_int_bound(E(w) * 3), bound(15, 15));
}

TEST(ArithModular, Sets) {
  Analyzer an;
  Var i = Var::make("i", i32);
  Var x = Var::make("x", i32);
  EXPECT_EQ(an.modular_set(E(i) * 16 + 4), (ModularSet{16, 4}));  // holds even with wraparound
  EXPECT_EQ(an.modular_set(E(x) * 6 + 4), (ModularSet{2, 0}));    // 6 does not divide 2^32
  EXPECT_EQ(an.modular_set(c(i32, 7)), (ModularSet{0, 7}));
  EXPECT_EQ(an.modular_set(x), (ModularSet{1, 0}));
  EXPECT_EQ(an.modular_set(E(x) * 8 - 3), (ModularSet{8, 5}));
  EXPECT_EQ(an.modular_set(fmod(E(x) * 6 + 4, 8)), (ModularSet{2, 0}));
  EXPECT_EQ(an.modular_set(E(x) * 4 * i), (ModularSet{4, 0}));
  an.bind(i, c(i32, 0), c(i32, 64));
  EXPECT_EQ(an.modular_set(E(i) * 6 + 4), (ModularSet{6, 4}));
  EXPECT_EQ(an.modular_set(fdiv(E(i) * 16 + 4, 4)), (ModularSet{4, 1}));
  EXPECT_EQ(an.modular_set(select(E(i) < 3, E(i) * 4 + 1, E(i) * 8 + 5)), (ModularSet{4, 1}));
  EXPECT_EQ(an.modular_set(c(f32, 1.0)), (ModularSet{1, 0}));
}

TEST(ArithProve, TrueAndUnprovable) {
  Analyzer an;
  Var x = Var::make("x", i32);
  Var y = Var::make("y", i32);
  Var i = Var::make("i", i32);
  Var j = Var::make("j", i32);
  Var n = Var::make("n", i32, true);
  Var k = Var::make("k", i32);
  an.bind(i, c(i32, 0), c(i32, 64));
  an.bind(j, c(i32, 0), c(i32, 16));
  an.bind(k, c(i32, 0), n);
  // Provable.
  EXPECT_TRUE(an.can_prove(E(i) < 64));
  EXPECT_TRUE(an.can_prove(E(i) >= 0));
  EXPECT_TRUE(an.can_prove(E(i) * 16 + j < 1024));
  EXPECT_TRUE(an.can_prove(fdiv(E(i) * 16 + j, 16) == i));
  EXPECT_TRUE(an.can_prove(E(k) < n));
  EXPECT_TRUE(an.can_prove(E(n) - k > 0));
  EXPECT_TRUE(an.can_prove(min(i, 10) <= 10));
  EXPECT_TRUE(an.can_prove(E(x) * 2 != 1));
  EXPECT_TRUE(an.can_prove(E(x) * 2 < E(x) * 2 + 1));
  EXPECT_TRUE(an.can_prove(fmod(E(x) * 4, 2) == 0));
  EXPECT_TRUE(an.can_prove(!(E(i) < 0)));
  EXPECT_TRUE(an.can_prove((E(x) < 4) || (E(x) >= 4)));
  EXPECT_TRUE(an.can_prove(E(x) + y == E(y) + x));
  EXPECT_TRUE(an.can_prove_equal(E(x) + y, E(y) + x));
  EXPECT_TRUE(an.can_prove_equal(fdiv(E(i) * 16 + j, 16), i));
  // Unprovable or false: must stay false.
  EXPECT_FALSE(an.can_prove(E(x) < 100));
  EXPECT_FALSE(an.can_prove(E(x) + 1 > x));  // wraps at INT32_MAX
  EXPECT_FALSE(an.can_prove(E(i) < 63));
  EXPECT_FALSE(an.can_prove(E(k) < E(n) - 1));
  EXPECT_FALSE(an.can_prove(E(x) == y));
  EXPECT_FALSE(an.can_prove(E(i) < 0));
  EXPECT_FALSE(an.can_prove(fmod(E(x) * 3, 3) == 0));  // x*3 may wrap
  EXPECT_FALSE(an.can_prove(E(k) + 1 < n));
  EXPECT_FALSE(an.can_prove_equal(x, y));
  EXPECT_FALSE(an.can_prove_equal(E(x) * 2, E(x) + 1));
  EXPECT_FALSE(an.can_prove(Var::make("b", b1)));
}

TEST(ArithProve, Disjunctions) {
  Analyzer an;
  Var x = Var::make("x", i32);
  Var y = Var::make("y", i32);
  Var z = Var::make("z", i32);
  an.with_scope([&] {
    // Each case decides the question the same way.
    an.assume((E(x) == 1) || (E(x) == 2));
    EXPECT_TRUE(an.can_prove(E(x) >= 1));
    EXPECT_TRUE(an.can_prove(E(x) < 3));
    EXPECT_TRUE(an.can_prove(E(x) != 5));
    EXPECT_FALSE(an.can_prove(E(x) == 1));  // the cases disagree
    EXPECT_FALSE(an.can_prove(E(x) == 2));
  });
  EXPECT_FALSE(an.can_prove(E(x) >= 1));  // gone with its scope
  an.with_scope([&] {
    // not (x < 4 and y < 4): one of them failed.
    an.assume(!((E(x) < 4) && (E(y) < 4)));
    EXPECT_TRUE(an.can_prove((E(x) >= 4) || (E(y) >= 4)));
    EXPECT_FALSE(an.can_prove(E(x) >= 4));
    // A case that the context rules out leaves the other.
    an.assume(E(x) < 2);
    EXPECT_TRUE(an.can_prove(E(y) >= 4));
  });
  an.with_scope([&] {
    an.assume((E(x) < 0) || (E(z) < 8));
    an.assume(E(x) >= 0);
    EXPECT_TRUE(an.can_prove(E(z) < 9));
    EXPECT_FALSE(an.can_prove(E(z) < 7));
  });
}

TEST(ArithProve, ChainsAndBooleanBinds) {
  Analyzer an;
  Var i = Var::make("i", i32);
  Var j = Var::make("j", i32);
  Var k = Var::make("k", i32);
  an.with_scope([&] {
    an.assume((E(i) < j) && (E(j) <= k));
    EXPECT_TRUE(an.can_prove(E(i) < k));
    EXPECT_FALSE(an.can_prove(E(i) < E(k) - 1));
  });
  Var b = Var::make("b", b1);
  an.with_scope([&] {
    an.bind(i, c(i32, 0), c(i32, 16));
    an.bind(b, E(i) < 3);
    EXPECT_TRUE(an.can_prove(E(b) || (E(i) >= 3)));
    EXPECT_FALSE(an.can_prove(E(b) || (E(i) >= 4)));
    an.with_scope([&] {
      an.assume(b);
      EXPECT_TRUE(an.can_prove(E(i) < 3));
    });
    an.with_scope([&] {
      an.assume(!E(b));
      EXPECT_TRUE(an.can_prove(E(i) >= 3));
    });
  });
}

TEST(ArithProve, TilesOfAFloorDivision) {
  Analyzer an;
  Var n = Var::make("n", i32);
  Var io = Var::make("io", i32);
  Var ii = Var::make("ii", i32);
  an.with_scope([&] {
    // range(n // 4) tiles of 4 stay below n: io * 4 <= n // 4 * 4 - 4 <= n - 4.
    an.bind(io, c(i32, 0), fdiv(n, 4));
    an.bind(ii, c(i32, 0), c(i32, 4));
    EXPECT_TRUE(an.can_prove(E(io) * 4 + ii < n));
    EXPECT_TRUE(an.can_prove(fdiv(n, 4) * 4 <= n));
    EXPECT_FALSE(an.can_prove(fdiv(n, 4) * 4 < n));  // n % 4 may be 0
  });
  an.with_scope([&] {
    // range((n + 3) // 4): the last tile may be partial.
    an.bind(io, c(i32, 0), fdiv(E(n) + 3, 4));
    an.bind(ii, c(i32, 0), c(i32, 4));
    EXPECT_FALSE(an.can_prove(E(io) * 4 + ii < n));
  });
}

TEST(ArithProve, Assumptions) {
  Analyzer an;
  Var x = Var::make("x", i32);
  Var y = Var::make("y", i32);
  Var b = Var::make("b", b1);
  an.with_scope([&] {
    an.assume(E(x) < 10);
    EXPECT_TRUE(an.can_prove(E(x) < 20));
    EXPECT_FALSE(an.can_prove(E(x) < 5));
    EXPECT_EQ(an.const_int_bound(x).max, 9);
  });
  an.with_scope([&] {
    an.assume((E(x) < y) && b);
    EXPECT_TRUE(an.can_prove(E(x) < y));
    EXPECT_TRUE(an.can_prove(E(x) != y));
    EXPECT_TRUE(an.can_prove(b));
    EXPECT_FALSE(an.can_prove(E(y) < x));
  });
  an.with_scope([&] {
    an.assume(!(E(x) >= 3));
    EXPECT_TRUE(an.can_prove(E(x) <= 2));
  });
  EXPECT_FALSE(an.can_prove(E(x) < 20));
  EXPECT_FALSE(an.can_prove(b));
}

TEST(ArithApi, IdentityDeterminismAndErrors) {
  Var x = Var::make("x", i32);
  Var y = Var::make("y", i32);
  // A simplified expression comes back as the very same node.
  Expr s = arith::simplify(E(y) + x + 1);
  EXPECT_TRUE(arith::simplify(s).same_as(s));
  Expr already = E(x) + y;
  EXPECT_TRUE(arith::simplify(already).same_as(already));
  // Two independently built copies simplify to structurally equal results.
  auto build = [] {
    Var a = Var::make("a", i32);
    Var b = Var::make("b", i32);
    Var cc = Var::make("c", i32);
    return E(cc) * 3 + fdiv(b, 4) - a + min(b, a) + select(E(cc) < a, 1, 2);
  };
  auto build2 = [] {
    Var a = Var::make("a", i32);
    Var b = Var::make("b", i32);
    Var cc = Var::make("c", i32);
    return select(E(b) < a, E(cc) * 3 + fdiv(b, 4) - a + min(b, a), a * 2 + 1);
  };
  EXPECT_TRUE(structural_equal(arith::simplify(build().e), arith::simplify(build().e)));
  EXPECT_TRUE(structural_equal(arith::simplify(build2().e), arith::simplify(build2().e)));
  // Same-named variables keep a deterministic order (first use).
  Var x2 = Var::make("x", i32);
  Expr two = arith::simplify(E(x2) + x + x2);
  EXPECT_TRUE(same(two, E(x2) * 2 + x)) << str(two);
  // API misuse is a user error.
  Analyzer an;
  EXPECT_THROW(an.bind(x, c64(0), c64(4)), Error);
  EXPECT_THROW(an.bind(x, c64(4)), Error);
  EXPECT_THROW(an.can_prove(x), Error);
}

}  // namespace
}  // namespace primjit::test
