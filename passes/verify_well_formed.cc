// VerifyWellFormed as a pass.
//
// Requires: nothing.
// Ensures:  the module is returned unchanged; a module that is not well formed (see
//           primjit/ir/verify.h) raises primjit::Error listing the problems.
// Example:  `for i in range(4): x: T.int32 = i` followed by `A[x] = 0` fails with
//           "variable 'x' is used out of scope ...".
#include "passes/pass_list.h"
#include "primjit/ir/verify.h"

namespace primjit::passes {

Pass make_verify_well_formed_pass() {
  return Pass{"VerifyWellFormed", "check scoping, single definition and buffer declarations",
              [](const IRModule& module, const PassArgs& args) {
                check_no_args("VerifyWellFormed", args);
                verify_well_formed(module);
                return module;
              }};
}

}  // namespace primjit::passes
