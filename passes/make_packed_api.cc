// MakePackedAPI: public host functions take the packed calling convention of primjit/abi.h.
//
// Requires: LowerDeviceKernelLaunch (kernels carry calling_conv 2); every function that is
//           rewritten has a "target" attribute.
// Ensures:  a function is rewritten when it has a "global_symbol", no (or a zero)
//           "calling_conv", and a host target (llvm, or a device target with a host); others
//           (kernels, private functions, device functions without host) are unchanged.
//           A rewritten function:
//           - params (self_handle, args, num_args: int32, result), ret type int32,
//             buffer_map empty; attrs "calling_conv" = 1, "target" = the host target;
//           - body, in order: the argument count and args-pointer asserts; per parameter its
//             type-index check and the Bind of its value; per buffer parameter the null, ndim
//             and dtype checks, then Binds of its shape/strides arrays, of the variables its
//             shape defines (first buffer that carries one wins; one narrower than int64 after
//             an assert that the extent fits, as 2^31 does not in int32), of device id and data;
//             then every deferred check (shapes against earlier definitions or expressions,
//             strides, byte offset, device type and id, non-null data); then a
//             DeclBuffer per buffer parameter; then `T.attr(0, "compute_scope", "<f>_compute_")`
//             around the old body, in which `return v` stores v into *result and returns 0;
//             then `return 0`. Every check of a DLTensor's fields comes after its null check.
//           - a buffer without strides must be compact row-major (or have null strides); a
//             buffer with strides binds each stride variable from the strides array (the
//             compact strides when it is null) and checks the others (any stride is fine in a
//             dimension of extent 1); a buffer without an element offset needs byte_offset 0,
//             one with an element offset variable binds it to byte_offset / element size after
//             an assert that byte_offset is a whole number of elements;
//           - failed checks carry the signature, the argument and expected vs actual, e.g.
//             "Mismatched B.shape[0] on argument #1 when calling:\n  `f(A: Tensor([n], float32),
//             B: Tensor([n], float32))`,\n  expected to match A.shape[0], got 7"; every message
//             is a T.format whose `{str}` value is the signature, one StringImm shared by all
//             (the IR stays linear in the number of parameters).
//           A call of a rewritten function from another function becomes
//           `T.call_cpacked("<symbol>", args...)`; calls of private functions stay.
// Example:
//   def f(A: T.Buffer((n,), "float32"), x: T.int32):        (target llvm)
//   =>
//   def f(self_handle: T.handle, args: T.handle, num_args: T.int32, result: T.handle) -> T.int32:
//       assert num_args == 2, T.format("Expected 2 arguments when calling:\n  `{str}`, got {}",
//                                      "f(A: Tensor([n], float32), x: int32)", num_args)
//       A_handle_type_index: T.int32 = T.tvm_struct_get(args, 0, 13, "int32")  ...
//       n: T.int32 = T.Cast("int32", A_shape[0])  ...  x: T.int32 = ...
//       with T.attr(0, "compute_scope", "f_compute_"): <body>
//       return 0
#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

#include "passes/free_vars.h"
#include "passes/pass_list.h"
#include "primjit/abi.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/text.h"

