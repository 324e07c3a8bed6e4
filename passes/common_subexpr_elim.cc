// CommonSubexprElim: binds pure subexpressions computed more than once within a scope.
//
// Requires: VerifyWellFormed holds (flat Bind scoping, one definition per variable).
// Ensures:  in each scope (function body, For/While body, each If branch, launch body), a pure
//           subexpression computed at least twice, once unconditionally in that scope itself,
//           is computed once by a new `cse_vN: <its dtype> = value` placed before the first
//           statement that uses it, and every use reads the variable; uses that follow an equal
//           Bind of the same scope read that Bind's variable instead (no new Bind). Equal means
//           the same operations on the same operands, a Bind variable standing for its value
//           (a Bind's scope is the rest of its sequence: its value and what follows share).
//           A value that cannot fault and reads no memory (no load, no division by a
//           non-constant, no call) is also bound before an If whose two branches both compute
//           it, and before the first of two loops of the scope that compute it; a value used
//           inside one branch or one loop only is left to that statement's own scope.
//           Never shared: calls that are not pure (Call::effect()); a load across a possible
//           write to its memory (a store through any pointer that may alias its buffer's
//           (AliasAnalysis: views sharing a data pointer, a Bind of `X.data`, `T.address_of`),
//           a call with side effects, a loop or launch whose body holds one); Let expressions and
//           what is under `T.address_of`; Ramp, Broadcast and `T.likely` nodes and casts of a
//           variable or constant (their operands are). Otherwise nothing moves out of an If
//           branch or an `if_then_else` arm unless the scope computed it first; nothing is
//           shared across a launch (AttrStmt) or a thread-bound loop; an expression that can
//           fault (a load, a division by a non-constant, a call) is never evaluated before the
//           program did, and nothing using a loop's variable leaves that loop.
//           New variables are numbered per function in program order. Output is deterministic.
// Example:
//   for i in range(4):                                 for i in range(4):
//       for j in range(16):                   =>           for j in range(16):
//           A[i * 16 + j] = B[i * 16 + j] + C[i * 16 + j]      cse_v1: T.int32 = i * 16 + j
//                                                              A[cse_v1] = B[cse_v1] + C[cse_v1]
//
// How. A first walk gives every non-leaf expression position an occurrence record, numbered in
// pre-order (a subtree is a contiguous range), with a value number: equal numbers mean equal
// values at those positions. A load's number includes a memory version, renewed at every
// possible write to its memory region and, on entry to a loop or launch, for what its body
// writes. Then each scope, outermost first, takes the live occurrences below it (not behind a
// launch), largest values first: a value with two or more uses, one of them unconditional in
// the scope (or, for one that cannot fault, uses in both branches of an If or in two loops),
// is bound. Its uses are marked replaced, which kills their subexpressions (so the
// `i * 16` inside a replaced `i * 16 + j` is not counted again), except in the first use, whose
// subexpressions become the new Bind's value. A second walk, in the same order, rebuilds the
// statements. Decisions read arrays in program order; the cost is linear in the expression
// nodes below each scope, whatever the length of a run of Binds (no rescan per Bind).
//
// Files: cse_value_table.h (value numbers), cse_numbering.h/.cc (the first walk: occurrences,
// memory versions, scopes); this file plans the Binds scope by scope and rewrites.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "passes/cse_numbering.h"
#include "passes/pass_list.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"

namespace primjit::passes {
namespace {

using cse::Binding;
using cse::has_opaque_children;
using cse::is_leaf;
using cse::Numbering;
using cse::OccState;
using cse::Occurrence;
using cse::Scope;
using cse::ValueInfo;

// ---------------------------------------------------------------------------------------------
// Decisions, scope by scope, outermost first
// ---------------------------------------------------------------------------------------------

class Planner {
 public:
  explicit Planner(Numbering& n) : n_(n), head_(n.values.size(), -1), tail_(n.values.size(), -1) {}

  // Returns true when anything is to be rewritten.
  bool run() {
    for (size_t s = 0; s < n_.scopes.size(); ++s) plan_scope(static_cast<int>(s));
    for (Scope& scope : n_.scopes) {
      std::sort(scope.placed.begin(), scope.placed.end(), [&](int a, int b) {
        const Binding& x = n_.bindings[a];
        const Binding& y = n_.bindings[b];
        if (x.stmt != y.stmt) return x.stmt < y.stmt;
        if (x.height != y.height) return x.height < y.height;  // operands first
        return x.rep < y.rep;
      });
    }
    return changed_;
  }

