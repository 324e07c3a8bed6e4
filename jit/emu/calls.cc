// Calls and the packed calling convention: returns, T.tvm_struct_get/set, T.isnullptr, extern
// functions the caller provides, packed calls and kernel launches (T.call_packed /
// T.call_cpacked), and calls of other functions of the module.
#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "jit/common/arg_check.h"
#include "jit/emu/compiler.h"
#include "jit/emu/interpreter.h"
#include "primjit/abi.h"
#include "primjit/error.h"

namespace primjit::jit::emu {
namespace {

// --- returns, the calling convention ---------------------------------------------------------

class RetNode : public CExpr {
 public:
  RetNode(DataType dtype, CExprPtr value) : CExpr(dtype), value_(std::move(value)) {}
  Scalar eval(Exec& ex) const override {
    Scalar v = value_->eval(ex);
    ex.frame->returned = true;
    ex.frame->ret = v;
    return v;
  }

 private:
  CExprPtr value_;
};

struct TensorField {
  size_t offset;
  int bytes;
  bool is_unsigned;
  bool is_handle;
};

bool tensor_field(int field, TensorField* out) {
  switch (field) {
    case kPJTensorData:
      *out = {offsetof(DLTensor, data), 8, true, true};
      return true;
    case kPJTensorShape:
      *out = {offsetof(DLTensor, shape), 8, true, true};
      return true;
    case kPJTensorStrides:
      *out = {offsetof(DLTensor, strides), 8, true, true};
      return true;
    case kPJTensorNDim:
      *out = {offsetof(DLTensor, ndim), 4, false, false};
      return true;
    case kPJTensorTypeCode:
      *out = {offsetof(DLTensor, dtype) + offsetof(DLDataType, code), 1, true, false};
      return true;
    case kPJTensorTypeBits:
      *out = {offsetof(DLTensor, dtype) + offsetof(DLDataType, bits), 1, true, false};
      return true;
    case kPJTensorTypeLanes:
      *out = {offsetof(DLTensor, dtype) + offsetof(DLDataType, lanes), 2, true, false};
      return true;
    case kPJTensorByteOffset:
      *out = {offsetof(DLTensor, byte_offset), 8, true, false};
      return true;
    case kPJTensorDeviceId:
      *out = {offsetof(DLTensor, device) + offsetof(DLDevice, device_id), 4, false, false};
      return true;
    case kPJTensorDeviceType:
      *out = {offsetof(DLTensor, device) + offsetof(DLDevice, device_type), 4, false, false};
      return true;
    default:
      return false;
  }
}

int64_t read_raw(const uint8_t* p, int bytes, bool is_unsigned) {
  uint64_t raw = 0;
  std::memcpy(&raw, p, static_cast<size_t>(bytes));
  return is_unsigned ? wrap_unsigned(raw, bytes * 8) : wrap_signed(raw, bytes * 8);
}

class StructGetNode : public CExpr {
 public:
  StructGetNode(DataType dtype, int field, CExprPtr ptr, CExprPtr index)
      : CExpr(dtype), field_(field), ptr_(std::move(ptr)), index_(std::move(index)) {}
  Scalar eval(Exec& ex) const override {
    Scalar p = ptr_->eval(ex);
    const int64_t i = index_->eval(ex).i;
    if (field_ >= kPJValueTypeIndex) {  // a PJValue array
      const int64_t offset = i * 16 + (field_ == kPJValueTypeIndex ? 0
                                       : field_ == kPJValuePadding ? 4
                                                                   : 8);
      const int bytes = field_ == kPJValueUnion ? 8 : 4;
      const uint8_t* at =
          check_access(ex, p, offset, bytes, false, AccessDesc{"T.tvm_struct_get of a PJValue"});
      if (field_ != kPJValueUnion) return from_integer(type, read_raw(at, 4, false), false);
      if (type.is_floating()) {
        double d;
        std::memcpy(&d, at, 8);
        return from_double(type, d);
      }
      int64_t raw = read_raw(at, 8, false);
      if (type.repr == Repr::kHandle) {
        return Scalar::of_pointer(static_cast<uint64_t>(raw),
                                  ex.session.resolve(static_cast<uint64_t>(raw)));
      }
      return from_integer(type, raw, false);
    }
    TensorField f;
    PRIMJIT_USER_CHECK(tensor_field(field_, &f))
        << "T.tvm_struct_get: unknown field " << field_ << " (see primjit/abi.h)" << ex.where();
    const int64_t base = i * static_cast<int64_t>(sizeof(DLTensor));
    const uint8_t* tensor = check_access(ex, p, base, sizeof(DLTensor), false,
                                         AccessDesc{"T.tvm_struct_get of a DLTensor"});
    const int64_t raw = read_raw(tensor + f.offset, f.bytes, f.is_unsigned);
    if (!f.is_handle) return from_integer(type, raw, f.is_unsigned);
    Allocation* hint = nullptr;
    Allocation* header = allocation_of(ex, p);
    if (header != nullptr && header->kind == AllocKind::kTensorHeader) {
      hint = field_ == kPJTensorData    ? header->data
             : field_ == kPJTensorShape ? header->shape
                                        : header->strides;
    }
    return Scalar::of_pointer(static_cast<uint64_t>(raw), hint);
  }

