#include "jit/runtime/call_arguments.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "primjit/dlpack.h"
#include "primjit/error.h"

namespace primjit::jit {
namespace {

// A strided or offset tensor argument (its shape checked): refused, before anything compiles,
// when the variant could not index it correctly.
void check_layout(const Kernel::State& k, size_t i, const DLTensor& t, const std::string& where) {
  const ParamInfo& p = k.params[i];
  const bool strided = is_strided(t);
  auto layout = [&] {
    std::string text = describe(t);
    if (strided) {
      text += " with strides (";
      for (int d = 0; d < t.ndim; ++d) text += (d ? ", " : "") + std::to_string(t.strides[d]);
      text += ")";
    }
    if (t.byte_offset != 0) text += " at byte_offset " + std::to_string(t.byte_offset);
    return text;
  };
  PRIMJIT_USER_CHECK(p.declared_layout || p.no_relayout.empty())
      << where << " is " << (strided ? "a strided" : "an offset") << " view (" << layout()
      << "), which '" << k.name << "' cannot index: " << p.no_relayout
      << ", which assumes a compact tensor. Pass a compact (row-major) tensor at byte_offset 0, "
         "e.g. a contiguous copy";
  const int64_t element = std::max<int64_t>(1, (int64_t{t.dtype.bits} * t.dtype.lanes + 7) / 8);
  PRIMJIT_USER_CHECK(t.byte_offset % static_cast<uint64_t>(element) == 0)
      << where << ": byte_offset " << t.byte_offset << " is not a whole number of " << element
      << "-byte elements (" << layout() << "); pass a view that starts at an element";
  // Whatever the buffer declares, the compiled code needs elements in increasing order.
  for (int d = 0; d < t.ndim && strided; ++d) {
    if (t.shape[d] <= 1) continue;
    PRIMJIT_USER_CHECK(t.strides[d] >= 0)
        << where << ": stride " << t.strides[d] << " of dimension " << d << " is negative ("
        << layout()
        << "); negative strides are not supported: pass a copy with positive "
           "strides (e.g. numpy.ascontiguousarray)";
  }
  // A written tensor whose elements share memory (a broadcast, stride 0, or overlapping
  // dimensions) would make the compiled code's stores race or read stale values. Accepted when
  // the dimensions nest: each stride, smallest first, passes the span of the smaller ones.
  if (strided && k.memory.written[i]) {
    std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, extent) of extents above 1
    for (int d = 0; d < t.ndim; ++d) {
      if (t.shape[d] > 1) dims.emplace_back(t.strides[d], t.shape[d]);
    }
    std::sort(dims.begin(), dims.end());
    int64_t span = 0;  // of the dimensions so far: the largest element offset they reach
    for (const auto& [stride, extent] : dims) {
      PRIMJIT_USER_CHECK(stride > span)
          << where << ": its strides make different elements share memory (" << layout()
          << "), and '" << k.name << "' writes " << p.name
          << "; pass a tensor whose elements are distinct (not a broadcast or expanded view), "
             "e.g. a contiguous copy";
      int64_t reach = 0;
      PRIMJIT_USER_CHECK(!__builtin_mul_overflow(extent - 1, stride, &reach) &&
                         !__builtin_add_overflow(span, reach, &span))
          << where << ": its elements lie beyond 2^63 elements past its data pointer (" << layout()
          << ")";
    }
  }
  if (p.declared_layout) return;  // the compiled code checks the index range itself
  // The largest element offset must fit in the index dtype (the shapes' dtype).
  int64_t last = static_cast<int64_t>(t.byte_offset) / element;
  bool fits = true;
  int64_t compact = 1;  // the compact stride, for a tensor at an offset without strides
  for (int d = t.ndim - 1; d >= 0 && !strided; --d) {
    int64_t span = 0;
    fits = fits && !__builtin_mul_overflow(t.shape[d] > 0 ? t.shape[d] - 1 : 0, compact, &span) &&
           !__builtin_add_overflow(last, span, &last) &&
           !__builtin_mul_overflow(compact, t.shape[d], &compact);
  }
  for (int d = 0; d < t.ndim && strided; ++d) {
    if (t.shape[d] <= 1) continue;
    int64_t span = 0;
    fits = fits && !__builtin_mul_overflow(t.shape[d] - 1, t.strides[d], &span) &&
           !__builtin_add_overflow(last, span, &last);
  }
  const DataType index = p.buffer->shape.empty() ? DataType::Int(64) : p.buffer->shape[0].dtype();
  PRIMJIT_USER_CHECK(fits && last <= index.max_int_value())
      << where << ": its elements lie up to " << (fits ? std::to_string(last) : "beyond 2^63")
      << " elements past its data pointer (" << layout() << "), more than the index dtype " << index
      << " of " << p.name << "'s shape holds; declare the shape as " << DataType::Int(64)
      << " (e.g. n = T.int64())";
}

}  // namespace