 private:
  enum class Place : uint8_t {
    kDirect,   // in the scope's own statements, evaluated whenever the statement runs
    kLoop,     // inside a loop body or while condition below the scope
    kGuarded,  // inside an If branch or an if_then_else arm below or in the scope
  };
  enum class Branch : uint8_t { kNone, kThen, kElse };  // of the If statement `stmt`
  struct Candidate {
    int occ;
    int stmt;
    Place place;
    Branch branch;
  };

  void plan_scope(int s) {
    const Scope& scope = n_.scopes[s];
    if (scope.stmts.empty()) return;
    int depth = scope.depth;
    cands_.clear();
    size_t stmt = 0;
    int max_height = 0;
    for (int o = scope.occ_begin; o < scope.occ_end;) {
      const Occurrence& occ = n_.occs[o];
      int iso = n_.scopes[occ.scope].isolated_root;
      if (iso >= 0 && n_.scopes[iso].depth > depth) {  // behind a launch: not ours
        o = std::max(o + 1, n_.scopes[iso].occ_end);
        continue;
      }
      if (occ.state != OccState::kLive) {
        o = occ.end;  // replaced by an outer scope: its operands are dead or a Bind's value
        continue;
      }
      const ValueInfo& info = n_.values.info(occ.value);
      if (info.shareable && !occ.cheap) {
        while (scope.stmts[stmt].occ_end <= o) ++stmt;
        Place place = Place::kLoop;
        if (occ.guarded || n_.scopes[occ.scope].branch_depth > depth) {
          place = Place::kGuarded;
        } else if (occ.scope == s) {
          place = Place::kDirect;
        }
        const cse::StmtSpan& span = scope.stmts[stmt];
        Branch branch = Branch::kNone;
        if (span.else_begin >= 0 && o >= span.else_begin) {
          branch = Branch::kElse;
        } else if (span.then_begin >= 0 && o >= span.then_begin) {
          branch = Branch::kThen;
        }
        cands_.push_back({o, static_cast<int>(stmt), place, branch});
        max_height = std::max(max_height, info.height);
      }
      ++o;
    }
    if (cands_.size() < 2) return;
    sort_by_height(max_height);
    // Largest values first: replacing one kills the uses of its operands inside it.
    for (size_t begin = 0; begin < order_.size();) {
      int height = height_of(order_[begin]);
      size_t end = begin;
      while (end < order_.size() && height_of(order_[end]) == height) ++end;
      plan_height(s, begin, end, height);
      begin = end;
    }
  }

  int height_of(int cand) const { return n_.values.info(n_.occs[cands_[cand].occ].value).height; }

  // order_: candidate indices by decreasing height, program order within a height.
  void sort_by_height(int max_height) {
    order_.resize(cands_.size());
    if (static_cast<size_t>(max_height) <= 2 * cands_.size() + 64) {  // counting sort
      count_.assign(max_height + 2, 0);
      for (size_t c = 0; c < cands_.size(); ++c) ++count_[max_height - height_of(c) + 1];
      for (size_t h = 1; h < count_.size(); ++h) count_[h] += count_[h - 1];
      for (size_t c = 0; c < cands_.size(); ++c) order_[count_[max_height - height_of(c)]++] = c;
    } else {
      for (size_t c = 0; c < cands_.size(); ++c) order_[c] = static_cast<int>(c);
      std::stable_sort(order_.begin(), order_.end(),
                       [&](int a, int b) { return height_of(a) > height_of(b); });
    }
  }

  void plan_height(int s, size_t begin, size_t end, int height) {
    // Group the live candidates by value, keeping program order inside each group.
    touched_.clear();
    next_.assign(end - begin, -1);
    for (size_t i = begin; i < end; ++i) {
      const Occurrence& occ = n_.occs[cands_[order_[i]].occ];
      if (occ.state != OccState::kLive) continue;  // killed by a larger value of this scope
      int local = static_cast<int>(i - begin);
      int vn = occ.value;
      if (head_[vn] < 0) {
        head_[vn] = local;
        touched_.push_back(vn);
      } else {
        next_[tail_[vn]] = local;
      }
      tail_[vn] = local;
    }
    for (int vn : touched_) {
      group_.clear();
      for (int local = head_[vn]; local >= 0; local = next_[local]) {
        const Candidate& c = cands_[order_[begin + local]];
        if (group_.empty() && !can_lead(s, c, vn)) continue;
        group_.push_back(c);
      }
      head_[vn] = -1;
      tail_[vn] = -1;
      if (group_.size() >= 2 && worth_binding(vn)) bind_group(s, height);
    }
  }

  // The first use of a group is where its value is computed: it must be evaluated there
  // anyway, or be harmless to evaluate early (it cannot fault and reads no memory), and
  // everything it reads must be visible.
  bool can_lead(int s, const Candidate& c, int vn) const {
    const Scope& scope = n_.scopes[s];
    const Occurrence& occ = n_.occs[c.occ];
    if (c.place != Place::kDirect && n_.values.info(vn).may_fault) return false;
    return occ.def_depth <= scope.depth && occ.stamp <= scope.stmts[c.stmt].start_stamp;
  }