 private:
  int field_;
  CExprPtr ptr_, index_;
};

class StructSetNode : public CExpr {
 public:
  StructSetNode(DataType dtype, int field, CExprPtr ptr, CExprPtr index, CExprPtr value)
      : CExpr(dtype),
        field_(field),
        ptr_(std::move(ptr)),
        index_(std::move(index)),
        value_(std::move(value)) {}
  Scalar eval(Exec& ex) const override {
    Scalar p = ptr_->eval(ex);
    const int64_t i = index_->eval(ex).i;
    Scalar v = value_->eval(ex);
    if (field_ < kPJValueTypeIndex) {
      throw UnsupportedError("T.tvm_struct_set of DLTensor field " + std::to_string(field_) +
                             " is not supported by the interpreter" + ex.where());
    }
    const int64_t offset = i * 16 + (field_ == kPJValueTypeIndex ? 0
                                     : field_ == kPJValuePadding ? 4
                                                                 : 8);
    const int bytes = field_ == kPJValueUnion ? 8 : 4;
    uint8_t* at =
        check_access(ex, p, offset, bytes, true, AccessDesc{"T.tvm_struct_set of a PJValue"});
    const TypeInfo& t = value_->type;
    if (field_ != kPJValueUnion) {
      int32_t x = static_cast<int32_t>(v.i);
      std::memcpy(at, &x, 4);
    } else if (t.is_floating()) {
      std::memcpy(at, &v.f, 8);
    } else if (t.repr == Repr::kUInt) {
      std::memcpy(at, &v.u, 8);
    } else {
      std::memcpy(at, &v.i, 8);
    }
    return Scalar();
  }

 private:
  int field_;
  CExprPtr ptr_, index_, value_;
};

class IsNullNode : public CExpr {
 public:
  IsNullNode(DataType dtype, CExprPtr ptr) : CExpr(dtype), ptr_(std::move(ptr)) {}
  Scalar eval(Exec& ex) const override {
    return from_integer(type, ptr_->eval(ex).u == 0 ? 1 : 0, false);
  }

 private:
  CExprPtr ptr_;
};

// T.check_args: the runtime's own check (jit/common/arg_check.h) on the interpreter's memory,
// which holds the same PJValues and DLTensors compiled code sees.
class CheckArgsNode : public CExpr {
 public:
  CheckArgsNode(DataType dtype, CExprPtr args, CExprPtr num_args, std::string signature,
                std::string texts, std::vector<int64_t> table)
      : CExpr(dtype),
        args_(std::move(args)),
        num_args_(std::move(num_args)),
        signature_(std::move(signature)),
        texts_(std::move(texts)),
        table_(std::move(table)) {}
  Scalar eval(Exec& ex) const override {
    Scalar args = args_->eval(ex);
    const int64_t num_args = num_args_->eval(ex).i;
    if (args.u != 0 && num_args == table_[0] && num_args > 0) {
      check_access(ex, args, 0, static_cast<int64_t>(sizeof(PJValue)) * num_args, false,
                   AccessDesc{"T.check_args of a PJValue"});
    }
    std::string message;
    if (check_packed_args(reinterpret_cast<const PJValue*>(args.u), static_cast<int32_t>(num_args),
                          signature_.c_str(), texts_.c_str(), table_.data(), &message) != 0) {
      throw AssertionError(message);
    }
    return from_integer(type, 0, false);
  }

