// Builtin calls: math functions (ops and libm externs), if_then_else, reinterpret, bit
// operations, barriers, pointers, asynchronous copies; and the dispatch of every call to its
// node (calls.cc has the calls of functions and the packed calling convention).
#include <cmath>
#include <cstring>
#include <map>

#include "jit/common/arg_check.h"
#include "jit/emu/compiler.h"
#include "primjit/error.h"
#include "primjit/ir/text.h"

namespace primjit::jit::emu {
namespace {

// --- math -----------------------------------------------------------------------------------

enum class MathFn {
  kExp,
  kExp2,
  kExp10,
  kExpm1,
  kLog,
  kLog2,
  kLog10,
  kLog1p,
  kSqrt,
  kRsqrt,
  kCbrt,
  kSin,
  kCos,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kTanh,
  kSigmoid,
  kErf,
  kErfc,
  kFabs,
  kFloor,
  kCeil,
  kRound,
  kTrunc,
  kPow,
  kFmod,
  kAtan2,
  kFmin,
  kFmax,
  kHypot,
  kCopysign,
  kIsNan,
  kIsInf,
  kIsFinite,
  kFma,
};

struct MathSpec {
  MathFn fn;
  int arity;
};

// libm names for call_extern / call_pure_extern: "expf" computes in float, "exp" in double.
const std::map<std::string, MathSpec>& libm_names() {
  static const std::map<std::string, MathSpec> names = [] {
    const std::pair<const char*, MathSpec> base[] = {
        {"exp", {MathFn::kExp, 1}},           {"exp2", {MathFn::kExp2, 1}},
        {"exp10", {MathFn::kExp10, 1}},       {"expm1", {MathFn::kExpm1, 1}},
        {"log", {MathFn::kLog, 1}},           {"log2", {MathFn::kLog2, 1}},
        {"log10", {MathFn::kLog10, 1}},       {"log1p", {MathFn::kLog1p, 1}},
        {"sqrt", {MathFn::kSqrt, 1}},         {"rsqrt", {MathFn::kRsqrt, 1}},
        {"cbrt", {MathFn::kCbrt, 1}},         {"sin", {MathFn::kSin, 1}},
        {"cos", {MathFn::kCos, 1}},           {"tan", {MathFn::kTan, 1}},
        {"asin", {MathFn::kAsin, 1}},         {"acos", {MathFn::kAcos, 1}},
        {"atan", {MathFn::kAtan, 1}},         {"sinh", {MathFn::kSinh, 1}},
        {"cosh", {MathFn::kCosh, 1}},         {"tanh", {MathFn::kTanh, 1}},
        {"erf", {MathFn::kErf, 1}},           {"erfc", {MathFn::kErfc, 1}},
        {"fabs", {MathFn::kFabs, 1}},         {"floor", {MathFn::kFloor, 1}},
        {"ceil", {MathFn::kCeil, 1}},         {"round", {MathFn::kRound, 1}},
        {"rint", {MathFn::kRound, 1}},        {"trunc", {MathFn::kTrunc, 1}},
        {"pow", {MathFn::kPow, 2}},           {"fmod", {MathFn::kFmod, 2}},
        {"atan2", {MathFn::kAtan2, 2}},       {"fmin", {MathFn::kFmin, 2}},
        {"fmax", {MathFn::kFmax, 2}},         {"hypot", {MathFn::kHypot, 2}},
        {"copysign", {MathFn::kCopysign, 2}}, {"fma", {MathFn::kFma, 3}},
    };
    std::map<std::string, MathSpec> out;
    for (const auto& [name, spec] : base) {
      out.emplace(name, spec);
      out.emplace(std::string(name) + "f", spec);
    }
    return out;
  }();
  return names;
}

// The math builtins of the op table (T.exp, ...): through the C library function the table
// names, or registered here when there is none. Every math op must be covered.
const OpMap<MathSpec>& math_ops() {
  static const OpMap<MathSpec> ops = [] {
    OpMap<MathSpec> m("the interpreter's math lowering");
    m.set("rsqrt", {MathFn::kRsqrt, 1})
        .set("sigmoid", {MathFn::kSigmoid, 1})
        .set("isnan", {MathFn::kIsNan, 1})
        .set("isinf", {MathFn::kIsInf, 1})
        .set("isfinite", {MathFn::kIsFinite, 1});
    for (const Op& op : Op::all()) {
      if (!op->is_math() || op->libm.empty()) continue;
      auto it = libm_names().find(op->libm);
      PRIMJIT_ICHECK(it != libm_names().end() && it->second.arity == op->num_args)
          << "the interpreter has no C library function '" << op->libm << "' for T." << op->name;
      m.set(op->name, it->second);
    }
    std::vector<std::string> missing = m.missing([](const OpNode& op) { return op.is_math(); });
    PRIMJIT_ICHECK(missing.empty()) << m.what() << " lacks T." << missing.front();
    return m;
  }();
  return ops;
}

template <typename T>
T math(MathFn fn, T x, T y, T z) {
  switch (fn) {
    case MathFn::kExp:
      return std::exp(x);
    case MathFn::kExp2:
      return std::exp2(x);
    case MathFn::kExp10:
      return std::pow(T(10), x);
    case MathFn::kExpm1:
      return std::expm1(x);
    case MathFn::kLog:
      return std::log(x);
    case MathFn::kLog2:
      return std::log2(x);
    case MathFn::kLog10:
      return std::log10(x);
    case MathFn::kLog1p:
      return std::log1p(x);
    case MathFn::kSqrt:
      return std::sqrt(x);
    case MathFn::kRsqrt:
      return T(1) / std::sqrt(x);
    case MathFn::kCbrt:
      return std::cbrt(x);
    case MathFn::kSin:
      return std::sin(x);
    case MathFn::kCos:
      return std::cos(x);
    case MathFn::kTan:
      return std::tan(x);
    case MathFn::kAsin:
      return std::asin(x);
    case MathFn::kAcos:
      return std::acos(x);
    case MathFn::kAtan:
      return std::atan(x);
    case MathFn::kSinh:
      return std::sinh(x);
    case MathFn::kCosh:
      return std::cosh(x);
    case MathFn::kTanh:
      return std::tanh(x);
    case MathFn::kSigmoid:
      return T(1) / (T(1) + std::exp(-x));
    case MathFn::kErf:
      return std::erf(x);
    case MathFn::kErfc:
      return std::erfc(x);
    case MathFn::kFabs:
      return std::fabs(x);
    case MathFn::kFloor:
      return std::floor(x);
    case MathFn::kCeil:
      return std::ceil(x);
    case MathFn::kRound:
      return std::nearbyint(x);  // ties to even
    case MathFn::kTrunc:
      return std::trunc(x);
    case MathFn::kPow:
      return std::pow(x, y);
    case MathFn::kFmod:
      return std::fmod(x, y);
    case MathFn::kAtan2:
      return std::atan2(x, y);
    case MathFn::kFmin:
      return std::fmin(x, y);
    case MathFn::kFmax:
      return std::fmax(x, y);
    case MathFn::kHypot:
      return std::hypot(x, y);
    case MathFn::kCopysign:
      return std::copysign(x, y);
    case MathFn::kIsNan:
      return std::isnan(x) ? 1 : 0;
    case MathFn::kIsInf:
      return std::isinf(x) ? 1 : 0;
    case MathFn::kIsFinite:
      return std::isfinite(x) ? 1 : 0;
    case MathFn::kFma:
      return std::fma(x, y, z);  // one rounding, in T
  }
  return 0;
}

bool is_predicate(MathFn fn) {
  return fn == MathFn::kIsNan || fn == MathFn::kIsInf || fn == MathFn::kIsFinite;
}

/// A math function; computes in float when `single` (float32 and narrower operands, and the
/// libm names ending in 'f'), else in double; the result is rounded to the call's dtype.
class MathNode : public CExpr {
 public:
  MathNode(DataType dtype, MathFn fn, bool single, std::vector<CExprPtr> args)
      : CExpr(dtype), fn_(fn), single_(single), args_(std::move(args)) {}
  Scalar eval(Exec& ex) const override {
    double v[3] = {0, 0, 0};
    for (size_t i = 0; i < args_.size(); ++i) v[i] = to_double(args_[i]->type, args_[i]->eval(ex));
    return apply(v);
  }
  void eval_lanes(Exec& ex, Lanes* out) const override {
    if (dtype.lanes() == 1) return CExpr::eval_lanes(ex, out);
    Lanes in[3];
    for (size_t i = 0; i < args_.size(); ++i) args_[i]->eval_lanes(ex, &in[i]);
    out->resize(static_cast<size_t>(dtype.lanes()));
    for (size_t l = 0; l < out->size(); ++l) {
      double v[3] = {0, 0, 0};
      for (size_t i = 0; i < args_.size(); ++i) {
        v[i] = to_double(args_[i]->type, in[i].size() == 1 ? in[i][0] : in[i][l]);
      }
      (*out)[l] = apply(v);
    }
  }