namespace primjit::passes {
namespace {

constexpr int kDLCPU = 1, kDLCUDA = 2, kDLCUDAManaged = 13;

Expr i32(int64_t v) { return IntImm::make(DataType::Int(32), v); }
Expr i64(int64_t v) { return IntImm::make(DataType::Int(64), v); }

Expr struct_get(DataType dtype, const Expr& ptr, int index, int field) {
  return Call::make(dtype, Op::get("tvm_struct_get"), {ptr, i32(index), i32(field)});
}

Stmt struct_set(const Expr& ptr, int field, const Expr& value) {
  return Evaluate::make(
      Call::make(DataType::Int(32), Op::get("tvm_struct_set"), {ptr, i32(0), i32(field), value}));
}

Expr is_null(const Expr& ptr) { return Call::make(DataType::Bool(), Op::get("isnullptr"), {ptr}); }

Expr any_of(const std::vector<Expr>& terms) {
  Expr out = terms.front();
  for (size_t i = 1; i < terms.size(); ++i) out = Or::make(out, terms[i]);
  return out;
}

// A message with values: T.format(format, values...).
Expr format(const std::string& format, std::vector<Expr> values) {
  values.insert(values.begin(), StringImm::make(format));
  return Call::make(DataType::Handle(), Op::get("format"), std::move(values));
}

Stmt ret_stmt(const Expr& value) {
  return Evaluate::make(Call::make(value.dtype(), Op::get("ret"), {value}));
}

// An expression as the messages show it: variables by name or by their access path.
std::string expr_text(const Expr& e, const std::unordered_map<const VarNode*, std::string>& paths) {
  if (const auto* v = e.as<VarNode>()) {
    auto it = paths.find(v);
    return it != paths.end() ? it->second : v->name;
  }
  if (const auto* imm = e.as<IntImm>()) return std::to_string(imm->value);
  auto binary = [&](const Expr& a, const char* op, const Expr& b) {
    return "(" + expr_text(a, paths) + " " + op + " " + expr_text(b, paths) + ")";
  };
  if (const auto* op = e.as<Add>()) return binary(op->a, "+", op->b);
  if (const auto* op = e.as<Sub>()) return binary(op->a, "-", op->b);
  if (const auto* op = e.as<Mul>()) return binary(op->a, "*", op->b);
  if (const auto* op = e.as<FloorDiv>()) return binary(op->a, "//", op->b);
  if (const auto* op = e.as<FloorMod>()) return binary(op->a, "%", op->b);
  if (const auto* op = e.as<Cast>()) return expr_text(op->value, paths);
  return "<expression>";
}

// Strips the outer parentheses expr_text puts around a binary expression.
std::string top_text(const Expr& e, const std::unordered_map<const VarNode*, std::string>& paths) {
  std::string text = expr_text(e, paths);
  if (text.size() > 1 && text.front() == '(' && text.back() == ')') {
    int depth = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      depth += text[i] == '(' ? 1 : text[i] == ')' ? -1 : 0;
      if (depth == 0 && i + 1 < text.size()) return text;
    }
    return text.substr(1, text.size() - 2);
  }
  return text;
}

// `return v` in the old body: store v into *result, return 0.
class ReturnRewriter : public StmtExprMutator {
 public:
  ReturnRewriter(Var result, std::string func)
      : result_(std::move(result)), func_(std::move(func)) {}

  Stmt mutate(const For* op) override {
    parallel_depth_ += op->for_kind == ForKind::kParallel;
    Stmt out = StmtExprMutator::mutate(op);
    parallel_depth_ -= op->for_kind == ForKind::kParallel;
    return out;
  }
  Stmt mutate(const Evaluate* op) override {
    const auto* call = op->value.as<Call>();
    if (call == nullptr || !call->is_op("ret")) return StmtExprMutator::mutate(op);
    PRIMJIT_USER_CHECK(parallel_depth_ == 0)
        << "MakePackedAPI: function '" << func_
        << "' returns from inside a T.parallel loop; compute the value in the loop and return "
           "after it";
    Expr v = call->args[0];
    DataType t = v.dtype();
    const int32_t type_index = type_index_of(t);
    auto as = [&](DataType slot) { return t == slot ? v : Cast::make(slot, v); };
    Expr stored;
    if (type_index == kPJBool || type_index == kPJInt) {
      stored = as(DataType::Int(64));
    } else if (type_index == kPJFloat) {
      stored = as(DataType::Float(64));
    } else {
      PRIMJIT_USER_CHECK(type_index == kPJOpaquePtr && t.is_scalar())
          << "MakePackedAPI: function '" << func_ << "' returns a value of dtype " << t
          << ", which the packed calling convention cannot carry; return a scalar";
      stored = v;
    }
    return SeqStmt::make({struct_set(result_, kPJValueTypeIndex, i32(type_index)),
                          struct_set(result_, kPJValuePadding, i32(0)),
                          struct_set(result_, kPJValueUnion, stored), ret_stmt(i32(0))});
  }

