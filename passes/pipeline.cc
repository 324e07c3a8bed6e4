// The default lowering pipeline, top to bottom, with the reason for each step. Specialize runs
// before it when the JIT specializes a call's shapes (it needs the values, so it is not listed).
// The order is DESIGN.md's: base passes, the shared-memory merge before the three consecutive
// device passes, then MakePackedAPI and the storage legalizations.
#include "primjit/passes.h"

namespace primjit::passes {

std::vector<std::string> default_pipeline(const PipelineOptions& options) {
  std::vector<std::string> pipeline = {
      "VerifyWellFormed",    // reject ill-scoped input before any pass relies on it
      "VerifyDeviceMemory",  // and host code touching device memory (or the reverse)
  };
  if (options.checked_arithmetic) {
    pipeline.push_back("InsertDivisionChecks");  // the user's divisions, before any rewrite
  }
  for (const char* pass : {
           "FlattenBuffer",  // 1-D accesses: what the code generators and the merge pass expect
           "Simplify",       // fold the index arithmetic flattening produced, prune dead branches
           "LowerVectorReductions",  // marked reductions to partials in a fixed order, before
                                     // FuseMultiplyAdd contracts their sums
           "VectorizeLoop",  // T.vectorized loops (the partials' too) to vector statements, so
                             // LLVM sees vector code before its unroller scalarizes the loops
       }) {
    pipeline.push_back(pass);
  }
  if (options.fp_contract) {
    pipeline.push_back("FuseMultiplyAdd");  // on the simplified sums, before CSE names products
  }
  if (options.common_subexpr_elim) {
    pipeline.push_back("CommonSubexprElim");  // compute repeated (index) arithmetic once
  }
  pipeline.push_back("RemoveNoOp");  // drop what simplification emptied
  for (const char* pass : {
           "MergeSharedMemoryAllocations",  // one shared.dyn buffer per launch, before the split
           "AnnotateDeviceRegions",         // mark what runs on the device ...
           "SplitHostDevice",               // ... move it into kernels ...
           "LowerDeviceKernelLaunch",       // ... and launch them (kept consecutive, as in #19605)
       }) {
    pipeline.push_back(pass);
  }
  for (const char* pass : {
           "MakePackedAPI",        // host entry points take checked packed arguments
           "FP8StorageLegalize",   // float8 as uint8 storage with float32 compute, then ...
           "BF16StorageLegalize",  // ... bfloat16 as uint16, where the target lacks them
       }) {
    pipeline.push_back(pass);
  }
  return pipeline;
}

std::vector<std::string> host_lowering_pipeline() {
  return {
      "LowerComputeScopes",  // compute_scope regions to functions (noalias pointer params)
      "LowerParallelLoops",  // outline T.parallel bodies into tasks the runtime's parallel-for runs
  };
}

IRModule lower_for_host(const IRModule& module) {
  IRModule out = module;
  for (const std::string& pass : host_lowering_pipeline()) out = get_pass(pass).run(out, {});
  return out;
}

}  // namespace primjit::passes
