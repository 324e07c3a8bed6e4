// The default lowering pipeline, top to bottom, with the reason for each step. Specialize runs
// before it when the JIT specializes a call's shapes (it needs the values, so it is not listed).
// The device passes (MergeSharedMemoryAllocations, AnnotateDeviceRegions, SplitHostDevice,
// LowerDeviceKernelLaunch, MakePackedAPI, the storage legalizations) join this list in the
// order DESIGN.md gives.
#include "primjit/passes.h"

namespace primjit::passes {

std::vector<std::string> default_pipeline(const PipelineOptions& options) {
  std::vector<std::string> pipeline = {
      "VerifyWellFormed",  // reject ill-scoped input before any pass relies on it
      "FlattenBuffer",     // 1-D accesses: what the code generators and the merge pass expect
      "Simplify",          // fold the index arithmetic flattening produced, prune dead branches
  };
  if (options.common_subexpr_elim) {
    pipeline.push_back("CommonSubexprElim");  // compute repeated (index) arithmetic once
  }
  pipeline.push_back("RemoveNoOp");  // drop what simplification emptied
  return pipeline;
}

}  // namespace primjit::passes
