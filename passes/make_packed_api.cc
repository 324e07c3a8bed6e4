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
//           - body, in order: `T.check_args(args, num_args, "<signature>", "<texts>",
//             table...)`, one runtime call that runs every check a constant table can describe
//             (primjit/arg_table.h: the argument count and args pointer, each parameter's type
//             index, each buffer's null, ndim, dtype, shape array, the range of the variables
//             its dimensions define, dimensions that must be a constant or match an earlier
//             buffer's dimension, compact strides, byte offset 0, device type and id, non-null
//             data); per parameter the Bind of its value; per buffer parameter the Binds of its
//             shape array, of the variables its shape defines (first buffer that carries one
//             wins), of device id and data, and for a buffer that declares strides or an
//             element offset their generated checks and binds; then the deferred checks the
//             table cannot express (shapes against expressions or scalar parameters); then a
//             DeclBuffer per buffer parameter; then `T.attr(0, "compute_scope", "<f>_compute_")`
//             around the old body, in which `return v` stores v into *result and returns 0;
//             then `return 0`. No generated code reads a DLTensor before the table's checks.
//           - a buffer without strides must be compact row-major (or have null strides); a
//             buffer with strides binds each stride variable from the strides array (the
//             compact strides when it is null) and checks the others (any stride is fine in a
//             dimension of extent 1); a buffer without an element offset needs byte_offset 0,
//             one with an element offset variable binds it to byte_offset / element size after
//             an assert that byte_offset is a whole number of elements;
//           - failed checks carry the signature, the argument and expected vs actual, e.g.
//             "Mismatched B.shape[0] on argument #1 when calling:\n  `f(A: Tensor([n], float32),
//             B: Tensor([n], float32))`,\n  expected to match A.shape[0], got 7"; the table's
//             checks come first and report exactly what the generated assert each replaces
//             did; every generated message is a T.format whose `{str}` value is the signature,
//             one StringImm shared by all (the IR stays linear in the number of parameters).
//           A call of a rewritten function from another function becomes
//           `T.call_cpacked("<symbol>", args...)`; calls of private functions stay.
// Example:
//   def f(A: T.Buffer((n,), "float32"), x: T.int32):        (target llvm)
//   =>
//   def f(self_handle: T.handle, args: T.handle, num_args: T.int32, result: T.handle) -> T.int32:
//       T.check_args(args, num_args, "f(A: Tensor([n], float32), x: int32)", "Afloat32...",
//                    2, 1, 0, 1, 1, 7, 1, 2, 32, 1, 3, 1, -1, ..., 3)
//       A: T.handle = T.tvm_struct_get(args, 0, 15, "handle")  ...
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
#include "primjit/arg_table.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/text.h"

namespace primjit::passes {
namespace {

constexpr int kDLCPU = 1, kDLCUDA = 2;

// Entries of a buffer parameter's record in the argument table (primjit/arg_table.h), counted
// from its kind.
constexpr size_t kFlags = 1 + kArgFlags, kDeviceIdParam = 1 + kArgDeviceIdParam,
                 kDeviceIdText = 1 + kArgDeviceIdText;

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

    records_.resize(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) decode_param(args, i);
    for (int i = 0; i < n; ++i) {
      Buffer buffer = func_->buffer_of(func_->params[i]);
      if (buffer.defined()) decode_buffer(i, buffer);
    }

    std::vector<Stmt> body = {check_args(args, num_args)};
    body.insert(body.end(), init_.begin(), init_.end());
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
    std::vector<int64_t>& record = records_[static_cast<size_t>(i)];
    if (t.is_handle()) {
      record.push_back(buffer.defined() ? kArgTensor : kArgPointer);
    } else if (t.is_bool()) {
      record.push_back(kArgBool);
    } else if (t.is_integer()) {
      record.push_back(kArgInt);
    } else {
      PRIMJIT_USER_CHECK(t.is_floating() && t.is_scalar())
          << "MakePackedAPI: parameter '" << p->name << "' of '" << name_ << "' has dtype " << t
          << ", which the packed calling convention cannot pass; use a scalar or a buffer";
      record.push_back(kArgFloat);
    }
    // The table checked the type index: a float may come as an int or a bool.
    Expr value;
    if (t.is_handle()) {
      value = struct_get(DataType::Handle(), args, i, kPJValueUnion);
    } else if (t.is_floating()) {
      Var tindex = Var::make(p->name + "_type_index", DataType::Int(32));
      init_.push_back(
          Bind::make(tindex, struct_get(DataType::Int(32), args, i, kPJValueTypeIndex)));
      value = Select::make(EQ::make(tindex, i32(kPJFloat)),
                           Cast::make(t, struct_get(DataType::Float(64), args, i, kPJValueUnion)),
                           Cast::make(t, struct_get(DataType::Int(64), args, i, kPJValueUnion)));
    } else {
      value = Cast::make(t, struct_get(DataType::Int(64), args, i, kPJValueUnion));
    }
    define(p, value, p->name);
  }

