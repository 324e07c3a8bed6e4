// primjit::arith: a soundness/idempotence property test over random integer expressions
// evaluated by a reference interpreter with wraparound semantics.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "primjit/arith.h"
#include "primjit/ir.h"
#include "tests/unit/ir/arith_test_util.h"

namespace primjit::test {
namespace {

using arith::Analyzer;
using arith::ConstIntBound;
using arith::ModularSet;

// ---------------------------------------------------------------------------------------------
// Property test: random integer expressions keep their value and simplify idempotently.
// ---------------------------------------------------------------------------------------------

// Reference evaluator with the IR's semantics (wraparound via unsigned arithmetic).
std::pair<Expr, Expr> operands(const Expr& e) {
  switch (e.kind()) {
    case NodeKind::kDiv:
      return {e.as<Div>()->a, e.as<Div>()->b};
    case NodeKind::kMod:
      return {e.as<Mod>()->a, e.as<Mod>()->b};
    case NodeKind::kFloorDiv:
      return {e.as<FloorDiv>()->a, e.as<FloorDiv>()->b};
    default:
      return {e.as<FloorMod>()->a, e.as<FloorMod>()->b};
  }
}

class Evaluator {
 public:
  std::map<const VarNode*, int64_t> env;

  static int64_t wrap(DataType t, uint64_t v) {
    if (t.is_bool()) return static_cast<int64_t>(v & 1);
    if (t.bits() == 64) return static_cast<int64_t>(v);
    uint64_t mask = (uint64_t{1} << t.bits()) - 1;
    v &= mask;
    if (t.is_int() && (v >> (t.bits() - 1)) & 1) return static_cast<int64_t>(v | ~mask);
    return static_cast<int64_t>(v);
  }
  static int64_t min_of(DataType t) {
    if (t.is_uint()) return 0;
    return t.bits() == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (t.bits() - 1));
  }

  int64_t eval(const Expr& e) {
    DataType t = e.dtype();
    auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
    switch (e.kind()) {
      case NodeKind::kIntImm:
        return e.as<IntImm>()->value;
      case NodeKind::kVar: {
        auto it = env.find(e.as<VarNode>());
        if (it == env.end()) throw std::runtime_error("unbound variable " + str(e));
        return it->second;
      }
      case NodeKind::kAdd:
        return wrap(t, u(eval(e.as<Add>()->a)) + u(eval(e.as<Add>()->b)));
      case NodeKind::kSub:
        return wrap(t, u(eval(e.as<Sub>()->a)) - u(eval(e.as<Sub>()->b)));
      case NodeKind::kMul:
        return wrap(t, u(eval(e.as<Mul>()->a)) * u(eval(e.as<Mul>()->b)));
      case NodeKind::kDiv:
      case NodeKind::kMod:
      case NodeKind::kFloorDiv:
      case NodeKind::kFloorMod: {
        auto [ea, eb] = operands(e);
        int64_t a = eval(ea);
        int64_t b = eval(eb);
        bool is_div = e.kind() == NodeKind::kDiv || e.kind() == NodeKind::kFloorDiv;
        if (b == 0) return is_div ? wrap(t, ~uint64_t{0}) : a;  // x / 0 is -1, x % 0 is x
        if (a == min_of(t) && b == -1) return is_div ? a : 0;   // wraps
        int64_t q = a / b;
        int64_t r = a % b;
        if ((e.kind() == NodeKind::kFloorDiv || e.kind() == NodeKind::kFloorMod) && r != 0 &&
            ((r < 0) != (b < 0))) {
          q -= 1;
          r += b;
        }
        return wrap(t, u(is_div ? q : r));
      }
      case NodeKind::kMin:
        return std::min(eval(e.as<Min>()->a), eval(e.as<Min>()->b));
      case NodeKind::kMax:
        return std::max(eval(e.as<Max>()->a), eval(e.as<Max>()->b));
      case NodeKind::kEQ:
        return eval(e.as<EQ>()->a) == eval(e.as<EQ>()->b);
      case NodeKind::kNE:
        return eval(e.as<NE>()->a) != eval(e.as<NE>()->b);
      case NodeKind::kLT:
        return eval(e.as<LT>()->a) < eval(e.as<LT>()->b);
      case NodeKind::kLE:
        return eval(e.as<LE>()->a) <= eval(e.as<LE>()->b);
      case NodeKind::kGT:
        return eval(e.as<GT>()->a) > eval(e.as<GT>()->b);
      case NodeKind::kGE:
        return eval(e.as<GE>()->a) >= eval(e.as<GE>()->b);
      case NodeKind::kAnd: {
        int64_t a = eval(e.as<And>()->a);
        int64_t b = eval(e.as<And>()->b);  // both operands are evaluated
        return a && b;
      }
      case NodeKind::kOr: {
        int64_t a = eval(e.as<Or>()->a);
        int64_t b = eval(e.as<Or>()->b);
        return a || b;
      }
      case NodeKind::kNot:
        return !eval(e.as<Not>()->a);
      case NodeKind::kSelect: {
        const auto* s = e.as<Select>();
        int64_t cond = eval(s->condition);
        int64_t tv = eval(s->true_value);
        int64_t fv = eval(s->false_value);
        return cond ? tv : fv;
      }
      case NodeKind::kCast: {
        int64_t v = eval(e.as<Cast>()->value);
        return t.is_bool() ? (v != 0) : wrap(t, u(v));
      }
      case NodeKind::kLet: {
        const auto* l = e.as<Let>();
        int64_t v = eval(l->value);
        auto saved = env.find(l->var.get()) != env.end() ? std::optional<int64_t>(env[l->var.get()])
                                                         : std::nullopt;
        env[l->var.get()] = v;
        int64_t r = eval(l->body);
        if (saved) {
          env[l->var.get()] = *saved;
        } else {
          env.erase(l->var.get());
        }
        return r;
      }
      default:
        throw std::runtime_error("evaluator: unsupported " + str(e));
    }
  }
};

int64_t lowest(DataType t) {
  if (t.is_uint()) return 0;
  return t.bits() == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (t.bits() - 1));
}
int64_t highest(DataType t) {
  if (t.bits() == 64) return std::numeric_limits<int64_t>::max();
  return t.is_uint() ? (int64_t{1} << t.bits()) - 1 : (int64_t{1} << (t.bits() - 1)) - 1;
}

