// FP8StorageLegalize: placeholder, being written.
#include "passes/pass_list.h"

namespace primjit::passes {

Pass make_fp8_storage_legalize_pass() {
  return function_pass("FP8StorageLegalize", "(not yet implemented)", [](const PrimFunc& f) { return f; });
}

}  // namespace primjit::passes
