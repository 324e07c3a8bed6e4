// BF16StorageLegalize: placeholder, being written.
#include "passes/pass_list.h"

namespace primjit::passes {

Pass make_bf16_storage_legalize_pass() {
  return function_pass("BF16StorageLegalize", "(not yet implemented)", [](const PrimFunc& f) { return f; });
}

}  // namespace primjit::passes
