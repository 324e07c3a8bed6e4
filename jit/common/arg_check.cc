#include "jit/common/arg_check.h"

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "jit/common/host_abi.h"
#include "primjit/arg_table.h"

namespace primjit::jit {
namespace {

PJValue int_value(int64_t v) {
  PJValue out{};
  out.type_index = kPJInt;
  out.v_int64 = v;
  return out;
}

// The type indices each ArgKind accepts, as bits.
constexpr uint32_t kAccepted[] = {
    1u << kPJNone | 1u << kPJOpaquePtr | 1u << kPJDLTensorPtr,  // kArgPointer
    1u << kPJNone | 1u << kPJOpaquePtr | 1u << kPJDLTensorPtr,  // kArgTensor
    1u << kPJBool | 1u << kPJInt,                               // kArgBool
    1u << kPJInt | 1u << kPJBool,                               // kArgInt
    1u << kPJFloat | 1u << kPJInt | 1u << kPJBool,              // kArgFloat
};

inline bool type_ok(int64_t kind, int32_t t) {
  return static_cast<uint32_t>(t) < 32 && ((kAccepted[kind] >> t) & 1u) != 0;
}

// The first failed check, in the generated checks' order: the types, then every tensor's early
// checks, then the late ones (three walks of the table). Messages are built only on failure.
class ArgChecker {
 public:
  ArgChecker(const PJValue* args, int32_t num_args, const char* signature, const char* texts,
             const int64_t* table, std::string* message)
      : args_(args),
        num_args_(num_args),
        signature_(signature),
        texts_(texts),
        table_(table),
        message_(message) {}

  int32_t run() {
    const int64_t n = table_[0];
    if (num_args_ != n) {
      const std::string noun = n == 1 ? " argument" : " arguments";
      return fail("Expected " + std::to_string(n) + noun + " when calling:\n  `{str}`, got {}",
                  {str_value(), int_value(num_args_)});
    }
    if (n > 0 && args_ == nullptr) {
      return fail("args pointer is NULL when calling:\n  `{str}`", {str_value()});
    }
    // Types of every parameter, then the early checks of every tensor, then the late ones.
    for (int pass = 0; pass < 3; ++pass) {
      const int64_t* at = table_ + 1;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t kind = *at++;
        const int32_t result = pass == 0            ? check_type(i, kind)
                               : kind != kArgTensor ? 0
                                                    : check_tensor(i, at, pass);
        if (result != 0) return result;
        if (kind == kArgTensor) at += kArgTensorEntries + kArgDimEntries * at[4];
      }
    }
    return 0;
  }

 private:
  PJValue str_value() const {
    PJValue out{};
    out.type_index = kPJOpaquePtr;
    out.v_ptr = const_cast<char*>(signature_);
    return out;
  }

  std::string_view text(const int64_t* at) const {
    return std::string_view(texts_ + at[0], static_cast<size_t>(at[1]));
  }

  int32_t fail(const std::string& format, std::vector<PJValue> values) {
    *message_ = format_message(format, values.data(), static_cast<int>(values.size()));
    return -1;
  }

  // A failed check of argument i, in MakePackedAPI's words: `what` on argument #i, the
  // signature, the expected text and `got` (a format for `values`).
  int32_t fail_on(int64_t i, std::string_view what, std::string_view expected, std::string_view got,
                  std::vector<PJValue> values = {}) {
    std::string head =
        std::string(what) + " on argument #" + std::to_string(i) + " when calling:\n  `";
    std::string tail = "`,\n  expected " + std::string(expected);
    values.insert(values.begin(), str_value());
    return fail(escape_format(head) + "{str}" + escape_format(tail) + std::string(got),
                std::move(values));
  }

  int32_t check_type(int64_t i, int64_t kind) {
    const int32_t t = args_[i].type_index;
    if (type_ok(kind, t)) [[likely]] {
      return 0;
    }
    const char* expected = kind == kArgTensor    ? "Tensor"
                           : kind == kArgPointer ? "pointer"
                           : kind == kArgBool    ? "boolean"
                           : kind == kArgInt     ? "int"
                                                 : "float";
    return fail_on(i, "Mismatched type", expected, ", got {type}", {int_value(t)});
  }

  static const DLTensor* tensor_of(const PJValue& v) {
    return static_cast<const DLTensor*>(v.v_ptr);
  }