 private:
  Var result_;
  std::string func_;
  int parallel_depth_ = 0;
};

// Builds the new body of one function: definitions, early checks, deferred checks.
class ArgumentDecoder {
 public:
  ArgumentDecoder(const PrimFunc& func, std::string name, int device_type)
      : func_(func), name_(std::move(name)), device_type_(device_type) {
    signature_ = StringImm::make(signature());
  }

  PrimFunc run(const Target& host) {
    Var self = Var::make_handle("self_handle");
    Var args = Var::make_handle("args");
    Var num_args = Var::make("num_args", DataType::Int(32));
    Var result = Var::make_handle("result");
    const int n = static_cast<int>(func_->params.size());

    init_.push_back(AssertStmt::make(
        EQ::make(num_args, i32(n)),
        format("Expected " + std::to_string(n) + (n == 1 ? " argument" : " arguments") +
                   " when calling:\n  `{str}`, got {}",
               {signature_, num_args})));
    if (n > 0) {
      init_.push_back(
          AssertStmt::make(Not::make(is_null(args)),
                           format("args pointer is NULL when calling:\n  `{str}`", {signature_})));
    }
    for (int i = 0; i < n; ++i) decode_param(args, i);
    for (int i = 0; i < n; ++i) {
      Buffer buffer = func_->buffer_of(func_->params[i]);
      if (buffer.defined()) decode_buffer(i, buffer);
    }

    std::vector<Stmt> body = std::move(init_);
    for (const auto& check : deferred_) body.push_back(check());
    for (const auto& [param, buffer] : func_->buffer_map) body.push_back(DeclBuffer::make(buffer));
    ReturnRewriter returns(result, name_);
    Stmt old_body = returns.mutate_stmt(func_->body);
    body.push_back(AttrStmt::make(i32(0), attr::kComputeScope, StringImm::make(name_ + "_compute_"),
                                  old_body));
    body.push_back(ret_stmt(i32(0)));
    Stmt new_body = SeqStmt::make(body);

    FreeVarCollector free;
    free.visit_stmt(new_body);
    std::string missing;
    for (const VarNode* v : free.free_vars()) {
      if (v != self.get() && v != args.get() && v != num_args.get() && v != result.get()) {
        missing += (missing.empty() ? "" : ", ") + v->name;
      }
    }
    PRIMJIT_USER_CHECK(missing.empty())
        << "MakePackedAPI: function '" << name_ << "' uses variables [" << missing
        << "] that no argument defines; a shape variable must appear on its own as a "
           "dimension of some buffer parameter, or be a parameter itself";

    Attrs attrs = func_->attrs;
    attrs[attr::kCallingConv] = AttrValue(static_cast<int>(CallingConv::kPacked));
    attrs[attr::kTarget] = AttrValue(host);
    return PrimFunc::make({self, args, num_args, result}, {}, new_body, DataType::Int(32),
                          std::move(attrs));
  }

 private:
  // The parameter list users see: `f(A: Tensor([n, 4], float32), x: int32)`.
  std::string signature() const {
    std::string out = name_ + "(";
    for (size_t i = 0; i < func_->params.size(); ++i) {
      const Var& p = func_->params[i];
      Buffer b = func_->buffer_of(p);
      std::string type;
      if (b.defined()) {
        type = "Tensor([";
        for (size_t k = 0; k < b->shape.size(); ++k) {
          type += (k ? ", " : "") + top_text(b->shape[k], {});
        }
        type += "], " + b->dtype.str() + ")";
      } else {
        type = p->is_pointer() ? "pointer" : p.dtype().str();
      }
      out += (i ? ", " : "") + (b.defined() ? b->name : p->name) + ": " + type;
    }
    return out + ")";
  }

