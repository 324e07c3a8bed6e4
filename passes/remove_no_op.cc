// RemoveNoOp: drops statements that do nothing.
//
// Requires: nothing.
// Ensures:  no Evaluate of a side-effect-free expression (`T.evaluate(0)`), no loop, launch or
//           attribute whose body does nothing (or whose extent is the constant 0), no branch
//           whose bodies do nothing, no `else` that does nothing, and no Bind whose variable is
//           never used and whose value has no side effect. A store of an element to itself
//           (`A[i] = A[i]`, indices proved equal under the enclosing loop ranges, conditions
//           and Binds that read no memory) is dropped, and so is a store that a later store of
//           the same sequence overwrites (same buffer, provably same index) before anything may
//           read it: nothing between them reads or writes memory the buffer may alias
//           (AliasAnalysis), calls anything that is not pure, asserts or loops with `while`; of
//           such a store only its value's calls with side effects stay, as an Evaluate. A
//           DeclBuffer whose buffer nothing accesses goes, and so does an AllocBuffer whose
//           buffer nothing accesses and whose data pointer nothing else mentions. An `if`
//           whose branches are structurally equal becomes that branch (the condition stays as an
//           Evaluate only when it has side effects). A function whose body becomes empty keeps
//           a single `T.evaluate(0)`. While loops are kept (their condition decides
//           termination).
// Example:
//   x: T.int32 = n * 2                   =>      A[0] = T.float32(1)
//   for i in range(4): T.evaluate(0)
//   A[0] = T.float32(0)
//   A[0] = T.float32(1)
#include <unordered_map>
#include <unordered_set>

#include "passes/alias_analysis.h"
#include "passes/free_vars.h"
#include "passes/pass_list.h"
#include "primjit/arith.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/structural.h"

namespace primjit::passes {
namespace {

// How far (in statements of one sequence) a store looks for the store that overwrites it: keeps
// the pass linear in the length of a sequence.
constexpr size_t kMaxOverwriteDistance = 64;

bool is_no_op(const Stmt& s) {
  if (const auto* eval = s.as<Evaluate>()) return !has_side_effects(eval->value);
  return false;
}

bool any_side_effects(const std::vector<Expr>& exprs) {
  for (const Expr& e : exprs) {
    if (has_side_effects(e)) return true;
  }
  return false;
}

// Structural equality in which the variables and buffers `a` and `b` use without defining them
// must be the same objects (plain structural_equal pairs free variables by first use, so
// `A[i] = 0` would equal `A[j] = 0`). Both sides are prefixed with the same uses, which pins
// every free variable and buffer to itself before the statements are compared.
bool same_statement(const Stmt& a, const Stmt& b) {
  FreeVarCollector free;
  free.visit_stmt(SeqStmt::make({a, b}));
  std::vector<Stmt> pins;
  for (const VarNode* v : free.free_vars()) pins.push_back(Evaluate::make(Var(v)));
  for (const Buffer& buffer : free.undeclared_buffers()) pins.push_back(DeclBuffer::make(buffer));
  std::vector<Stmt> left = pins;
  std::vector<Stmt> right = std::move(pins);
  left.push_back(a);
  right.push_back(b);
  return structural_equal(SeqStmt::make(std::move(left)), SeqStmt::make(std::move(right)));
}

// True when the top level of `s` allocates: lifting it out of its scope would extend the
// allocation's lifetime.
bool allocates_at_top(const Stmt& s) {
  if (s.as<AllocBuffer>() != nullptr) return true;
  if (const auto* seq = s.as<SeqStmt>()) {
    for (const Stmt& child : seq->seq) {
      if (child.as<AllocBuffer>() != nullptr) return true;
    }
  }
  return false;
}

// How often each variable occurs in expressions (Bind definitions excluded; a buffer's data
// variable counts once per declaration and access), and how often each buffer is accessed or
// named by an attribute.
class UseCounter : public StmtExprVisitor {
 public:
  std::unordered_map<const VarNode*, int> uses;
  std::unordered_map<const BufferNode*, int> buffer_uses;
  void visit(const VarNode* op) override { ++uses[op]; }
  void visit(const Bind* op) override { visit_expr(op->value); }
  void visit(const AttrStmt* op) override {
    if (const auto* buffer = op->node.as<BufferNode>()) ++buffer_uses[buffer];
    if (const auto* var = op->node.as<VarNode>()) ++uses[var];  // e.g. storage_alignment
    StmtExprVisitor::visit(op);
  }
  void visit_buffer_use(const Buffer& buffer) override {
    ++buffer_uses[buffer.get()];
    visit_buffer_def(buffer);
  }
};

class NoOpRemover : public StmtExprMutator {
 public:
  NoOpRemover(const UseCounter& uses, const AliasAnalysis& alias)
      : uses_(uses.uses), buffer_uses_(uses.buffer_uses), alias_(alias) {}

