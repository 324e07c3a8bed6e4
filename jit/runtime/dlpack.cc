#include "primjit/dlpack.h"

#include <sstream>

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