  // The table checks the DLTensor's fields; the code binds the shape array, the variables its
  // dimensions define and, when the buffer declares strides, its strides.
  void decode_buffer(int i, const Buffer& buffer) {
    const Var& handle = func_->params[i];
    const std::string& name = buffer->name;
    const int ndim = static_cast<int>(buffer->shape.size());
    DataType t = buffer->dtype;
    std::vector<int64_t>& record = records_[static_cast<size_t>(i)];
    add_text(record, name);
    add_text(record, t.str());
    record.insert(record.end(), {ndim, t.dlpack_code(), t.bits(), t.lanes(), 0, device_type_, -1});
    add_text(record, "");
    if (ndim == 0) {
      bind_location(i, buffer);
      return;
    }
    // The shape array is bound only when the code reads it.
    Var shape_ptr = Var::make_pointer(name + "_shape", DataType::Int(64));
    Buffer shape =
        Buffer::make(shape_ptr, DataType::Int(64), {i32(ndim)}, {}, Expr(), name + "_shape");
    const size_t shape_at = init_.size();
    bool shape_read = !buffer->strides.empty();
    for (int k = 0; k < ndim; ++k) {
      std::string path = name + ".shape[" + std::to_string(k) + "]";
      shape_read |= bind_dim(i, path, buffer->shape[k], BufferLoad::make(shape, {i32(k)}), k);
    }
    if (shape_read) {
      init_.insert(
          init_.begin() + static_cast<std::ptrdiff_t>(shape_at),
          {Bind::make(shape_ptr, struct_get(DataType::Handle(), handle, 0, kPJTensorShape)),
           DeclBuffer::make(shape)});
    }
    // strides: as declared when the buffer has them (generated checks), else compact row-major
    // or null (the table's check; dimensions of extent 1 may carry any stride)
    if (!buffer->strides.empty()) {
      Var strides_ptr = Var::make_pointer(name + "_strides", DataType::Int(64));
      init_.push_back(
          Bind::make(strides_ptr, struct_get(DataType::Handle(), handle, 0, kPJTensorStrides)));
      Buffer strides =
          Buffer::make(strides_ptr, DataType::Int(64), {i32(ndim)}, {}, Expr(), name + "_strides");
      init_.push_back(DeclBuffer::make(strides));
      bind_strides(i, buffer, shape, strides);
    } else {
      record[kFlags] |= kArgCompactStrides;
    }
    bind_location(i, buffer);
  }

