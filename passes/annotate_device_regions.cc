// AnnotateDeviceRegions: marks the code of a device function that runs on the device.
//
// Requires: MergeSharedMemoryAllocations (it runs right before; nothing here depends on it).
// Ensures:  in a function whose "target" attribute is a device target with a host
//           (T.target("cuda", host="llvm"), T.target("emu", host="llvm")), every outermost
//           thread_extent AttrStmt (a kernel launch) is wrapped in
//           `AttrStmt(node = the device target without its host, key = "target", value = 0)`.
//           - an existing "target" AttrStmt is kept as it is and not entered;
//           - a "device_scope" AttrStmt (code to run on the device without a thread launch)
//             is wrapped the same way;
//           - the walk goes through other AttrStmts, loops, branches and sequences, and stops at
//             the first thread_extent or device_scope on each path (nested launches belong to
//             that region);
//           - each launch is its own region: statements between two sibling launches stay on
//             the host (SplitHostDevice then makes one kernel per launch);
//           - functions without a target, with a host-only target (llvm) or with a device
//             target that has no host are unchanged.
//           The printer shows the region as `with T.attr(T.target("cuda", ...), "target", 0):`.
// Example:
//   T.func_attr({"target": T.target("cuda", host="llvm")})
//   with T.launch_thread("threadIdx.x", 16) as tx:       =>
//       A[tx] = T.float32(0)
//   T.func_attr({"target": T.target("cuda", host="llvm")})
//   with T.attr(T.target("cuda"), "target", 0):
//       tx = T.launch_thread("threadIdx.x", 16)
//       A[tx] = T.float32(0)
#include "passes/pass_list.h"
#include "primjit/ir/functor.h"

namespace primjit::passes {
namespace {

class DeviceRegionAnnotator : public StmtExprMutator {
 public:
  explicit DeviceRegionAnnotator(Target device) : device_(std::move(device)) {}

  // Expressions hold no launches: keep them as they are.
  Expr mutate_expr(const Expr& expr) override { return expr; }

  Stmt mutate(const AttrStmt* op) override {
    if (op->key == attr::kTarget) return Stmt(op);
    if (op->key == attr::kThreadExtent || op->key == attr::kDeviceScope) {
      return AttrStmt::make(Ref<Object>(device_.get()), attr::kTarget, make_const(0), Stmt(op));
    }
    return StmtExprMutator::mutate(op);
  }

 private:
  Target device_;
};

PrimFunc annotate_device_regions(const PrimFunc& func) {
  Target target = func->target();
  if (!target.defined() || !target->is_device() || !target->host.defined()) return func;
  Target device = Target::make(target->kind, target->arch);
  Stmt body = DeviceRegionAnnotator(device).mutate_stmt(func->body);
  return body.same_as(func->body) ? func : func.with_body(body);
}

}  // namespace

Pass make_annotate_device_regions_pass() {
  return function_pass("AnnotateDeviceRegions",
                       "mark each outermost thread launch of a device function as a device region",
                       annotate_device_regions);
}

}  // namespace primjit::passes
