// Shared machinery of BF16StorageLegalize and FP8StorageLegalize: both are one algorithm,
// parametrized by the narrow floating types they handle and the unsigned integer type that
// stores them. See bf16_storage_legalize.cc for the rules.
#pragma once

#include <string>
#include <vector>

#include "primjit/float_formats.h"
#include "primjit/ir/function.h"
#include "primjit/passes.h"

namespace primjit::passes {

/// What one storage legalization handles.
struct NarrowStorage {
  /// The pass name, used in error messages ("BF16StorageLegalize").
  std::string pass_name;
  /// The narrow types (scalar); vectors of them are handled too.
  std::vector<DataType> types;
  /// The width of the unsigned integer type that stores them (16: uint16, 8: uint8).
  int storage_bits;
  /// The first CUDA compute capability (arch_number(), e.g. 80 for sm_80) with native support.
  int min_cuda_arch;

  bool is_narrow(DataType t) const;
};

/// True when functions for `target` keep `spec`'s types as they are: a cuda target of at least
/// spec.min_cuda_arch. No target, llvm, emu and older cuda archs need the legalization.
bool has_native_support(const Target& target, const NarrowStorage& spec);

/// The target whose support decides for `func`: its "target" attribute, except that a device
/// target with a host decides by the host when no device code is left in the function (no
/// thread launch, device_scope or target region: host code whose target is not yet the host).
Target deciding_target(const PrimFunc& func);

/// The legalization of one function (named `name` in error messages): the same function when it
/// holds none of `spec`'s types or its target supports them.
PrimFunc storage_legalize(const PrimFunc& func, const std::string& name, const NarrowStorage& spec);

/// The pass running storage_legalize on every function of a module.
Pass make_storage_legalize_pass(NarrowStorage spec, std::string summary);

// --- the conversions, as IR over unsigned integers; bit-exact with primjit/float_formats.h ---

/// The bit layout of a narrow type: fp::kBFloat16, fp::kFloat8E4M3FN or fp::kFloat8E5M2.
const fp::Format& narrow_format(DataType narrow);

/// The float32 value (same lanes) of `bits`, an unsigned integer expression of narrow's width
/// holding a value of type `narrow` (bfloat16, float8_e4m3fn or float8_e5m2).
Expr narrow_bits_to_float32(DataType narrow, const Expr& bits);

/// The bits (an unsigned integer of narrow's width, same lanes) of the float32 expression
/// `value` rounded to `narrow`: to nearest even; NaN gives the format's NaN with the sign kept;
/// out of range gives infinity (bfloat16) or the largest finite value (float8).
Expr float32_to_narrow_bits(DataType narrow, const Expr& value);

}  // namespace primjit::passes
