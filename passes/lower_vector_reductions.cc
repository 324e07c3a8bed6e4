// LowerVectorReductions: a reduction loop the user marks `T.vectorized` is computed in lane-wise
// partial accumulators and a final tree, in an order fixed here (docs/semantics.md, "Vector
// reductions"), so that every backend computes the same bits and LLVM vectorizes it. Marking
// the loop is the user's permission to reassociate; unmarked loops keep their exact order,
// except float max and min reductions, whose value no order changes.
//
// Requires: flattened host code (after FlattenBuffer and Simplify), well-formed IR.
// Ensures:  every `T.vectorized` loop outside a thread launch whose body is one store
//           `B[j] = B[j] op e` or `B[j] = e op B[j]`, where op is +, *, T.max or T.min on a
//           scalar int, uint or float dtype, B is allocated in the function (T.alloc_buffer, so
//           no parameter or view can alias it), j does not depend on the loop and loads
//           nothing, e neither mentions B's data nor calls anything with side effects, and
//           neither do the loop's bounds (they are evaluated more than once), is
//           replaced by (W = 128 bytes / element size lanes, k = i - min the iteration number):
//           - a local buffer `B_partial` of W elements, each set to op's identity (0, -0.0 for
//             float sums, 1, the type's lowest / highest value for int max / min, NaN for float
//             max / min, which ignore one NaN);
//           - `partial[k mod W] = partial[k mod W] op e(i)` for every iteration in order: a
//             serial loop over the full groups of W with a `T.vectorized` loop over the lanes
//             inside, then a serial loop over the remaining extent mod W lanes (a negative
//             extent counts as 0: `T.max(n, 0) // W` groups, `T.max(n, 0) % W` left);
//           - a fixed tree: `partial[l] = partial[l] op partial[l + h]` for l < h, for
//             h = W/2, W/4, ..., 1;
//           - `B[j] = B[j] op partial[0]` (operands in the order of the original store).
//           Serial loops of that form in host code whose op is T.max or T.min on floats
//           (associative and commutative under docs/semantics.md's rule, so the lowering gives
//           the serial loop's value) are lowered too: a constant extent of at least 2 W as
//           above, a symbolic one as `if extent >= 2 W: <lowered> else: <the loop>`. Loops of
//           64-bit unsigned T.min (no identity in the IR's int64 immediates) and all other
//           loops are unchanged.
// Example (float32, W = 32):
//   for i in T.vectorized(n):                 p = T.alloc_buffer((32,), scope="local")
//       acc[0] = acc[0] + A[i]          =>    for l in T.vectorized(32): p[l] = T.float32(-0.0)
//                                             for io in range(T.max(n, 0) // 32):
//                                                 for l in T.vectorized(32):
//                                                     p[l] = p[l] + A[io * 32 + l]
//                                             for l in range(T.max(n, 0) % 32):
//                                                 p[l] = p[l] + A[T.max(n, 0) // 32 * 32 + l]
//                                             for l in T.vectorized(16): p[l] = p[l] + p[l + 16]
//                                             ... (8, 4, 2)
//                                             p[0] = p[0] + p[1]
//                                             acc[0] = acc[0] + p[0]
#include <cmath>
#include <limits>
#include <set>

#include "passes/fresh_definitions.h"
#include "passes/pass_list.h"
#include "primjit/ir/attr_keys.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/op.h"
#include "primjit/ir/structural.h"

namespace primjit::passes {
namespace {

// Bytes of partial accumulators: 32 float32 lanes, four 256-bit registers, enough independent
// chains to hide the latency of a vector add.
constexpr int kPartialBytes = 128;

enum class Combiner { kAdd, kMul, kMax, kMin };

// What an expression uses: variables, data pointers of loaded buffers, calls with effects.
class UseCollector : public StmtExprVisitor {
 public:
  std::set<const VarNode*> vars;
  bool loads = false;
  bool unsafe_calls = false;