  // Early (pass 1) or late (pass 2) checks of tensor parameter i, whose record is at `r`.
  int32_t check_tensor(int64_t i, const int64_t* r, int pass) {
    const DLTensor* x = tensor_of(args_[i]);
    const std::string_view name = text(r + kArgNameText);
    const int64_t ndim = r[kArgNdim];
    const int64_t* dims = r + kArgTensorEntries;
    auto dim_path = [&](int64_t k) {
      return std::string(name) + ".shape[" + std::to_string(k) + "]";
    };
    if (pass == 1) {
      if (x == nullptr) return fail_on(i, "Mismatched type", "Tensor", ", got None");
      if (x->ndim != ndim) {
        return fail_on(i, "Mismatched " + std::string(name) + ".ndim", std::to_string(ndim),
                       ", got {}", {int_value(x->ndim)});
      }
      if (x->dtype.code != r[kArgCode] || x->dtype.bits != r[kArgBits] ||
          x->dtype.lanes != r[kArgLanes]) {
        return fail_on(
            i, "Mismatched " + std::string(name) + ".dtype", text(r + kArgDtypeText),
            ", got {dtype}",
            {int_value(x->dtype.code), int_value(x->dtype.bits), int_value(x->dtype.lanes)});
      }
      if (ndim == 0) return 0;
      if (x->shape == nullptr) {
        return fail_on(i, "Mismatched " + std::string(name) + ".shape", "a shape array",
                       ", got NULL");
      }
      for (int64_t k = 0; k < ndim; ++k) {
        const int64_t* d = dims + kArgDimEntries * k;
        if (d[0] == kArgDimDefine && d[1] >= 0 && x->shape[k] > d[1]) {
          return fail_on(i, "Invalid " + dim_path(k), text(d + 3), ", got {}",
                         {int_value(x->shape[k])});
        }
      }
      return 0;
    }
    for (int64_t k = 0; k < ndim; ++k) {
      const int64_t* d = dims + kArgDimEntries * k;
      const int64_t extent = x->shape[k];
      if (d[0] == kArgDimConst && extent != d[1]) {
        return fail_on(i, "Invalid " + dim_path(k), text(d + 3), ", got {}", {int_value(extent)});
      }
      if (d[0] == kArgDimMatch && extent != tensor_of(args_[d[1]])->shape[d[2]]) {
        return fail_on(i, "Mismatched " + dim_path(k), text(d + 3), ", got {}",
                       {int_value(extent)});
      }
    }
    const int64_t flags = r[kArgFlags];
    if ((flags & kArgCompactStrides) != 0 && ndim > 0 && x->strides != nullptr) {
      int64_t expected = 1;  // the product of the later extents (wrapping like int64 IR)
      for (int64_t k = ndim - 1; k >= 0; --k) {
        if (x->shape[k] != 1 && x->strides[k] != expected) {
          return fail_on(i, "Mismatched " + std::string(name) + ".strides", "to be compact array",
                         "");
        }
        expected = static_cast<int64_t>(static_cast<uint64_t>(expected) *
                                        static_cast<uint64_t>(x->shape[k]));
      }
    }
    if ((flags & kArgZeroByteOffset) != 0 && x->byte_offset != 0) {
      return fail_on(i, "Mismatched " + std::string(name) + ".byte_offset", "0", ", got {}",
                     {int_value(static_cast<int64_t>(x->byte_offset))});
    }
    const int64_t device = x->device.device_type;
    const int64_t expected_device = r[kArgDeviceType];
    if (device != expected_device && !(expected_device == kDLCUDA && device == kDLCUDAManaged)) {
      return fail_on(i, "Mismatched " + std::string(name) + ".device_type",
                     expected_device == kDLCPU ? "cpu" : "cuda", ", got {device}",
                     {int_value(device)});
    }
    if (r[kArgDeviceIdParam] >= 0 &&
        x->device.device_id != tensor_of(args_[r[kArgDeviceIdParam]])->device.device_id) {
      return fail_on(i, "Mismatched " + std::string(name) + ".device_id",
                     text(r + kArgDeviceIdText), ", got {}", {int_value(x->device.device_id)});
    }
    if (x->data == nullptr) {
      bool empty = false;  // an empty tensor (an extent 0) may have a null data pointer; a
                           // product of extents could wrap to 0 without one
      for (int64_t k = 0; k < ndim; ++k) empty = empty || x->shape[k] == 0;
      if (!empty) {
        return fail_on(i, std::string(name) + " data pointer is NULL", "non-NULL data pointer", "");
      }
    }
    return 0;
  }

