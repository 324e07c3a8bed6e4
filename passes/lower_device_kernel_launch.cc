// LowerDeviceKernelLaunch: host calls of device kernels become packed launch calls.
//
// Requires: SplitHostDevice (kernels are functions of their own, called through GlobalVars);
//           at most one shared.dyn allocation per kernel (MergeSharedMemoryAllocations).
// Ensures:  for every function, its launch parameters are collected in a pre-order walk:
//           - the thread tag of each thread_extent, first appearance wins ("blockIdx.x",
//             "threadIdx.x", ...), with its extent; Binds met before an extent are inlined
//             into it (each Bind value with the earlier Binds inlined);
//           - a shared.dyn AllocBuffer gives the size in bytes (product of the shape times the
//             element size, Binds inlined, simplified), and "tirx.use_dyn_shared_memory"
//             comes last; a second shared.dyn allocation is an error in a kernel (other
//             functions, e.g. not yet split ones, are left alone).
//           A function is a kernel when "calling_conv" is 2, or when it launches threads and
//           its target is a device target without host (cuda, emu).
//           Each call `Module.g(args)` in a function f is rewritten by comparing targets:
//           - f is a host function (llvm, or a device target with a host) and g is a kernel:
//             always the launch path (#19605), even when f's device target equals g's;
//           - else, f's target (its host target when it has one, #19605) printed the same as
//             g's target without host (or g has no target): the call stays;
//           - else the same target kind (e.g. cuda sm_80 and cuda sm_90): `T.call_extern(
//             dtype, "<g's symbol>", args...)`, and g gets a "global_symbol" if it had none;
//           - else the launch path: `T.call_packed("<g's symbol>", args..., extents...,
//             dyn_shmem_bytes)` (int32), the extents with g's params replaced by the call's
//             args so they are host expressions; the argument count must match.
//           Every launched function and every kernel gets "calling_conv" = 2,
//           "tirx.kernel_launch_params" = the tags (strings) and "global_symbol" (kept, or the
//           function's name). A function both launched and extern-called is an error.
//           Kernels return nothing: their ret type becomes void and `T.ret(0)` a no-op
//           (`T.evaluate(0)`); any other return value is an error.
// Example:
//   def main_kernel(A_1: T.handle("float32", "global"), n: T.int32):   (calling_conv 2)
//       m: T.int32 = n + 1
//       tx = T.launch_thread("threadIdx.x", m)                 =>  "tirx.kernel_launch_params":
//       ...                                                          ["threadIdx.x"]
//   def main(A: T.Buffer((16,), "float32"), n: T.int32):
//       Module.main_kernel(A.data, n)                          =>  T.call_packed("main_kernel",
//                                                                     A.data, n, n + 1)
#include <map>
#include <set>
#include <unordered_map>

#include "passes/pass_list.h"
#include "primjit/arith.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"

namespace primjit::passes {
namespace {

struct KernelInfo {
  std::vector<std::string> launch_params;  // thread tags, then attr::kUseDynSharedMemory if any
  std::vector<Expr> launch_args;           // over the function's own params
  bool is_kernel = false;
  Target target;  // without host; undefined when the function has none
  std::string symbol;
  std::string second_dyn_shmem;  // a second shared.dyn buffer, if any (an error for kernels)

  void check_launchable(const std::string& name) const {
    PRIMJIT_USER_CHECK(second_dyn_shmem.empty())
        << "LowerDeviceKernelLaunch: kernel '" << name << "' allocates shared.dyn buffer '"
        << second_dyn_shmem << "' after another one; only one dynamic shared memory allocation "
        << "per kernel is allowed (run MergeSharedMemoryAllocations first)";
  }
};

class LaunchParamCollector : public StmtExprVisitor {
 public:
  LaunchParamCollector() = default;

  void visit_expr(const Expr&) override {}

  void visit(const Bind* op) override { binds_[op->var.get()] = substitute(op->value, binds_); }

