// SplitHostDevice: each device region becomes a kernel function that the host calls.
//
// Requires: AnnotateDeviceRegions (device regions are `AttrStmt(target, "target", 0)`);
//           well-formed IR (each variable defined once in the module).
// Ensures:  for every function, each outermost "target" AttrStmt whose node is a Target is
//           replaced by `Evaluate(Call(void, GlobalVar(kernel), args))`, and a new function
//           `kernel` is added to the module:
//           - name: `<global_symbol or name>_kernel`, then `_kernel_1`, `_kernel_2`, ... so that
//             it clashes with no function of the module (nor with kernels made before it);
//           - params: the free variables of the region (variables it uses but does not define,
//             including data pointers, shape variables of the buffers it accesses and variables
//             used only in thread extents), as fresh variables: pointer (handle) variables first,
//             then scalars, each group sorted by name (first use breaks ties); `args` are the
//             original variables, in the same order;
//           - body: one `DeclBuffer` over the new data pointer for every buffer the region
//             accesses without declaring it (sorted by buffer name), then a copy of the region
//             body in which every definition is a fresh variable, so host and kernels share
//             no variables and the module stays well formed;
//           - attrs: "target" = the region's target (no host), "calling_conv" = 2 (kernel
//             launch), "global_symbol" = the kernel's name, "tirx.noalias" = True; ret type void;
//           - emu regions (kernels run on the CPU) instead return int32: the body ends with
//             `return 0` and the host does `err: T.int32 = Module.k(args)` followed by
//             `assert err == 0, "Error executing compute kernel k"`;
//           - a region for a CPU target (llvm) does the same, as an ordinary private function:
//             attrs hold only "target" (no calling_conv, global_symbol or noalias), so the call
//             stays a direct call that no launch lowering or MakePackedAPI touches.
//           The host function keeps its target (e.g. cuda with host llvm): MakePackedAPI
//           needs the device type its buffers live on, then replaces it with the host target.
//           Functions without a region are unchanged.
// Example:
//   def main(A: T.Buffer((16,), "float32")):
//       T.func_attr({"target": T.target("cuda", host="llvm")})
//       with T.attr(T.target("cuda"), "target", 0):
//           tx = T.launch_thread("threadIdx.x", 16)
//           A[tx] = T.float32(0)
//   =>
//   def main_kernel(A_1: T.handle("float32", "global")):
//       T.func_attr({"calling_conv": 2, "target": T.target("cuda"), "tirx.noalias": True})
//       A_2 = T.decl_buffer((16,), "float32", data=A_1)
//       tx = T.launch_thread("threadIdx.x", 16)
//       A_2[tx] = T.float32(0)
//   def main(A: T.Buffer((16,), "float32")):
//       T.func_attr({"target": T.target("cuda", host="llvm")})
//       Module.main_kernel(A.data)
#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "passes/free_vars.h"
#include "passes/fresh_definitions.h"
#include "passes/pass_list.h"
#include "primjit/ir/functor.h"

namespace primjit::passes {
namespace {

class HostDeviceSplitter : public StmtExprMutator {
 public:
  HostDeviceSplitter(std::string base, std::set<std::string>* names,
                     std::vector<std::pair<std::string, PrimFunc>>* kernels)
      : base_(std::move(base)), names_(names), kernels_(kernels) {}

  Expr mutate_expr(const Expr& expr) override { return expr; }

  Stmt mutate(const AttrStmt* op) override {
    const auto* target = op->node.as<TargetNode>();
    if (op->key != attr::kTarget || target == nullptr) return StmtExprMutator::mutate(op);
    return split(Target(Ref<TargetNode>(target)), op->body);
  }

