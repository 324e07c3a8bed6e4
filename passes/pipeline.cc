// The default lowering pipeline, top to bottom, with the reason for each step. Later work adds
// Specialize, FlattenBuffer, Simplify, RemoveNoOp, MergeSharedMemoryAllocations,
// AnnotateDeviceRegions, SplitHostDevice, LowerDeviceKernelLaunch, MakePackedAPI and the storage
// legalization passes here, in the order DESIGN.md gives.
#include "primjit/passes.h"

namespace primjit::passes {

std::vector<std::string> default_pipeline() {
  return {
      "VerifyWellFormed",  // reject ill-scoped input before any pass relies on it
  };
}

}  // namespace primjit::passes