  void visit(const AttrStmt* op) override {
    const IterVarNode* iv = op->iter_var();
    if (iv != nullptr && op->key == attr::kThreadExtent && !tags_.count(iv->thread_tag)) {
      tags_.insert(iv->thread_tag);
      info.launch_params.push_back(iv->thread_tag);
      info.launch_args.push_back(substitute(op->value, binds_));
    }
    visit_stmt(op->body);
  }

  void visit(const AllocBuffer* op) override {
    const Buffer& b = op->buffer;
    if (b->scope() != "shared.dyn") return;
    if (dyn_shmem_.defined()) {
      // Reported only if the function turns out to be a kernel (see check_launchable).
      info.second_dyn_shmem = b->name;
      return;
    }
    Expr bytes = IntImm::make(DataType::Int(32), b->dtype.bytes());
    for (const Expr& e : b->shape) {
      Expr extent = substitute(e, binds_);
      if (extent.dtype() != bytes.dtype()) extent = Cast::make(bytes.dtype(), extent);
      bytes = Mul::make(bytes, extent);
    }
    dyn_shmem_ = arith::simplify(bytes);  // constant sizes fold to one number
  }

  KernelInfo finish() {
    if (dyn_shmem_.defined()) {
      info.launch_params.push_back(attr::kUseDynSharedMemory);
      info.launch_args.push_back(dyn_shmem_);
    }
    return std::move(info);
  }

  KernelInfo info;

 private:
  VarMap binds_;
  std::set<std::string> tags_;
  Expr dyn_shmem_;
};

class CallLowerer : public StmtExprMutator {
 public:
  CallLowerer(const PrimFunc& caller, const IRModule& module,
              const std::map<std::string, KernelInfo>& infos, std::set<std::string>* launched,
              std::set<std::string>* externs)
      : module_(module), infos_(infos), launched_(launched), externs_(externs) {
    Target t = caller->target();
    if (t.defined()) {
      caller_is_host_ = t->host.defined() || !t->is_device();
      compare_ = t->host.defined() ? t->host : t;
    }
  }

  Expr mutate(const Call* op) override {
    Expr e = StmtExprMutator::mutate(op);
    const auto* call = e.as<Call>();
    if (!call->callee.defined()) return e;
    auto it = infos_.find(call->callee->name);
    if (it == infos_.end()) return e;
    const KernelInfo& info = it->second;
    if (!(info.is_kernel && caller_is_host_)) {
      if (!info.target.defined() || !compare_.defined() || info.target.str() == compare_.str()) {
        return e;
      }
      if (info.target->kind == compare_->kind) {
        externs_->insert(it->first);
        std::vector<Expr> args = {StringImm::make(info.symbol)};
        args.insert(args.end(), call->args.begin(), call->args.end());
        return Call::make(call->dtype, Op::get("call_extern"), args);
      }
    }
    return launch(it->first, info, call);
  }

 private:
  Expr launch(const std::string& name, const KernelInfo& info, const Call* call) {
    info.check_launchable(name);
    PrimFunc callee = module_->lookup(name);
    PRIMJIT_USER_CHECK(callee->params.size() == call->args.size())
        << "LowerDeviceKernelLaunch: function '" << name << "' accepts " << callee->params.size()
        << " arguments as input, but is called using " << call->args.size() << " arguments";
    VarMap to_args;
    for (size_t i = 0; i < callee->params.size(); ++i) {
      to_args[callee->params[i].get()] = call->args[i];
    }
    std::vector<Expr> args = {StringImm::make(info.symbol)};
    args.insert(args.end(), call->args.begin(), call->args.end());
    for (const Expr& e : info.launch_args) args.push_back(substitute(e, to_args));
    launched_->insert(name);
    return Call::make(DataType::Int(32), Op::get("call_packed"), args);
  }

  const IRModule& module_;
  const std::map<std::string, KernelInfo>& infos_;
  std::set<std::string>* launched_;
  std::set<std::string>* externs_;
  bool caller_is_host_ = false;
  Target compare_;
};

// A launched kernel returns nothing: `T.ret(0)` (success) becomes a no-op, any other return is
// an error.
class ReturnRemover : public StmtExprMutator {
 public:
  explicit ReturnRemover(std::string name) : name_(std::move(name)) {}