void check_arguments(const Kernel::State& k, std::span<const Arg> args) {
  auto where = [&](size_t i) {
    return "argument #" + std::to_string(i) + " ('" + k.params[i].name + "') of '" + k.name + "'";
  };
  PRIMJIT_USER_CHECK(args.size() == k.params.size())
      << "'" << k.name << "' takes " << k.params.size() << " arguments, got " << args.size();
  int cuda_arg = -1;  // the first CUDA tensor argument
  for (size_t i = 0; i < args.size(); ++i) {
    const PJValue& v = args[i].value;
    const ParamInfo& p = k.params[i];
    if (!p.buffer.defined()) {
      PRIMJIT_USER_CHECK(v.type_index != kPJDLTensorPtr)
          << where(i) << ": expected a " << p.dtype << " scalar, got a tensor";
      continue;
    }
    PRIMJIT_USER_CHECK(v.type_index == kPJDLTensorPtr)
        << where(i) << ": expected a tensor (" << p.buffer->dtype << "), got a "
        << type_index_name(v.type_index);
    const auto* t = static_cast<const DLTensor*>(v.v_ptr);
    PRIMJIT_USER_CHECK(t != nullptr) << where(i) << ": expected a tensor, got a null DLTensor*";
    DataType got;
    bool known = DataType::from_dlpack(t->dtype.code, t->dtype.bits, t->dtype.lanes, &got);
    PRIMJIT_USER_CHECK(known && got == p.buffer->dtype)
        << where(i) << ": expected dtype " << p.buffer->dtype << ", got " << dtype_name(t->dtype);
    PRIMJIT_USER_CHECK(t->ndim == static_cast<int>(p.buffer->shape.size()))
        << where(i) << ": expected " << p.buffer->shape.size() << " dimensions, got " << t->ndim
        << " (" << describe(*t) << ")";
    PRIMJIT_USER_CHECK(t->ndim == 0 || t->shape != nullptr)
        << where(i) << ": the DLTensor has no shape array";
    int expected_device = k.target->kind == "cuda" ? kDLCUDA : kDLCPU;
    PRIMJIT_USER_CHECK(t->device.device_type == expected_device ||
                       (expected_device == kDLCUDA && t->device.device_type == kDLCUDAManaged))
        << where(i) << ": expected a tensor on " << (expected_device == kDLCUDA ? "cuda" : "cpu")
        << " (target " << k.target.str() << "), got " << describe(*t);
    // A kernel runs on one device: the device of its first CUDA tensor.
    if (expected_device == kDLCUDA && cuda_arg < 0) cuda_arg = static_cast<int>(i);
    if (expected_device == kDLCUDA) {
      const auto* first = static_cast<const DLTensor*>(args[cuda_arg].value.v_ptr);
      PRIMJIT_USER_CHECK(t->device.device_id == first->device.device_id)
          << where(i) << " is on CUDA device " << t->device.device_id << ", but argument #"
          << cuda_arg << " ('" << k.params[cuda_arg].name << "') is on CUDA device "
          << first->device.device_id
          << ": a kernel runs on one device; copy the tensors to one device (Tensor::to)";
    }
    PRIMJIT_USER_CHECK(t->data != nullptr || num_elements(*t) == 0)
        << where(i) << ": the tensor's data pointer is null";
    for (int d = 0; d < t->ndim; ++d) {
      PRIMJIT_USER_CHECK(t->shape[d] >= 0)
          << where(i) << ": dimension " << d << " is negative (" << t->shape[d] << ")";
      const Expr& dim = p.buffer->shape[static_cast<size_t>(d)];
      PRIMJIT_USER_CHECK(t->shape[d] <= p.dims[static_cast<size_t>(d)].max)
          << where(i) << ": shape[" << d << "] = " << t->shape[d] << " does not fit in "
          << dim.dtype() << ", the dtype of " << p.name << ".shape[" << d << "]"
          << (dim.as<VarNode>() ? " ('" + dim.as<VarNode>()->name + "')" : std::string())
          << "; declare the shape as " << DataType::Int(64)
          << " (e.g. n = T.int64()) for dimensions of 2^31 or more";
    }
    if (t->byte_offset != 0 || is_strided(*t)) check_layout(k, i, *t, where(i));
  }
  // Shapes against constants and against each other (a variable's first appearance binds it).
  int64_t values[kMaxCheckedVars];
  int first[kMaxCheckedVars][2];  // parameter, dimension that bound the variable
  bool bound[kMaxCheckedVars] = {};
  for (size_t i = 0; i < args.size(); ++i) {
    const ParamInfo& p = k.params[i];
    if (!p.buffer.defined()) continue;
    const auto* t = static_cast<const DLTensor*>(args[i].value.v_ptr);
    for (size_t d = 0; d < p.dims.size(); ++d) {
      const DimRule& rule = p.dims[d];
      int64_t got = t->shape[d];
      if (rule.kind == DimRule::kConstant) {
        PRIMJIT_USER_CHECK(got == rule.value)
            << where(i) << ": expected shape[" << d << "] = " << rule.value << ", got " << got
            << " (" << describe(*t) << ")";
      } else if (rule.kind == DimRule::kVariable) {
        int v = rule.variable;
        if (!bound[v]) {
          bound[v] = true;
          values[v] = got;
          first[v][0] = static_cast<int>(i);
          first[v][1] = static_cast<int>(d);
          continue;
        }
        PRIMJIT_USER_CHECK(got == values[v])
            << where(i) << ": expected shape[" << d << "] to match " << k.params[first[v][0]].name
            << ".shape[" << first[v][1] << "] = " << values[v] << " (both are "
            << p.buffer->shape[d].as<VarNode>()->name << "), got " << got;
      }
    }
  }
}

int cuda_device_of(std::span<const Arg> args) {
  for (const Arg& arg : args) {
    if (arg.value.type_index != kPJDLTensorPtr || arg.value.v_ptr == nullptr) continue;
    const auto* t = static_cast<const DLTensor*>(arg.value.v_ptr);
    if (t->device.device_type == kDLCUDA || t->device.device_type == kDLCUDAManaged) {
      return t->device.device_id;
    }
  }
  return -1;
}

}  // namespace primjit::jit
