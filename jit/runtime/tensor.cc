#include "primjit/tensor.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>

#include "jit/cuda/driver.h"
#include "primjit/error.h"

namespace primjit {

namespace {

struct AlignedDelete {
  void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t{kTensorAlignment}); }
};

}  // namespace

struct Tensor::Impl {
  DLTensor dl{};
  std::vector<int64_t> shape;
  DataType dtype;
  // Exactly one owner of the memory: our own allocation or a DLPack producer's tensor.
  std::unique_ptr<uint8_t[], AlignedDelete> host;
  jit::DevicePtr device_memory = 0;
  DLManagedTensor* managed = nullptr;

  ~Impl() {
    if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
    if (device_memory != 0) {
      try {
        if (jit::CudaDriver* driver = jit::CudaDriver::try_get()) driver->free(device_memory);
      } catch (const std::exception&) {
        // A destructor must not throw; the driver has already failed, nothing to recover.
      }
    }
  }
};

namespace {

// "[2, 3]" for messages.
std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

}  // namespace

Tensor Tensor::zeros(std::vector<int64_t> shape, DataType dtype, DLDevice device) {
  return allocate(std::move(shape), dtype, device, /*zero=*/true);
}

Tensor Tensor::allocate(std::vector<int64_t> shape, DataType dtype, DLDevice device, bool zero) {
  PRIMJIT_USER_CHECK(!dtype.is_handle() && !dtype.is_void())
      << "Tensor::zeros: a tensor of " << dtype << " holds no numbers";
  int64_t count = 1;
  bool overflow = false, empty = false;
  for (int64_t d : shape) {
    PRIMJIT_USER_CHECK(d >= 0) << "Tensor::zeros: negative dimension " << d;
    empty |= d == 0;
    overflow |= __builtin_mul_overflow(count, d, &count);
  }
  if (empty) count = 0;  // however large the other dimensions
  PRIMJIT_USER_CHECK(!overflow || empty) << "Tensor::zeros: shape " << shape_text(shape)
                                         << " has more elements than an int64 can count";
  size_t bytes = 0;
  PRIMJIT_USER_CHECK(checked_bytes(dtype, count, &bytes))
      << "Tensor::zeros: shape " << shape_text(shape) << " of " << dtype << " needs more than "
      << PTRDIFF_MAX << " bytes, the most one allocation can hold";
  PRIMJIT_USER_CHECK(device.device_type == kDLCPU || device.device_type == kDLCUDA)
      << "Tensor::zeros: device type " << device.device_type << " is not supported (cpu, cuda)";
  auto impl = std::make_shared<Impl>();
  impl->shape = std::move(shape);
  impl->dtype = dtype;
  void* data = nullptr;
  if (device.device_type == kDLCPU) {
    // kTensorAlignment: what CUDA code assumes of its buffers, and a cache line on the host.
    try {
      impl->host.reset(static_cast<uint8_t*>(
          ::operator new[](std::max<size_t>(bytes, 1), std::align_val_t{kTensorAlignment})));
    } catch (const std::bad_alloc&) {
      PRIMJIT_USER_ERROR() << "Tensor::zeros: cannot allocate " << bytes << " bytes for shape "
                           << shape_text(impl->shape) << " of " << dtype << " on the host";
    }
    if (zero) std::memset(impl->host.get(), 0, bytes);
    data = impl->host.get();
  } else {
    jit::CudaDriver& driver = jit::CudaDriver::get();
    driver.make_current(device.device_id);
    impl->device_memory = driver.alloc(std::max<size_t>(bytes, 1));
    // The device fills it (no host buffer of zeros to copy); the tensor is ready on return.
    if (zero && bytes > 0) {
      driver.fill_async(impl->device_memory, 0, bytes);
      driver.synchronize_stream(nullptr);
    }
    data = reinterpret_cast<void*>(impl->device_memory);
  }
  impl->dl.data = data;
  impl->dl.device = device;
  impl->dl.ndim = static_cast<int32_t>(impl->shape.size());
  impl->dl.dtype = primjit::to_dlpack(dtype);
  impl->dl.shape = impl->shape.data();
  Tensor t;
  t.impl_ = std::move(impl);
  return t;
}

