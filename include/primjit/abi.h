// The packed calling convention of primjit's compiled host functions (C-compatible).
//
// After MakePackedAPI every public host function has the signature of PJPackedFunc:
//
//   int32_t f(void* self, const PJValue* args, int32_t num_args, PJValue* result);
//
// - `args[i]` is the i-th parameter as a tagged value: an integer or bool in v_int64, a float
//   in v_float64, a pointer (opaque, or a DLTensor* for buffer parameters) in v_ptr.
// - The return value is 0 on success. A non-zero return means the call failed before or
//   while running. The compiled code hands the message to primjit's runtime on the calling
//   thread, and a call through primjit::Kernel throws it as primjit::Error; no C function
//   reads it.
// - A function that returns a value stores it in *result (type index and value).
// - `self` is the resource handle of the function's module. primjit's runtime passes the
//   module's table of loaded kernels (host code that launches kernels reads their handles from
//   it); a module that launches none ignores it. Call compiled functions with the `self` they
//   come with (primjit::CompiledVariant::packed_self).
//
// In the IR, `T.tvm_struct_get(p, i, field, "dtype")` reads field `field` of element i of the
// array p, where p is either the PJValue array (fields kPJValue*) or a DLTensor* (fields
// kPJTensor*, element index 0); `T.tvm_struct_set(p, i, field, value)` writes one.
#pragma once

#include <stdint.h>  // NOLINT(modernize-deprecated-headers): also a C header

#ifdef __cplusplus
#include <string>
#include <string_view>
extern "C" {
#endif

/// What a PJValue holds.
enum PJTypeIndex {
  kPJNone = 0,
  kPJInt = 1,
  kPJBool = 2,
  kPJFloat = 3,
  kPJOpaquePtr = 4,
  kPJDLTensorPtr = 7,
};

/// One argument or result of a packed call: 16 bytes.
typedef struct PJValue {
  int32_t type_index; /* a PJTypeIndex */
  int32_t zero_padding;
  union {
    int64_t v_int64;
    double v_float64;
    void* v_ptr;
  };
} PJValue;

/// Field numbers of T.tvm_struct_get / T.tvm_struct_set.
enum PJStructField {
  kPJTensorData = 1,        /* DLTensor::data, handle */
  kPJTensorShape = 2,       /* DLTensor::shape, handle to int64 */
  kPJTensorStrides = 3,     /* DLTensor::strides, handle to int64 (may be null) */
  kPJTensorNDim = 4,        /* DLTensor::ndim, int32 */
  kPJTensorTypeCode = 5,    /* DLTensor::dtype.code, uint8 */
  kPJTensorTypeBits = 6,    /* DLTensor::dtype.bits, uint8 */
  kPJTensorTypeLanes = 7,   /* DLTensor::dtype.lanes, uint16 */
  kPJTensorByteOffset = 8,  /* DLTensor::byte_offset, uint64 */
  kPJTensorDeviceId = 9,    /* DLTensor::device.device_id, int32 */
  kPJTensorDeviceType = 10, /* DLTensor::device.device_type, int32 */
  kPJValueTypeIndex = 13,   /* PJValue::type_index, int32 */
  kPJValuePadding = 14,     /* PJValue::zero_padding, int32 */
  kPJValueUnion = 15,       /* PJValue's value, as int64, float64 or handle */
};

/// DLPack type codes of the float8 formats (DLPack >= 1.0 numbering; older headers lack
/// them). bool tensors are uint with 1 bit (bytes of 0 or 1).
enum PJDLTypeCode {
  kPJDLFloat8E4M3FN = 10,
  kPJDLFloat8E5M2 = 12,
};

typedef int32_t (*PJPackedFunc)(void* self, const PJValue* args, int32_t num_args, PJValue* result);

#ifdef __cplusplus
}  // extern "C"

namespace primjit {

/// The number of values a message format of `T.format` consumes, or -1 when the format is
/// malformed. Placeholders: `{}` one value (printed by its type), `{dtype}` three integers
/// (DLDataType code, bits, lanes) printed as a dtype name, `{type}` one PJTypeIndex printed
/// as a type name, `{device}` one DLDeviceType printed as a device name, `{str}` one string
/// literal printed as its text (a long text that many messages quote, such as a function's
/// signature, is then one constant, not a copy per message). `{{` and `}}` are literal braces.
int format_value_count(std::string_view format);

/// The message of a failed assertion: `format` with its placeholders replaced by `values`.
/// Never throws; a malformed format or too few values leave the placeholder text in place.
std::string format_message(std::string_view format, const PJValue* values, int num_values);

/// `text` as a format that reads as `text` itself: its braces doubled, so
/// `format_message(escape_format(text), nullptr, 0) == text`.
std::string escape_format(std::string_view text);

/// Name of a PJTypeIndex ("int", "float", "Tensor", ...).
const char* type_index_name(int32_t type_index);

class DataType;

/// The PJTypeIndex a value of IR type `t` travels as in a PJValue (packed arguments, results,
/// message values): kPJBool, kPJInt (signed and unsigned integers), kPJFloat (every floating
/// type) or kPJOpaquePtr (handles); kPJNone for void. Lanes are ignored.
int32_t type_index_of(DataType t);

}  // namespace primjit
#endif
