// LowerParallelLoops: each parallel loop of host code becomes a task function that runs the loop
// over a chunk `[begin, end)` of its range, and the runtime's parallel-for calls it once per chunk
// (Halide's LowerParallelTasks), so that the host code generator only translates. The task's loop
// is an ordinary serial loop, which LLVM can vectorize and unroll: one indirect call per chunk,
// not per iteration.
//
// Requires: host code after the default pipeline (MakePackedAPI has run) and LowerComputeScopes;
//           well-formed IR (each variable defined once in the module). Runs right before host
//           code generation.
// Ensures:  in every function that is not a kernel (calling_conv 2), each outermost
//           `T.parallel` loop is replaced by
//           `Evaluate(T.parallel_for("task", min, extent, captures...))`, and a new function
//           `task` is added to the module:
//           - name: `<scope>_parallel_<n>`, where scope is the global symbol (else the name) of
//             the function, and n counts the loops lowered in the module in the order host
//             code generation emits them (functions in module order, loops in statement order,
//             a compute scope's function where T.call_compute_scope calls it); `_` is appended
//             while the name clashes with a function of the module;
//           - params: `begin: T.int64, end: T.int64` (a chunk of [min, min + extent)), then
//             fresh copies of the free variables of the task's body in first-use order (those
//             of the recomputed values first, then the data pointers and shapes of the buffers
//             the loop body uses without declaring them); `captures` are the original
//             variables, in the same order;
//           - body: the recomputed values: every integer variable the loop body (or a buffer
//             it declares, or another recomputed value) uses that the function binds before
//             the loop to a small expression of integer arithmetic (variables, constants,
//             + - * / % // min max and integer casts; no loads, no calls), bound again to the
//             same expression, in dependency order, instead of captured: the serial loop
//             sees how such a value is made (`N_32 = N // 32` lies in [-2^26, 2^26), so
//             `N_32 * 32` does not wrap), and so does the task, which is what lets LLVM
//             prove its int32 indices consecutive and vectorize the inner loops (a captured
//             value is any int32); variables are immutable and the expression pure, so the
//             task computes the value the launching function did;
//             then one `DeclBuffer` over the new variables for every buffer the loop body uses
//             without declaring it, then the loop as a serial loop over [begin, end) in the loop
//             variable's type (`for i in range(T.Cast(dtype, begin), T.Cast(dtype, end))`, no
//             cast for int64), with a copy of the loop body with fresh definitions in which
//             nested parallel loops are serial; it returns int32 0 when it completes and the
//             error status of a failed assert or call;
//           - attrs: "calling_conv" = 3 (parallel task) and the caller's "target", if any;
//             ret type int32.
//           Parallel loops nested in a parallel loop (also in the compute scopes it calls) run
//           serially in its task. Functions without parallel loops are unchanged.
//           A kernel launch (T.call_packed) in the loop moves into the task like any other call:
//           the table of kernel handles it needs is the packed function's `self`, which is not
//           an IR value of the task, so it is no capture; host code generation passes it in the
//           task's closure (jit/common/host_abi.h).
// Example:
//   def main(A: T.handle("float32"), n: T.int32):          # calling_conv 1
//       A_1 = T.decl_buffer((n,), data=A)
//       for i in T.parallel(n):
//           A_1[i] = T.float32(0)
//   =>
//   def main_parallel_0(begin: T.int64, end: T.int64, A: T.handle("float32"), n: T.int32)
//           -> T.int32:
//       T.func_attr({"calling_conv": 3})
//       A_1 = T.decl_buffer((n,), data=A)
//       for i in range(T.Cast("int32", begin), T.Cast("int32", end)):
//           A_1[i] = T.float32(0)
//   def main(A: T.handle("float32"), n: T.int32):
//       A_1 = T.decl_buffer((n,), data=A)
//       T.parallel_for("main_parallel_0", 0, n, A, n)
#include <functional>
#include <set>
#include <unordered_map>

#include "passes/free_vars.h"
#include "passes/fresh_definitions.h"
#include "passes/pass_list.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"