  // The message of a failed check on argument i: a T.format of the text (braces escaped), the
  // signature as a `{str}` value (one string node that every message of the function shares,
  // so their size is linear in the number of parameters) and `got`, which holds placeholders
  // for `values`.
  Expr message(const std::string& what, int i, const std::string& expected, const std::string& got,
               std::vector<Expr> values) const {
    std::string head = what + " on argument #" + std::to_string(i) + " when calling:\n  `";
    std::string tail = "`,\n  expected " + expected;
    values.insert(values.begin(), signature_);
    return format(escape_format(head) + "{str}" + escape_format(tail) + got, std::move(values));
  }

  // Checks that run after every definition, in the order they were requested. The message is
  // made then, so it can name variables that later arguments define.
  void defer(std::function<Stmt()> check) { deferred_.push_back(std::move(check)); }
  void defer(const Expr& cond, const Expr& msg) {
    Stmt check = AssertStmt::make(cond, msg);
    deferred_.push_back([check] { return check; });
  }
  void define(const Var& var, const Expr& value, std::string path) {
    Expr v = value.dtype() == var.dtype() ? value : Cast::make(var.dtype(), value);
    init_.push_back(Bind::make(var, v));
    defined_[var.get()] = std::move(path);
  }

  void decode_param(const Var& args, int i) {
    const Var& p = func_->params[i];
    Buffer buffer = func_->buffer_of(p);
    DataType t = p.dtype();
    Var tindex = Var::make(p->name + "_type_index", DataType::Int(32));
    init_.push_back(Bind::make(tindex, struct_get(DataType::Int(32), args, i, kPJValueTypeIndex)));
    std::vector<int> accepted;
    std::string expected;
    if (t.is_handle()) {
      accepted = {kPJNone, kPJOpaquePtr, kPJDLTensorPtr};
      expected = buffer.defined() ? "Tensor" : "pointer";
    } else if (t.is_bool()) {
      accepted = {kPJBool, kPJInt};
      expected = "boolean";
    } else if (t.is_integer()) {
      accepted = {kPJInt, kPJBool};
      expected = "int";
    } else {
      PRIMJIT_USER_CHECK(t.is_floating() && t.is_scalar())
          << "MakePackedAPI: parameter '" << p->name << "' of '" << name_ << "' has dtype " << t
          << ", which the packed calling convention cannot pass; use a scalar or a buffer";
      accepted = {kPJFloat, kPJInt, kPJBool};
      expected = "float";
    }
    std::vector<Expr> ok;
    for (int a : accepted) ok.push_back(EQ::make(tindex, i32(a)));
    init_.push_back(AssertStmt::make(
        any_of(ok), message("Mismatched type", i, expected, ", got {type}", {tindex})));

    Expr value;
    if (t.is_handle()) {
      value = struct_get(DataType::Handle(), args, i, kPJValueUnion);
    } else if (t.is_floating()) {
      value = Select::make(EQ::make(tindex, i32(kPJFloat)),
                           Cast::make(t, struct_get(DataType::Float(64), args, i, kPJValueUnion)),
                           Cast::make(t, struct_get(DataType::Int(64), args, i, kPJValueUnion)));
    } else {
      value = Cast::make(t, struct_get(DataType::Int(64), args, i, kPJValueUnion));
    }
    define(p, value, p->name);
  }

