#include "passes/pass_list.h"

namespace primjit::passes {

Pass make_make_packed_api_pass() {
  return function_pass("MakePackedAPI", "(not yet implemented)", [](const PrimFunc& f) { return f; });
}

}  // namespace primjit::passes
