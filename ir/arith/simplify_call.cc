// Rule family: calls of builtins (the op table, primjit/ir/ops.def). What each rule may assume is
// docs/semantics.md; a folded value is the one every backend computes, bit for bit.
// - math: a call whose arguments are all literals folds when the table says the op is exact on
//   every backend (max_ulp 0) and names its C library function, evaluated here as the
//   interpreter does (the float function for float32, the double one for float64); NaN results
//   are not folded (their payload is the machine's). The rounding functions (floor, ceil,
//   round, trunc) vanish on a value that is already integral: an integer cast to float, or
//   another rounding. exp2 of an integer and log2 of a power of two fold where the result is
//   exact and normal.
// - shifts: the canonical form of a left shift by a literal is the multiplication
//   (`shift_left(x, 2)` -> `x * 4`, which the ring forms of simplify_add_sub_mul.cc understand);
//   a right shift by a literal stays a shift unless the floor division it equals simplifies
//   (`shift_right(i * 8 + j, 3)` -> `i` when 0 <= j < 8). Literals shift as the semantics
//   table says; an amount out of [0, bits) is left as written.
// - bitwise logic: literals fold in the type; 0 and all ones are identities or absorb the
//   other operand (when it is pure); `x & x`, `x ^ x`, `~~x`; `x & (2^k - 1)` is `x % 2^k` when
//   that remainder simplifies.
// - if_then_else with a literal condition is its branch; each branch is simplified knowing the
//   condition's value (only the branch taken runs); with equal branches (and a pure condition)
//   the branch; likely of a literal is the literal.
#include <cmath>
#include <string_view>

#include "ir/arith/simplify_internal.h"

