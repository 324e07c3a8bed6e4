// Compiles ahead of calls (primjit/jit.h): Kernel::prewarm, compile_async, lowered and
// compiled, from signatures (dtypes, shapes, the device) instead of arguments, and the
// CompiledVariant a signature names. A signature's variant is found as a call's is
// (jit::variant_for_call), counted like a prewarm.
#include <algorithm>
#include <exception>
#include <future>
#include <mutex>
#include <thread>
#include <utility>

#include "jit/runtime/call_arguments.h"
#include "jit/runtime/compile_variant.h"
#include "jit/runtime/kernel_state.h"
#include "jit/runtime/specialization_policy.h"
#include "primjit/dlpack.h"
#include "primjit/error.h"
#include "primjit/jit.h"

namespace primjit {

using jit::KeyBuffer;
using jit::Variant;

namespace {

// Arguments that look like a call with `signature` (tensors without data) for making its
// variant: what a variant depends on is dtypes, ranks, shapes and the device.
struct SignatureArgs {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<DLTensor> tensors;
  std::vector<Arg> args;

  SignatureArgs(const Kernel::State& k, const Signature& signature) {
    PRIMJIT_USER_CHECK(signature.size() == k.params.size())
        << "'" << k.name << "' takes " << k.params.size() << " arguments, the signature has "
        << signature.size();
    // Never dereferenced: variants are made, not run.
    alignas(64) static unsigned char no_data[64];
    tensors.resize(signature.size());
    shapes.resize(signature.size());
    DLDevice device{k.target->kind == "cuda" ? kDLCUDA : kDLCPU, 0};
    for (size_t i = 0; i < signature.size(); ++i) {
      const ArgSpec& spec = signature[i];
      if (!spec.is_tensor) {
        if (spec.dtype.is_floating()) {
          args.emplace_back(0.0);
        } else if (spec.dtype.is_bool()) {
          args.emplace_back(false);
        } else {
          args.emplace_back(int64_t{0});
        }
        continue;
      }
      shapes[i] = spec.shape;
      DLTensor& t = tensors[i];
      t.data = no_data;
      t.device = device;
      t.ndim = static_cast<int32_t>(spec.shape.size());
      t.dtype = to_dlpack(spec.dtype);
      t.shape = shapes[i].data();
      t.strides = nullptr;
      t.byte_offset = 0;
      args.emplace_back(&t);
    }
  }
};

// The variant a call with `signature` selects, compiled (or loaded) now if it is not in memory;
// the signature is checked like a call's arguments. Counted like a prewarm, not as a hit.
std::shared_ptr<Variant> variant_for_signature(const std::shared_ptr<Kernel::State>& state,
                                               const Signature& signature) {
  SignatureArgs call(*state, signature);
  std::span<const Arg> args(call.args);
  jit::check_arguments(*state, args);
  KeyBuffer key;
  bool dynamic = jit::build_call_key(*state, args, &key);
  return jit::variant_for_call(state, args, key, dynamic);
}

}  // namespace

void Kernel::prewarm(const std::vector<Signature>& signatures) const {
  PRIMJIT_USER_CHECK(state_ != nullptr) << "prewarm of an empty Kernel (use Jit::kernel)";
  // Each signature on its own thread, at most as many at once as the machine has cores.
  size_t width = std::max<size_t>(1, std::thread::hardware_concurrency());
  std::exception_ptr first_error;
  for (size_t begin = 0; begin < signatures.size(); begin += width) {
    std::vector<std::future<void>> running;
    for (size_t i = begin; i < std::min(signatures.size(), begin + width); ++i) {
      running.push_back(compile_async(signatures[i]));
    }
    for (std::future<void>& f : running) {
      try {
        f.get();
      } catch (...) {
        if (!first_error) first_error = std::current_exception();
      }
    }
  }
  if (first_error) std::rethrow_exception(first_error);
}

std::future<void> Kernel::compile_async(Signature signature) const {
  PRIMJIT_USER_CHECK(state_ != nullptr) << "compile_async of an empty Kernel (use Jit::kernel)";
  std::shared_ptr<State> state = state_;
  return std::async(std::launch::async, [state, signature = std::move(signature)] {
    variant_for_signature(state, signature);
  });
}

IRModule Kernel::lowered(const Signature& signature) const {
  PRIMJIT_USER_CHECK(state_ != nullptr) << "lowered of an empty Kernel (use Jit::kernel)";
  State& k = *state_;
  SignatureArgs call(k, signature);
  std::span<const Arg> args(call.args);
  jit::check_arguments(k, args);
  KeyBuffer key;
  bool dynamic = jit::build_call_key(k, args, &key);
  jit::DimSet symbolic;
  {
    std::lock_guard<std::mutex> lock(k.mutex);
    dynamic = dynamic || k.fell_back;
    if (!dynamic) symbolic = k.symbolic;
  }
  return jit::lower_variant(k, args, dynamic, symbolic, key.to_vector(), {});
}

// The kernel's state comes first, so the variant (whose code lives in the Jit's engine) goes
// before it.
struct CompiledVariant::State {
  std::shared_ptr<Kernel::State> kernel;
  std::shared_ptr<const Variant> variant;
};

CompiledVariant Kernel::compiled(const Signature& signature) const {
  PRIMJIT_USER_CHECK(state_ != nullptr) << "compiled of an empty Kernel (use Jit::kernel)";
  std::shared_ptr<Variant> v = variant_for_signature(state_, signature);
  return CompiledVariant(
      std::make_shared<const CompiledVariant::State>(CompiledVariant::State{state_, std::move(v)}));
}

PJValue CompiledVariant::call(std::span<const Arg> args, const CallOptions& options) const {
  PRIMJIT_USER_CHECK(state_ != nullptr)
      << "call of an empty CompiledVariant (use Kernel::compiled)";
  // Checked as Kernel::call checks a call before it compiles (types, ranks, devices, overlap
  // and alignment); the variant's own entry checks the shapes it was specialized for.
  const Kernel::State& k = *state_->kernel;
  jit::check_arguments(k, args);
  jit::check_argument_memory(k.memory, k.name, k.params, args, k.target);
  // Its kernels are loaded on one device: tensors of another would be launched on the wrong
  // context (the entry's own checks compare the arguments' devices only with each other).
  const int device = jit::cuda_device_of(args);
  PRIMJIT_USER_CHECK(device < 0 || device == state_->variant->cuda_device)
      << "kernel '" << k.name << "': this compiled variant was loaded on CUDA device "
      << state_->variant->cuda_device << ", but the call's tensors are on device " << device
      << "; get a variant for that device with a call on its tensors";
  jit::CallScope scope({options.cuda_stream.value_or(k.options.cuda_stream), nullptr});
  return jit::run_variant(*state_->variant, args);
}

PJPackedFunc CompiledVariant::packed_function() const {
  return state_ == nullptr ? nullptr : state_->variant->entry.fn;
}

void* CompiledVariant::packed_self() const {
  return state_ == nullptr ? nullptr : state_->variant->entry.self;
}

}  // namespace primjit