  void decode_buffer(int i, const Buffer& buffer) {
    const Var& handle = func_->params[i];
    const std::string& name = buffer->name;
    auto msg = [&](const std::string& what, const std::string& expected, const std::string& got,
                   std::vector<Expr> values) {
      return message(what, i, expected, got, std::move(values));
    };
    init_.push_back(AssertStmt::make(Not::make(is_null(handle)),
                                     msg("Mismatched type", "Tensor", ", got None", {})));
    // ndim
    const int ndim = static_cast<int>(buffer->shape.size());
    Var ndim_var = Var::make(name + "_ndim", DataType::Int(32));
    init_.push_back(Bind::make(ndim_var, struct_get(DataType::Int(32), handle, 0, kPJTensorNDim)));
    init_.push_back(AssertStmt::make(
        EQ::make(ndim_var, i32(ndim)),
        msg("Mismatched " + name + ".ndim", std::to_string(ndim), ", got {}", {ndim_var})));
    // dtype
    DataType t = buffer->dtype;
    Expr code = struct_get(DataType::UInt(8), handle, 0, kPJTensorTypeCode);
    Expr bits = struct_get(DataType::UInt(8), handle, 0, kPJTensorTypeBits);
    Expr lanes = struct_get(DataType::UInt(16), handle, 0, kPJTensorTypeLanes);
    Expr dtype_ok =
        And::make(And::make(EQ::make(code, IntImm::make(DataType::UInt(8), t.dlpack_code())),
                            EQ::make(bits, IntImm::make(DataType::UInt(8), t.bits()))),
                  EQ::make(lanes, IntImm::make(DataType::UInt(16), t.lanes())));
    init_.push_back(AssertStmt::make(dtype_ok, msg("Mismatched " + name + ".dtype", t.str(),
                                                   ", got {dtype}", {code, bits, lanes})));
    if (ndim == 0) {
      bind_location(i, buffer, Buffer());
      return;
    }
    // shape
    Var shape_ptr = Var::make_pointer(name + "_shape", DataType::Int(64));
    init_.push_back(
        Bind::make(shape_ptr, struct_get(DataType::Handle(), handle, 0, kPJTensorShape)));
    Buffer shape =
        Buffer::make(shape_ptr, DataType::Int(64), {i32(ndim)}, {}, Expr(), name + "_shape");
    init_.push_back(
        AssertStmt::make(Not::make(is_null(shape_ptr)),
                         msg("Mismatched " + name + ".shape", "a shape array", ", got NULL", {})));
    init_.push_back(DeclBuffer::make(shape));
    for (int k = 0; k < ndim; ++k) {
      std::string path = name + ".shape[" + std::to_string(k) + "]";
      bind_dim(i, path, buffer->shape[k], BufferLoad::make(shape, {i32(k)}));
    }
    // strides: as declared when the buffer has them, else compact row-major (or null);
    // dimensions of extent 1 may carry any stride
    Var strides_ptr = Var::make_pointer(name + "_strides", DataType::Int(64));
    init_.push_back(
        Bind::make(strides_ptr, struct_get(DataType::Handle(), handle, 0, kPJTensorStrides)));
    Buffer strides =
        Buffer::make(strides_ptr, DataType::Int(64), {i32(ndim)}, {}, Expr(), name + "_strides");
    init_.push_back(DeclBuffer::make(strides));
    if (!buffer->strides.empty()) {
      bind_strides(i, buffer, shape, strides);
    } else {
      Expr compact, expected;  // expected stride of dimension k: product of the later extents
      for (int k = ndim - 1; k >= 0; --k) {
        Expr extent = BufferLoad::make(shape, {i32(k)});
        Expr stride = BufferLoad::make(strides, {i32(k)});
        Expr ok = Or::make(EQ::make(extent, i64(1)),
                           EQ::make(stride, expected.defined() ? expected : i64(1)));
        compact = compact.defined() ? And::make(ok, compact) : ok;
        expected = expected.defined() ? Mul::make(expected, extent) : extent;
      }
      // The strides are read only when the pointer is not null (And/Or evaluate both sides).
      Expr cond = Call::make(DataType::Bool(), Op::get("if_then_else"),
                             {is_null(strides_ptr), IntImm::make(DataType::Bool(), 1), compact});
      defer(cond, msg("Mismatched " + name + ".strides", "to be compact array", "", {}));
    }
    bind_location(i, buffer, shape);
  }