namespace primjit::arith::detail {
namespace {

// The builtins these rules are about, looked up once in the op table.
struct Builtins {
  Op floor = Op::get("floor"), ceil = Op::get("ceil"), round = Op::get("round"),
     trunc = Op::get("trunc");
  Op exp2 = Op::get("exp2"), log2 = Op::get("log2");
  Op shift_left = Op::get("shift_left"), shift_right = Op::get("shift_right");
  Op bit_and = Op::get("bitwise_and"), bit_or = Op::get("bitwise_or"),
     bit_xor = Op::get("bitwise_xor"), bit_not = Op::get("bitwise_not");
  Op if_then_else = Op::get("if_then_else"), likely = Op::get("likely");
};

const Builtins& builtins() {
  static const Builtins b;
  return b;
}

bool is(const Call* call, const Op& op) { return call->op.same_as(op); }

// The exact C library functions (max_ulp 0 in the table), by the name the table gives, in the
// precision of T; nullopt for a function not evaluated here.
template <typename T>
std::optional<T> libm_exact(std::string_view fn, const std::vector<T>& x) {
  if (x.size() == 1) {
    if (fn == "floor") return std::floor(x[0]);
    if (fn == "ceil") return std::ceil(x[0]);
    if (fn == "trunc") return std::trunc(x[0]);
    if (fn == "rint") return std::rint(x[0]);  // the default rounding mode: halves to even
    if (fn == "fabs") return std::fabs(x[0]);
    if (fn == "sqrt") return std::sqrt(x[0]);
  }
  if (x.size() == 2 && fn == "fmod") return std::fmod(x[0], x[1]);
  if (x.size() == 3 && fn == "fma") return std::fma(x[0], x[1], x[2]);
  return std::nullopt;
}

template <typename T>
Expr fold_math(const OpNode& op, DataType t, const std::vector<double>& args) {
  std::vector<T> x(args.begin(), args.end());
  std::optional<T> r = libm_exact<T>(op.libm, x);
  if (!r || std::isnan(*r)) return Expr();
  return FloatImm::make(t, static_cast<double>(*r));
}

// floor, ceil, round, trunc: their result is an integer, an infinity or NaN.
bool rounds(const Call* call) {
  const Builtins& b = builtins();
  return is(call, b.floor) || is(call, b.ceil) || is(call, b.round) || is(call, b.trunc);
}

// A float value that is an integer, infinite or NaN whatever its operands: rounding it again
// returns it unchanged (signed zeros included).
bool integral(const Expr& e) {
  if (const auto* cast = e.as<Cast>()) return cast->value.dtype().is_int_or_bool();
  const auto* call = e.as<Call>();
  return call != nullptr && call->op.defined() && rounds(call);
}

int count_kind(const Expr& e, NodeKind k) {
  int n = 0;
  post_order_visit(e, [&](const Ref<Object>& node) { n += node->kind() == k; });
  return n;
}

}  // namespace

Expr Rewriter::visit(const Call* op) {
  if (is(op, builtins().if_then_else) && op->args.size() == 3) return if_then_else(op);
  std::vector<Expr> args;
  bool changed = rewrite_all(op->args, &args);
  if (op->op.defined()) {
    Expr r = call_rule(op, args);
    if (r.defined()) return r;
  }
  if (!changed) return Expr(op);
  return op->op.defined() ? Call::make(op->dtype, op->op, std::move(args))
                          : Call::make(op->dtype, op->callee, std::move(args));
}

// T.if_then_else evaluates only the branch it takes: a literal condition drops the other one,
// and each branch is simplified knowing the condition's value.
Expr Rewriter::if_then_else(const Call* op) {
  Expr c = rewrite(op->args[0]);
  if (auto cv = const_int(c)) return rewrite(*cv != 0 ? op->args[1] : op->args[2]);
  bool context = c.dtype().is_scalar() && AnalyzerImpl::pure(c);
  auto branch = [&](const Expr& value, const Expr& holds) {
    if (!context) return rewrite(value);
    ScopeGuard scope(an_);
    an_.assume(holds);
    return rewrite(value);
  };
  Expr t = branch(op->args[1], c);
  Expr f = branch(op->args[2], context ? rewrite(Not::make(c)) : Expr());
  if (AnalyzerImpl::equal(t, f) && AnalyzerImpl::pure(c)) return t;
  if (c.same_as(op->args[0]) && t.same_as(op->args[1]) && f.same_as(op->args[2])) {
    return Expr(op);
  }
  return Call::make(op->dtype, op->op, {c, t, f});
}

Expr Rewriter::call_rule(const Call* op, const std::vector<Expr>& args) {
  const OpNode& o = *op->op;
  DataType t = op->dtype;
  if (o.is_math()) return math_rule(op, args);
  if (o.op_kind == OpKind::kBits && t.is_integer() && t.is_scalar()) return bits_rule(op, args);
  const Builtins& b = builtins();
  if (is(op, b.likely) && args.size() == 1 && args[0].as<IntImm>()) return args[0];
  return Expr();
}

Expr Rewriter::math_rule(const Call* op, const std::vector<Expr>& args) {
  const OpNode& o = *op->op;
  DataType t = op->dtype;
  if (!foldable_float(t) || args.empty()) return Expr();
  std::vector<double> values;
  for (const Expr& a : args) {
    auto v = const_float(a);
    if (!v || std::isnan(*v) || a.dtype() != t) break;
    values.push_back(*v);
  }
  if (values.size() == args.size() && o.max_ulp == 0 && !o.libm.empty()) {
    return t.bits() == 32 ? fold_math<float>(o, t, values) : fold_math<double>(o, t, values);
  }
  const Builtins& b = builtins();
  if (args.size() != 1) return Expr();
  if (rounds(op) && integral(args[0])) return args[0];
  if (values.size() != 1) return Expr();
  // Exact results only: 2^k and k for integers k whose power of two is a normal number.
  int min_exp = t.bits() == 32 ? -126 : -1022;
  int max_exp = t.bits() == 32 ? 127 : 1023;
  double v = values[0];
  if (is(op, b.exp2) && v == std::trunc(v) && v >= min_exp && v <= max_exp) {
    return FloatImm::make(t, std::ldexp(1.0, static_cast<int>(v)));
  }
  if (is(op, b.log2) && v > 0 && std::isfinite(v)) {
    int e = 0;
    double m = std::frexp(v, &e);  // v = m * 2^e, m in [0.5, 1)
    if (m == 0.5 && e - 1 >= min_exp && e - 1 <= max_exp) return FloatImm::make(t, e - 1);
  }
  return Expr();
}

Expr Rewriter::bits_rule(const Call* op, const std::vector<Expr>& args) {
  const Builtins& bl = builtins();
  DataType t = op->dtype;
  int bits = t.bits();
  auto ones = [&](i128 v) { return wrap_signed(v, bits) == -1; };
  if (is(op, bl.bit_not) && args.size() == 1) {
    if (auto x = const_int(args[0])) return make_int(t, ~wrap_signed(*x, bits));
    if (const auto* inner = args[0].as<Call>(); inner != nullptr && is(inner, bl.bit_not)) {
      return inner->args[0];
    }
    return Expr();
  }
  if (args.size() != 2 || args[0].dtype() != t) return Expr();
  const Expr& a = args[0];
  const Expr& b = args[1];
  auto x = const_int(a);
  auto y = const_int(b);
  if (is(op, bl.shift_left) || is(op, bl.shift_right)) {
    // The amount is read as unsigned: anything outside [0, bits) is out of range and stays.
    if (!y || *y < 0 || *y >= bits) return Expr();
    bool left = is(op, bl.shift_left);
    int n = static_cast<int>(*y);
    if (n == 0) return a;
    if (x) {
      i128 w = wrap_signed(*x, bits);
      if (left) return make_int(t, w * (i128(1) << n));
      return make_int(t, t.is_int() ? floor_div(w, i128(1) << n) : *x >> n);
    }
    // 2^n must be a positive literal of the type.
    if (t.is_int() && n >= bits - 1) return Expr();
    Expr power = make_int(t, i128(1) << n);
    if (left) return rewrite(Mul::make(a, power));
    Expr q = floor_div_rule(NodeKind::kFloorDiv, a, power);
    if (q.defined() && count_kind(q, NodeKind::kFloorDiv) <= count_kind(a, NodeKind::kFloorDiv)) {
      return q;
    }
    return Expr();
  }
  if (b.dtype() != t) return Expr();
  bool is_and = is(op, bl.bit_and);
  bool is_or = is(op, bl.bit_or);
  bool is_xor = is(op, bl.bit_xor);
  if (!is_and && !is_or && !is_xor) return Expr();
  if (x && y) {
    i128 p = wrap_signed(*x, bits);
    i128 q = wrap_signed(*y, bits);
    return make_int(t, is_and ? (p & q) : is_or ? (p | q) : (p ^ q));
  }
  // The operations are commutative: `v` is the operand that is not a literal.
  std::optional<i128> c = x ? x : y;
  const Expr& v = x ? b : a;
  bool pure = AnalyzerImpl::pure(v);
  if (c) {
    if (*c == 0) {
      if (is_and) return pure ? make_int(t, 0) : Expr();
      return v;  // x | 0, x ^ 0
    }
    if (ones(*c)) {
      if (is_and) return v;
      if (is_or) return pure ? make_int(t, -1) : Expr();
      return rewrite(Call::make(t, bl.bit_not, {v}));
    }
    // x & (2^k - 1) is x % 2^k for every x (two's complement), kept only when it simplifies.
    i128 m = wrap_signed(*c, bits) + 1;
    bool positive = m > 0 && (t.is_uint() || m < (i128(1) << (bits - 1)));
    if (is_and && positive && (m & (m - 1)) == 0 && pure) {
      Expr r = floor_mod_rule(NodeKind::kFloorMod, v, make_int(t, m));
      if (r.defined() && count_kind(r, NodeKind::kFloorMod) <= count_kind(v, NodeKind::kFloorMod)) {
        return r;
      }
    }
    return Expr();
  }
  if (pure && AnalyzerImpl::pure(b) && AnalyzerImpl::equal(a, b)) {
    return is_xor ? make_int(t, 0) : a;
  }
  return Expr();
}

}  // namespace primjit::arith::detail
