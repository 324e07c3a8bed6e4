// The fact store: variables' ranges and values and the conditions assumed to hold, with scoped
// undo; forgetting facts about memory a store may have changed; and proofs of
// non-negativity that combine bounds with those facts.
#include <algorithm>

#include "ir/arith/arith_internal.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"

namespace primjit::arith::detail {
namespace {

bool is_compare(NodeKind k) {
  return k == NodeKind::kEQ || k == NodeKind::kNE || k == NodeKind::kLT || k == NodeKind::kLE ||
         k == NodeKind::kGT || k == NodeKind::kGE;
}

}  // namespace

// =============================================================================================
// Facts and scopes
// =============================================================================================

AnalyzerImpl::AnalyzerImpl() = default;

void AnalyzerImpl::push_scope() {
  frames_.push_back({undo_.size(), facts_.size(), known_true_.size(), disjunctions_.size()});
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
  disjunctions_.resize(frame.disjunctions_size);
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
  for (std::vector<Expr>& cases : disjunctions_) {
    if (std::any_of(cases.begin(), cases.end(), is_stale)) cases.clear();
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

Expr AnalyzerImpl::bound_value(const VarNode* var) const {
  const VarInfo* vi = info(var);
  return vi != nullptr && vi->value.defined() && vi->value.dtype().is_bool() ? vi->value : Expr();
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
    case NodeKind::kOr: {
      std::vector<Expr> cases;
      flatten(NodeKind::kOr, cond, &cases);
      add_disjunction(std::move(cases));
      return;
    }
    case NodeKind::kVar: {
      // A boolean Bind (`c = i < n`) that holds makes its value hold.
      Expr value = bound_value(cond.as<VarNode>());
      tighten(Var(cond.as<VarNode>()), Interval::point(1));
      if (value.defined()) assume(value);
      return;
    }
    case NodeKind::kNot: {
      const Expr& x = cond.as<Not>()->a;
      if (const auto* v = x.as<VarNode>()) {
        Expr value = bound_value(v);
        tighten(Var(v), Interval::point(0));
        if (value.defined()) assume(Not::make(value));
      } else if (const auto* o = x.as<Or>()) {
        assume(Not::make(o->a));
        assume(Not::make(o->b));
      } else if (const auto* n = x.as<Not>()) {
        assume(n->a);
      } else if (x.as<And>() != nullptr) {
        // not (a and b): a fails or b fails.
        std::vector<Expr> conjuncts;
        flatten(NodeKind::kAnd, x, &conjuncts);
        std::vector<Expr> cases;
        for (const Expr& c : conjuncts) cases.push_back(Not::make(c));
        add_disjunction(std::move(cases));
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

void AnalyzerImpl::add_disjunction(std::vector<Expr> disjuncts) {
  // A longer disjunction is kept as a plain fact: splitting it would cost too much.
  if (disjuncts.size() < 2 || disjuncts.size() > kMaxDisjuncts) return;
  disjunctions_.push_back(std::move(disjuncts));
}

std::optional<bool> AnalyzerImpl::by_cases(const std::function<std::optional<bool>()>& query) {
  if (splitting_ || disjunctions_.empty()) return std::nullopt;
  struct Splitting {
    bool& flag;
    explicit Splitting(bool& f) : flag(f) { flag = true; }
    ~Splitting() { flag = false; }
  } splitting(splitting_);
  size_t tried = 0;
  for (size_t k = disjunctions_.size(); k-- > 0 && tried < kMaxCaseFacts;) {
    if (disjunctions_[k].empty()) continue;
    ++tried;
    std::vector<Expr> cases = disjunctions_[k];  // assume() below may grow the list
    std::optional<bool> common;
    bool agree = true;
    for (const Expr& d : cases) {
      Expr decided = simplify(d);  // kept alive: `known` points into it
      const auto* known = decided.as<IntImm>();
      if (known != nullptr && known->value == 0) continue;  // this case cannot happen here
      push_scope();
      assume(d);
      std::optional<bool> r = query();
      pop_scope();
      if (!r || (common && *common != *r)) {
        agree = false;
        break;
      }
      common = r;
    }
    if (agree && common) return common;
  }
  return std::nullopt;
}

// =============================================================================================
// Proofs
// =============================================================================================

std::optional<Linear> AnalyzerImpl::expand_floor_div(const Expr& atom, i128 c) {
  const auto* div = atom.as<FloorDiv>();
  if (div == nullptr || !is_int_scalar(atom.dtype())) return std::nullopt;
  const auto* k = div->b.as<IntImm>();
  if (k == nullptr || int_value(k) <= 0 || c % int_value(k) != 0) return std::nullopt;
  // x // k * k == x - x % k for k > 0, where x is the dividend's value (its ring form when
  // that is exact, else the dividend as one atom).
  i128 q = c / int_value(k);
  Linear x = linearize(div->a);
  if (!fits(x, atom.dtype())) x = Linear{{{div->a, 1}}, 0};
  Linear remainder{{{FloorMod::make(div->a, div->b), 1}}, 0};
  return combine(x, q, remainder, -q);
}

bool AnalyzerImpl::prove_nonneg(const Linear& l, int depth) {
  if (bound(l).lo >= 0) return true;
  for (size_t k = 0; k < facts_.size(); ++k) {
    // l >= fact >= 0
    std::optional<Linear> rest = combine(l, 1, facts_[k], -1);
    if (rest && bound(*rest).lo >= 0) return true;
  }
  // Two facts in a chain: l >= f1 + f2 >= 0 (i < j and j < k give i < k). Only the innermost
  // few are paired, so that a proof costs a bounded number of steps.
  size_t first = facts_.size() > kMaxChainFacts ? facts_.size() - kMaxChainFacts : 0;
  for (size_t a = first; a < facts_.size(); ++a) {
    if (facts_[a].terms.empty()) continue;
    std::optional<Linear> rest = combine(l, 1, facts_[a], -1);
    if (!rest) continue;
    for (size_t b = a + 1; b < facts_.size(); ++b) {
      if (facts_[b].terms.empty()) continue;
      std::optional<Linear> chained = combine(*rest, 1, facts_[b], -1);
      if (chained && bound(*chained).lo >= 0) return true;
    }
  }
  if (depth <= 0) return false;
  // Replace variables by what is known about them: the value they are bound to, or the end of
  // their loop range that bounds this term from below. A loop whose range is stated in a
  // bound variable (`for io in range(n_32)` with `n_32 = n // 32`) needs its variables
  // replaced first, with the bound variable kept: `n_32 * 32 - io * 32 - ii - 1 >= 0` holds
  // at the ends of the loops, not after n_32 became its value. So that step is tried first
  // when both kinds of variable occur.
  auto replace = [&](bool loops_only, bool* changed) -> std::optional<Linear> {
    Linear lower;
    lower.constant = l.constant;
    for (const auto& [atom, c] : l.terms) {
      Linear term;
      term.terms.emplace_back(atom, c);
      const VarNode* v = atom.as<VarNode>();
      const VarInfo* vi = v ? info(v) : nullptr;
      DataType t = atom.dtype();
      std::optional<Linear> replaced;
      if (vi != nullptr && vi->value.defined() && is_int_scalar(vi->value.dtype())) {
        Linear value = linearize(vi->value);
        if (!loops_only && fits(value, t)) replaced = combine(Linear{}, 0, value, c);
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
      if (!replaced && !loops_only) replaced = expand_floor_div(atom, c);
      if (replaced) *changed = true;
      std::optional<Linear> next = combine(lower, 1, replaced ? *replaced : term, 1);
      if (!next) return std::nullopt;
      lower = std::move(*next);
    }
    return lower;
  };
  bool bound_vars = false, loop_vars = false;
  for (const auto& term : l.terms) {
    const VarNode* v = term.first.as<VarNode>();
    const VarInfo* vi = v ? info(v) : nullptr;
    if (vi == nullptr) continue;
    if (vi->value.defined()) {
      bound_vars = true;
    } else if (vi->min.defined()) {
      loop_vars = true;
    }
  }
  if (bound_vars && loop_vars) {
    bool changed = false;
    std::optional<Linear> lower = replace(true, &changed);
    if (lower && changed && prove_nonneg(*lower, depth - 1)) return true;
  }
  bool changed = false;
  std::optional<Linear> lower = replace(false, &changed);
  return lower && changed && prove_nonneg(*lower, depth - 1);
}

}  // namespace primjit::arith::detail
