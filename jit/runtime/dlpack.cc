#include "primjit/dlpack.h"

#include <sstream>

namespace primjit {

std::string dtype_name(DLDataType dtype) {
  const std::string bits = std::to_string(dtype.bits);
  std::string name;
  switch (dtype.code) {
    case kDLInt:
      name = "int" + bits;
      break;
    case kDLUInt:
      name = dtype.bits == 1 ? "bool" : "uint" + bits;
      break;
    case kDLFloat:
      name = "float" + bits;
      break;
    case kDLBfloat:
      name = "bfloat" + bits;
      break;
    case kDLOpaqueHandle:
      name = "handle";
      break;
    default:
      name = "dlpack_code" + std::to_string(static_cast<int>(dtype.code)) + "_" + bits;
      break;
  }
  if (dtype.lanes > 1) name += "x" + std::to_string(dtype.lanes);
  return name;
}

int64_t num_elements(const DLTensor& tensor) {
  int64_t count = 1;
  for (int i = 0; i < tensor.ndim; ++i) count *= tensor.shape[i];
  return count;
}

bool is_compact(const DLTensor& tensor) {
  if (tensor.strides == nullptr) return true;
  int64_t expected = 1;
  for (int i = tensor.ndim - 1; i >= 0; --i) {
    // A dimension of extent 1 may carry any stride without changing the layout.
    if (tensor.shape[i] != 1 && tensor.strides[i] != expected) return false;
    expected *= tensor.shape[i];
  }
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
