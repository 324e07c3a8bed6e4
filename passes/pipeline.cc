// The default lowering pipeline, top to bottom, with the reason for each step. Specialize runs
// before it when the JIT specializes a call's shapes (it needs the values, so it is not listed).
// The device passes (MergeSharedMemoryAllocations, AnnotateDeviceRegions, SplitHostDevice,
// LowerDeviceKernelLaunch, MakePackedAPI, the storage legalizations) join this list in the
// order DESIGN.md gives.
#include "primjit/passes.h"

namespace primjit::passes {

std::vector<std::string> default_pipeline() {
  return {
      "VerifyWellFormed",  // reject ill-scoped input before any pass relies on it
      "FlattenBuffer",     // 1-D accesses: what the code generators and the merge pass expect
      "Simplify",          // fold the index arithmetic flattening produced, prune dead branches
      "RemoveNoOp",        // drop what simplification emptied
  };
}

}  // namespace primjit::passes