  void visit(const VarNode* op) override { vars.insert(op); }
  void visit(const BufferLoad* op) override {
    loads = true;
    vars.insert(op->buffer->data.get());
    StmtExprVisitor::visit(op);
  }
  void visit(const Call* op) override {
    if (!op->op.defined() || op->op->has_side_effects()) unsafe_calls = true;
    StmtExprVisitor::visit(op);
  }
};

UseCollector uses_of(const Expr& e) {
  UseCollector c;
  c.visit_expr(e);
  return c;
}

// The data pointers of the buffers the function allocates and reaches only through their own
// loads and stores: a pointer that escapes (a view or Bind over it, an address taken with
// T.address_of / T.tvm_access_ptr, a pointer passed to a call) may be read under another name,
// which the match's check of the body's reads would not see.
class AllocCollector : public StmtExprVisitor {
 public:
  std::set<const VarNode*> private_allocations() const {
    std::set<const VarNode*> out;
    for (const VarNode* v : allocated_) {
      if (!escaped_.count(v)) out.insert(v);
    }
    return out;
  }

  void visit(const AllocBuffer* op) override {
    allocated_.insert(op->buffer->data.get());
    for (const Expr& e : op->buffer->shape) visit_expr(e);
  }
  // Loads and stores name the pointer through their buffer; any other mention is an escape.
  void visit(const VarNode* op) override { escaped_.insert(op); }
  void visit(const Call* op) override {
    const bool takes_addresses = !op->op.defined() || op->op->op_kind == OpKind::kPointer ||
                                 op->op->op_kind == OpKind::kSync ||
                                 op->op->op_kind == OpKind::kCall ||
                                 op->op->op_kind == OpKind::kRuntime;
    if (takes_addresses) {
      for (const Expr& a : op->args) {
        if (const auto* load = a.as<BufferLoad>()) escaped_.insert(load->buffer->data.get());
      }
    }
    StmtExprVisitor::visit(op);
  }

