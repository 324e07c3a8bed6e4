#include "primjit/dlpack.h"

#include <cstddef>
#include <cstdint>
#include <sstream>

#include "primjit/error.h"

namespace primjit {

std::string dtype_name(DLDataType dtype) {
  DataType t;
  if (DataType::from_dlpack(dtype.code, dtype.bits, dtype.lanes, &t)) return t.str();
  // Not a primjit dtype: say what it is.
  std::string name = "dlpack_code" + std::to_string(static_cast<int>(dtype.code)) + "_" +
                     std::to_string(dtype.bits);
  if (dtype.lanes > 1) name += "x" + std::to_string(dtype.lanes);
  return name;
}

DLDataType to_dlpack(DataType t) {
  return DLDataType{static_cast<uint8_t>(t.dlpack_code()), static_cast<uint8_t>(t.bits()),
                    static_cast<uint16_t>(t.lanes())};
}

int64_t num_elements(const DLTensor& tensor) {
  int64_t count = 1;
  bool overflow = false;
  for (int i = 0; i < tensor.ndim; ++i)
    overflow |= __builtin_mul_overflow(count, tensor.shape[i], &count);
  // A zero dimension makes any product 0, even one that overflowed on the way.
  for (int i = 0; i < tensor.ndim && overflow; ++i) {
    if (tensor.shape[i] == 0) return 0;
  }
  PRIMJIT_USER_CHECK(!overflow) << "the shape of the tensor " << describe(tensor)
                                << " has more elements than an int64 can count";
  return count;
}

bool checked_bytes(DataType dtype, int64_t count, size_t* bytes) {
  const int64_t element = (int64_t{dtype.bits()} * dtype.lanes() + 7) / 8;
  int64_t product = 0;
  if (count < 0 || __builtin_mul_overflow(count, element, &product) || product > PTRDIFF_MAX) {
    return false;
  }
  *bytes = static_cast<size_t>(product);
  return true;
}

std::string describe(const DLTensor& tensor) {
  std::ostringstream out;
  out << dtype_name(tensor.dtype) << "[";
  for (int i = 0; i < tensor.ndim; ++i) out << (i > 0 ? ", " : "") << tensor.shape[i];
  out << "] on ";
  switch (tensor.device.device_type) {
    case kDLCPU:
      out << "cpu";
      break;
    case kDLCUDA:
      out << "cuda:" << tensor.device.device_id;
      break;
    case kDLCUDAHost:
      out << "cuda_host";
      break;
    default:
      out << "device_type " << static_cast<int>(tensor.device.device_type) << ":"
          << tensor.device.device_id;
      break;
  }
  return out.str();
}

}  // namespace primjit