 private:
  Scalar apply(const double (&v)[3]) const {
    double r =
        single_
            ? static_cast<double>(math<float>(fn_, static_cast<float>(v[0]),
                                              static_cast<float>(v[1]), static_cast<float>(v[2])))
            : math<double>(fn_, v[0], v[1], v[2]);
    if (is_predicate(fn_)) return from_integer(type, static_cast<int64_t>(r), false);
    return from_double(type, r);
  }
  MathFn fn_;
  bool single_;
  std::vector<CExprPtr> args_;
};

bool single_precision(DataType t) {
  TypeInfo ti(t);
  return ti.repr == Repr::kFloat32 || ti.repr == Repr::kNarrow;
}

// --- control and bits -------------------------------------------------------------------------

class IfThenElseNode : public CExpr {
 public:
  IfThenElseNode(DataType dtype, CExprPtr c, CExprPtr t, CExprPtr f)
      : CExpr(dtype), c_(std::move(c)), t_(std::move(t)), f_(std::move(f)) {}
  Scalar eval(Exec& ex) const override {
    return c_->eval(ex).i != 0 ? t_->eval(ex) : f_->eval(ex);  // only the chosen branch
  }
  void eval_lanes(Exec& ex, Lanes* out) const override {
    if (dtype.lanes() == 1) return CExpr::eval_lanes(ex, out);
    Lanes c;
    c_->eval_lanes(ex, &c);
    bool all = true, none = true;
    for (const Scalar& s : c) (s.i != 0 ? none : all) = false;
    if (all) return t_->eval_lanes(ex, out);
    if (none) return f_->eval_lanes(ex, out);
    Lanes t, f;  // mixed lanes: both branches
    t_->eval_lanes(ex, &t);
    f_->eval_lanes(ex, &f);
    out->resize(t.size());
    for (size_t l = 0; l < t.size(); ++l) (*out)[l] = (c.size() == 1 ? c[0] : c[l]).i ? t[l] : f[l];
  }

