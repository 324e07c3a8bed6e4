// The pass layer. The pass manager and the passes arrive with the base-passes work; until then
// this translation unit keeps the layer (and its place in the chain
// primjit_ir <- primjit_passes <- primjit_jit) in the build and in the exported package.
#include "primjit/error.h"

namespace primjit::passes {

/// Number of registered passes (none yet).
int registered_pass_count() { return 0; }

}  // namespace primjit::passes