  // A view nothing accesses declares nothing anyone needs; an allocation whose buffer nothing
  // accesses and whose data pointer nothing else mentions (no view, no call) is never touched.
  Stmt mutate(const DeclBuffer* op) override {
    if (count(buffer_uses_, op->buffer.get()) == 0 && !layout_has_side_effects(op->buffer)) {
      return no_op();
    }
    return StmtExprMutator::mutate(op);
  }
  Stmt mutate(const AllocBuffer* op) override {
    if (count(buffer_uses_, op->buffer.get()) == 0 && count(uses_, op->buffer->data.get()) == 1 &&
        !layout_has_side_effects(op->buffer)) {
      return no_op();
    }
    return StmtExprMutator::mutate(op);
  }

  Stmt mutate(const Bind* op) override {
    if (count(uses_, op->var.get()) == 0 && !has_side_effects(op->value)) return no_op();
    Stmt s = StmtExprMutator::mutate(op);
    const auto* bind = s.as<Bind>();
    if (is_int_scalar(bind->value) && is_fact(bind->value)) analyzer_.bind(bind->var, bind->value);
    return s;
  }

  Stmt mutate(const BufferStore* op) override {
    Stmt s = StmtExprMutator::mutate(op);
    const auto* store = s.as<BufferStore>();
    const auto* load = store->value.as<BufferLoad>();
    if (load == nullptr || !load->buffer.same_as(store->buffer) ||
        any_side_effects(store->indices) || !same_indices(load->indices, store->indices)) {
      return s;
    }
    return no_op();  // A[i] = A[i]
  }

  Stmt mutate(const SeqStmt* op) override {
    Stmt s = mutate_seq(op, [](const Stmt&, const Stmt& mutated) { return is_no_op(mutated); });
    const auto* seq = s.as<SeqStmt>();
    if (seq == nullptr) return s;
    std::vector<Stmt> kept;
    bool changed = false;
    for (size_t i = 0; i < seq->seq.size(); ++i) {
      if (!overwritten(seq->seq, i)) {
        kept.push_back(seq->seq[i]);
        continue;
      }
      changed = true;
      if (Expr value = seq->seq[i].as<BufferStore>()->value; has_side_effects(value)) {
        kept.push_back(Evaluate::make(value));  // the store goes, its value's calls stay
      }
    }
    return changed ? SeqStmt::make(std::move(kept)) : s;
  }

  Stmt mutate(const For* op) override {
    Stmt s = analyzer_.with_scope([&] {
      if (is_int_scalar(op->min) && op->min.dtype() == op->extent.dtype() &&
          op->min.dtype() == op->loop_var.dtype() && is_fact(op->min) && is_fact(op->extent)) {
        analyzer_.bind(op->loop_var, op->min, op->extent);
      }
      return StmtExprMutator::mutate(op);
    });
    const auto* loop = s.as<For>();
    std::optional<int64_t> extent = as_const_int(loop->extent);
    bool empty = is_no_op(loop->body) || (extent && *extent <= 0);
    return empty && !has_side_effects(loop->min) && !has_side_effects(loop->extent) ? no_op() : s;
  }

  Stmt mutate(const While* op) override {
    return analyzer_.with_scope([&] { return StmtExprMutator::mutate(op); });
  }

  Stmt mutate(const AttrStmt* op) override {
    Stmt s = analyzer_.with_scope([&] {
      const IterVarNode* iv = op->iter_var();
      if (iv != nullptr && op->key == "thread_extent" && is_int_scalar(op->value) &&
          op->value.dtype() == iv->var.dtype() && is_fact(op->value)) {
        analyzer_.bind(iv->var, IntImm::make(op->value.dtype(), 0), op->value);
      }
      return StmtExprMutator::mutate(op);
    });
    const auto* attr = s.as<AttrStmt>();
    return is_no_op(attr->body) && !has_side_effects(attr->value) ? no_op() : s;
  }

  Stmt mutate(const IfThenElse* op) override {
    Stmt s = mutate_branches(op);
    const auto* branch = s.as<IfThenElse>();
    bool then_empty = is_no_op(branch->then_case);
    bool else_empty = !branch->else_case.defined() || is_no_op(branch->else_case);
    if (then_empty && else_empty) {
      return has_side_effects(branch->condition) ? Evaluate::make(branch->condition) : no_op();
    }
    if (else_empty && branch->else_case.defined()) {
      return IfThenElse::make(branch->condition, branch->then_case);
    }
    if (then_empty) {
      return IfThenElse::make(Not::make(branch->condition), branch->else_case);
    }
    if (branch->else_case.defined() && !allocates_at_top(branch->then_case) &&
        same_statement(branch->then_case, branch->else_case)) {
      if (!has_side_effects(branch->condition)) return branch->then_case;
      return SeqStmt::make({Evaluate::make(branch->condition), branch->then_case});
    }
    return s;
  }

 private:
  static Stmt no_op() { return Evaluate::make(make_const(0)); }
  template <typename Key>
  static int count(const std::unordered_map<const Key*, int>& counts, const Key* key) {
    auto it = counts.find(key);
    return it == counts.end() ? 0 : it->second;
  }
  static bool layout_has_side_effects(const Buffer& b) {
    return any_side_effects(b->shape) || any_side_effects(b->strides) ||
           (b->elem_offset.defined() && has_side_effects(b->elem_offset));
  }
  static bool is_int_scalar(const Expr& e) { return e.dtype().is_int() && e.dtype().lanes() == 1; }
  // True when `e` may serve as a fact for the rest of its scope: it reads no memory (a store
  // could change it) and calls nothing with effects.
  bool is_fact(const Expr& e) const { return !alias_.reads(e, nullptr); }