 private:
  CExprPtr c_, t_, f_;
};

class ReinterpretNode : public CExpr {
 public:
  ReinterpretNode(DataType dtype, CExprPtr a) : CExpr(dtype), a_(std::move(a)) {}
  Scalar eval(Exec& ex) const override {
    Lanes out;
    eval_lanes(ex, &out);
    return out[0];
  }
  void eval_lanes(Exec& ex, Lanes* out) const override {
    Lanes in;
    a_->eval_lanes(ex, &in);
    *out = reinterpret_lanes(a_->dtype, in, dtype);
  }

 private:
  CExprPtr a_;
};

enum class BitOp { kShl, kShr, kAnd, kOr, kXor, kNot };

class BitNode : public CExpr {
 public:
  BitNode(DataType dtype, BitOp op, CExprPtr a, CExprPtr b)
      : CExpr(dtype), op_(op), a_(std::move(a)), b_(std::move(b)) {}
  Scalar eval(Exec& ex) const override {
    Scalar a = a_->eval(ex);
    Scalar b = b_ ? b_->eval(ex) : Scalar();
    return apply(a, b);
  }
  void eval_lanes(Exec& ex, Lanes* out) const override {
    if (dtype.lanes() == 1) return CExpr::eval_lanes(ex, out);
    Lanes a, b;
    a_->eval_lanes(ex, &a);
    if (b_) b_->eval_lanes(ex, &b);
    out->resize(static_cast<size_t>(dtype.lanes()));
    for (size_t l = 0; l < out->size(); ++l) {
      (*out)[l] = apply(a.size() == 1 ? a[0] : a[l], b.empty()       ? Scalar()
                                                     : b.size() == 1 ? b[0]
                                                                     : b[l]);
    }
  }