 private:
  Stmt split(const Target& target, const Stmt& region) {
    // The buffers the region accesses without declaring are declared at the kernel's top.
    FreeVarCollector buffers;
    buffers.visit_stmt(region);
    std::vector<Stmt> seq;
    std::vector<Buffer> undeclared = buffers.undeclared_buffers();
    std::stable_sort(undeclared.begin(), undeclared.end(),
                     [](const Buffer& a, const Buffer& b) { return a->name < b->name; });
    for (const Buffer& b : undeclared) seq.push_back(DeclBuffer::make(b));
    seq.push_back(region);
    Stmt body = SeqStmt::make(seq);

    FreeVarCollector collector;
    collector.visit_stmt(body);
    std::vector<const VarNode*> free = collector.free_vars();
    std::stable_sort(free.begin(), free.end(), [](const VarNode* a, const VarNode* b) {
      bool ha = a->dtype.is_handle(), hb = b->dtype.is_handle();
      if (ha != hb) return ha;
      return a->name < b->name;
    });

    VarMap to_param;
    std::vector<Var> params;
    std::vector<Expr> args;
    for (const VarNode* v : free) {
      Var p = fresh_copy(v);
      to_param[v] = p;
      params.push_back(p);
      args.push_back(Var(v));
    }
    Stmt kernel_body = copy_with_fresh_definitions(body, to_param);

    std::string name = fresh_name();
    Attrs attrs = {{attr::kTarget, AttrValue(target)},
                   {attr::kCallingConv, AttrValue(static_cast<int>(CallingConv::kKernelLaunch))},
                   {attr::kGlobalSymbol, AttrValue(name)},
                   {attr::kNoAlias, AttrValue(true)}};
    if (!target->is_device()) {
      // A region for a CPU target is an ordinary private host function, called directly: no
      // launch, no packed convention, and no noalias (views of one buffer may be passed twice).
      attrs = {{attr::kTarget, AttrValue(target)}};
    } else if (target->kind != "emu") {
      kernels_->emplace_back(name,
                             PrimFunc::make(params, {}, kernel_body, DataType::Void(), attrs));
      return Evaluate::make(Call::make(DataType::Void(), GlobalVar::make(name), args));
    }
    // A function run on the CPU (an emu kernel, a CPU region) reports success as 0, which the
    // host checks.
    Expr zero = make_const(0);
    Stmt ret = Evaluate::make(Call::make(DataType::Int(32), Op::get("ret"), {zero}));
    kernels_->emplace_back(name, PrimFunc::make(params, {}, SeqStmt::make({kernel_body, ret}),
                                                DataType::Int(32), attrs));
    Var err = Var::make("err", DataType::Int(32));
    return SeqStmt::make(
        {Bind::make(err, Call::make(DataType::Int(32), GlobalVar::make(name), args)),
         AssertStmt::make(EQ::make(err, zero),
                          StringImm::make("Error executing compute kernel " + name))});
  }

  std::string fresh_name() {
    std::string name = base_ + "_kernel";
    for (int i = 1; names_->count(name); ++i) name = base_ + "_kernel_" + std::to_string(i);
    names_->insert(name);
    return name;
  }

  std::string base_;
  std::set<std::string>* names_;
  std::vector<std::pair<std::string, PrimFunc>>* kernels_;
};

IRModule split_host_device(const IRModule& module) {
  std::set<std::string> names;
  for (const auto& [gvar, func] : module->functions) names.insert(gvar->name);
  IRModule out = module;
  for (const auto& [gvar, func] : module->functions) {
    std::string symbol = func->global_symbol();
    std::vector<std::pair<std::string, PrimFunc>> kernels;
    HostDeviceSplitter splitter(symbol.empty() ? gvar->name : symbol, &names, &kernels);
    Stmt body = splitter.mutate_stmt(func->body);
    if (body.same_as(func->body)) continue;
    out = out.with_function(gvar->name, func.with_body(body));
    for (const auto& [name, kernel] : kernels) out = out.with_function(name, kernel);
  }
  return out;
}

}  // namespace

Pass make_split_host_device_pass() {
  return Pass{"SplitHostDevice",
              "move each device region into a kernel function called by the host",
              [](const IRModule& module, const PassArgs& args) {
                check_no_args("SplitHostDevice", args);
                return split_host_device(module);
              }};
}

}  // namespace primjit::passes