  const PJValue* args_;
  int32_t num_args_;
  const char* signature_;
  const char* texts_;
  const int64_t* table_;
  std::string* message_;
};

// Whether every check of the table passes: one walk over the arguments without messages, the
// path of every good call. (ArgChecker's three walks, each a chain of dependent loads through
// the variable-length records, made a call 3x slower than the inline checks they replace.)
inline bool all_pass(const PJValue* args, int32_t num_args, const int64_t* table) {
  const int64_t n = table[0];
  if (num_args != n || (n > 0 && args == nullptr)) return false;
  const int64_t* at = table + 1;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t kind = *at++;
    if (!type_ok(kind, args[i].type_index)) return false;
    if (kind != kArgTensor) continue;
    const int64_t* r = at;
    const int64_t ndim = r[kArgNdim];
    at += kArgTensorEntries + kArgDimEntries * ndim;
    const auto* x = static_cast<const DLTensor*>(args[i].v_ptr);
    if (x == nullptr || x->ndim != ndim || x->dtype.code != r[kArgCode] ||
        x->dtype.bits != r[kArgBits] || x->dtype.lanes != r[kArgLanes]) {
      return false;
    }
    const int64_t flags = r[kArgFlags];
    const int64_t device = x->device.device_type;
    if (((flags & kArgZeroByteOffset) != 0 && x->byte_offset != 0) ||
        (device != r[kArgDeviceType] &&
         !(r[kArgDeviceType] == kDLCUDA && device == kDLCUDAManaged)) ||
        (r[kArgDeviceIdParam] >= 0 &&
         x->device.device_id !=
             static_cast<const DLTensor*>(args[r[kArgDeviceIdParam]].v_ptr)->device.device_id)) {
      return false;
    }
    if (ndim == 0) {
      if (x->data == nullptr) return false;
      continue;
    }
    const int64_t* shape = x->shape;
    if (shape == nullptr) return false;
    bool empty = false;  // an extent 0, not a product that wraps to 0
    for (int64_t k = 0; k < ndim; ++k) {
      const int64_t* d = r + kArgTensorEntries + kArgDimEntries * k;
      const int64_t extent = shape[k];
      empty = empty || extent == 0;
      if ((d[0] == kArgDimDefine && d[1] >= 0 && extent > d[1]) ||
          (d[0] == kArgDimConst && extent != d[1]) ||
          (d[0] == kArgDimMatch &&
           extent != static_cast<const DLTensor*>(args[d[1]].v_ptr)->shape[d[2]])) {
        return false;
      }
    }
    if (x->data == nullptr && !empty) return false;
    if ((flags & kArgCompactStrides) != 0 && x->strides != nullptr) {
      int64_t expected = 1;
      for (int64_t k = ndim - 1; k >= 0; --k) {
        if (shape[k] != 1 && x->strides[k] != expected) return false;
        expected =
            static_cast<int64_t>(static_cast<uint64_t>(expected) * static_cast<uint64_t>(shape[k]));
      }
    }
  }
  return true;
}

// Out of line, so that the path of good calls keeps a small frame.
[[gnu::noinline, gnu::cold]] int32_t first_failure(const PJValue* args, int32_t num_args,
                                                   const char* signature, const char* texts,
                                                   const int64_t* table,
                                                   std::string* message) noexcept {
  try {
    return ArgChecker(args, num_args, signature, texts, table, message).run();
  } catch (...) {  // only allocating a message can throw
    *message = "out of memory while checking the arguments of a call";
    return -1;
  }
}

}  // namespace