 private:
  CExprPtr args_, num_args_;
  std::string signature_, texts_;
  std::vector<int64_t> table_;
};

// --- calls ------------------------------------------------------------------------------------

std::vector<Scalar> eval_args(Exec& ex, const std::vector<CExprPtr>& args, size_t first = 0) {
  std::vector<Scalar> values;
  values.reserve(args.size() - first);
  for (size_t i = first; i < args.size(); ++i) values.push_back(args[i]->eval(ex));
  return values;
}

std::vector<DataType> arg_types(const std::vector<CExprPtr>& args, size_t first = 0) {
  std::vector<DataType> types;
  for (size_t i = first; i < args.size(); ++i) types.push_back(args[i]->dtype);
  return types;
}

Scalar from_arg(Exec& ex, const TypeInfo& t, const Arg& a) {
  switch (a.kind()) {
    case Arg::Kind::kNone:
      return Scalar();
    case Arg::Kind::kInt:
    case Arg::Kind::kBool:
      return from_integer(t, a.as_int(), false);
    case Arg::Kind::kFloat:
      return from_double(t, a.as_float());
    case Arg::Kind::kPointer: {
      uint64_t p = reinterpret_cast<uint64_t>(a.as_pointer());
      return Scalar::of_pointer(p, ex.session.resolve(p));
    }
    case Arg::Kind::kTensor: {
      uint64_t p = reinterpret_cast<uint64_t>(a.tensor());
      return Scalar::of_pointer(p, ex.session.resolve(p));
    }
  }
  return Scalar();
}

/// A function the caller provides through Options::symbol_lookup, or UnsupportedError.
Scalar call_user_symbol(Exec& ex, const std::string& what, const std::string& name,
                        std::span<const Scalar> values, std::span<const DataType> types,
                        const TypeInfo& ret) {
  const Options& options = ex.session.program.options;
  ExternFunction fn = options.symbol_lookup ? options.symbol_lookup(name) : ExternFunction();
  if (!fn) {
    throw UnsupportedError(
        what + " of '" + name +
        "': the interpreter has no implementation of this function (it is not in the module, "
        "not a libm function, and may be GPU-only); provide one through "
        "emu::Options::symbol_lookup" +
        ex.where());
  }
  std::vector<Arg> args;
  for (size_t i = 0; i < values.size(); ++i) args.push_back(to_arg(TypeInfo(types[i]), values[i]));
  return from_arg(ex, ret, fn(args));
}

class ExternNode : public CExpr {  // call_extern / call_pure_extern of an unknown name
 public:
  ExternNode(DataType dtype, std::string name, std::vector<CExprPtr> args)
      : CExpr(dtype), name_(std::move(name)), args_(std::move(args)) {}
  Scalar eval(Exec& ex) const override {
    std::vector<Scalar> values = eval_args(ex, args_);
    std::vector<DataType> types = arg_types(args_);
    return call_user_symbol(ex, "T.call_extern", name_, values, types, type);
  }

 private:
  std::string name_;
  std::vector<CExprPtr> args_;
};

class IntExternNode : public CExpr {  // popcount, abs
 public:
  IntExternNode(DataType dtype, bool popcount, CExprPtr arg)
      : CExpr(dtype), popcount_(popcount), arg_(std::move(arg)) {}
  Scalar eval(Exec& ex) const override {
    Scalar v = arg_->eval(ex);
    const TypeInfo& t = arg_->type;
    if (popcount_) {
      uint64_t bits =
          t.repr == Repr::kInt ? static_cast<uint64_t>(wrap_unsigned(v.u, t.bits)) : v.u;
      return from_integer(type, std::popcount(bits), false);
    }
    if (t.is_floating()) return from_double(type, std::fabs(v.f));
    return from_integer(type, v.i < 0 ? -v.i : v.i, false);
  }