  // Byte offset, device and data of buffer parameter i (`shape` undefined for 0-d buffers).
  void bind_location(int i, const Buffer& buffer, const Buffer& shape) {
    const Var& handle = func_->params[i];
    const std::string& name = buffer->name;
    auto msg = [&](const std::string& what, const std::string& expected, const std::string& got,
                   std::vector<Expr> values) {
      return message(what, i, expected, got, std::move(values));
    };
    // byte offset: 0 unless the buffer declares an element offset, which it then gives in
    // elements (a whole number of them)
    Expr offset = struct_get(DataType::UInt(64), handle, 0, kPJTensorByteOffset);
    const Expr& elem_offset = buffer->elem_offset;
    if (!elem_offset.defined() || as_const_int(elem_offset) == 0) {
      defer(EQ::make(offset, IntImm::make(DataType::UInt(64), 0)),
            msg("Mismatched " + name + ".byte_offset", "0", ", got {}", {offset}));
    } else {
      const int64_t bytes = std::max(1, (buffer->dtype.bits() * buffer->dtype.lanes() + 7) / 8);
      Expr offset64 = Cast::make(DataType::Int(64), offset);
      init_.push_back(
          AssertStmt::make(And::make(GE::make(offset64, i64(0)),
                                     EQ::make(FloorMod::make(offset64, i64(bytes)), i64(0))),
                           msg("Misaligned " + name + ".byte_offset",
                               "a multiple of " + std::to_string(bytes) + " (the size of a " +
                                   buffer->dtype.str() + " element) below 2^63",
                               ", got {}", {offset})));
      // Bound like a dimension: a new variable narrower than int64 must hold the count (2^31
      // elements is no int32 offset), a defined one or an expression must match it.
      bind_dim(i, name + ".elem_offset", elem_offset, FloorDiv::make(offset64, i64(bytes)));
    }
    // device
    Expr dev_type = struct_get(DataType::Int(32), handle, 0, kPJTensorDeviceType);
    Expr dev_ok = EQ::make(dev_type, i32(device_type_));
    if (device_type_ == kDLCUDA) dev_ok = Or::make(dev_ok, EQ::make(dev_type, i32(kDLCUDAManaged)));
    defer(dev_ok, msg("Mismatched " + name + ".device_type",
                      device_type_ == kDLCPU ? "cpu" : "cuda", ", got {device}", {dev_type}));
    if (device_type_ != kDLCPU) {
      Expr dev_id = struct_get(DataType::Int(32), handle, 0, kPJTensorDeviceId);
      if (!device_id_.defined()) {
        device_id_ = Var::make("dev_id", DataType::Int(32));
        init_.push_back(Bind::make(device_id_, dev_id));
        device_id_path_ = name + ".device_id";
      } else {
        defer(EQ::make(dev_id, device_id_),
              msg("Mismatched " + name + ".device_id", "to match " + device_id_path_, ", got {}",
                  {dev_id}));
      }
    }
    // data
    PRIMJIT_USER_CHECK(!defined_.count(buffer->data.get()))
        << "MakePackedAPI: buffers of '" << name_ << "' share the data pointer of '"
        << defined_[buffer->data.get()] << "'; give each parameter buffer its own data";
    define(buffer->data, struct_get(DataType::Handle(), handle, 0, kPJTensorData), name + ".data");
    Expr size;  // an empty tensor may have a null data pointer
    for (size_t k = 0; k < buffer->shape.size(); ++k) {
      Expr extent = BufferLoad::make(shape, {i32(static_cast<int64_t>(k))});
      size = k == 0 ? extent : Mul::make(size, extent);
    }
    Expr data_ok = Not::make(is_null(buffer->data));
    defer(size.defined() ? Or::make(EQ::make(size, i64(0)), data_ok) : data_ok,
          msg(name + " data pointer is NULL", "non-NULL data pointer", "", {}));
  }