 private:
  Scalar apply(const Scalar& a, const Scalar& b) const {
    const int bits = type.repr == Repr::kBool ? 1 : type.bits;
    auto wrap = [&](uint64_t v) {
      return type.repr == Repr::kInt ? wrap_signed(v, bits) : wrap_unsigned(v, bits);
    };
    switch (op_) {
      case BitOp::kShl:
        return Scalar::of_int(b.i < 0 || b.i >= bits ? 0 : wrap(a.u << b.i));
      case BitOp::kShr:
        if (b.i < 0 || b.i >= bits) {
          return Scalar::of_int(type.repr == Repr::kInt && a.i < 0 ? -1 : 0);
        }
        return Scalar::of_int(type.repr == Repr::kInt ? a.i >> b.i : wrap(a.u >> b.i));
      case BitOp::kAnd:
        return Scalar::of_int(wrap(a.u & b.u));
      case BitOp::kOr:
        return Scalar::of_int(wrap(a.u | b.u));
      case BitOp::kXor:
        return Scalar::of_int(wrap(a.u ^ b.u));
      case BitOp::kNot:
        return Scalar::of_int(wrap(~a.u));
    }
    return Scalar();
  }
  BitOp op_;
  CExprPtr a_, b_;
};

// --- barriers, pointers, copies ---------------------------------------------------------------

class SyncNode : public CExpr {
 public:
  SyncNode(DataType dtype, std::string scope) : CExpr(dtype), scope_(std::move(scope)) {}
  Scalar eval(Exec& ex) const override {
    barrier(ex, scope_);
    return Scalar();
  }

 private:
  std::string scope_;
};

class AccessPtrNode : public CExpr {
 public:
  AccessPtrNode(DataType dtype, int64_t unit, CExprPtr data, CExprPtr offset, CExprPtr extent)
      : CExpr(dtype),
        unit_(unit),
        data_(std::move(data)),
        offset_(std::move(offset)),
        extent_(std::move(extent)) {}
  Scalar eval(Exec& ex) const override {
    Scalar p = data_->eval(ex);
    const int64_t offset = offset_->eval(ex).i * unit_;
    const int64_t extent = extent_->eval(ex).i * unit_;
    Allocation* a = allocation_of(ex, p);
    if (ex.checked()) {
      PRIMJIT_USER_CHECK(a != nullptr && a->contains(p.u + offset, extent))
          << "T.tvm_access_ptr: the range of " << extent << " bytes at byte offset " << offset
          << " is outside "
          << (a ? "allocation '" + a->name + "' (" + std::to_string(a->size) + " bytes)"
                : std::string("any known allocation"))
          << ex.where();
    }
    return Scalar::of_pointer(p.u + static_cast<uint64_t>(offset), a);
  }

 private:
  int64_t unit_;
  CExprPtr data_, offset_, extent_;
};

class AddressOfNode : public CExpr {
 public:
  AddressOfNode(DataType dtype, const CBuffer* buffer, std::vector<CExprPtr> indices)
      : CExpr(dtype), buffer_(buffer), indices_(std::move(indices)) {}
  Scalar eval(Exec& ex) const override {
    int64_t idx[kMaxBufferDims];
    for (size_t d = 0; d < indices_.size(); ++d) idx[d] = indices_[d]->eval(ex).i;
    const int64_t flat = buffer_->flat_index(ex, idx, "T.address_of");
    Scalar p = ex.slot(buffer_->data_slot);
    return Scalar::of_pointer(p.u + static_cast<uint64_t>(flat * buffer_->elem_bytes),
                              allocation_of(ex, p));
  }