Tensor Tensor::from_dlpack(DLManagedTensor* managed) {
  PRIMJIT_USER_CHECK(managed != nullptr) << "Tensor::from_dlpack: null DLManagedTensor";
  auto impl = std::make_shared<Impl>();
  impl->managed = managed;
  const DLTensor& src = managed->dl_tensor;
  PRIMJIT_USER_CHECK(
      DataType::from_dlpack(src.dtype.code, src.dtype.bits, src.dtype.lanes, &impl->dtype))
      << "Tensor::from_dlpack: dtype " << dtype_name(src.dtype) << " has no primjit equivalent";
  impl->shape.assign(src.shape, src.shape + src.ndim);
  impl->dl = src;
  impl->dl.shape = impl->shape.data();
  Tensor t;
  t.impl_ = std::move(impl);
  return t;
}

DLManagedTensor* Tensor::to_dlpack() const {
  PRIMJIT_USER_CHECK(defined()) << "Tensor::to_dlpack on an empty Tensor";
  struct Holder {
    DLManagedTensor managed;
    std::shared_ptr<Impl> keep;
  };
  auto* holder = new Holder{{}, impl_};
  holder->managed.dl_tensor = impl_->dl;
  holder->managed.manager_ctx = holder;
  holder->managed.deleter = [](DLManagedTensor* self) {
    delete static_cast<Holder*>(self->manager_ctx);
  };
  return &holder->managed;
}

DLTensor* Tensor::dl() const {
  PRIMJIT_USER_CHECK(defined()) << "use of an empty Tensor";
  return &impl_->dl;
}
DataType Tensor::dtype() const {
  dl();  // throws for an empty Tensor
  return impl_->dtype;
}
const std::vector<int64_t>& Tensor::shape() const {
  dl();
  return impl_->shape;
}
int64_t Tensor::numel() const { return num_elements(*dl()); }
size_t Tensor::nbytes() const {
  size_t bytes = 0;
  PRIMJIT_USER_CHECK(checked_bytes(dtype(), numel(), &bytes))
      << "Tensor::nbytes: the tensor " << describe(*dl()) << " has more bytes than memory holds";
  return bytes;
}
DLDevice Tensor::device() const { return dl()->device; }

void* Tensor::host_data() const {
  PRIMJIT_USER_CHECK(device().device_type == kDLCPU || device().device_type == kDLCUDAHost)
      << "Tensor::data: the tensor lives on " << describe(*dl())
      << "; copy it to the host first with to({kDLCPU, 0})";
  return static_cast<uint8_t*>(impl_->dl.data) + impl_->dl.byte_offset;
}

Tensor Tensor::to(DLDevice device) const { return to(device, nullptr); }

Tensor Tensor::to(DLDevice device, void* cuda_stream) const {
  PRIMJIT_USER_CHECK(is_compact(*dl())) << "Tensor::to: only compact tensors can be copied";
  const bool from_host = this->device().device_type == kDLCPU;
  const bool to_host = device.device_type == kDLCPU;
  if (!from_host && !to_host) {  // device to device, through the host
    return to({kDLCPU, 0}, cuda_stream).to(device, cuda_stream);
  }
  Tensor out = allocate(shape(), dtype(), device, /*zero=*/false);  // the copy fills it
  const size_t bytes = nbytes();
  if (bytes == 0) return out;
  const void* src = static_cast<const uint8_t*>(impl_->dl.data) + impl_->dl.byte_offset;
  if (from_host && to_host) {
    std::memcpy(out.dl()->data, src, bytes);
    return out;
  }
  auto* stream = static_cast<CUstream_st*>(cuda_stream);
  jit::CudaDriver& driver = jit::CudaDriver::get();
  if (stream == nullptr) {  // the default stream: the driver's synchronous copies
    if (from_host) {
      driver.copy_to_device(reinterpret_cast<jit::DevicePtr>(out.dl()->data), src, bytes);
    } else {
      driver.copy_to_host(out.dl()->data, reinterpret_cast<jit::DevicePtr>(src), bytes);
    }
    return out;
  }
  if (from_host) {
    driver.copy_to_device_async(reinterpret_cast<jit::DevicePtr>(out.dl()->data), src, bytes,
                                stream);
  } else {
    driver.copy_to_host_async(out.dl()->data, reinterpret_cast<jit::DevicePtr>(src), bytes, stream);
  }
  driver.synchronize_stream(stream);
  return out;
}

}  // namespace primjit