 private:
  bool popcount_;
  CExprPtr arg_;
};

Scalar convert_value(const Scalar& v, DataType from, DataType to) {
  if (from == to) return v;
  return cast_scalar(TypeInfo(from), TypeInfo(to), v);
}

/// Values converted to the parameter types of `f`.
std::vector<Scalar> to_params(const CompiledFunction& f, std::span<const Scalar> values,
                              std::span<const DataType> types) {
  std::vector<Scalar> out;
  for (size_t i = 0; i < values.size(); ++i) {
    out.push_back(convert_value(values[i], types[i], f.func->params[i].dtype()));
  }
  return out;
}

/// Calls packed (calling_conv 1) function `f` with `values`; returns its int32 result code.
int64_t call_packed_function(Exec& ex, const CompiledFunction& f, std::span<const Scalar> values,
                             std::span<const DataType> types) {
  Scalar args = pack_values(ex, values, types);
  Allocation* result = ex.session.make_owned("packed call result", AllocKind::kPackedValues, 16);
  Scalar call_args[4] = {Scalar::of_pointer(0, nullptr), args,
                         Scalar::of_int(static_cast<int64_t>(values.size())),
                         Scalar::of_pointer(reinterpret_cast<uint64_t>(result->base), result)};
  Scalar rc = call_function(ex, f, call_args, nullptr);
  return rc.i;
}

class PackedCallNode : public CExpr {  // call_packed / call_cpacked
 public:
  PackedCallNode(DataType dtype, bool cpacked, std::string symbol, std::vector<CExprPtr> args)
      : CExpr(dtype), cpacked_(cpacked), symbol_(std::move(symbol)), args_(std::move(args)) {}
  Scalar eval(Exec& ex) const override {
    std::vector<Scalar> values = eval_args(ex, args_);
    std::vector<DataType> types = arg_types(args_);
    const char* what = cpacked_ ? "T.call_cpacked" : "T.call_packed";
    const Program& program = ex.session.program;
    std::string name = program.function_by_symbol(symbol_);
    if (name.empty()) return call_user_symbol(ex, what, symbol_, values, types, type);
    const CompiledFunction& f = program.function(name);
    const size_t num_params = f.func->params.size();
    if (f.calling_conv == 1) {
      int64_t rc = call_packed_function(ex, f, values, types);
      PRIMJIT_USER_CHECK(rc == 0) << what << "(\"" << symbol_ << "\") returned error code " << rc
                                  << ex.where();
      return from_integer(type, rc, false);
    }
    const size_t num_launch = cpacked_ ? 0 : f.launch_params.size();
    PRIMJIT_USER_CHECK(values.size() == num_params + num_launch)
        << what << "(\"" << symbol_ << "\") passes " << values.size() << " arguments, but '" << name
        << "' takes " << num_params << " parameters"
        << (num_launch ? " and " + std::to_string(num_launch) + " launch parameters" : "")
        << ex.where();
    LaunchConfig launch;
    for (size_t k = 0; k < num_launch; ++k) {
      const std::string& tag = f.launch_params[k];
      const int64_t v = values[num_params + k].i;
      if (tag == attr::kUseDynSharedMemory) {
        launch.dyn_shmem_bytes = v;
        continue;
      }
      const int dim = thread_dim_of(tag);
      if (dim < 0)
        throw UnsupportedError("launch parameter '" + tag + "' of kernel '" + name +
                               "' is not supported by the interpreter" + ex.where());
      launch.extents[static_cast<size_t>(dim)] = v;
      launch.given[static_cast<size_t>(dim)] = true;
    }
    std::vector<Scalar> params =
        to_params(f, std::span(values).first(num_params), std::span(types).first(num_params));
    Scalar ret = call_function(ex, f, params, num_launch ? &launch : nullptr);
    if (!f.func->ret_type.is_void() && f.func->ret_type.is_int() && !num_launch) {
      // A kernel run on the CPU returns 0 on success.
      PRIMJIT_USER_CHECK(ret.i == 0)
          << what << "(\"" << symbol_ << "\") returned error code " << ret.i << ex.where();
    }
    return Scalar();
  }