  // Byte offset, device and data of buffer parameter i.
  void bind_location(int i, const Buffer& buffer) {
    const Var& handle = func_->params[i];
    const std::string& name = buffer->name;
    std::vector<int64_t>& record = records_[static_cast<size_t>(i)];
    // byte offset: 0 unless the buffer declares an element offset, which it then gives in
    // elements (a whole number of them)
    const Expr& elem_offset = buffer->elem_offset;
    if (!elem_offset.defined() || as_const_int(elem_offset) == 0) {
      record[kFlags] |= kArgZeroByteOffset;
    } else {
      Expr offset = struct_get(DataType::UInt(64), handle, 0, kPJTensorByteOffset);
      const int64_t bytes = std::max(1, (buffer->dtype.bits() * buffer->dtype.lanes() + 7) / 8);
      Expr offset64 = Cast::make(DataType::Int(64), offset);
      init_.push_back(
          AssertStmt::make(And::make(GE::make(offset64, i64(0)),
                                     EQ::make(FloorMod::make(offset64, i64(bytes)), i64(0))),
                           message("Misaligned " + name + ".byte_offset", i,
                                   "a multiple of " + std::to_string(bytes) + " (the size of a " +
                                       buffer->dtype.str() + " element) below 2^63",
                                   ", got {}", {offset})));
      // Bound like a dimension: a new variable narrower than int64 must hold the count (2^31
      // elements is no int32 offset), a defined one or an expression must match it.
      bind_dim(i, name + ".elem_offset", elem_offset, FloorDiv::make(offset64, i64(bytes)), -1);
    }
    // device: the table checks the type, and the id against the first buffer's
    if (device_type_ != kDLCPU) {
      if (!device_id_.defined()) {
        device_id_ = Var::make("dev_id", DataType::Int(32));
        init_.push_back(
            Bind::make(device_id_, struct_get(DataType::Int(32), handle, 0, kPJTensorDeviceId)));
        device_id_path_ = name + ".device_id";
        device_id_param_ = i;
      } else {
        record[kDeviceIdParam] = device_id_param_;
        set_text(record, kDeviceIdText, "to match " + device_id_path_);
      }
    }
    // data (the table checks that it is not null unless the tensor is empty)
    PRIMJIT_USER_CHECK(!defined_.count(buffer->data.get()))
        << "MakePackedAPI: buffers of '" << name_ << "' share the data pointer of '"
        << defined_[buffer->data.get()] << "'; give each parameter buffer its own data";
    define(buffer->data, struct_get(DataType::Handle(), handle, 0, kPJTensorData), name + ".data");
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
  // Returns whether the generated code reads `loaded` (the table checks the rest).
  bool bind_dim(int i, const std::string& path, const Expr& dim, const Expr& loaded, int k) {
    // Dimension k of buffer parameter i has a record in the table (not an element offset).
    std::vector<int64_t>& record = records_[static_cast<size_t>(i)];
    auto add_dim = [&](ArgDimKind kind, int64_t a, int64_t b, const std::string& expected) {
      if (k < 0) return false;
      record.insert(record.end(), {kind, a, b, 0, 0});
      set_text(record, record.size() - 2, expected);
      return true;
    };
    if (const auto* v = dim.as<VarNode>(); v != nullptr && !defined_.count(v)) {
      // A variable narrower than the int64 extent must hold it: 2^31 is no int32.
      const int64_t max = v->dtype.max_int_value();
      const std::string expected = "at most " + std::to_string(max) + " (" + v->name + " is " +
                                   v->dtype.str() + "; declare it " + DataType::Int(64).str() +
                                   " for larger dimensions)";
      const bool narrow = max < INT64_MAX;
      if (add_dim(kArgDimDefine, narrow ? max : -1, 0, narrow ? expected : "")) {
        table_dims_[v] = {i, k};
      } else if (narrow) {
        init_.push_back(
            AssertStmt::make(LE::make(loaded, i64(max)),
                             message("Invalid " + path, i, expected, ", got {}", {loaded})));
      }
      define(Var(v), loaded, path);
      return true;
    }
    auto imm = as_const_int(dim);  // compared in int64: a huge extent does not wrap
    const auto* v = dim.as<VarNode>();
    if (auto it = v ? table_dims_.find(v) : table_dims_.end(); it != table_dims_.end()) {
      if (add_dim(kArgDimMatch, it->second.first, it->second.second, "to match " + defined_[v])) {
        return false;
      }
    } else if (imm && add_dim(kArgDimConst, *imm, 0, std::to_string(*imm))) {
      return false;
    }
    add_dim(kArgDimGenerated, 0, 0, "");
    Expr cond = EQ::make(loaded, imm ? i64(*imm) : Cast::make(DataType::Int(64), dim));
    if (v != nullptr) {
      defer(cond,
            message("Mismatched " + path, i, "to match " + defined_[v], ", got {}", {loaded}));
      return true;
    }
    defer([this, i, path, dim, loaded, cond] {
      return AssertStmt::make(
          cond, message("Invalid " + path, i, top_text(dim, defined_), ", got {}", {loaded}));
    });
    return true;
  }

  // The text's place in texts_ at record[at] and record[at + 1] (each text stored once).
  void set_text(std::vector<int64_t>& record, size_t at, const std::string& text) {
    auto [it, added] = text_at_.emplace(text, static_cast<int64_t>(texts_.size()));
    if (added) texts_ += text;
    record[at] = it->second;
    record[at + 1] = static_cast<int64_t>(text.size());
  }
  void add_text(std::vector<int64_t>& record, const std::string& text) {
    record.resize(record.size() + 2);
    set_text(record, record.size() - 2, text);
  }

  // T.check_args(args, num_args, signature, texts, table...): the checks the table describes
  // (primjit/arg_table.h), before any generated code reads an argument. Entries that fit in
  // int32 are printed as plain numbers.
  Stmt check_args(const Var& args, const Var& num_args) const {
    std::vector<Expr> call = {args, num_args, signature_, StringImm::make(texts_),
                              i32(static_cast<int64_t>(records_.size()))};
    for (const std::vector<int64_t>& record : records_) {
      for (int64_t v : record) call.push_back(v == static_cast<int32_t>(v) ? i32(v) : i64(v));
    }
    return Evaluate::make(Call::make(DataType::Int(32), Op::get("check_args"), std::move(call)));
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
  int device_id_param_ = -1;
  // The table: per parameter its record (kind, then for a buffer its tensor record), the texts
  // the records point into, and the variables that a dimension in the table defines (parameter,
  // dimension), which later dimensions match in the table.
  std::vector<std::vector<int64_t>> records_;
  std::string texts_;
  std::map<std::string, int64_t> text_at_;
  std::unordered_map<const VarNode*, std::pair<int, int>> table_dims_;
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