 private:
  const CBuffer* buffer_;
  std::vector<CExprPtr> indices_;
};

// ptx_cp_async: a copy of `bytes` bytes, made at once; its destination stays pending (no access
// may touch it) until the thread waits for it (AsyncGroupNode).
class CopyNode : public CExpr {
 public:
  CopyNode(DataType dtype, std::vector<CExprPtr> args, int64_t dst_unit, int64_t src_unit)
      : CExpr(dtype), args_(std::move(args)), dst_unit_(dst_unit), src_unit_(src_unit) {}
  Scalar eval(Exec& ex) const override {
    Scalar dst = args_[0]->eval(ex);
    int64_t dst_off = args_[1]->eval(ex).i * dst_unit_;
    Scalar src = args_[2]->eval(ex);
    int64_t src_off = args_[3]->eval(ex).i * src_unit_;
    int64_t bytes = args_[4]->eval(ex).i;
    const uint8_t* from =
        check_access(ex, src, src_off, bytes, false, AccessDesc{"T.ptx_cp_async read"});
    uint8_t* to = check_access(ex, dst, dst_off, bytes, true, AccessDesc{"T.ptx_cp_async write"});
    std::memmove(to, from, static_cast<size_t>(bytes));
    record_async_copy(ex, dst, dst_off, bytes);
    return Scalar();
  }

 private:
  std::vector<CExprPtr> args_;
  int64_t dst_unit_, src_unit_;
};

// ptx_commit_group, ptx_wait_group(n): the ends of the copies' pending time (see CopyNode).
class AsyncGroupNode : public CExpr {
 public:
  AsyncGroupNode(DataType dtype, CExprPtr wait_n) : CExpr(dtype), wait_n_(std::move(wait_n)) {}
  Scalar eval(Exec& ex) const override {
    if (wait_n_ == nullptr) {
      commit_async_copies(ex);
    } else {
      wait_async_copies(ex, wait_n_->eval(ex).i);
    }
    return Scalar();
  }

