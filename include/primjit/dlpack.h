// Helpers for DLPack tensors (DLTensor), the exchange format primjit accepts and produces.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>

#include "primjit/ir/dtype.h"

namespace primjit {

/// TVM-style dtype name: "float32", "int8", "uint1" is "bool", "bfloat16", "float16x4".
std::string dtype_name(DLDataType dtype);
/// The DLPack type of a primjit dtype (inverse of DataType::from_dlpack).
DLDataType to_dlpack(DataType dtype);
/// Product of the shape (1 for a 0-d tensor). Throws primjit::Error naming the shape when the
/// product does not fit in int64.
int64_t num_elements(const DLTensor& tensor);
/// Sets `*bytes` to the size of `count` elements of `dtype` (all lanes); false when `count` is
/// negative or the size does not fit in a ptrdiff_t, the most one allocation can hold.
bool checked_bytes(DataType dtype, int64_t count, size_t* bytes);
/// True when the elements are densely packed in row-major order (strides null or compact).
inline bool is_compact(const DLTensor& tensor) {
  if (tensor.strides == nullptr) return true;
  int64_t expected = 1;
  for (int i = tensor.ndim - 1; i >= 0; --i) {
    // A dimension of extent 1 may carry any stride without changing the layout.
    if (tensor.shape[i] != 1 && tensor.strides[i] != expected) return false;
    if (__builtin_mul_overflow(expected, tensor.shape[i], &expected)) return false;
  }
  return true;
}
/// Human-readable summary used in error messages: "float32[2, 3] on cpu".
std::string describe(const DLTensor& tensor);

}  // namespace primjit