 private:
  std::set<const VarNode*> allocated_;
  std::set<const VarNode*> escaped_;
};

// op's identity in `t`: combining it with any x gives x, bit for bit.
std::optional<Expr> identity(Combiner c, DataType t) {
  if (t.is_float()) {
    switch (c) {
      case Combiner::kAdd:
        return FloatImm::make(t, -0.0);
      case Combiner::kMul:
        return FloatImm::make(t, 1.0);
      default:
        return FloatImm::make(t, std::numeric_limits<double>::quiet_NaN());
    }
  }
  const int bits = t.bits();
  const bool is_signed = t.is_int();
  switch (c) {
    case Combiner::kAdd:
      return IntImm::make(t, 0);
    case Combiner::kMul:
      return IntImm::make(t, 1);
    case Combiner::kMax:
      return IntImm::make(t, is_signed ? std::numeric_limits<int64_t>::min() >> (64 - bits) : 0);
    case Combiner::kMin:
      if (!is_signed && bits == 64) return std::nullopt;
      return IntImm::make(t, is_signed ? std::numeric_limits<int64_t>::max() >> (64 - bits)
                                       : (int64_t{1} << bits) - 1);
  }
  return std::nullopt;
}

bool is_zero(const Expr& e) {
  std::optional<int64_t> v = as_const_int(e);
  return v && *v == 0;
}

Expr combine(Combiner c, Expr a, Expr b) {
  switch (c) {
    case Combiner::kAdd:
      return Add::make(std::move(a), std::move(b));
    case Combiner::kMul:
      return Mul::make(std::move(a), std::move(b));
    case Combiner::kMax:
      return Max::make(std::move(a), std::move(b));
    case Combiner::kMin:
      return Min::make(std::move(a), std::move(b));
  }
  return Expr();
}

// A matched reduction `B[j] = B[j] op e` (accumulator_first) or `B[j] = e op B[j]`.
struct Reduction {
  const BufferStore* store = nullptr;
  Combiner combiner = Combiner::kAdd;
  Expr element;
  bool accumulator_first = true;
};

std::optional<Reduction> match(const For* loop, const std::set<const VarNode*>& allocated) {
  const auto* store = loop->body.as<BufferStore>();
  if (store == nullptr || !allocated.count(store->buffer->data.get())) return std::nullopt;
  DataType t = store->value.dtype();
  if (t.lanes() != 1 || !(t.is_float() || t.is_int() || t.is_uint())) return std::nullopt;
  Reduction r;
  r.store = store;
  Expr a, b;
  if (const auto* n = store->value.as<Add>()) {
    r.combiner = Combiner::kAdd, a = n->a, b = n->b;
  } else if (const auto* n = store->value.as<Mul>()) {
    r.combiner = Combiner::kMul, a = n->a, b = n->b;
  } else if (const auto* n = store->value.as<Max>()) {
    r.combiner = Combiner::kMax, a = n->a, b = n->b;
  } else if (const auto* n = store->value.as<Min>()) {
    r.combiner = Combiner::kMin, a = n->a, b = n->b;
  } else {
    return std::nullopt;
  }
  auto is_accumulator = [&](const Expr& e) {
    const auto* load = e.as<BufferLoad>();
    if (load == nullptr || !load->buffer.same_as(store->buffer) ||
        load->indices.size() != store->indices.size()) {
      return false;
    }
    for (size_t d = 0; d < load->indices.size(); ++d) {
      if (!load->indices[d].same_as(store->indices[d]) &&
          !structural_equal(load->indices[d], store->indices[d])) {
        return false;
      }
    }
    return true;
  };
  if (is_accumulator(a)) {
    r.element = b;
  } else if (is_accumulator(b)) {
    r.element = a, r.accumulator_first = false;
  } else {
    return std::nullopt;
  }
  for (const Expr& index : store->indices) {
    UseCollector u = uses_of(index);
    if (u.loads || u.unsafe_calls || u.vars.count(loop->loop_var.get())) return std::nullopt;
  }
  UseCollector u = uses_of(r.element);
  if (u.unsafe_calls || u.vars.count(store->buffer->data.get())) return std::nullopt;
  // The lowering evaluates the loop's bounds more than once (min for every element).
  for (const Expr& bound : {loop->min, loop->extent}) {
    if (uses_of(bound).unsafe_calls) return std::nullopt;
  }
  if (!identity(r.combiner, t)) return std::nullopt;
  return r;
}

// Lanes of partial accumulators for elements of `t`.
int partial_lanes(DataType t) { return std::max(1, kPartialBytes / std::max(1, t.bytes())); }

// Whether an unmarked (serial) reduction loop is lowered all the same: T.max and T.min on
// floats are associative and commutative under the rule of docs/semantics.md (NaN ignored,
// -0 below +0), so any order gives the serial loop's value (when every operand is NaN, the
// result is NaN, not necessarily the same NaN). Float only: LLVM vectorizes unmarked integer
// max/min reductions itself. A loop with a constant extent under two groups of partials is
// left alone (the partials would cost more than they save); a symbolic one is lowered behind
// a run-time test of its extent (lower).
bool order_free(const For* loop, const Reduction& r) {
  if (r.combiner != Combiner::kMax && r.combiner != Combiner::kMin) return false;
  if (!r.store->value.dtype().is_float()) return false;
  const int64_t enough = 2 * partial_lanes(r.store->value.dtype());
  // The run-time test compares the extent with 2W in the extent's type (int8: 128 does not fit).
  const int bits = loop->extent.dtype().bits();
  if (bits < 64 && enough > (int64_t{1} << (bits - 1)) - 1) return false;
  std::optional<int64_t> extent = as_const_int(loop->extent);
  return !extent || *extent >= enough;
}

class ReductionLowering : public StmtExprMutator {
 public:
  // `unmarked`: whether serial max/min loops are lowered too (host code only: a device
  // function's threads would each carry the partials).
  ReductionLowering(std::set<const VarNode*> allocated, bool unmarked)
      : allocated_(std::move(allocated)), unmarked_(unmarked) {}

  Expr mutate_expr(const Expr& expr) override { return expr; }

  Stmt mutate(const AttrStmt* op) override {
    if (op->key == attr::kDeviceScope) {
      const bool outer = unmarked_;
      unmarked_ = false;
      Stmt out = StmtExprMutator::mutate(op);
      unmarked_ = outer;
      return out;
    }
    if (op->key != attr::kThreadExtent) return StmtExprMutator::mutate(op);
    return Stmt(op);  // device code: left to the device backends
  }

  Stmt mutate(const For* op) override {
    const bool serial = op->for_kind == ForKind::kSerial;
    if (op->for_kind != ForKind::kVectorized && !(serial && unmarked_)) {
      return StmtExprMutator::mutate(op);
    }
    std::optional<Reduction> r = match(op, allocated_);
    if (!r || (serial && !order_free(op, *r))) return StmtExprMutator::mutate(op);
    Stmt lowered = lower(op, *r);
    if (!serial || as_const_int(op->extent)) return lowered;
    // A symbolic extent may be small at run time, where the serial loop is cheaper.
    const int64_t enough = 2 * partial_lanes(r->store->value.dtype());
    return IfThenElse::make(GE::make(op->extent, IntImm::make(op->extent.dtype(), enough)), lowered,
                            Stmt(op));
  }

