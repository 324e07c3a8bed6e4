// LowerComputeScopes: each `compute_scope` region of host code becomes a function of its own,
// called with a status check, so that the host code generator only translates. (Its pointer
// parameters are noalias: the buffers of one call do not overlap, as TVM assumes.)
//
// Requires: host code after the default pipeline (MakePackedAPI has run); well-formed IR
//           (each variable defined once in the module). Runs right before host code generation,
//           before LowerParallelLoops.
// Ensures:  in every function that is not a kernel (calling_conv 2), each
//           `T.attr(0, "compute_scope", label)` region, outermost first, is replaced by
//           `Evaluate(T.call_compute_scope("scope", captures...))`, and a new function `scope`
//           is added to the module:
//           - name: the label (else the enclosing function's or scope's name followed by
//             `_compute_`); `_` is appended while it clashes with a function of the module;
//           - params: fresh copies of the region's free variables in first-use order (the data
//             pointers and shapes of the buffers it uses without declaring them first);
//             `captures` are the original variables, in the same order;
//           - body: one `DeclBuffer` over the new variables for every buffer the region uses
//             without declaring it, then a copy of the region with fresh definitions; it
//             returns int32 0 when it completes and the error status of a failed assert or call;
//           - attrs: "calling_conv" = 4 (compute scope) and the caller's "target", if any;
//             ret type int32.
//           Functions without a compute scope are unchanged.
// Example:
//   def main(A: T.handle("float32"), n: T.int32):          # calling_conv 1
//       with T.attr(0, "compute_scope", "main_compute_"):
//           A_1 = T.decl_buffer((n,), data=A)
//           A_1[0] = T.float32(0)
//   =>
//   def main_compute_(A: T.handle("float32"), n: T.int32) -> T.int32:
//       T.func_attr({"calling_conv": 4})
//       A_1 = T.decl_buffer((n,), data=A)
//       A_1[0] = T.float32(0)
//   def main(A: T.handle("float32"), n: T.int32):
//       T.call_compute_scope("main_compute_", A, n)
#include <set>

#include "passes/free_vars.h"
#include "passes/fresh_definitions.h"
#include "passes/pass_list.h"
#include "primjit/ir/functor.h"

namespace primjit::passes {
namespace {

class ComputeScopeOutliner : public StmtExprMutator {
 public:
  ComputeScopeOutliner(std::string scope, const AttrValue* target, std::set<std::string>* names,
                       std::vector<std::pair<std::string, PrimFunc>>* scopes)
      : scope_(std::move(scope)), target_(target), names_(names), scopes_(scopes) {}

  Expr mutate_expr(const Expr& expr) override { return expr; }

  Stmt mutate(const AttrStmt* op) override {
    if (op->key != attr::kComputeScope) return StmtExprMutator::mutate(op);
    const auto* label = op->value.as<StringImm>();
    std::string name = fresh_name(label != nullptr ? label->value : scope_ + "_compute_");
    // Scopes nested inside become functions of their own, named after this one.
    ComputeScopeOutliner inner(name, target_, names_, scopes_);
    Stmt region = inner.mutate_stmt(op->body);

    // The captures in first-use order in the region as written (nested scopes included).
    FreeVarCollector buffers;
    buffers.visit_stmt(op->body);
    std::vector<Stmt> seq;
    for (const Buffer& b : buffers.undeclared_buffers()) seq.push_back(DeclBuffer::make(b));
    seq.push_back(op->body);
    FreeVarCollector collector;
    collector.visit_stmt(SeqStmt::make(seq));
    seq.back() = region;
    Stmt body = SeqStmt::make(seq);

    std::vector<Var> params;
    std::vector<Expr> args = {StringImm::make(name)};
    VarMap to_param;
    for (const VarNode* v : collector.free_vars()) {
      Var p = fresh_copy(v);
      to_param[v] = p;
      params.push_back(p);
      args.push_back(Var(v));
    }
    Attrs attrs = {{attr::kCallingConv, AttrValue(static_cast<int>(CallingConv::kComputeScope))}};
    if (target_ != nullptr) attrs.emplace(attr::kTarget, *target_);
    scopes_->emplace_back(name,
                          PrimFunc::make(params, {}, copy_with_fresh_definitions(body, to_param),
                                         DataType::Int(32), attrs));
    return Evaluate::make(Call::make(DataType::Int(32), Op::get("call_compute_scope"), args));
  }

 private:
  std::string fresh_name(std::string name) {
    while (names_->count(name)) name += "_";
    names_->insert(name);
    return name;
  }

  std::string scope_;
  const AttrValue* target_;
  std::set<std::string>* names_;
  std::vector<std::pair<std::string, PrimFunc>>* scopes_;
};

IRModule lower_compute_scopes(const IRModule& module) {
  std::set<std::string> names;
  for (const auto& [gvar, func] : module->functions) names.insert(gvar->name);
  IRModule out = module;
  for (const auto& [gvar, func] : module->functions) {
    if (func->is_kernel()) continue;
    std::string symbol = func->global_symbol();
    std::vector<std::pair<std::string, PrimFunc>> scopes;
    ComputeScopeOutliner outliner(symbol.empty() ? gvar->name : symbol, func->attr(attr::kTarget),
                                  &names, &scopes);
    Stmt body = outliner.mutate_stmt(func->body);
    if (body.same_as(func->body)) continue;
    out = out.with_function(gvar->name, func.with_body(body));
    for (const auto& [name, scope] : scopes) out = out.with_function(name, scope);
  }
  return out;
}

}  // namespace

Pass make_lower_compute_scopes_pass() {
  return Pass{"LowerComputeScopes",
              "host compute_scope regions to functions called with a status check",
              [](const IRModule& module, const PassArgs& args) {
                check_no_args("LowerComputeScopes", args);
                return lower_compute_scopes(module);
              }};
}

}  // namespace primjit::passes
