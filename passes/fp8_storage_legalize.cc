// FP8StorageLegalize: float8_e4m3fn and float8_e5m2 computed in float32 and stored as uint8 where
// the target has no native float8.
//
// Requires: MakePackedAPI (the functions it changes have an empty buffer_map and declare their
//           buffers with DeclBuffer/AllocBuffer); a "target" attribute on each function (a
//           function without one is legalized). Runs before BF16StorageLegalize, which then
//           sees the float32 values this pass leaves where float8 met bfloat16.
// Ensures:  functions whose target is cuda sm_89 or newer keep their float8, as do functions
//           that mention none at all (both come back as the same node). The target is the
//           function's "target" attribute, or its host when it has one and no device code is
//           left (no thread launch, device_scope or target region). In every other function
//           (llvm, emu, cuda before sm_89, no target) no float8 is left. The rules are those of
//           BF16StorageLegalize with uint8 storage and each format's own conversions, integer
//           formulas exact on every input (primjit/float_formats.h):
//           - to float32: normal and subnormal values, infinity (e5m2), NaN (sign kept);
//           - from float32: round to nearest even, subnormals included; NaN gives the format's
//             NaN with the sign kept; everything beyond the largest finite value, infinity
//             included, saturates to it (as CUDA's __NV_SATFINITE conversions).
//           Casts between the two float8 formats go through float32 (exact, then one rounding).
// Example (target cuda sm_80):
//   def k(A_1: T.handle("float8_e4m3fn", "global")):
//       A = T.decl_buffer((16,), "float8_e4m3fn", data=A_1)
//       A[0] = A[1] * A[2]
//   =>
//   def k(A_1: T.handle("uint8", "global")):
//       A = T.decl_buffer((16,), "uint8", data=A_1)
//       A[0] = to_e4m3(to_f32(A[1]) * to_f32(A[2]))
//   where to_f32 and to_e4m3 are the conversion formulas over T.Cast("uint32", bits) and
//   T.reinterpret("uint32", x) (Lets, shifts, masks and Selects; see storage_legalize.cc).
#include "passes/pass_list.h"
#include "passes/storage_legalize.h"

namespace primjit::passes {

Pass make_fp8_storage_legalize_pass() {
  return make_storage_legalize_pass(
      NarrowStorage{"FP8StorageLegalize",
                    {DataType::Float8E4M3FN(), DataType::Float8E5M2()},
                    8,
                    /*min_cuda_arch=*/89},
      "float8 compute in float32 and storage as uint8 without native support (< sm_89)");
}

}  // namespace primjit::passes