 private:
  CExprPtr wait_n_;  // null: commit
};

std::string string_arg(const Call* op, size_t i, const char* what) {
  const auto* s = i < op->args.size() ? op->args[i].as<StringImm>() : nullptr;
  PRIMJIT_USER_CHECK(s != nullptr) << "T." << what << ": argument " << i
                                   << " must be a string literal, in `" << print(Expr(op)) << "`";
  return s->value;
}

int64_t pointee_bytes(const Expr& e) {
  const auto* v = e.as<VarNode>();
  if (v != nullptr && !v->pointee.is_void()) return std::max(1, v->pointee.bytes());
  return 1;
}

}  // namespace

CExprPtr Compiler::call(const Call* op) {
  std::vector<CExprPtr> args;
  auto compile_args = [&](size_t first) {
    for (size_t i = first; i < op->args.size(); ++i) args.push_back(expr(op->args[i]));
  };
  const DataType t = op->dtype;
  if (op->callee.defined()) {
    compile_args(0);
    return make_function_call_node(t, op->callee->name, std::move(args));
  }
  const std::string& name = op->op->name;
  if (const MathSpec* spec = math_ops().find(op->op)) {
    compile_args(0);
    bool single = single_precision(op->args[0].dtype());
    return std::make_unique<MathNode>(t, spec->fn, single, std::move(args));
  }
  if (name == "if_then_else") {
    return std::make_unique<IfThenElseNode>(t, expr(op->args[0]), expr(op->args[1]),
                                            expr(op->args[2]));
  }
  if (name == "reinterpret") return std::make_unique<ReinterpretNode>(t, expr(op->args[0]));
  if (name == "likely") return convert(expr(op->args[0]), t);
  static const std::map<std::string, BitOp> bit_ops = {
      {"shift_left", BitOp::kShl}, {"shift_right", BitOp::kShr}, {"bitwise_and", BitOp::kAnd},
      {"bitwise_or", BitOp::kOr},  {"bitwise_xor", BitOp::kXor}, {"bitwise_not", BitOp::kNot}};
  if (auto it = bit_ops.find(name); it != bit_ops.end()) {
    CExprPtr a = convert(expr(op->args[0]), t);
    CExprPtr b = op->args.size() > 1 ? convert(expr(op->args[1]), t) : nullptr;
    return std::make_unique<BitNode>(t, it->second, std::move(a), std::move(b));
  }
  if (name == "tvm_storage_sync") {
    return std::make_unique<SyncNode>(t, string_arg(op, 0, "tvm_storage_sync"));
  }
  if (name == "tvm_access_ptr") {
    DataType ann = op->args[0].dtype();
    int64_t unit = ann.is_handle() ? pointee_bytes(op->args[1]) : std::max(1, ann.bytes());
    return std::make_unique<AccessPtrNode>(t, unit, expr(op->args[1]), expr(op->args[2]),
                                           expr(op->args[3]));
  }
  if (name == "address_of") {
    const auto* load = op->args[0].as<BufferLoad>();
    PRIMJIT_USER_CHECK(load != nullptr)
        << "T.address_of takes a buffer element, got `" << print(op->args[0]) << "`";
    std::vector<CExprPtr> indices;
    for (const Expr& e : load->indices) indices.push_back(expr(e));
    return std::make_unique<AddressOfNode>(t, buffer(load->buffer), std::move(indices));
  }
  if (name == "ptx_cp_async") {
    compile_args(0);
    return std::make_unique<CopyNode>(t, std::move(args), pointee_bytes(op->args[0]),
                                      pointee_bytes(op->args[2]));
  }
  if (name == "ptx_commit_group") return std::make_unique<AsyncGroupNode>(t, nullptr);
  if (name == "ptx_wait_group") return std::make_unique<AsyncGroupNode>(t, expr(op->args[0]));
  if (name == "call_extern" || name == "call_pure_extern") {
    std::string fn = string_arg(op, 0, name.c_str());
    compile_args(1);
    if (auto it = libm_names().find(fn);
        it != libm_names().end() && static_cast<int>(args.size()) == it->second.arity) {
      // "expf" is the float variant of "exp"; "erf" is the double one.
      const bool single = fn.back() == 'f' && libm_names().count(fn.substr(0, fn.size() - 1)) != 0;
      for (auto& a : args)
        a = convert(std::move(a), single ? DataType::Float(32) : DataType::Float(64));
      return std::make_unique<MathNode>(t, it->second.fn, single, std::move(args));
    }
    if ((fn == "popcount" || fn == "abs" || fn == "labs" || fn == "llabs") && args.size() == 1) {
      return make_int_extern_node(t, fn == "popcount", std::move(args[0]));
    }
    return make_extern_node(t, fn, std::move(args));
  }
  if (name == "call_packed" || name == "call_cpacked") {
    std::string symbol = string_arg(op, 0, name.c_str());
    compile_args(1);
    return make_packed_call_node(t, name == "call_cpacked", symbol, std::move(args));
  }
  if (name == "ret") return make_ret_node(t, expr(op->args[0]));
  if (name == "tvm_struct_get" || name == "tvm_struct_set") {
    std::optional<int64_t> field = as_const_int(op->args[2]);
    PRIMJIT_USER_CHECK(field) << "T." << name << ": the field must be a constant, in `"
                              << print(Expr(op)) << "`";
    if (name == "tvm_struct_get") {
      return make_struct_get_node(t, static_cast<int>(*field), expr(op->args[0]),
                                  expr(op->args[1]));
    }
    return make_struct_set_node(t, static_cast<int>(*field), expr(op->args[0]), expr(op->args[1]),
                                expr(op->args[3]));
  }
  if (name == "isnullptr") return make_is_null_node(t, expr(op->args[0]));
  if (name == "check_args") {
    std::vector<int64_t> table;
    for (size_t k = 4; k < op->args.size(); ++k) {
      std::optional<int64_t> v = as_const_int(op->args[k]);
      PRIMJIT_USER_CHECK(v) << "T.check_args: entry " << k - 4
                            << " of the table is not an integer constant, in `" << print(Expr(op))
                            << "`";
      table.push_back(*v);
    }
    std::string texts = string_arg(op, 3, "check_args");
    const std::string problem = arg_table_problem(table.data(), table.size(), texts.size());
    PRIMJIT_USER_CHECK(problem.empty())
        << "T.check_args: the table is malformed (" << problem
        << "; it is MakePackedAPI's, see primjit/arg_table.h), in `" << print(Expr(op)) << "`";
    return make_check_args_node(t, expr(op->args[0]), expr(op->args[1]),
                                string_arg(op, 2, "check_args"), std::move(texts),
                                std::move(table));
  }
  if (name == "format") {
    return make_unsupported_node(t, "T.format is only supported as the message of an assert");
  }
  return make_unsupported_node(t, "the interpreter does not support builtin T." + name);
}

}  // namespace primjit::jit::emu