  // Declared strides: each a new variable, or checked against its definition, constant or
  // expression (a dimension of extent 1 may carry any stride). A null strides array stands for
  // the compact row-major strides.
  void bind_strides(int i, const Buffer& buffer, const Buffer& shape, const Buffer& strides) {
    const std::string& name = buffer->name;
    const int ndim = static_cast<int>(buffer->shape.size());
    PRIMJIT_USER_CHECK(static_cast<int>(buffer->strides.size()) == ndim)
        << "MakePackedAPI: parameter buffer '" << name << "' of '" << name_ << "' has "
        << buffer->strides.size() << " strides for " << ndim << " dimensions; give one per "
        << "dimension";
    std::vector<Expr> compact(static_cast<size_t>(ndim));
    Expr expected;  // the product of the later extents
    for (int k = ndim - 1; k >= 0; --k) {
      compact[static_cast<size_t>(k)] = expected.defined() ? expected : i64(1);
      Expr extent = BufferLoad::make(shape, {i32(k)});
      expected = expected.defined() ? Mul::make(expected, extent) : extent;
    }
    for (int k = 0; k < ndim; ++k) {
      std::string path = name + ".strides[" + std::to_string(k) + "]";
      Expr loaded = Call::make(DataType::Int(64), Op::get("if_then_else"),
                               {is_null(strides->data), compact[static_cast<size_t>(k)],
                                BufferLoad::make(strides, {i32(k)})});
      const Expr& dim = buffer->strides[static_cast<size_t>(k)];
      if (const auto* v = dim.as<VarNode>(); v != nullptr && !defined_.count(v)) {
        if (const int64_t max = v->dtype.max_int_value(); max < INT64_MAX) {
          // Read once, checked, then narrowed.
          Var wide = Var::make(name + "_strides_" + std::to_string(k), DataType::Int(64));
          init_.push_back(Bind::make(wide, loaded));
          loaded = wide;
          init_.push_back(AssertStmt::make(
              And::make(LE::make(loaded, i64(max)), GE::make(loaded, i64(-max - 1))),
              message("Invalid " + path, i,
                      "to fit in " + v->dtype.str() + " (" + v->name + "; declare it " +
                          DataType::Int(64).str() + " for larger strides)",
                      ", got {}", {loaded})));
        }
        define(Var(v), loaded, path);
        continue;
      }
      Expr extent = BufferLoad::make(shape, {i32(k)});
      defer([this, i, path, dim, loaded, extent] {
        auto imm = as_const_int(dim);
        Expr cond =
            Or::make(EQ::make(extent, i64(1)),
                     EQ::make(loaded, imm ? i64(*imm) : Cast::make(DataType::Int(64), dim)));
        return AssertStmt::make(
            cond, message("Mismatched " + path, i, top_text(dim, defined_), ", got {}", {loaded}));
      });
    }
  }

  // One dimension: defines a new variable, or checks against an earlier definition or a
  // constant / expression (deferred, so expressions may use variables defined later).
  void bind_dim(int i, const std::string& path, const Expr& dim, const Expr& loaded) {
    if (const auto* v = dim.as<VarNode>(); v != nullptr && !defined_.count(v)) {
      // A variable narrower than the int64 extent must hold it: 2^31 is no int32.
      if (const int64_t max = v->dtype.max_int_value(); max < INT64_MAX) {
        init_.push_back(AssertStmt::make(
            LE::make(loaded, i64(max)),
            message("Invalid " + path, i,
                    "at most " + std::to_string(max) + " (" + v->name + " is " + v->dtype.str() +
                        "; declare it " + DataType::Int(64).str() + " for larger dimensions)",
                    ", got {}", {loaded})));
      }
      define(Var(v), loaded, path);
      return;
    }
    auto imm = as_const_int(dim);  // compared in int64: a huge extent does not wrap
    Expr cond = EQ::make(loaded, imm ? i64(*imm) : Cast::make(DataType::Int(64), dim));
    if (const auto* v = dim.as<VarNode>()) {
      defer(cond,
            message("Mismatched " + path, i, "to match " + defined_[v], ", got {}", {loaded}));
      return;
    }
    defer([this, i, path, dim, loaded, cond] {
      return AssertStmt::make(
          cond, message("Invalid " + path, i, top_text(dim, defined_), ", got {}", {loaded}));
    });
  }

