// BF16StorageLegalize: bfloat16 computed in float32 and stored as uint16 where the target has
// no native bfloat16.
//
// Requires: MakePackedAPI (the functions it changes have an empty buffer_map and declare their
//           buffers with DeclBuffer/AllocBuffer); a "target" attribute on each function (a
//           function without one is legalized).
// Ensures:  functions whose target is cuda sm_80 or newer keep their bfloat16, as do functions
//           that mention none at all (both come back as the same node). The target is the
//           function's "target" attribute, or its host when it has one and no device code is
//           left (no thread launch, device_scope or target region). In every other function
//           (llvm, emu, cuda before sm_80, no target) no bfloat16 is left:
//           - compute: every bfloat16 value is computed in float32 (same lanes): loads and
//             bfloat16 parameters are widened (`T.reinterpret("float32", T.shift_left(
//             T.Cast("uint32", bits), T.uint32(16)))`), arithmetic, comparisons, min/max,
//             Select and math calls run on float32, Bind/Let variables become float32.
//             Intermediate results are not rounded; an explicit cast to bfloat16 rounds, and
//             casts from or to other types go through float32;
//           - storage: pointers to bfloat16 (parameters, Bind/Let variables, buffer data) point
//             to uint16 in the same scope, AllocBuffer/DeclBuffer buffers hold uint16 (lanes
//             kept), AttrStmts naming a remapped pointer or buffer follow it; a stored value
//             is rounded to nearest even (bias 0x7FFF plus the lowest kept bit, NaN kept as
//             NaN, overflow to infinity, as primjit/float_formats.h), or copied bit for bit
//             when it is a load, a literal, a reinterpret or a Select of those;
//           - `T.reinterpret` involving bfloat16 reinterprets uint16 instead and is dropped
//             when that makes it a no-op; extern, packed and function calls pass and return
//             bfloat16 values as their uint16 bits.
//           A function that would change but still has a buffer_map is an error.
// Example (target cuda sm_75):
//   def k(A_1: T.handle("bfloat16", "global")):
//       A = T.decl_buffer((16,), "bfloat16", data=A_1)
//       A[0] = A[1] + A[2]
//   =>
//   def k(A_1: T.handle("uint16", "global")):
//       A = T.decl_buffer((16,), "uint16", data=A_1)
//       A[0] = to_bf16(to_f32(A[1]) + to_f32(A[2]))
//   where to_f32(b) is T.reinterpret("float32", T.shift_left(T.Cast("uint32", b), T.uint32(16)))
//   and to_bf16(x) the rounding formula, a T.Let over T.reinterpret("uint32", x).
#include "passes/pass_list.h"
#include "passes/storage_legalize.h"

namespace primjit::passes {

Pass make_bf16_storage_legalize_pass() {
  return make_storage_legalize_pass(
      NarrowStorage{"BF16StorageLegalize", {DataType::BFloat16()}, 16, /*min_cuda_arch=*/80},
      "bfloat16 compute in float32 and storage as uint16 without native support (< sm_80)");
}

}  // namespace primjit::passes