namespace primjit::passes {
namespace {

class ParallelLoopLowering;

// The largest value a task recomputes, in nodes (a chain of Binds is recomputed whole, each
// of its values within this bound).
constexpr int kMaxRecomputedNodes = 16;

// Whether a task may recompute `value`, bound to an integer variable before the loop, instead
// of capturing it: integer arithmetic on variables and constants, small, without loads or
// calls (which could read memory the loop writes, or have effects).
bool recomputable(const Var& var, const Expr& value) {
  if (!var.dtype().is_integer() || !var.dtype().is_scalar()) return false;
  int nodes = 0;
  bool ok = true;
  post_order_visit(value, [&](const Ref<Object>& n) {
    if (!ok || !n.defined()) return;
    ++nodes;
    switch (n->kind()) {
      case NodeKind::kVar:
      case NodeKind::kIntImm:
      case NodeKind::kAdd:
      case NodeKind::kSub:
      case NodeKind::kMul:
      case NodeKind::kDiv:
      case NodeKind::kMod:
      case NodeKind::kFloorDiv:
      case NodeKind::kFloorMod:
      case NodeKind::kMin:
      case NodeKind::kMax:
        ok = static_cast<const ExprNode*>(n.get())->dtype.is_integer();
        return;
      case NodeKind::kCast: {
        const auto* cast = static_cast<const Cast*>(n.get());
        ok = cast->dtype.is_integer() && cast->value.dtype().is_integer();
        return;
      }
      default:
        ok = false;
    }
  });
  return ok && nodes <= kMaxRecomputedNodes;
}

// Rewrites one function body: outermost parallel loops become launches of new tasks; inside a
// task (`in_task`), parallel loops run serially (the runtime's parallel-for is not re-entered).
class ParallelLoopOutliner : public StmtExprMutator {
 public:
  ParallelLoopOutliner(ParallelLoopLowering* lowering, std::string scope, const AttrValue* target,
                       bool in_task)
      : lowering_(lowering), scope_(std::move(scope)), target_(target), in_task_(in_task) {}

  Expr mutate_expr(const Expr& expr) override { return expr; }

  // A compute scope's function is lowered where it is called, as code generation emits it.
  Stmt mutate(const Evaluate* op) override;

  // Remembers the values a task may recompute (each variable is bound once in the function,
  // before the loops that use it).
  Stmt mutate(const Bind* op) override {
    if (recomputable(op->var, op->value)) {
      auto [it, added] = bound_.emplace(op->var.get(), op->value);
      PRIMJIT_ICHECK(added || it->second.same_as(op->value))
          << "LowerParallelLoops: variable '" << op->var->name
          << "' is bound twice in one function (VerifyWellFormed refuses that)";
    }
    return StmtExprMutator::mutate(op);
  }

  Stmt mutate(const For* op) override {
    if (op->for_kind != ForKind::kParallel) return StmtExprMutator::mutate(op);
    if (!in_task_) return outline(op);
    Stmt body = mutate_stmt(op->body);
    return For::make(op->loop_var, op->min, op->extent, ForKind::kSerial, body, op->thread_tag,
                     op->annotations);
  }

 private:
  Stmt outline(const For* op);

  ParallelLoopLowering* lowering_;
  std::string scope_;
  const AttrValue* target_;
  bool in_task_;
  std::unordered_map<const VarNode*, Expr> bound_;
};

// The module-wide state: task names and their count, and the functions lowered so far, in the
// order host code generation emits them (module order, callees where they are called).
class ParallelLoopLowering {
 public:
  explicit ParallelLoopLowering(const IRModule& module) : module_(module), out_(module) {
    for (const auto& [gvar, func] : module->functions) names_.insert(gvar->name);
  }

  IRModule run() {
    for (const auto& [gvar, func] : module_->functions) {
      CallingConv conv = func->calling_conv();
      if (conv == CallingConv::kKernelLaunch || conv == CallingConv::kParallelTask ||
          conv == CallingConv::kComputeScope) {
        continue;  // device code, or emitted (and lowered) where it is called
      }
      lower(gvar->name, func, /*in_task=*/false);
    }
    return out_;
  }

  void lower(const std::string& name, const PrimFunc& func, bool in_task) {
    std::string symbol = func->global_symbol();
    ParallelLoopOutliner outliner(this, symbol.empty() ? name : symbol, func->attr(attr::kTarget),
                                  in_task);
    Stmt body = outliner.mutate_stmt(func->body);
    if (!body.same_as(func->body)) out_ = out_.with_function(name, func.with_body(body));
  }

  void lower_compute_scope(const std::string& name, bool in_task) {
    PrimFunc func = module_->find(name);
    if (func.defined() && func->calling_conv() == CallingConv::kComputeScope) {
      lower(name, func, in_task);
    }
  }