// Random expressions over two integer dtypes `ta` (variables a, b, c and the size variable n)
// and `tb` (variables p, q, r).
class Generator {
 public:
  Generator(uint64_t seed, DataType ta, DataType tb) : rng_(seed), ta(ta), tb(tb) {
    for (const char* name : {"a", "b", "c"}) va.push_back(Var::make(name, ta));
    for (const char* name : {"p", "q", "r"}) vb.push_back(Var::make(name, tb));
    n = Var::make("n", ta, /*is_size_var=*/true);
  }

  int pick(int count) { return std::uniform_int_distribution<int>(0, count - 1)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  DataType either() { return chance(0.5) ? ta : tb; }
  Expr lit(DataType t, int64_t v) {
    return IntImm::make(t, Evaluator::wrap(t, static_cast<uint64_t>(v)));
  }

  int64_t constant(DataType t) {
    static const int64_t kSmall[] = {0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 64, -1, -2, -3, -4, -8, -16};
    int kind = pick(10);
    if (kind < 7) return Evaluator::wrap(t, kSmall[pick(sizeof(kSmall) / sizeof(kSmall[0]))]);
    if (kind == 7) return highest(t) - pick(3);
    if (kind == 8) return lowest(t) + pick(3);
    return std::uniform_int_distribution<int64_t>(lowest(t), highest(t))(rng_);
  }

  Expr leaf(DataType t) {
    const auto& vars = t == ta ? va : vb;
    if (chance(0.65)) return vars[pick(vars.size())];
    if (t == ta && chance(0.1)) return n;
    return IntImm::make(t, constant(t));
  }

  Expr divisor(DataType t) {
    static const int64_t kDiv[] = {1, 2, 3, 4, 5, 8, 16, 64, -1, -2, -3, -4, -8};
    if (chance(0.85)) return lit(t, kDiv[pick(sizeof(kDiv) / sizeof(kDiv[0]))]);
    if (chance(0.15)) return IntImm::make(t, constant(t) | 1);
    // A divisor that may be 0 (small variable values often are).
    if (chance(0.2)) return leaf(t);
    // Non-constant but never zero.
    if (t.is_uint() || chance(0.5)) return Max::make(leaf(t), lit(t, 1 + pick(8)));
    return Min::make(leaf(t), lit(t, -1 - pick(8)));
  }

  Expr integer(DataType t, int depth) {
    if (depth <= 0 || chance(0.2)) return leaf(t);
    DataType other = t == ta ? tb : ta;
    switch (pick(16)) {
      case 0:
      case 1:
        return Add::make(integer(t, depth - 1), integer(t, depth - 1));
      case 2:
        return Sub::make(integer(t, depth - 1), integer(t, depth - 1));
      case 3:
        return Mul::make(integer(t, depth - 1), IntImm::make(t, constant(t)));
      case 4:
        return Mul::make(integer(t, depth - 1), integer(t, depth - 1));
      case 5:
        return FloorDiv::make(integer(t, depth - 1), divisor(t));
      case 6:
        return FloorMod::make(integer(t, depth - 1), divisor(t));
      case 7:
        return Div::make(integer(t, depth - 1), divisor(t));
      case 8:
        return Mod::make(integer(t, depth - 1), divisor(t));
      case 9:
        return Min::make(integer(t, depth - 1), integer(t, depth - 1));
      case 10:
        return Max::make(integer(t, depth - 1), integer(t, depth - 1));
      case 11:
        return Select::make(boolean(depth - 1), integer(t, depth - 1), integer(t, depth - 1));
      case 12:
        return Cast::make(t, integer(other, depth - 1));
      case 13: {
        Var v = Var::make("v" + std::to_string(let_count_++), t);
        Expr value = integer(t, depth - 1);
        Expr body = integer(t, depth - 1);
        body = chance(0.5) ? Add::make(body, v) : Mul::make(Sub::make(v, body), v);
        return Let::make(v, value, body);
      }
      case 14:  // index-like arithmetic: x * 2^k + y
        return Add::make(Mul::make(integer(t, depth - 1), lit(t, 1 << pick(6))),
                         integer(t, depth - 1));
      default:  // x - (y // 4) * 4
        return Sub::make(integer(t, depth - 1),
                         Mul::make(FloorDiv::make(integer(t, depth - 1), lit(t, 4)), lit(t, 4)));
    }
  }

  Expr boolean(int depth) {
    DataType t = either();
    if (depth <= 0) return LT::make(leaf(t), leaf(t));
    switch (pick(9)) {
      case 0:
        return And::make(boolean(depth - 1), boolean(depth - 1));
      case 1:
        return Or::make(boolean(depth - 1), boolean(depth - 1));
      case 2:
        return Not::make(boolean(depth - 1));
      case 3:
        return EQ::make(integer(t, depth - 1), integer(t, depth - 1));
      case 4:
        return NE::make(integer(t, depth - 1), integer(t, depth - 1));
      case 5:
        return LT::make(integer(t, depth - 1), integer(t, depth - 1));
      case 6:
        return LE::make(integer(t, depth - 1), integer(t, depth - 1));
      case 7:
        return GT::make(integer(t, depth - 1), integer(t, depth - 1));
      default:
        return GE::make(integer(t, depth - 1), integer(t, depth - 1));
    }
  }

  // A random value for a free variable: small, near either end of the dtype, or anywhere.
  int64_t value(DataType t) {
    switch (pick(5)) {
      case 0:
      case 1:
        return t.is_uint() ? pick(21) : pick(41) - 20;
      case 2:
        return lowest(t) + pick(20);
      case 3:
        return highest(t) - pick(20);
      default:
        return std::uniform_int_distribution<int64_t>(lowest(t), highest(t))(rng_);
    }
  }

  std::mt19937_64 rng_;
  DataType ta, tb;
  std::vector<Var> va, vb;
  Var n;
  int let_count_ = 0;
};

// The facts one case binds; assignment() draws values that satisfy them.
struct Context {
  bool ranges = false;   // a in [0, 16), b in [0, n), p in [-8, 8) (unsigned: [0, 16))
  bool value = false;    // r = q * 2 + 1
  bool assumed = false;  // c < 100 assumed
};

void apply(Analyzer& an, Generator& g, const Context& ctx) {
  if (ctx.ranges) {
    an.bind(g.va[0], c(g.ta, 0), c(g.ta, 16));
    an.bind(g.va[1], c(g.ta, 0), g.n);
    an.bind(g.vb[0], c(g.tb, g.tb.is_uint() ? 0 : -8), c(g.tb, 16));
  }
  if (ctx.value) an.bind(g.vb[2], E(g.vb[1]) * c(g.tb, 2) + c(g.tb, 1));
  if (ctx.assumed) an.assume(E(g.va[2]) < c(g.ta, 100));
}

Evaluator assignment(Generator& g, const Context& ctx) {
  Evaluator ev;
  for (const Var& v : g.va) ev.env[v.get()] = g.value(g.ta);
  for (const Var& v : g.vb) ev.env[v.get()] = g.value(g.tb);
  int64_t n = g.value(g.ta);
  if (n < 0) n = -(n + 1);
  ev.env[g.n.get()] = n;
  if (ctx.ranges) {
    ev.env[g.va[0].get()] = g.pick(16);
    if (n < 1) ev.env[g.n.get()] = n = 1 + g.pick(100);
    ev.env[g.va[1].get()] = g.chance(0.5)
                                ? n - 1 - g.pick(static_cast<int>(std::min<int64_t>(n, 5)))
                                : std::uniform_int_distribution<int64_t>(0, n - 1)(g.rng_);
    ev.env[g.vb[0].get()] = g.pick(16) - (g.tb.is_uint() ? 0 : 8);
  }
  if (ctx.value) {
    uint64_t q = static_cast<uint64_t>(ev.env[g.vb[1].get()]);
    ev.env[g.vb[2].get()] = Evaluator::wrap(g.tb, q * 2 + 1);
  }
  if (ctx.assumed && ev.env[g.va[2].get()] >= 100) {
    ev.env[g.va[2].get()] = g.ta.is_uint() ? g.pick(100) : 99 - g.pick(200);
  }
  return ev;
}

// Simplifies `cases` random expressions (about one in four boolean) over (ta, tb) under random
// facts, checks idempotence, and evaluates input and result at `samples` random assignments
// that satisfy the facts: values, const_int_bound and modular_set must all hold.
int check_random(uint64_t seed, int cases, DataType ta, DataType tb, int* changed) {
  constexpr int kSamples = 6;
  int failures = 0;
  for (int index = 0; index < cases && failures < 5; ++index) {
    Generator g(seed + index, ta, tb);
    Context ctx{g.chance(0.5), g.chance(0.3), g.chance(0.3)};
    bool integer = index % 4 != 0;
    DataType t = g.either();
    Expr e = integer ? g.integer(t, 2 + g.pick(4)) : g.boolean(2 + g.pick(3));
    Analyzer an;
    apply(an, g, ctx);
    Expr s = an.simplify(e);
    ConstIntBound b = an.const_int_bound(e);
    ModularSet m = an.modular_set(e);
    *changed += !s.same_as(e);
    Expr again = an.simplify(s);
    if (!again.same_as(s)) {  // idempotent, and an unchanged expression is the same node
      ADD_FAILURE() << "case " << index << ": not idempotent\n  input: " << str(e)
                    << "\n  once:  " << str(s) << "\n  twice: " << str(again);
      ++failures;
    }
    for (int sample = 0; sample < kSamples; ++sample) {
      Evaluator ev = assignment(g, ctx);
      int64_t want = ev.eval(e);
      int64_t got = ev.eval(s);
      std::string where;
      if (want != got) where = "value changed";
      if (want < b.min || want > b.max) where = "bound violated";
      if (m.coeff == 0 ? want != m.base : ((static_cast<__int128>(want) - m.base) % m.coeff) != 0) {
        where = "congruence violated";
      }
      if (!where.empty()) {
        std::ostringstream vars;
        for (const auto& [v, value] : ev.env) vars << " " << v->name << "=" << value;
        ADD_FAILURE() << "case " << index << ": " << where << "\n  input:      " << str(e)
                      << "\n  simplified: " << str(s) << "\n  values:" << vars.str() << "\n  want "
                      << want << ", got " << got << ", bound [" << b.min << ", " << b.max
                      << "], set " << m.coeff << "k+" << m.base;
        ++failures;
        break;
      }
    }
  }
  return failures;
}

TEST(ArithProperty, RandomInt32Int64ExpressionsKeepTheirValue) {
  constexpr int kCases = 14000;  // 10500 integer-valued, 3500 boolean
  auto start = std::chrono::steady_clock::now();
  int changed = 0;
  EXPECT_EQ(check_random(0x5eed0000u, kCases, i32, i64, &changed), 0);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ property ] %d int32/int64 expressions (%d changed) in %.2f s\n", kCases, changed,
              seconds);
  EXPECT_GT(changed, kCases / 2);  // the rules are actually exercised
}

TEST(ArithProperty, RandomNarrowAndUnsignedExpressionsKeepTheirValue) {
  int changed = 0;
  EXPECT_EQ(check_random(0xb17e0000u, 3000, i8, u8, &changed), 0);
  EXPECT_EQ(check_random(0xface0000u, 3000, DataType::UInt(32), DataType::Int(16), &changed), 0);
  EXPECT_GT(changed, 3000);
}

}  // namespace
}  // namespace primjit::test
