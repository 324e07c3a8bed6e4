// The arithmetic analyzer: facts about variables (ranges, values, assumed conditions) with
// scoped undo, and the analyses built on them: exact bounds, congruences, ring forms of sums
// (linear forms) and proofs of non-negativity. The rewriter lives in simplify.cc.
#include <algorithm>
#include <cstring>

#include "ir/arith/arith_internal.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"

namespace primjit::arith {
namespace detail {

// =============================================================================================
// Numbers and intervals
// =============================================================================================

namespace {

bool neg_inf(i128 v) { return v <= -kInf; }
bool pos_inf(i128 v) { return v >= kInf; }
bool infinite(i128 v) { return neg_inf(v) || pos_inf(v); }

// A lower end: values at or below -kInf are unbounded; absurdly large ones are lowered to a
// finite value (still a valid lower bound).
i128 clamp_lo(i128 v) { return neg_inf(v) ? -kInf : (pos_inf(v) ? kInf - 1 : v); }
i128 clamp_hi(i128 v) { return pos_inf(v) ? kInf : (neg_inf(v) ? -kInf + 1 : v); }

// Product of two extended values (infinite ends saturate; 0 times anything is 0).
i128 ext_mul(i128 x, i128 y) {
  if (x == 0 || y == 0) return 0;
  bool negative = (x < 0) != (y < 0);
  if (infinite(x) || infinite(y)) return negative ? -kInf : kInf;
  i128 r;
  if (__builtin_mul_overflow(x, y, &r) || infinite(r)) return negative ? -kInf : kInf;
  return r;
}

i128 abs128(i128 v) { return v < 0 ? -v : v; }

// Quotient of finite values, floor or truncating.
i128 div_round(i128 a, i128 b, bool floor) { return floor ? floor_div(a, b) : a / b; }

// Bounds of a / b where b does not change sign and excludes 0.
Interval div_part(const Interval& a, const Interval& b, bool floor) {
  if (!a.finite()) return Interval::everything();
  if (!b.finite()) {
    // |b| >= 1, so |a / b| <= |a| (floor may reach -1 for small negatives, still within).
    i128 m = std::max(abs128(a.lo), abs128(a.hi));
    return {-m, m};
  }
  i128 c[4] = {div_round(a.lo, b.lo, floor), div_round(a.lo, b.hi, floor),
               div_round(a.hi, b.lo, floor), div_round(a.hi, b.hi, floor)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

// Bounds of the quotient. A divisor range holding 0 adds the quotient of a division by zero,
// -1 (all ones: the largest value of an unsigned type), see expr.h.
Interval div_bound(const Interval& a, const Interval& b, bool floor, DataType t) {
  std::optional<Interval> result;
  if (b.lo <= 0 && b.hi >= 0) result = Interval::point(t.is_uint() ? dtype_range(t).hi : -1);
  if (b.lo <= -1) {
    Interval part = div_part(a, {b.lo, std::min<i128>(b.hi, -1)}, floor);
    result = result ? interval_union(*result, part) : part;
  }
  if (b.hi >= 1) {
    Interval part = div_part(a, {std::max<i128>(b.lo, 1), b.hi}, floor);
    result = result ? interval_union(*result, part) : part;
  }
  return result ? *result : Interval::everything();
}

// Bounds of the remainder by the nonzero values of `b`.
Interval floormod_nonzero_bound(const Interval& a, const Interval& b) {
  if (b.lo >= 1) {
    if (a.lo >= 0 && a.hi < b.lo) return a;
    Interval r{0, pos_inf(b.hi) ? kInf : b.hi - 1};
    if (a.lo >= 0) r.hi = std::min(r.hi, a.hi);
    return r;
  }
  if (b.hi <= -1) {
    if (a.hi <= 0 && a.lo > b.hi) return a;
    Interval r{neg_inf(b.lo) ? -kInf : b.lo + 1, 0};
    if (a.hi <= 0) r.lo = std::max(r.lo, a.lo);
    return r;
  }
  return {neg_inf(b.lo) ? -kInf : std::min<i128>(b.lo + 1, 0),
          pos_inf(b.hi) ? kInf : std::max<i128>(b.hi - 1, 0)};
}

// Bounds of the remainder; x % 0 is x (expr.h), so a divisor range holding 0 adds a's range.
Interval floormod_bound(const Interval& a, const Interval& b) {
  if (b.lo > 0 || b.hi < 0) return floormod_nonzero_bound(a, b);
  if (b.lo == 0 && b.hi == 0) return a;
  Interval nonzero = b.lo == 0 ? Interval{1, b.hi} : b.hi == 0 ? Interval{b.lo, -1} : b;
  return interval_union(a, floormod_nonzero_bound(a, nonzero));
}

Interval truncmod_bound(const Interval& a, const Interval& b) {
  if (b.lo <= 0 && b.hi >= 0) {  // x % 0 is x; otherwise |x % b| <= |x|, with the sign of x
    return {std::min<i128>(a.lo, 0), std::max<i128>(a.hi, 0)};
  }
  i128 m = std::max(abs128(b.lo), abs128(b.hi));
  m = infinite(m) ? kInf : m - 1;  // |result| < |b|
  if (a.lo >= 0) return {0, std::min(a.hi, m)};
  if (a.hi <= 0) return {std::max(a.lo, -m), 0};
  return {std::max(a.lo, -m), std::min(a.hi, m)};
}

// `r` when every value fits the dtype (so no wraparound happened), else the dtype's range.
Interval no_wrap(const Interval& r, DataType t) {
  Interval range = dtype_range(t);
  return interval_within(r, range) ? r : range;
}

// The two operands of any binary node.
std::pair<const Expr*, const Expr*> operands(const Expr& e) {
  switch (e.kind()) {
#define PRIMJIT_BINARY_CASE(Name) \
  case NodeKind::k##Name:         \
    return {&e.as<Name>()->a, &e.as<Name>()->b};
    PRIMJIT_BINARY_CASE(Add)
    PRIMJIT_BINARY_CASE(Sub)
    PRIMJIT_BINARY_CASE(Mul)
    PRIMJIT_BINARY_CASE(Div)
    PRIMJIT_BINARY_CASE(Mod)
    PRIMJIT_BINARY_CASE(FloorDiv)
    PRIMJIT_BINARY_CASE(FloorMod)
    PRIMJIT_BINARY_CASE(Min)
    PRIMJIT_BINARY_CASE(Max)
    PRIMJIT_BINARY_CASE(EQ)
    PRIMJIT_BINARY_CASE(NE)
    PRIMJIT_BINARY_CASE(LT)
    PRIMJIT_BINARY_CASE(LE)
    PRIMJIT_BINARY_CASE(GT)
    PRIMJIT_BINARY_CASE(GE)
    PRIMJIT_BINARY_CASE(And)
    PRIMJIT_BINARY_CASE(Or)
#undef PRIMJIT_BINARY_CASE
    default:
      return {nullptr, nullptr};
  }
}

bool is_int_scalar(DataType t) { return t.is_integer() && t.is_scalar(); }

bool is_compare(NodeKind k) {
  return k == NodeKind::kEQ || k == NodeKind::kNE || k == NodeKind::kLT || k == NodeKind::kLE ||
         k == NodeKind::kGT || k == NodeKind::kGE;
}

}  // namespace

Interval interval_add(const Interval& a, const Interval& b) {
  i128 lo = (neg_inf(a.lo) || neg_inf(b.lo)) ? -kInf : clamp_lo(a.lo + b.lo);
  i128 hi = (pos_inf(a.hi) || pos_inf(b.hi)) ? kInf : clamp_hi(a.hi + b.hi);
  return {lo, hi};
}

Interval interval_neg(const Interval& a) { return {-a.hi, -a.lo}; }

Interval interval_mul(const Interval& a, const Interval& b) {
  i128 c[4] = {ext_mul(a.lo, b.lo), ext_mul(a.lo, b.hi), ext_mul(a.hi, b.lo), ext_mul(a.hi, b.hi)};
  return {clamp_lo(*std::min_element(c, c + 4)), clamp_hi(*std::max_element(c, c + 4))};
}

Interval interval_union(const Interval& a, const Interval& b) {
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
}

Interval interval_intersect(const Interval& a, const Interval& b) {
  return {std::max(a.lo, b.lo), std::min(a.hi, b.hi)};
}

bool interval_within(const Interval& a, const Interval& outer) {
  return a.lo >= outer.lo && a.hi <= outer.hi;
}

Interval dtype_range(DataType t) {
  if (t.is_bool()) return {0, 1};
  if (t.is_int()) return {-(i128(1) << (t.bits() - 1)), (i128(1) << (t.bits() - 1)) - 1};
  if (t.is_uint()) return {0, (i128(1) << t.bits()) - 1};
  return Interval::everything();
}

i128 floor_div(i128 a, i128 b) {
  i128 q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

i128 floor_mod(i128 a, i128 b) {
  i128 r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

i128 gcd(i128 a, i128 b) {
  a = abs128(a);
  b = abs128(b);
  while (b != 0) {
    i128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

i128 wrap_signed(i128 v, int bits) {
  using u128 = unsigned __int128;
  u128 m = static_cast<u128>(v) & ((u128(1) << bits) - 1);
  if ((m >> (bits - 1)) & 1) return static_cast<i128>(m) - (i128(1) << bits);
  return static_cast<i128>(m);
}

i128 int_value(const IntImm* imm) {
  if (imm->dtype.is_uint() && imm->dtype.bits() == 64) {
    return static_cast<i128>(static_cast<uint64_t>(imm->value));
  }
  return imm->value;
}

Expr make_int(DataType t, i128 v) {
  if (t.is_vector()) return Broadcast::make(make_int(t.element_of(), v), t.lanes());
  if (t.is_bool()) return IntImm::make(t, v != 0 ? 1 : 0);
  PRIMJIT_ICHECK(t.is_integer()) << "make_int: not an integer dtype: " << t;
  i128 w = wrap_signed(v, t.bits());
  if (t.is_uint() && t.bits() < 64 && w < 0) w += i128(1) << t.bits();
  return IntImm::make(t, static_cast<int64_t>(w));
}

// =============================================================================================
// Facts and scopes
// =============================================================================================

AnalyzerImpl::AnalyzerImpl() = default;

void AnalyzerImpl::push_scope() {
  frames_.push_back({undo_.size(), facts_.size(), known_true_.size()});
}

void AnalyzerImpl::pop_scope() {
  PRIMJIT_ICHECK(!frames_.empty()) << "Analyzer: scope closed more often than opened";
  Frame frame = frames_.back();
  frames_.pop_back();
  while (undo_.size() > frame.undo_size) {
    Undo& u = undo_.back();
    if (u.existed) {
      vars_[u.key] = std::move(u.old);
    } else {
      vars_.erase(u.key);
    }
    undo_.pop_back();
  }
  facts_.resize(frame.facts_size);
  known_true_.resize(frame.known_size);
}

namespace {
// True when `e` reads memory or runtime state (a load, or a call that is not pure).
bool mentions_memory(const Expr& e) {
  bool found = false;
  post_order_visit(e, [&](const Ref<Object>& node) {
    if (node.as<BufferLoad>() != nullptr) found = true;
    if (const auto* call = node.as<Call>(); call != nullptr && call->effect() != CallEffect::kPure)
      found = true;
  });
  return found;
}
}  // namespace

void AnalyzerImpl::forget(const std::function<bool(const Expr&)>& stale) {
  if (!memory_facts_) return;
  auto is_stale = [&](const Expr& e) { return e.defined() && mentions_memory(e) && stale(e); };
  // Entries are neutralized where they are, not removed: the scopes' frames count them, and a
  // scope's end must not bring a forgotten fact back.
  for (Expr& cond : known_true_) {
    if (is_stale(cond)) cond = make_int(DataType::Bool(), 1);
  }
  for (Linear& fact : facts_) {
    bool drop = false;
    for (const auto& [atom, coeff] : fact.terms) drop = drop || is_stale(atom);
    if (drop) fact = Linear{};  // 0 >= 0
  }
  auto scrub = [&](VarInfo& info) {
    if (is_stale(info.value)) info.value = Expr();
    if (is_stale(info.min) || is_stale(info.extent)) info.min = info.extent = Expr();
  };
  for (auto& [key, info] : vars_) scrub(info);
  for (Undo& u : undo_) scrub(u.old);
}

void AnalyzerImpl::set_info(const VarNode* key, VarInfo info) {
  auto it = vars_.find(key);
  if (it == vars_.end()) {
    undo_.push_back({key, false, VarInfo{}});
    vars_.emplace(key, std::move(info));
  } else {
    undo_.push_back({key, true, it->second});
    it->second = std::move(info);
  }
}

const AnalyzerImpl::VarInfo* AnalyzerImpl::info(const VarNode* var) const {
  auto it = vars_.find(var);
  return it == vars_.end() ? nullptr : &it->second;
}

void AnalyzerImpl::bind_range(const Var& var, const Expr& min, const Expr& extent) {
  memory_facts_ = memory_facts_ || mentions_memory(min) || mentions_memory(extent);
  VarInfo info{var, dtype_range(var.dtype()), Expr(), Expr(), Expr()};
  Interval lo = bound(min);
  Interval ext = bound(extent);
  if (ext.hi >= 1) {  // an empty loop never runs: nothing to record
    Interval last = interval_add(interval_add(lo, {ext.hi, ext.hi}), Interval::point(-1));
    info.bound = interval_intersect(info.bound, {lo.lo, last.hi});
  }
  if (!min.as<IntImm>() || !extent.as<IntImm>()) {
    info.min = min;
    info.extent = extent;
  }
  set_info(var.get(), std::move(info));
}

void AnalyzerImpl::bind_value(const Var& var, const Expr& value) {
  memory_facts_ = memory_facts_ || mentions_memory(value);
  VarInfo info{var, dtype_range(var.dtype()), Expr(), Expr(), value};
  if (var.dtype().is_int_or_bool()) info.bound = interval_intersect(info.bound, bound(value));
  set_info(var.get(), std::move(info));
}

void AnalyzerImpl::tighten(const Var& var, const Interval& b) {
  const VarInfo* old = info(var.get());
  VarInfo updated = old ? *old : VarInfo{var, dtype_range(var.dtype()), Expr(), Expr(), Expr()};
  updated.bound = interval_intersect(updated.bound, b);
  set_info(var.get(), std::move(updated));
}

void AnalyzerImpl::add_fact(const Linear& l) {
  facts_.push_back(l);
  if (l.terms.size() != 1) return;
  const auto& [atom, c] = l.terms[0];
  const VarNode* v = atom.as<VarNode>();
  if (v == nullptr) return;
  // c * v + k >= 0.
  i128 k = l.constant;
  if (c > 0) {
    tighten(Var(v), {-floor_div(k, c), kInf});  // v >= ceil(-k / c)
  } else {
    tighten(Var(v), {-kInf, floor_div(k, -c)});  // v <= floor(k / -c)
  }
}

void AnalyzerImpl::assume(const Expr& cond) {
  if (!cond.defined() || !cond.dtype().is_bool() || !cond.dtype().is_scalar()) return;
  if (cond.as<IntImm>()) return;
  memory_facts_ = memory_facts_ || mentions_memory(cond);
  known_true_.push_back(cond);
  switch (cond.kind()) {
    case NodeKind::kAnd: {
      const auto* op = cond.as<And>();
      assume(op->a);
      assume(op->b);
      return;
    }
    case NodeKind::kVar:
      tighten(Var(cond.as<VarNode>()), Interval::point(1));
      return;
    case NodeKind::kNot: {
      const Expr& x = cond.as<Not>()->a;
      if (const auto* v = x.as<VarNode>()) {
        tighten(Var(v), Interval::point(0));
      } else if (const auto* o = x.as<Or>()) {
        assume(Not::make(o->a));
        assume(Not::make(o->b));
      } else if (const auto* n = x.as<Not>()) {
        assume(n->a);
      } else if (is_compare(x.kind())) {
        // The negation of an integer comparison is the opposite comparison.
        auto [pa, pb] = operands(x);
        if (!is_int_scalar(pa->dtype())) return;
        const Expr& a = *pa;
        const Expr& b = *pb;
        switch (x.kind()) {
          case NodeKind::kLT:
            return assume(GE::make(a, b));
          case NodeKind::kLE:
            return assume(GT::make(a, b));
          case NodeKind::kGT:
            return assume(LE::make(a, b));
          case NodeKind::kGE:
            return assume(LT::make(a, b));
          case NodeKind::kEQ:
            return assume(NE::make(a, b));
          case NodeKind::kNE:
            return assume(EQ::make(a, b));
          default:
            return;
        }
      }
      return;
    }
    default:
      break;
  }
  if (!is_compare(cond.kind())) return;
  auto [pa, pb] = operands(cond);
  DataType t = pa->dtype();
  if (!is_int_scalar(t)) return;
  Linear la = linearize(*pa);
  Linear lb = linearize(*pb);
  if (!fits(la, t) || !fits(lb, t)) return;
  auto fact = [&](const Linear& x, const Linear& y, i128 minus) {
    // x - y - minus >= 0
    std::optional<Linear> d = combine(x, 1, y, -1);
    if (!d) return;
    d->constant -= minus;
    add_fact(*d);
  };
  switch (cond.kind()) {
    case NodeKind::kLT:
      return fact(lb, la, 1);
    case NodeKind::kLE:
      return fact(lb, la, 0);
    case NodeKind::kGT:
      return fact(la, lb, 1);
    case NodeKind::kGE:
      return fact(la, lb, 0);
    case NodeKind::kEQ:
      fact(la, lb, 0);
      fact(lb, la, 0);
      return;
    default:
      return;
  }
}

// =============================================================================================
// Bounds
// =============================================================================================

Interval AnalyzerImpl::bound(const Expr& e) {
  DataType t = e.dtype();
  if (!t.is_int_or_bool()) return Interval::everything();
  return interval_intersect(bound_impl(e), dtype_range(t));
}

Interval AnalyzerImpl::bound_impl(const Expr& e) {
  DataType t = e.dtype();
  switch (e.kind()) {
    case NodeKind::kIntImm:
      return Interval::point(int_value(e.as<IntImm>()));
    case NodeKind::kVar: {
      const auto* v = e.as<VarNode>();
      Interval r = dtype_range(t);
      if (v->is_size_var) r.lo = std::max<i128>(r.lo, 0);
      if (const VarInfo* vi = info(v)) r = interval_intersect(r, vi->bound);
      return r;
    }
    case NodeKind::kAdd: {
      const auto* op = e.as<Add>();
      return no_wrap(interval_add(bound(op->a), bound(op->b)), t);
    }
    case NodeKind::kSub: {
      const auto* op = e.as<Sub>();
      return no_wrap(interval_add(bound(op->a), interval_neg(bound(op->b))), t);
    }
    case NodeKind::kMul: {
      const auto* op = e.as<Mul>();
      return no_wrap(interval_mul(bound(op->a), bound(op->b)), t);
    }
    case NodeKind::kDiv: {
      const auto* op = e.as<Div>();
      return no_wrap(div_bound(bound(op->a), bound(op->b), false, t), t);
    }
    case NodeKind::kFloorDiv: {
      const auto* op = e.as<FloorDiv>();
      return no_wrap(div_bound(bound(op->a), bound(op->b), true, t), t);
    }
    case NodeKind::kMod: {
      const auto* op = e.as<Mod>();
      return no_wrap(truncmod_bound(bound(op->a), bound(op->b)), t);
    }
    case NodeKind::kFloorMod: {
      const auto* op = e.as<FloorMod>();
      return no_wrap(floormod_bound(bound(op->a), bound(op->b)), t);
    }
    case NodeKind::kMin: {
      const auto* op = e.as<Min>();
      Interval a = bound(op->a);
      Interval b = bound(op->b);
      return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
    }
    case NodeKind::kMax: {
      const auto* op = e.as<Max>();
      Interval a = bound(op->a);
      Interval b = bound(op->b);
      return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
    case NodeKind::kSelect: {
      const auto* op = e.as<Select>();
      return interval_union(bound(op->true_value), bound(op->false_value));
    }
    case NodeKind::kCast: {
      const auto* op = e.as<Cast>();
      if (t.is_bool()) return {0, 1};
      if (!op->value.dtype().is_int_or_bool()) return dtype_range(t);
      return no_wrap(bound(op->value), t);
    }
    case NodeKind::kLet: {
      const auto* op = e.as<Let>();
      push_scope();
      bind_value(op->var, op->value);
      Interval r = bound(op->body);
      pop_scope();
      return r;
    }
    case NodeKind::kRamp: {
      const auto* op = e.as<Ramp>();
      Interval steps = interval_mul(bound(op->stride), {0, op->lanes - 1});
      steps = interval_union(steps, Interval::point(0));
      return no_wrap(interval_add(bound(op->base), steps), t);
    }
    case NodeKind::kBroadcast:
      return bound(e.as<Broadcast>()->value);
    default:
      return dtype_range(t);
  }
}

Interval AnalyzerImpl::bound(const Linear& l) {
  Interval r = Interval::point(l.constant);
  for (const auto& [atom, c] : l.terms) {
    r = interval_add(r, interval_mul(bound(atom), Interval::point(c)));
  }
  return r;
}

bool AnalyzerImpl::fits(const Linear& l, DataType t) {
  return interval_within(bound(l), dtype_range(t));
}

// =============================================================================================
// Linear (ring) forms
// =============================================================================================

Linear AnalyzerImpl::linearize(const Expr& e) {
  std::vector<std::pair<Expr, i128>> terms;
  i128 constant = 0;
  int bits = e.dtype().bits();
  collect(e, 1, bits, &terms, &constant);
  return normalize(std::move(terms), constant, bits);
}

void AnalyzerImpl::collect(const Expr& e, i128 scale, int bits,
                           std::vector<std::pair<Expr, i128>>* terms, i128* constant) {
  switch (e.kind()) {
    case NodeKind::kIntImm:
      *constant =
          wrap_signed(*constant + scale * wrap_signed(int_value(e.as<IntImm>()), bits), bits);
      return;
    case NodeKind::kAdd: {
      const auto* op = e.as<Add>();
      collect(op->a, scale, bits, terms, constant);
      collect(op->b, scale, bits, terms, constant);
      return;
    }
    case NodeKind::kSub: {
      const auto* op = e.as<Sub>();
      collect(op->a, scale, bits, terms, constant);
      collect(op->b, wrap_signed(-scale, bits), bits, terms, constant);
      return;
    }
    case NodeKind::kMul: {
      const auto* op = e.as<Mul>();
      if (const auto* c = op->b.as<IntImm>()) {
        collect(op->a, wrap_signed(scale * wrap_signed(int_value(c), bits), bits), bits, terms,
                constant);
        return;
      }
      if (const auto* c = op->a.as<IntImm>()) {
        collect(op->b, wrap_signed(scale * wrap_signed(int_value(c), bits), bits), bits, terms,
                constant);
        return;
      }
      Linear la = linearize(op->a);
      Linear lb = linearize(op->b);
      if (la.is_const()) {
        collect(op->b, wrap_signed(scale * la.constant, bits), bits, terms, constant);
        return;
      }
      if (lb.is_const()) {
        collect(op->a, wrap_signed(scale * lb.constant, bits), bits, terms, constant);
        return;
      }
      // A product of two non-constants is one monomial; single scaled atoms give their
      // coefficients to it: (x*2) * (y*3) is the monomial x*y with coefficient 6.
      i128 coeff = scale;
      Expr fa = op->a;
      Expr fb = op->b;
      if (la.terms.size() == 1 && la.constant == 0) {
        coeff = wrap_signed(coeff * la.terms[0].second, bits);
        fa = la.terms[0].first;
      }
      if (lb.terms.size() == 1 && lb.constant == 0) {
        coeff = wrap_signed(coeff * lb.terms[0].second, bits);
        fb = lb.terms[0].first;
      }
      if (coeff != 0) terms->emplace_back(monomial(fa, fb), coeff);
      return;
    }
    default:
      if (scale != 0) terms->emplace_back(e, scale);
      return;
  }
}

Expr AnalyzerImpl::monomial(const Expr& a, const Expr& b) {
  std::vector<Expr> factors;
  std::vector<Expr> stack = {b, a};
  while (!stack.empty()) {
    Expr f = stack.back();
    stack.pop_back();
    const auto* m = f.as<Mul>();
    if (m != nullptr && !m->a.as<IntImm>() && !m->b.as<IntImm>()) {
      stack.push_back(m->b);
      stack.push_back(m->a);
    } else {
      factors.push_back(f);
    }
  }
  std::stable_sort(factors.begin(), factors.end(),
                   [&](const Expr& x, const Expr& y) { return compare(x, y) < 0; });
  Expr result = factors[0];
  for (size_t i = 1; i < factors.size(); ++i) result = Mul::make(result, factors[i]);
  return result;
}

Linear AnalyzerImpl::normalize(std::vector<std::pair<Expr, i128>> terms, i128 constant, int bits) {
  std::stable_sort(terms.begin(), terms.end(),
                   [&](const auto& x, const auto& y) { return compare(x.first, y.first) < 0; });
  Linear out;
  out.constant = wrap_signed(constant, bits);
  for (auto& [atom, c] : terms) {
    if (!out.terms.empty() && equal(out.terms.back().first, atom)) {
      out.terms.back().second = wrap_signed(out.terms.back().second + c, bits);
      if (out.terms.back().second == 0) out.terms.pop_back();
    } else if (wrap_signed(c, bits) != 0) {
      out.terms.emplace_back(atom, wrap_signed(c, bits));
    }
  }
  return out;
}

std::optional<Linear> AnalyzerImpl::combine(const Linear& a, i128 sa, const Linear& b, i128 sb) {
  constexpr i128 kLimit = i128(1) << 100;
  auto scaled = [&](i128 c, i128 s, i128* out) {
    return !__builtin_mul_overflow(c, s, out) && abs128(*out) < kLimit;
  };
  Linear out;
  i128 ca, cb;
  if (!scaled(a.constant, sa, &ca) || !scaled(b.constant, sb, &cb)) return std::nullopt;
  out.constant = ca + cb;
  size_t i = 0, j = 0;
  while (i < a.terms.size() || j < b.terms.size()) {
    int order = i == a.terms.size()   ? 1
                : j == b.terms.size() ? -1
                                      : compare(a.terms[i].first, b.terms[j].first);
    i128 c = 0;
    Expr atom;
    if (order <= 0) {
      if (!scaled(a.terms[i].second, sa, &ca)) return std::nullopt;
      c += ca;
      atom = a.terms[i++].first;
    }
    if (order >= 0) {
      if (!scaled(b.terms[j].second, sb, &cb)) return std::nullopt;
      c += cb;
      atom = b.terms[j++].first;
    }
    if (c != 0) out.terms.emplace_back(std::move(atom), c);
  }
  return out;
}

Linear AnalyzerImpl::combine_ring(const Linear& a, i128 sa, const Linear& b, i128 sb, int bits) {
  std::vector<std::pair<Expr, i128>> terms;
  terms.reserve(a.terms.size() + b.terms.size());
  sa = wrap_signed(sa, bits);
  sb = wrap_signed(sb, bits);
  for (const auto& [atom, c] : a.terms) terms.emplace_back(atom, wrap_signed(c * sa, bits));
  for (const auto& [atom, c] : b.terms) terms.emplace_back(atom, wrap_signed(c * sb, bits));
  i128 constant =
      wrap_signed(wrap_signed(a.constant * sa, bits) + wrap_signed(b.constant * sb, bits), bits);
  return normalize(std::move(terms), constant, bits);
}

// =============================================================================================
// Proofs
// =============================================================================================

bool AnalyzerImpl::prove_nonneg(const Linear& l, int depth) {
  if (bound(l).lo >= 0) return true;
  for (size_t k = 0; k < facts_.size(); ++k) {
    // l >= fact >= 0
    std::optional<Linear> rest = combine(l, 1, facts_[k], -1);
    if (rest && bound(*rest).lo >= 0) return true;
  }
  if (depth <= 0) return false;
  // Replace variables by what is known about them: the value they are bound to, or the end of
  // their loop range that bounds this term from below.
  Linear lower;
  lower.constant = l.constant;
  bool changed = false;
  for (const auto& [atom, c] : l.terms) {
    Linear term;
    term.terms.emplace_back(atom, c);
    const VarNode* v = atom.as<VarNode>();
    const VarInfo* vi = v ? info(v) : nullptr;
    DataType t = atom.dtype();
    std::optional<Linear> replaced;
    if (vi != nullptr && vi->value.defined() && is_int_scalar(vi->value.dtype())) {
      Linear value = linearize(vi->value);
      if (fits(value, t)) replaced = combine(Linear{}, 0, value, c);
    } else if (vi != nullptr && vi->min.defined()) {
      Linear min = linearize(vi->min);
      Linear extent = linearize(vi->extent);
      if (fits(min, t) && fits(extent, t)) {
        if (c > 0) {
          replaced = combine(Linear{}, 0, min, c);
        } else if (std::optional<Linear> last = combine(min, 1, extent, 1)) {
          last->constant -= 1;
          replaced = combine(Linear{}, 0, *last, c);
        }
      }
    }
    if (replaced) changed = true;
    std::optional<Linear> next = combine(lower, 1, replaced ? *replaced : term, 1);
    if (!next) return false;
    lower = std::move(*next);
  }
  return changed && prove_nonneg(lower, depth - 1);
}

// =============================================================================================
// Congruences
// =============================================================================================

namespace {

Congruence congruence_union(const Congruence& a, const Congruence& b) {
  i128 g = gcd(gcd(a.coeff, b.coeff), a.base - b.base);
  return {g, g == 0 ? a.base : floor_mod(a.base, g)};
}

constexpr int kMaxCongruenceDepth = 8;

}  // namespace

Congruence AnalyzerImpl::congruence(const Expr& e) { return congruence_impl(e, 0); }

Congruence AnalyzerImpl::congruence(const Linear& l, DataType t) { return congruence_of(l, t, 0); }

Congruence AnalyzerImpl::congruence_impl(const Expr& e, int depth) {
  if (!is_int_scalar(e.dtype()) || depth > kMaxCongruenceDepth) return {};
  return congruence_of(linearize(e), e.dtype(), depth);
}

Congruence AnalyzerImpl::congruence_of(const Linear& l, DataType t, int depth) {
  constexpr i128 kLimit = i128(1) << 100;
  i128 g = 0;
  i128 base = l.constant;
  for (const auto& [atom, c] : l.terms) {
    Congruence m = atom_congruence(atom, depth);
    i128 step;
    if (__builtin_mul_overflow(abs128(c), m.coeff, &step) || step >= kLimit) step = abs128(c);
    g = gcd(g, step);
    i128 add;
    if (__builtin_mul_overflow(c, m.base, &add) || abs128(add) >= kLimit) return {};
    base += add;
    if (g != 0) base = floor_mod(base, g);
    if (abs128(base) >= kLimit) return {};
  }
  bool exact = fits(l, t);
  if (g == 0) {
    // Every atom is a known constant: the value is the ring value in the dtype's range.
    i128 v = exact ? base : int_value(make_int(t, base).as<IntImm>());
    return {0, v};
  }
  if (!exact) g = gcd(g, i128(1) << t.bits());  // wraparound keeps congruences mod 2^bits
  return {g, floor_mod(base, g)};
}

Congruence AnalyzerImpl::atom_congruence(const Expr& atom, int depth) {
  switch (atom.kind()) {
    case NodeKind::kVar: {
      const VarInfo* vi = info(atom.as<VarNode>());
      if (vi == nullptr) return {};
      if (vi->bound.is_point()) return {0, vi->bound.lo};
      if (vi->value.defined()) return congruence_impl(vi->value, depth + 1);
      return {};
    }
    case NodeKind::kMul: {
      const auto* op = atom.as<Mul>();
      Congruence a = congruence_impl(op->a, depth + 1);
      Congruence b = congruence_impl(op->b, depth + 1);
      constexpr i128 kLimit = i128(1) << 60;
      for (i128 v : {a.coeff, a.base, b.coeff, b.base}) {
        if (abs128(v) >= kLimit) return {};
      }
      Congruence r{gcd(gcd(a.coeff * b.coeff, a.coeff * b.base), b.coeff * a.base),
                   a.base * b.base};
      Interval product = interval_mul(bound(op->a), bound(op->b));
      if (!interval_within(product, dtype_range(atom.dtype()))) {
        r.coeff = gcd(r.coeff, i128(1) << atom.dtype().bits());
      }
      if (r.coeff != 0) r.base = floor_mod(r.base, r.coeff);
      return r;
    }
    case NodeKind::kFloorMod: {
      const auto* op = atom.as<FloorMod>();
      const auto* d = op->b.as<IntImm>();
      if (d == nullptr || int_value(d) <= 0) return {};
      Congruence a = congruence_impl(op->a, depth + 1);
      if (a.coeff == 0) return {0, floor_mod(a.base, int_value(d))};
      i128 g = gcd(a.coeff, int_value(d));
      return {g, floor_mod(a.base, g)};
    }
    case NodeKind::kFloorDiv: {
      const auto* op = atom.as<FloorDiv>();
      const auto* d = op->b.as<IntImm>();
      if (d == nullptr || int_value(d) <= 0) return {};
      i128 dv = int_value(d);
      Congruence a = congruence_impl(op->a, depth + 1);
      if (a.coeff == 0) return {0, floor_div(a.base, dv)};
      if (a.coeff % dv == 0) return {a.coeff / dv, floor_div(a.base, dv)};
      return {};
    }
    case NodeKind::kMin: {
      const auto* op = atom.as<Min>();
      return congruence_union(congruence_impl(op->a, depth + 1), congruence_impl(op->b, depth + 1));
    }
    case NodeKind::kMax: {
      const auto* op = atom.as<Max>();
      return congruence_union(congruence_impl(op->a, depth + 1), congruence_impl(op->b, depth + 1));
    }
    case NodeKind::kSelect: {
      const auto* op = atom.as<Select>();
      return congruence_union(congruence_impl(op->true_value, depth + 1),
                              congruence_impl(op->false_value, depth + 1));
    }
    case NodeKind::kLet: {
      const auto* op = atom.as<Let>();
      push_scope();
      bind_value(op->var, op->value);
      Congruence r = congruence_impl(op->body, depth + 1);
      pop_scope();
      return r;
    }
    default:
      return {};
  }
}

// =============================================================================================
// Ordering and structure
// =============================================================================================

namespace {

int rank(const Expr& e) {
  switch (e.kind()) {
    case NodeKind::kVar:
      return 0;
    case NodeKind::kIntImm:
    case NodeKind::kFloatImm:
    case NodeKind::kStringImm:
      return 2;
    default:
      return 1;
  }
}

template <typename T>
int three_way(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

int compare_dtype(DataType a, DataType b) {
  if (int c = three_way(static_cast<int>(a.code()), static_cast<int>(b.code()))) return c;
  if (int c = three_way(a.bits(), b.bits())) return c;
  return three_way(a.lanes(), b.lanes());
}

uint64_t float_bits(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return bits;
}

}  // namespace

int64_t AnalyzerImpl::ordinal(const Ref<Object>& object) {
  auto it = ordinals_.find(object.get());
  if (it != ordinals_.end()) return it->second.second;
  int64_t n = next_ordinal_++;
  ordinals_.emplace(object.get(), std::make_pair(object, n));
  return n;
}

void AnalyzerImpl::number_objects(const Expr& e) {
  post_order_visit(e, [&](const Ref<Object>& node) {
    if (node.kind() == NodeKind::kVar) {
      ordinal(node);
    } else if (const auto* load = node.as<BufferLoad>()) {
      ordinal(Ref<Object>(load->buffer));
    }
  });
}

int AnalyzerImpl::compare_buffer(const Buffer& a, const Buffer& b) {
  if (a.same_as(b)) return 0;
  if (int c = three_way(a->name, b->name)) return c;
  if (int c = compare_dtype(a->dtype, b->dtype)) return c;
  if (int c = compare(a->data, b->data)) return c;
  if (int c = three_way(a->shape.size(), b->shape.size())) return c;
  for (size_t i = 0; i < a->shape.size(); ++i) {
    if (int c = compare(a->shape[i], b->shape[i])) return c;
  }
  return three_way(ordinal(Ref<Object>(a)), ordinal(Ref<Object>(b)));
}

int AnalyzerImpl::compare(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return 0;
  if (int c = three_way(rank(a), rank(b))) return c;
  if (int c = three_way(static_cast<int>(a.kind()), static_cast<int>(b.kind()))) return c;
  if (int c = compare_dtype(a.dtype(), b.dtype())) return c;
  switch (a.kind()) {
    case NodeKind::kIntImm:
      return three_way(int_value(a.as<IntImm>()), int_value(b.as<IntImm>()));
    case NodeKind::kFloatImm:
      return three_way(float_bits(a.as<FloatImm>()->value), float_bits(b.as<FloatImm>()->value));
    case NodeKind::kStringImm:
      return three_way(a.as<StringImm>()->value, b.as<StringImm>()->value);
    case NodeKind::kVar: {
      const auto* x = a.as<VarNode>();
      const auto* y = b.as<VarNode>();
      if (int c = three_way(x->name, y->name)) return c;
      if (int c = three_way(x->is_size_var, y->is_size_var)) return c;
      if (int c = three_way(x->storage_scope, y->storage_scope)) return c;
      if (int c = compare_dtype(x->pointee, y->pointee)) return c;
      return three_way(ordinal(a), ordinal(b));
    }
    case NodeKind::kNot:
      return compare(a.as<Not>()->a, b.as<Not>()->a);
    case NodeKind::kSelect: {
      const auto* x = a.as<Select>();
      const auto* y = b.as<Select>();
      if (int c = compare(x->condition, y->condition)) return c;
      if (int c = compare(x->true_value, y->true_value)) return c;
      return compare(x->false_value, y->false_value);
    }
    case NodeKind::kCast:
      return compare(a.as<Cast>()->value, b.as<Cast>()->value);
    case NodeKind::kLet: {
      const auto* x = a.as<Let>();
      const auto* y = b.as<Let>();
      if (int c = compare(x->var, y->var)) return c;
      if (int c = compare(x->value, y->value)) return c;
      return compare(x->body, y->body);
    }
    case NodeKind::kBufferLoad: {
      const auto* x = a.as<BufferLoad>();
      const auto* y = b.as<BufferLoad>();
      if (int c = compare_buffer(x->buffer, y->buffer)) return c;
      if (int c = three_way(x->indices.size(), y->indices.size())) return c;
      for (size_t i = 0; i < x->indices.size(); ++i) {
        if (int c = compare(x->indices[i], y->indices[i])) return c;
      }
      return 0;
    }
    case NodeKind::kRamp: {
      const auto* x = a.as<Ramp>();
      const auto* y = b.as<Ramp>();
      if (int c = compare(x->base, y->base)) return c;
      return compare(x->stride, y->stride);
    }
    case NodeKind::kBroadcast:
      return compare(a.as<Broadcast>()->value, b.as<Broadcast>()->value);
    case NodeKind::kCall: {
      const auto* x = a.as<Call>();
      const auto* y = b.as<Call>();
      if (int c = three_way(x->op.defined(), y->op.defined())) return c;
      const std::string& nx = x->op.defined() ? x->op->name : x->callee->name;
      const std::string& ny = y->op.defined() ? y->op->name : y->callee->name;
      if (int c = three_way(nx, ny)) return c;
      if (int c = three_way(x->args.size(), y->args.size())) return c;
      for (size_t i = 0; i < x->args.size(); ++i) {
        if (int c = compare(x->args[i], y->args[i])) return c;
      }
      if (!x->op.defined() && !x->callee.same_as(y->callee)) {
        return three_way(ordinal(Ref<Object>(x->callee)), ordinal(Ref<Object>(y->callee)));
      }
      return 0;
    }
    default: {
      auto [xa, xb] = operands(a);
      auto [ya, yb] = operands(b);
      PRIMJIT_ICHECK(xa != nullptr) << "compare: unhandled kind " << node_kind_name(a.kind());
      if (int c = compare(*xa, *ya)) return c;
      return compare(*xb, *yb);
    }
  }
}

bool AnalyzerImpl::equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
  switch (a.kind()) {
    case NodeKind::kIntImm:
      return a.as<IntImm>()->value == b.as<IntImm>()->value;
    case NodeKind::kFloatImm:
      return float_bits(a.as<FloatImm>()->value) == float_bits(b.as<FloatImm>()->value);
    case NodeKind::kStringImm:
      return a.as<StringImm>()->value == b.as<StringImm>()->value;
    case NodeKind::kVar:
      return false;  // distinct variables
    case NodeKind::kNot:
      return equal(a.as<Not>()->a, b.as<Not>()->a);
    case NodeKind::kSelect: {
      const auto* x = a.as<Select>();
      const auto* y = b.as<Select>();
      return equal(x->condition, y->condition) && equal(x->true_value, y->true_value) &&
             equal(x->false_value, y->false_value);
    }
    case NodeKind::kCast:
      return equal(a.as<Cast>()->value, b.as<Cast>()->value);
    case NodeKind::kLet: {
      const auto* x = a.as<Let>();
      const auto* y = b.as<Let>();
      return x->var.same_as(y->var) && equal(x->value, y->value) && equal(x->body, y->body);
    }
    case NodeKind::kBufferLoad: {
      const auto* x = a.as<BufferLoad>();
      const auto* y = b.as<BufferLoad>();
      if (!x->buffer.same_as(y->buffer) || x->indices.size() != y->indices.size()) return false;
      for (size_t i = 0; i < x->indices.size(); ++i) {
        if (!equal(x->indices[i], y->indices[i])) return false;
      }
      return true;
    }
    case NodeKind::kRamp: {
      const auto* x = a.as<Ramp>();
      const auto* y = b.as<Ramp>();
      return equal(x->base, y->base) && equal(x->stride, y->stride);
    }
    case NodeKind::kBroadcast:
      return equal(a.as<Broadcast>()->value, b.as<Broadcast>()->value);
    case NodeKind::kCall: {
      const auto* x = a.as<Call>();
      const auto* y = b.as<Call>();
      if (!x->op.same_as(y->op) || !x->callee.same_as(y->callee)) return false;
      if (x->args.size() != y->args.size()) return false;
      for (size_t i = 0; i < x->args.size(); ++i) {
        if (!equal(x->args[i], y->args[i])) return false;
      }
      return true;
    }
    default: {
      auto [xa, xb] = operands(a);
      auto [ya, yb] = operands(b);
      return xa != nullptr && equal(*xa, *ya) && equal(*xb, *yb);
    }
  }
}

bool AnalyzerImpl::pure(const Expr& e) { return call_effect_of(e) == CallEffect::kPure; }

}  // namespace detail

// =============================================================================================
// Public API
// =============================================================================================

using detail::i128;
using detail::Interval;
using detail::kInf;

Analyzer::Analyzer() : impl_(std::make_unique<detail::AnalyzerImpl>()) {}
Analyzer::~Analyzer() = default;

Analyzer::Scope::Scope(Analyzer& analyzer) : analyzer_(analyzer) { analyzer_.impl_->push_scope(); }
Analyzer::Scope::~Scope() { analyzer_.impl_->pop_scope(); }

void Analyzer::bind(const Var& var, const Expr& min, const Expr& extent) {
  PRIMJIT_USER_CHECK(var.defined() && min.defined() && extent.defined())
      << "Analyzer::bind: variable, min and extent must be defined";
  PRIMJIT_USER_CHECK(var.dtype().is_integer() && var.dtype().is_scalar())
      << "Analyzer::bind: loop variable '" << var->name << "' must be a scalar integer, got "
      << var.dtype();
  PRIMJIT_USER_CHECK(min.dtype() == var.dtype() && extent.dtype() == var.dtype())
      << "Analyzer::bind: range of '" << var->name << "' must have its dtype " << var.dtype()
      << ", got min " << min.dtype() << " and extent " << extent.dtype();
  impl_->bind_range(var, impl_->simplify(min), impl_->simplify(extent));
}

void Analyzer::bind(const Var& var, const Expr& value) {
  PRIMJIT_USER_CHECK(var.defined() && value.defined())
      << "Analyzer::bind: variable and value must be defined";
  PRIMJIT_USER_CHECK(value.dtype() == var.dtype())
      << "Analyzer::bind: '" << var->name << "' has dtype " << var.dtype() << " but the value has "
      << value.dtype();
  impl_->bind_value(var, impl_->simplify(value));
}

void Analyzer::forget(const std::function<bool(const Expr&)>& stale) { impl_->forget(stale); }

void Analyzer::assume(const Expr& condition) {
  PRIMJIT_USER_CHECK(condition.defined() && condition.dtype().is_bool())
      << "Analyzer::assume: needs a bool condition";
  impl_->assume(impl_->simplify(condition));
}

ConstIntBound Analyzer::const_int_bound(const Expr& expr) {
  PRIMJIT_USER_CHECK(expr.defined()) << "Analyzer::const_int_bound: undefined expression";
  Interval r = impl_->bound(expr);
  constexpr i128 kMin = ConstIntBound::kNegInf;
  constexpr i128 kMax = ConstIntBound::kPosInf;
  ConstIntBound out;
  // Ends beyond int64 are unbounded; a lower end above INT64_MAX - 1 is lowered to it.
  if (r.lo > kMin) out.min = static_cast<int64_t>(std::min(r.lo, kMax - 1));
  if (r.hi < kMax) out.max = static_cast<int64_t>(std::max(r.hi, kMin + 1));
  return out;
}

ModularSet Analyzer::modular_set(const Expr& expr) {
  PRIMJIT_USER_CHECK(expr.defined()) << "Analyzer::modular_set: undefined expression";
  detail::Congruence m = impl_->congruence(expr);
  constexpr i128 kMax = std::numeric_limits<int64_t>::max();
  if (m.coeff == 0) {
    if (m.base < std::numeric_limits<int64_t>::min() || m.base > kMax) return {};
    return {0, static_cast<int64_t>(m.base)};
  }
  if (m.coeff > kMax) {
    // Any divisor of the modulus is still a true congruence.
    m.coeff = detail::gcd(m.coeff, i128(1) << 62);
    m.base = detail::floor_mod(m.base, m.coeff);
  }
  return {static_cast<int64_t>(m.coeff), static_cast<int64_t>(m.base)};
}

Expr Analyzer::simplify(const Expr& expr) {
  PRIMJIT_USER_CHECK(expr.defined()) << "Analyzer::simplify: undefined expression";
  return impl_->simplify(expr);
}

bool Analyzer::can_prove(const Expr& condition) {
  PRIMJIT_USER_CHECK(condition.defined() && condition.dtype().is_bool())
      << "Analyzer::can_prove: needs a bool condition";
  Expr r = impl_->simplify(condition);
  if (const auto* b = r.as<Broadcast>()) r = b->value;
  const auto* imm = r.as<IntImm>();
  return imm != nullptr && imm->value != 0;
}

bool Analyzer::can_prove_equal(const Expr& a, const Expr& b) {
  PRIMJIT_USER_CHECK(a.defined() && b.defined()) << "Analyzer::can_prove_equal: undefined";
  if (a.dtype() != b.dtype()) return false;
  if (a.dtype().is_int_or_bool()) return can_prove(EQ::make(a, b));
  Expr sa = impl_->simplify(a);
  Expr sb = impl_->simplify(b);
  return detail::AnalyzerImpl::equal(sa, sb) && detail::AnalyzerImpl::pure(sa);
}

Expr simplify(const Expr& expr) {
  Analyzer analyzer;
  return analyzer.simplify(expr);
}

}  // namespace primjit::arith