  // This scope is where the group (program order) is bound when one of its uses is the scope's
  // own, or, for a value that cannot fault, when the scope is the innermost one holding them
  // all on more than one path: both branches of one If, or the bodies of two of its loops. A
  // value used only inside one loop or one branch is left to that statement's scope.
  bool worth_binding(int vn) const {
    for (const Candidate& c : group_) {
      if (c.place == Place::kDirect) return true;
    }
    if (n_.values.info(vn).may_fault) return false;
    int loop_stmt = -1;
    int then_stmt = -1;
    for (const Candidate& c : group_) {
      if (c.place == Place::kLoop) {
        if (loop_stmt >= 0 && loop_stmt != c.stmt) return true;
        loop_stmt = c.stmt;
      }
      if (c.branch == Branch::kThen) then_stmt = c.stmt;
      if (c.branch == Branch::kElse && then_stmt == c.stmt) return true;
    }
    return false;
  }

  void bind_group(int s, int height) {
    changed_ = true;
    const Candidate& lead = group_.front();
    Occurrence& first = n_.occs[lead.occ];
    if (first.existing >= 0 && lead.place == Place::kDirect) {  // an existing Bind of this scope
      for (size_t i = 1; i < group_.size(); ++i) replace(group_[i].occ, first.existing);
      return;
    }
    Binding b;
    b.stmt = lead.stmt;
    b.rep = lead.occ;
    b.height = height;
    n_.bindings.push_back(b);
    int id = static_cast<int>(n_.bindings.size()) - 1;
    n_.scopes[s].placed.push_back(id);
    for (const Candidate& c : group_) replace(c.occ, id);
  }

  void replace(int o, int binding) {
    Occurrence& occ = n_.occs[o];
    occ.state = OccState::kReplaced;
    occ.target = binding;
    if (n_.bindings[binding].rep == o) return;  // its operands become the new Bind's value
    for (int d = o + 1; d < occ.end;) {
      Occurrence& sub = n_.occs[d];
      if (sub.state != OccState::kLive) {
        d = sub.end;
      } else {
        sub.state = OccState::kDead;
        ++d;
      }
    }
  }

  Numbering& n_;
  bool changed_ = false;
  std::vector<Candidate> cands_;
  std::vector<int> order_;
  std::vector<int> count_;
  std::vector<int> head_, tail_, next_;  // per value: first/last candidate; per candidate: next
  std::vector<int> touched_;
  std::vector<Candidate> group_;
};

// ---------------------------------------------------------------------------------------------
// The second walk: same order as Numbering, emitting Binds and reading replaced values
// ---------------------------------------------------------------------------------------------

class Rewriter : public StmtExprMutator {
 public:
  explicit Rewriter(Numbering& n) : n_(n) {}

  Stmt run(const Stmt& body) {
    next_scope_ = 1;
    return rewrite_scope(body, 0);
  }

  Expr mutate_expr(const Expr& e) override {
    if (is_leaf(e)) return e;
    int id = next_occ_++;
    const Occurrence& occ = n_.occs[id];
    PRIMJIT_ICHECK(occ.expr == e.get()) << "CommonSubexprElim: walks out of step";
    if (occ.state == OccState::kReplaced) {
      next_occ_ = occ.end;
      const Binding& b = n_.bindings[occ.target];
      PRIMJIT_ICHECK(b.var.defined()) << "CommonSubexprElim: variable used before its Bind";
      return b.var;
    }
    if (has_opaque_children(e)) return e;
    Expr result = StmtExprMutator::mutate_expr(e);
    PRIMJIT_ICHECK(next_occ_ == occ.end) << "CommonSubexprElim: walks out of step";
    return result;
  }

 private:
  struct Cursor {
    int scope;
    size_t stmt = 0;    // statements of the scope seen so far
    size_t placed = 0;  // its new Binds emitted so far
  };

  Stmt rewrite_scope(const Stmt& body, int scope) {
    Cursor cursor{scope};
    return rewrite_in_scope(body, cursor);
  }

  Stmt rewrite_in_scope(const Stmt& s, Cursor& cursor) {
    if (const auto* seq = s.as<SeqStmt>()) {
      std::vector<Stmt> out;
      out.reserve(seq->seq.size());
      bool changed = false;
      for (const Stmt& child : seq->seq) {
        out.push_back(rewrite_in_scope(child, cursor));
        changed = changed || !out.back().same_as(child);
      }
      return changed ? SeqStmt::make(std::move(out)) : s;
    }
    std::vector<Stmt> binds;
    const std::vector<int>& placed = n_.scopes[cursor.scope].placed;
    while (cursor.placed < placed.size() &&
           n_.bindings[placed[cursor.placed]].stmt == static_cast<int>(cursor.stmt)) {
      binds.push_back(emit(n_.bindings[placed[cursor.placed++]]));
    }
    ++cursor.stmt;
    Stmt result = rewrite_stmt(s);
    if (binds.empty()) return result;
    binds.push_back(result);
    return SeqStmt::make(std::move(binds));
  }