  std::string task_name(const std::string& scope) {
    std::string name = scope + "_parallel_" + std::to_string(count_++);
    while (names_.count(name)) name += "_";
    names_.insert(name);
    return name;
  }

  void add_task(const std::string& name, const PrimFunc& task) {
    out_ = out_.with_function(name, task);
  }

 private:
  IRModule module_;
  IRModule out_;
  std::set<std::string> names_;
  int count_ = 0;
};

Stmt ParallelLoopOutliner::mutate(const Evaluate* op) {
  const auto* call = op->value.as<Call>();
  if (call != nullptr && call->op.defined() && call->op->name == "call_compute_scope") {
    if (const auto* name = call->args[0].as<StringImm>()) {
      lowering_->lower_compute_scope(name->value, in_task_);
    }
  }
  return StmtExprMutator::mutate(op);
}

Stmt ParallelLoopOutliner::outline(const For* op) {
  // The buffers the body uses without declaring are declared at the task's top, so their data
  // pointers and shapes are captured like any other free variable.
  FreeVarCollector buffers;
  buffers.visit_stmt(op->body);
  std::vector<Stmt> seq;
  for (const Buffer& b : buffers.undeclared_buffers()) seq.push_back(DeclBuffer::make(b));
  seq.push_back(op->body);
  // The integer values bound before the loop that the task can recompute come first, each
  // after the values it is made of.
  FreeVarCollector uses;
  uses.visit_stmt(SeqStmt::make(seq));
  std::vector<Stmt> recomputed;
  std::set<const VarNode*> visited;
  std::function<void(const VarNode*)> recompute = [&](const VarNode* v) {
    auto it = bound_.find(v);
    if (it == bound_.end() || !visited.insert(v).second) return;
    FreeVarCollector operands;
    operands.visit_expr(it->second);
    for (const VarNode* operand : operands.free_vars()) recompute(operand);
    recomputed.push_back(Bind::make(Var(v), it->second));
  };
  for (const VarNode* v : uses.free_vars()) recompute(v);
  seq.insert(seq.begin(), recomputed.begin(), recomputed.end());
  FreeVarCollector collector;
  collector.visit_stmt(SeqStmt::make(seq));

  Var begin = Var::make("begin", DataType::Int(64));
  Var end = Var::make("end", DataType::Int(64));
  std::vector<Var> params = {begin, end};
  std::vector<Expr> args;
  VarMap to_param;
  for (const VarNode* v : collector.free_vars()) {
    if (v == op->loop_var.get()) continue;
    Var p = fresh_copy(v);
    to_param[v] = p;
    params.push_back(p);
    args.push_back(Var(v));
  }

  std::string name = lowering_->task_name(scope_);
  // The chunk lies in [min, min + extent), so its bounds fit the loop variable's type.
  DataType loop_type = op->loop_var.dtype();
  auto in_loop_type = [&](Var v) -> Expr {
    return loop_type == v.dtype() ? Expr(v) : Cast::make(loop_type, v);
  };
  Expr lo = in_loop_type(begin);
  Stmt body =
      ParallelLoopOutliner(lowering_, name, target_, /*in_task=*/true).mutate_stmt(op->body);
  seq.back() = For::make(op->loop_var, lo, Sub::make(in_loop_type(end), lo), ForKind::kSerial, body,
                         "", op->annotations);
  Stmt task_body = copy_with_fresh_definitions(SeqStmt::make(seq), to_param);

  Attrs attrs = {{attr::kCallingConv, AttrValue(static_cast<int>(CallingConv::kParallelTask))}};
  if (target_ != nullptr) attrs.emplace(attr::kTarget, *target_);
  lowering_->add_task(name, PrimFunc::make(params, {}, task_body, DataType::Int(32), attrs));

  std::vector<Expr> call_args = {StringImm::make(name), op->min, op->extent};
  call_args.insert(call_args.end(), args.begin(), args.end());
  return Evaluate::make(Call::make(DataType::Int(32), Op::get("parallel_for"), call_args));
}

IRModule lower_parallel_loops(const IRModule& module) { return ParallelLoopLowering(module).run(); }

}  // namespace

Pass make_lower_parallel_loops_pass() {
  return Pass{"LowerParallelLoops",
              "host parallel loops to task functions over chunks run by the runtime's parallel-for",
              [](const IRModule& module, const PassArgs& args) {
                check_no_args("LowerParallelLoops", args);
                return lower_parallel_loops(module);
              }};
}

}  // namespace primjit::passes