std::string arg_table_problem(const int64_t* table, size_t size, size_t texts_size) {
  if (size == 0 || table[0] < 0) return "it does not start with the number of parameters";
  const int64_t n = table[0];
  const auto texts = static_cast<int64_t>(texts_size);
  auto text_ok = [&](const int64_t* at) {
    return at[0] >= 0 && at[1] >= 0 && at[0] <= texts && at[1] <= texts - at[0];
  };
  // Pass 1: each record's place; pass 2: references to other parameters' dimensions.
  // Each parameter takes at least one entry: a larger count is no table (and no allocation).
  if (static_cast<uint64_t>(n) > size - 1) return "it names more parameters than it has entries";
  std::vector<const int64_t*> tensors(static_cast<size_t>(n), nullptr);
  size_t at = 1;
  for (int64_t i = 0; i < n; ++i) {
    if (at >= size) return "it ends before parameter " + std::to_string(i);
    const int64_t kind = table[at++];
    if (kind < kArgPointer || kind > kArgFloat) {
      return "parameter " + std::to_string(i) + " has no kind " + std::to_string(kind);
    }
    if (kind != kArgTensor) continue;
    if (size - at < static_cast<size_t>(kArgTensorEntries)) {
      return "the record of tensor parameter " + std::to_string(i) + " is cut short";
    }
    const int64_t* r = table + at;
    if (r[kArgNdim] < 0 ||
        (size - at - kArgTensorEntries) / kArgDimEntries < static_cast<size_t>(r[kArgNdim])) {
      return "tensor parameter " + std::to_string(i) + " has a bad ndim or too few dimensions";
    }
    if (!text_ok(r + kArgNameText) || !text_ok(r + kArgDtypeText) ||
        !text_ok(r + kArgDeviceIdText)) {
      return "a text of tensor parameter " + std::to_string(i) + " is out of range";
    }
    // The fields of DLDataType and DLDevice (compiled code compares them packed, as int32).
    if (r[kArgCode] < 0 || r[kArgCode] > 255 || r[kArgBits] < 0 || r[kArgBits] > 255 ||
        r[kArgLanes] < 0 || r[kArgLanes] > 65535 || r[kArgDeviceType] < 0 ||
        r[kArgDeviceType] > INT32_MAX) {
      return "tensor parameter " + std::to_string(i) + " has a dtype or device out of range";
    }
    for (int64_t k = 0; k < r[kArgNdim]; ++k) {
      const int64_t* d = r + kArgTensorEntries + kArgDimEntries * k;
      if (d[0] < kArgDimGenerated || d[0] > kArgDimMatch || !text_ok(d + 3)) {
        return "dimension " + std::to_string(k) + " of parameter " + std::to_string(i) +
               " has a bad kind or text";
      }
    }
    tensors[static_cast<size_t>(i)] = r;
    at += kArgTensorEntries + kArgDimEntries * static_cast<size_t>(r[kArgNdim]);
  }
  if (at != size) return "it has entries after its last parameter";
  for (int64_t i = 0; i < n; ++i) {
    const int64_t* r = tensors[static_cast<size_t>(i)];
    if (r == nullptr) continue;
    auto earlier_tensor = [&](int64_t p) {
      return p >= 0 && p <= i && tensors[static_cast<size_t>(p)] != nullptr;
    };
    if (r[kArgDeviceIdParam] != -1 && !earlier_tensor(r[kArgDeviceIdParam])) {
      return "tensor parameter " + std::to_string(i) + " matches the device of no tensor";
    }
    for (int64_t k = 0; k < r[kArgNdim]; ++k) {
      const int64_t* d = r + kArgTensorEntries + kArgDimEntries * k;
      if (d[0] == kArgDimMatch && (!earlier_tensor(d[1]) || d[2] < 0 ||
                                   d[2] >= tensors[static_cast<size_t>(d[1])][kArgNdim])) {
        return "dimension " + std::to_string(k) + " of parameter " + std::to_string(i) +
               " matches no dimension of a tensor parameter";
      }
    }
  }
  return "";
}

int32_t check_packed_args(const PJValue* args, int32_t num_args, const char* signature,
                          const char* texts, const int64_t* table, std::string* message) noexcept {
  if (all_pass(args, num_args, table)) [[likely]] {
    return 0;
  }
  return first_failure(args, num_args, signature, texts, table, message);
}

}  // namespace primjit::jit

// The runtime symbol compiled host code calls: the good call's path is all_pass alone (the
// detailed check decides when the two disagree, as in the interpreter).
extern "C" int32_t primjit_rt_check_args(const PJValue* args, int32_t num_args,
                                         const char* signature, const char* texts,
                                         const int64_t* table) {
  std::string message;
  if (primjit::jit::check_packed_args(args, num_args, signature, texts, table, &message) == 0)
      [[likely]] {
    return 0;
  }
  primjit::jit::set_last_error(std::move(message));
  return -1;
}