  Stmt emit(Binding& b) {
    const Occurrence& rep = n_.occs[b.rep];
    Expr expr(rep.expr);
    int saved = next_occ_;
    next_occ_ = b.rep + 1;
    Expr value = StmtExprMutator::mutate_expr(expr);  // the operands; the node itself is kept
    PRIMJIT_ICHECK(next_occ_ == rep.end) << "CommonSubexprElim: walks out of step";
    next_occ_ = saved;
    b.var = Var::make("cse_v" + std::to_string(++counter_), value.dtype());
    return Bind::make(b.var, value);
  }

  Stmt nested(const Stmt& body) { return rewrite_scope(body, next_scope_++); }

  Stmt rewrite_stmt(const Stmt& s) {
    switch (s.kind()) {
      case NodeKind::kBind: {
        const auto* op = s.as<Bind>();
        Expr value = mutate_expr(op->value);
        return value.same_as(op->value) ? s : Bind::make(op->var, value);
      }
      case NodeKind::kAttrStmt: {
        const auto* op = s.as<AttrStmt>();
        Expr value = mutate_expr(op->value);
        Stmt body = nested(op->body);
        if (value.same_as(op->value) && body.same_as(op->body)) return s;
        return AttrStmt::make(op->node, op->key, value, body);
      }
      case NodeKind::kAssertStmt: {
        const auto* op = s.as<AssertStmt>();
        Expr cond = mutate_expr(op->condition);
        Expr message = mutate_expr(op->message);
        if (cond.same_as(op->condition) && message.same_as(op->message)) return s;
        return AssertStmt::make(cond, message);
      }
      case NodeKind::kBufferStore: {
        const auto* op = s.as<BufferStore>();
        Expr value = mutate_expr(op->value);
        std::vector<Expr> indices = op->indices;
        bool changed = mutate_exprs(op->indices, &indices);
        if (!changed && value.same_as(op->value)) return s;
        return BufferStore::make(op->buffer, value, std::move(indices));
      }
      case NodeKind::kAllocBuffer:
      case NodeKind::kDeclBuffer:
        return s;
      case NodeKind::kFor: {
        const auto* op = s.as<For>();
        Expr min = mutate_expr(op->min);
        Expr extent = mutate_expr(op->extent);
        Stmt body = nested(op->body);
        if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) {
          return s;
        }
        return For::make(op->loop_var, min, extent, op->for_kind, body, op->thread_tag,
                         op->annotations);
      }
      case NodeKind::kWhile: {
        const auto* op = s.as<While>();
        ++next_scope_;  // the condition's scope holds no statement
        Expr cond = mutate_expr(op->condition);
        Stmt body = nested(op->body);
        if (cond.same_as(op->condition) && body.same_as(op->body)) return s;
        return While::make(cond, body);
      }
      case NodeKind::kIfThenElse: {
        const auto* op = s.as<IfThenElse>();
        Expr cond = mutate_expr(op->condition);
        Stmt then_case = nested(op->then_case);
        Stmt else_case = op->else_case.defined() ? nested(op->else_case) : Stmt();
        if (cond.same_as(op->condition) && then_case.same_as(op->then_case) &&
            else_case.same_as(op->else_case)) {
          return s;
        }
        return IfThenElse::make(cond, then_case, else_case);
      }
      case NodeKind::kEvaluate: {
        const auto* op = s.as<Evaluate>();
        Expr value = mutate_expr(op->value);
        return value.same_as(op->value) ? s : Evaluate::make(value);
      }
      default:
        PRIMJIT_INTERNAL_ERROR() << "CommonSubexprElim: unexpected " << node_kind_name(s.kind());
    }
  }

  Numbering& n_;
  int next_occ_ = 0;
  int next_scope_ = 0;
  int counter_ = 0;
};

PrimFunc eliminate(const PrimFunc& func) {
  Numbering numbering(func);
  numbering.run(func);
  if (!Planner(numbering).run()) return func;
  return func.with_body(Rewriter(numbering).run(func->body));
}

}  // namespace

Pass make_common_subexpr_elim_pass() {
  return function_pass("CommonSubexprElim",
                       "bind pure subexpressions computed more than once within a scope",
                       eliminate);
}

}  // namespace primjit::passes