  Expr mutate_expr(const Expr& expr) override { return expr; }

  Stmt mutate(const Evaluate* op) override {
    const auto* call = op->value.as<Call>();
    if (call == nullptr || !call->is_op("ret")) return Stmt(op);
    std::optional<int64_t> value = as_const_int(call->args[0]);
    PRIMJIT_USER_CHECK(value && *value == 0)
        << "LowerDeviceKernelLaunch: kernel '" << name_
        << "' returns a value other than 0; a device kernel may only return success (T.ret(0)) "
        << "or nothing";
    return Evaluate::make(make_const(0));
  }

 private:
  std::string name_;
};

PrimFunc without_returns(const std::string& name, const PrimFunc& func) {
  Stmt body = ReturnRemover(name).mutate_stmt(func->body);
  if (body.same_as(func->body) && func->ret_type == DataType::Void()) return func;
  return PrimFunc::make(func->params, func->buffer_map, body, DataType::Void(), func->attrs);
}

IRModule lower_device_kernel_launch(const IRModule& module) {
  std::map<std::string, KernelInfo> infos;
  for (const auto& [gvar, func] : module->functions) {
    LaunchParamCollector collector;
    collector.visit_stmt(func->body);
    KernelInfo info = collector.finish();
    bool has_launch = false;
    for (const std::string& tag : info.launch_params)
      has_launch |= tag != attr::kUseDynSharedMemory;
    Target t = func->target();
    // Only a device function without host is a kernel by its launches: a host function
    // (llvm, or a device target with a host) or one without target is not split yet.
    bool is_device_only = t.defined() && t->is_device() && !t->host.defined();
    info.is_kernel = (has_launch && is_device_only) || func->is_kernel();
    if (t.defined()) info.target = Target::make(t->kind, t->arch);
    std::string symbol = func->global_symbol();
    info.symbol = symbol.empty() ? gvar->name : symbol;
    infos.emplace(gvar->name, std::move(info));
  }

  std::set<std::string> launched, externs;
  IRModule out = module;
  for (const auto& [gvar, func] : module->functions) {
    CallLowerer lowerer(func, module, infos, &launched, &externs);
    Stmt body = lowerer.mutate_stmt(func->body);
    if (!body.same_as(func->body)) out = out.with_function(gvar->name, func.with_body(body));
  }

  for (const auto& [name, info] : infos) {
    bool is_launched = launched.count(name) != 0;
    bool is_extern = externs.count(name) != 0;
    PRIMJIT_USER_CHECK(!(is_launched && is_extern))
        << "LowerDeviceKernelLaunch: function '" << name
        << "' is both launched as a kernel and called as an extern function; call it one way";
    PrimFunc func = out->lookup(name);
    PrimFunc updated = func;
    if (is_launched || info.is_kernel) {
      info.check_launchable(name);
      AttrValue::Array tags;
      for (const std::string& tag : info.launch_params) tags.push_back(AttrValue(tag));
      updated = without_returns(name, updated)
                    .with_attr(attr::kCallingConv,
                               AttrValue(static_cast<int>(CallingConv::kKernelLaunch)))
                    .with_attr(attr::kKernelLaunchParams, AttrValue(tags))
                    .with_attr(attr::kGlobalSymbol, AttrValue(info.symbol));
    } else if (is_extern && func->global_symbol().empty()) {
      updated = updated.with_attr(attr::kGlobalSymbol, AttrValue(name));
    }
    if (!updated.same_as(func)) out = out.with_function(name, updated);
  }
  return out;
}

}  // namespace

Pass make_lower_device_kernel_launch_pass() {
  return Pass{"LowerDeviceKernelLaunch",
              "turn host calls of device kernels into packed launch calls with launch parameters",
              [](const IRModule& module, const PassArgs& args) {
                check_no_args("LowerDeviceKernelLaunch", args);
                return lower_device_kernel_launch(module);
              }};
}

}  // namespace primjit::passes