 private:
  Stmt lower(const For* op, const Reduction& r);

  std::set<const VarNode*> allocated_;
  bool unmarked_;
};

Stmt ReductionLowering::lower(const For* op, const Reduction& r) {
  const Buffer& acc = r.store->buffer;
  DataType t = r.store->value.dtype();
  const int lanes = partial_lanes(t);
  DataType it = op->loop_var.dtype();
  auto c = [&](int64_t v) { return IntImm::make(it, v); };
  Buffer partial = Buffer::make(acc->name + "_partial", t, {c(lanes)}, "local");
  auto at = [&](Expr lane) { return BufferLoad::make(partial, {std::move(lane)}); };
  auto lane_var = [&] { return Var::make("l", it); };
  std::vector<Stmt> seq = {AllocBuffer::make(partial)};

  Var l0 = lane_var();
  seq.push_back(For::make(l0, c(0), c(lanes), ForKind::kVectorized,
                          BufferStore::make(partial, *identity(r.combiner, t), {l0})));

  // One accumulation step for lane `lane` of iteration number `k`.
  auto step = [&](const Var& lane, Expr k) {
    Stmt s = BufferStore::make(partial, combine(r.combiner, at(lane), r.element), {lane});
    Expr i = is_zero(op->min) ? k : Add::make(op->min, std::move(k));
    VarMap value{{op->loop_var.get(), i}};
    return copy_with_fresh_definitions(s, value);
  };
  std::optional<int64_t> extent = as_const_int(op->extent);
  // A loop with a negative extent runs no iteration: so do the groups and the tail.
  Expr count = extent ? c(std::max<int64_t>(*extent, 0)) : Max::make(op->extent, c(0));
  if (extent) extent = std::max<int64_t>(*extent, 0);
  Expr groups = extent ? c(*extent / lanes) : FloorDiv::make(count, c(lanes));
  Expr rest = extent ? c(*extent % lanes) : FloorMod::make(count, c(lanes));
  if (!extent || *extent >= lanes) {
    Var io = Var::make(op->loop_var->name + "_outer", it);
    Var l = lane_var();
    Stmt inner = For::make(l, c(0), c(lanes), ForKind::kVectorized,
                           step(l, Add::make(Mul::make(io, c(lanes)), l)));
    seq.push_back(For::make(io, c(0), groups, ForKind::kSerial, inner));
  }
  if (!extent || *extent % lanes != 0) {
    Var l = lane_var();
    Expr done = extent ? c(*extent / lanes * lanes) : Mul::make(groups, c(lanes));
    seq.push_back(For::make(l, c(0), rest, ForKind::kSerial,
                            step(l, is_zero(done) ? Expr(l) : Add::make(done, l))));
  }
  for (int half = lanes / 2; half >= 1; half /= 2) {
    Var l = lane_var();
    Expr lane = half == 1 ? c(0) : Expr(l);  // the last step is one store, not a loop
    Stmt s = BufferStore::make(
        partial, combine(r.combiner, at(lane), at(half == 1 ? c(1) : Add::make(lane, c(half)))),
        {lane});
    seq.push_back(half == 1 ? s : For::make(l, c(0), c(half), ForKind::kVectorized, s));
  }
  Expr old = BufferLoad::make(acc, r.store->indices);
  Expr total =
      r.accumulator_first ? combine(r.combiner, old, at(c(0))) : combine(r.combiner, at(c(0)), old);
  seq.push_back(BufferStore::make(acc, total, r.store->indices));
  return SeqStmt::make(std::move(seq));
}

}  // namespace

Pass make_lower_vector_reductions_pass() {
  return function_pass("LowerVectorReductions",
                       "T.vectorized reduction loops to lane-wise partials and a fixed tree",
                       [](const PrimFunc& func) {
                         AllocCollector allocs;
                         allocs.visit_stmt(func->body);
                         std::set<const VarNode*> allocated = allocs.private_allocations();
                         if (allocated.empty()) return func;
                         Target target = func->target();
                         const bool host = !target.defined() || !target->is_device();
                         Stmt body =
                             ReductionLowering(std::move(allocated), host).mutate_stmt(func->body);
                         return body.same_as(func->body) ? func : func.with_body(body);
                       });
}

}  // namespace primjit::passes