  const PrimFunc& func_;
  std::string name_;
  int device_type_;
  Expr signature_;  // a StringImm: the parameter list users see
  std::vector<Stmt> init_;
  std::vector<std::function<Stmt()>> deferred_;
  std::unordered_map<const VarNode*, std::string> defined_;
  Var device_id_;
  std::string device_id_path_;
};

bool needs_packed_api(const PrimFunc& func, const std::string& name) {
  if (func->calling_conv() != CallingConv::kDefault) return false;
  if (func->global_symbol().empty()) return false;
  Target target = func->target();
  PRIMJIT_USER_CHECK(target.defined())
      << "MakePackedAPI: function '" << name
      << "' has no \"target\" attribute; set one, e.g. T.func_attr({\"target\": "
         "T.target(\"llvm\")})";
  return !target->is_device() || target->host.defined();
}

// Calls of functions that now take packed arguments become T.call_cpacked.
class CallRewriter : public StmtExprMutator {
 public:
  explicit CallRewriter(const std::map<std::string, const PrimFuncNode*>& packed)
      : packed_(packed) {}
  Expr mutate(const Call* op) override {
    Expr e = StmtExprMutator::mutate(op);
    const auto* call = e.as<Call>();
    if (call == nullptr || !call->callee.defined()) return e;
    auto it = packed_.find(call->callee->name);
    if (it == packed_.end()) return e;
    const PrimFuncNode* callee = it->second;
    PRIMJIT_USER_CHECK(callee->buffer_map.empty())
        << "MakePackedAPI: a function calls '" << call->callee->name
        << "', which takes buffer parameters; make it private (@T.prim_func(private=True)) "
           "or give it pointer parameters";
    std::vector<Expr> args = call->args;
    args.insert(args.begin(), StringImm::make(callee->global_symbol()));
    return Call::make(DataType::Int(32), Op::get("call_cpacked"), std::move(args));
  }

 private:
  const std::map<std::string, const PrimFuncNode*>& packed_;
};

IRModule make_packed_api(const IRModule& module) {
  std::map<std::string, const PrimFuncNode*> packed;
  for (const auto& [gvar, func] : module->functions) {
    if (needs_packed_api(func, gvar->name)) packed[gvar->name] = func.get();
  }
  if (packed.empty()) return module;
  IRModule out = module;
  CallRewriter calls(packed);
  for (const auto& [gvar, func] : module->functions) {
    PrimFunc f = func;
    Stmt body = calls.mutate_stmt(f->body);
    if (!body.same_as(f->body)) f = f.with_body(body);
    if (packed.count(gvar->name)) {
      Target target = f->target();
      Target host = target->host.defined() ? target->host : target;
      int device_type = target->kind == "cuda" ? kDLCUDA : kDLCPU;
      f = ArgumentDecoder(f, gvar->name, device_type).run(host);
    }
    if (!f.same_as(func)) out = out.with_function(gvar->name, f);
  }
  return out;
}

}  // namespace

Pass make_make_packed_api_pass() {
  return Pass{"MakePackedAPI",
              "public host functions take the packed calling convention (args of tagged values, "
              "DLTensors for buffers), with every argument checked",
              [](const IRModule& module, const PassArgs& args) {
                check_no_args("MakePackedAPI", args);
                return make_packed_api(module);
              }};
}

}  // namespace primjit::passes