 private:
  bool cpacked_;
  std::string symbol_;
  std::vector<CExprPtr> args_;
};

class FunctionCallNode : public CExpr {  // Module.f(args)
 public:
  FunctionCallNode(DataType dtype, std::string callee, std::vector<CExprPtr> args)
      : CExpr(dtype), callee_(std::move(callee)), args_(std::move(args)) {}
  Scalar eval(Exec& ex) const override {
    const CompiledFunction* f = cached_.load(std::memory_order_acquire);
    if (f == nullptr) {
      f = &ex.session.program.function(callee_);
      cached_.store(f, std::memory_order_release);
    }
    std::vector<Scalar> values = eval_args(ex, args_);
    std::vector<DataType> types = arg_types(args_);
    if (f->calling_conv == 1) {
      return from_integer(type, call_packed_function(ex, *f, values, types), false);
    }
    PRIMJIT_USER_CHECK(values.size() == f->func->params.size())
        << "call of '" << callee_ << "' passes " << values.size() << " arguments, but it takes "
        << f->func->params.size() << ex.where();
    Scalar ret = call_function(ex, *f, to_params(*f, values, types), nullptr);
    if (type.repr == Repr::kVoid || f->func->ret_type.is_void()) return Scalar();
    return convert_value(ret, f->func->ret_type, dtype);
  }

 private:
  std::string callee_;
  std::vector<CExprPtr> args_;
  mutable std::atomic<const CompiledFunction*> cached_{nullptr};
};

}  // namespace

void pack_values(std::span<const Scalar> values, std::span<const DataType> types, PJValue* out) {
  for (size_t i = 0; i < values.size(); ++i) {
    PJValue& v = out[i];
    v.type_index = type_index_of(types[i]);
    v.zero_padding = 0;
    switch (v.type_index) {
      case kPJFloat:
        v.v_float64 = values[i].f;
        break;
      case kPJOpaquePtr:
        v.v_ptr = reinterpret_cast<void*>(values[i].u);
        break;
      default:
        v.v_int64 = values[i].i;
        break;
    }
  }
}

Scalar pack_values(Exec& ex, std::span<const Scalar> values, std::span<const DataType> types) {
  Allocation* array =
      ex.session.make_owned("packed arguments", AllocKind::kPackedValues,
                            static_cast<int64_t>(std::max<size_t>(1, values.size()) * 16));
  pack_values(values, types, reinterpret_cast<PJValue*>(array->base));
  return Scalar::of_pointer(reinterpret_cast<uint64_t>(array->base), array);
}

CExprPtr make_ret_node(DataType t, CExprPtr value) {
  return std::make_unique<RetNode>(t, std::move(value));
}
CExprPtr make_struct_get_node(DataType t, int field, CExprPtr ptr, CExprPtr index) {
  return std::make_unique<StructGetNode>(t, field, std::move(ptr), std::move(index));
}
CExprPtr make_struct_set_node(DataType t, int field, CExprPtr ptr, CExprPtr index, CExprPtr value) {
  return std::make_unique<StructSetNode>(t, field, std::move(ptr), std::move(index),
                                         std::move(value));
}
CExprPtr make_check_args_node(DataType t, CExprPtr args, CExprPtr num_args, std::string signature,
                              std::string texts, std::vector<int64_t> table) {
  return std::make_unique<CheckArgsNode>(t, std::move(args), std::move(num_args),
                                         std::move(signature), std::move(texts), std::move(table));
}
CExprPtr make_is_null_node(DataType t, CExprPtr ptr) {
  return std::make_unique<IsNullNode>(t, std::move(ptr));
}
CExprPtr make_extern_node(DataType t, std::string name, std::vector<CExprPtr> args) {
  return std::make_unique<ExternNode>(t, std::move(name), std::move(args));
}
CExprPtr make_int_extern_node(DataType t, bool popcount, CExprPtr arg) {
  return std::make_unique<IntExternNode>(t, popcount, std::move(arg));
}
CExprPtr make_packed_call_node(DataType t, bool cpacked, std::string symbol,
                               std::vector<CExprPtr> args) {
  return std::make_unique<PackedCallNode>(t, cpacked, std::move(symbol), std::move(args));
}
CExprPtr make_function_call_node(DataType t, std::string callee, std::vector<CExprPtr> args) {
  return std::make_unique<FunctionCallNode>(t, std::move(callee), std::move(args));
}

Arg to_arg(const TypeInfo& t, const Scalar& v) {
  switch (t.repr) {
    case Repr::kBool:
      return Arg(v.i != 0);
    case Repr::kInt:
    case Repr::kUInt:
      return Arg(v.i);
    case Repr::kFloat32:
    case Repr::kFloat64:
    case Repr::kNarrow:
      return Arg(v.f);
    default:
      return Arg::pointer(reinterpret_cast<void*>(v.u));
  }
}

}  // namespace primjit::jit::emu