  // The branches are mutated knowing the condition (then) or its negation (else).
  Stmt mutate_branches(const IfThenElse* op) {
    Expr c = mutate_expr(op->condition);
    bool fact = is_fact(c);
    Stmt then_case = analyzer_.with_scope([&] {
      if (fact) analyzer_.assume(c);
      return mutate_stmt(op->then_case);
    });
    Stmt else_case;
    if (op->else_case.defined()) {
      else_case = analyzer_.with_scope([&] {
        if (fact) analyzer_.assume(Not::make(c));
        return mutate_stmt(op->else_case);
      });
    }
    if (c.same_as(op->condition) && then_case.same_as(op->then_case) &&
        else_case.same_as(op->else_case)) {
      return Stmt(op);
    }
    return IfThenElse::make(std::move(c), std::move(then_case), std::move(else_case));
  }

  bool same_indices(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t k = 0; k < a.size(); ++k) {
      if (a[k].dtype() != b[k].dtype()) return false;
      if (!a[k].same_as(b[k]) && !analyzer_.can_prove_equal(a[k], b[k])) return false;
    }
    return true;
  }

  // True when `s` may observe or change the element a store to `data` wrote: it reads or
  // writes memory that `data` may alias, calls anything that is not pure (it may read that
  // memory), or may leave the function or never finish (assert, while) with the element seen.
  bool interferes(const Stmt& s, const VarNode* data) const {
    bool found = false;
    post_order_visit(s, [&](const Ref<Object>& node) {
      if (found) return;
      if (const auto* load = node.as<BufferLoad>()) {
        found = alias_.may_alias(load->buffer->data.get(), data);
      } else if (const auto* store = node.as<BufferStore>()) {
        found = alias_.may_alias(store->buffer->data.get(), data);
      } else if (const auto* call = node.as<Call>()) {
        found = call->effect() != CallEffect::kPure;
      } else {
        found = node.as<AssertStmt>() != nullptr || node.as<While>() != nullptr;
      }
    });
    return found;
  }

  // True when seq[i] is a store that a later store of `seq` overwrites before anything may
  // read the element or leave the function.
  bool overwritten(const std::vector<Stmt>& seq, size_t i) {
    const auto* first = seq[i].as<BufferStore>();
    if (first == nullptr) return false;
    // The index must mean the same element later: it may not read memory (a store between
    // could change it) nor have effects of its own.
    std::unordered_set<const VarNode*> index_vars;
    for (const Expr& index : first->indices) {
      if (alias_.reads(index, nullptr)) return false;
      post_order_visit(index, [&](const Ref<Object>& node) {
        if (const auto* var = node.as<VarNode>()) index_vars.insert(var);
      });
    }
    const VarNode* data = first->buffer->data.get();
    size_t end = std::min(seq.size(), i + 1 + kMaxOverwriteDistance);
    for (size_t j = i + 1; j < end; ++j) {
      const auto* next = seq[j].as<BufferStore>();
      if (next != nullptr && next->buffer.same_as(first->buffer) &&
          next->value.dtype() == first->value.dtype() &&
          same_indices(first->indices, next->indices)) {
        // The overwriting store evaluates its value and index first: they must not read the
        // element.
        bool reads = alias_.reads(next->value, data);
        for (const Expr& index : next->indices) reads = reads || alias_.reads(index, data);
        return !reads;
      }
      if (interferes(seq[j], data)) return false;
      // A (non-SSA) redefinition of an index variable changes the element.
      const auto* bind = seq[j].as<Bind>();
      if (bind != nullptr && index_vars.count(bind->var.get()) > 0) return false;
    }
    return false;
  }

  const std::unordered_map<const VarNode*, int>& uses_;
  const std::unordered_map<const BufferNode*, int>& buffer_uses_;
  const AliasAnalysis& alias_;
  // Facts of the enclosing scopes (loop ranges, conditions, Binds) that read no memory.
  arith::Analyzer analyzer_;
};

}  // namespace

Stmt remove_no_op(const Stmt& body) {
  // Removing a Bind can leave another unused (x = 1; y = x), removing a view its allocation:
  // repeat until nothing changes.
  Stmt current = body;
  for (int round = 0; round < 16; ++round) {
    UseCounter counter;
    counter.visit_stmt(current);
    AliasAnalysis alias(current);
    Stmt next = NoOpRemover(counter, alias).mutate_stmt(current);
    if (next.same_as(current)) break;
    current = next;
  }
  return current;
}

Pass make_remove_no_op_pass() {
  return body_pass("RemoveNoOp",
                   "drop statements, loops, branches and Binds that do nothing, self-stores and "
                   "stores overwritten before any read",
                   remove_no_op);
}

}  // namespace primjit::passes
