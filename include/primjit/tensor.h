// primjit::Tensor: an owning n-d array in host or CUDA memory, exchanged as DLPack.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "primjit/dlpack.h"
#include "primjit/ir/dtype.h"

namespace primjit {

/// The alignment in bytes of the data of tensors made by Tensor::zeros (host memory; device
/// memory from the driver is aligned more): what CUDA code assumes of a buffer's data by
/// default (Buffer data_alignment 64), checked at call time (docs/semantics.md).
inline constexpr size_t kTensorAlignment = 64;

class Tensor {
 public:
  Tensor() = default;

  /// A zero-filled, compact tensor on `device` (CPU memory, kTensorAlignment-aligned, or CUDA
  /// memory through the driver: without one this throws the "no CUDA driver" error).
  static Tensor zeros(std::vector<int64_t> shape, DataType dtype, DLDevice device = {kDLCPU, 0});
  /// Takes ownership of a DLPack tensor: its deleter runs when the last copy of the Tensor goes.
  static Tensor from_dlpack(DLManagedTensor* managed);
  /// A DLPack tensor sharing this memory; the receiver must call its deleter once.
  DLManagedTensor* to_dlpack() const;

  bool defined() const { return impl_ != nullptr; }
  /// The DLTensor view (valid while this Tensor or a copy lives). Pass it to kernels.
  DLTensor* dl() const;
  DataType dtype() const;
  const std::vector<int64_t>& shape() const;
  int64_t numel() const;
  size_t nbytes() const;
  DLDevice device() const;

  /// Typed access to host memory; throws primjit::Error for device tensors.
  template <typename T>
  T* data() const {
    return static_cast<T*>(host_data());
  }
  /// A copy on `device` (host <-> CUDA through the driver).
  Tensor to(DLDevice device) const;
  /// The same, with the copy ordered on `cuda_stream` (a CUstream) after the work queued there,
  /// e.g. the calls that wrote this tensor on a non-blocking stream (the copy above does not
  /// wait for those); returns once the copy is done.
  Tensor to(DLDevice device, void* cuda_stream) const;

  struct Impl;

 private:
  // zeros, or (`zero` false) uninitialized memory for a copy to fill.
  static Tensor allocate(std::vector<int64_t> shape, DataType dtype, DLDevice device, bool zero);
  void* host_data() const;
  std::shared_ptr<Impl> impl_;
};

}  // namespace primjit
