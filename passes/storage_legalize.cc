// Shared machinery of BF16StorageLegalize and FP8StorageLegalize (see storage_legalize.h and
// bf16_storage_legalize.cc for the rules).
//
// One mutator does both halves of the work in one walk:
// - compute: an expression of a narrow type N (lanes L) is rewritten to a float32xL expression
//   with the same value (mutate_expr); arithmetic, comparisons, Select and math calls then
//   rebuild themselves over float32 operands.
// - storage: where the bits of an N value are needed (a store, an opaque call argument, a
//   reinterpret), to_storage() gives them as the unsigned storage type, copying bits directly
//   where it can (a load stored elsewhere) instead of converting to float32 and back.
#include "passes/storage_legalize.h"

#include <cstdint>
#include <functional>
#include <unordered_map>

#include "passes/pass_list.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"

namespace primjit::passes {

bool NarrowStorage::is_narrow(DataType t) const {
  for (DataType narrow : types) {
    if (narrow == t.element_of()) return true;
  }
  return false;
}

bool has_native_support(const Target& target, const NarrowStorage& spec) {
  return target.defined() && target->kind == "cuda" && target->arch_number() >= spec.min_cuda_arch;
}

const fp::Format& narrow_format(DataType narrow) {
  switch (narrow.code()) {
    case DataType::Code::kBFloat:
      return fp::kBFloat16;
    case DataType::Code::kFloat8E4M3FN:
      return fp::kFloat8E4M3FN;
    case DataType::Code::kFloat8E5M2:
      return fp::kFloat8E5M2;
    default:
      break;
  }
  PRIMJIT_INTERNAL_ERROR() << "no narrow storage format for " << narrow;
}

// =============================================================================================
// The conversion formulas
// =============================================================================================

namespace {

// uint32 arithmetic on `lanes` lanes: constants are broadcast, builtins get the operand dtype.
class U32 {
 public:
  explicit U32(int lanes) : lanes_(lanes) {}

  DataType type() const { return DataType::UInt(32, lanes_); }
  Expr k(uint32_t value) const {
    Expr c = IntImm::make(DataType::UInt(32), value);
    return lanes_ > 1 ? Broadcast::make(c, lanes_) : c;
  }
  Expr shl(const Expr& a, const Expr& s) const { return builtin("shift_left", a, s); }
  Expr shl(const Expr& a, uint32_t s) const { return shl(a, k(s)); }
  Expr shr(const Expr& a, const Expr& s) const { return builtin("shift_right", a, s); }
  Expr shr(const Expr& a, uint32_t s) const { return shr(a, k(s)); }
  Expr band(const Expr& a, uint32_t mask) const { return builtin("bitwise_and", a, k(mask)); }
  Expr bor(const Expr& a, const Expr& b) const { return builtin("bitwise_or", a, b); }
  Expr bor(const Expr& a, uint32_t b) const { return bor(a, k(b)); }
  Expr reinterpret(DataType to, const Expr& value) const {
    return Call::make(to.with_lanes(lanes_), Op::get("reinterpret"), {value});
  }

 private:
  static Expr builtin(const char* name, const Expr& a, const Expr& b) {
    return Call::make(a.dtype(), Op::get(name), {a, b});
  }

  int lanes_;
};

// `body(v)` with v bound to `value` by a Let, so that a value used several times is computed
// once. Each call makes a new variable: a formula may appear many times in one function.
Expr let(const char* name, const Expr& value, const std::function<Expr(const Expr&)>& body) {
  Var var = Var::make(name, value.dtype());
  return Let::make(var, value, body(var));
}

// bfloat16 is the high half of a float32.
Expr bfloat16_to_float32(const Expr& bits) {
  U32 u(bits.dtype().lanes());
  return u.reinterpret(DataType::Float(32), u.shl(Cast::make(u.type(), bits), 16));
}

// Round to nearest even by adding 0x7FFF plus the lowest kept bit, then keeping the high half.
// A carry out of the mantissa moves into the exponent, so overflow gives infinity. NaN (which
// the carry could turn into infinity) is caught first.
Expr float32_to_bfloat16(const Expr& value) {
  const int lanes = value.dtype().lanes();
  U32 u(lanes);
  return let("x_bits", u.reinterpret(DataType::UInt(32), value), [&](const Expr& x) {
    Expr high = u.shr(x, 16);
    Expr is_nan = GT::make(u.band(x, 0x7FFFFFFF), u.k(0x7F800000));
    Expr nan = u.bor(u.band(high, 0x8000), fp::kBFloat16.nan_bits);
    Expr rounded = u.shr(Add::make(Add::make(x, u.k(0x7FFF)), u.band(high, 1)), 16);
    return Cast::make(DataType::UInt(16, lanes), Select::make(is_nan, nan, rounded));
  });
}

int exponent_bias(const fp::Format& f) { return (1 << (f.exponent_bits - 1)) - 1; }

// A float8 value: sign, then `m`, the 7 magnitude bits (exponent field, mantissa field).
//   normal (exponent field != 0): the fields move up into float32 position and the exponent
//     is re-biased by adding (127 - bias) << 23;
//   subnormal (m = 1 .. 2^M - 1, value m * 2^(1 - bias - M)): with p the position of m's
//     leading bit, shifting m left by 23 - p puts that bit on the implicit one (bit 23), whose
//     carry into the exponent field is part of the exponent p + 127 - bias - M + 1;
//   all-ones exponent (e5m2): infinity or NaN; magnitude 0x7F (e4m3fn): NaN.
Expr float8_to_float32(const fp::Format& f, const Expr& bits) {
  const int lanes = bits.dtype().lanes();
  const int m_bits = f.mantissa_bits;
  const uint32_t bias = exponent_bias(f);
  U32 u(lanes);
  return let("u", Cast::make(u.type(), bits), [&](const Expr& w) {
    Expr sign = u.shl(u.band(w, 0x80), 24);
    return let("m", u.band(w, 0x7F), [&](const Expr& m) {
      Expr normal = Add::make(u.shl(m, 23 - m_bits), u.k((127 - bias) << 23));
      Expr p = u.k(0);
      for (int k = 1; k < m_bits; ++k) p = Select::make(GE::make(m, u.k(1u << k)), u.k(k), p);
      Expr subnormal = let("p", p, [&](const Expr& lead) {
        return Add::make(u.shl(m, Sub::make(u.k(23), lead)),
                         u.shl(Add::make(lead, u.k(127 - bias - m_bits)), 23));
      });
      Expr finite = Select::make(GE::make(m, u.k(1u << m_bits)), normal,
                                 Select::make(EQ::make(m, u.k(0)), u.k(0), subnormal));
      Expr magnitude;
      if (f.has_infinity) {
        const uint32_t inf_code = ((1u << f.exponent_bits) - 1) << m_bits;
        magnitude = Select::make(
            GE::make(m, u.k(inf_code)),
            Select::make(EQ::make(m, u.k(inf_code)), u.k(0x7F800000), u.k(0x7FC00000)), finite);
      } else {
        magnitude = Select::make(EQ::make(m, u.k(f.nan_bits)), u.k(0x7FC00000), finite);
      }
      return u.reinterpret(DataType::Float(32), u.bor(sign, magnitude));
    });
  });
}

// float32 (magnitude bits `a`, exponent field ex) to float8, rounding to nearest even:
//   normal target (ex - 127 + bias >= 1): re-bias the exponent, then drop 23 - M mantissa bits
//     adding half - 1 plus the lowest kept bit; a carry moves into the exponent;
//   subnormal target: the code is the significand (implicit bit included) shifted right by
//     s = 151 - bias - M - ex, rounded the same way; s is clamped to 31 (every value that far
//     down rounds to 0, float32 subnormals included), which keeps every shift below 32;
//   NaN gives the format's NaN; the finite result saturates at the largest finite code, which
//     also catches infinity and values that round past it.
Expr float32_to_float8(const fp::Format& f, const Expr& value) {
  PRIMJIT_ICHECK(f.saturates) << "the float8 formulas assume saturating formats";
  const int lanes = value.dtype().lanes();
  const int drop = 23 - f.mantissa_bits;
  const uint32_t bias = exponent_bias(f);
  U32 u(lanes);
  return let("x_bits", u.reinterpret(DataType::UInt(32), value), [&](const Expr& x) {
    Expr sign = u.shr(u.band(x, 0x80000000), 24);
    return let("a", u.band(x, 0x7FFFFFFF), [&](const Expr& a) {
      Expr ex = u.shr(a, 23);
      Expr normal = let("r", Sub::make(a, u.k((127 - bias) << 23)), [&](const Expr& r) {
        Expr half = u.k((1u << (drop - 1)) - 1);
        return u.shr(Add::make(Add::make(r, half), u.band(u.shr(r, drop), 1)), drop);
      });
      Expr shift = Min::make(
          Sub::make(u.k(151 - bias - f.mantissa_bits), Min::make(ex, u.k(127 - bias))), u.k(31));
      Expr subnormal = let("s", shift, [&](const Expr& s) {
        return let("sig", u.bor(u.band(a, 0x7FFFFF), 0x800000), [&](const Expr& sig) {
          Expr half = Sub::make(u.shl(u.k(1), Sub::make(s, u.k(1))), u.k(1));
          return u.shr(Add::make(Add::make(sig, half), u.band(u.shr(sig, s), 1)), s);
        });
      });
      Expr code = Select::make(GE::make(ex, u.k(128 - bias)), normal, subnormal);
      Expr magnitude = Select::make(GT::make(a, u.k(0x7F800000)), u.k(f.nan_bits),
                                    Min::make(code, u.k(f.max_bits)));
      return Cast::make(DataType::UInt(8, lanes), u.bor(sign, magnitude));
    });
  });
}

}  // namespace

Expr narrow_bits_to_float32(DataType narrow, const Expr& bits) {
  const fp::Format& f = narrow_format(narrow.element_of());
  PRIMJIT_ICHECK(bits.dtype().is_uint() &&
                 bits.dtype().bits() == 1 + f.exponent_bits + f.mantissa_bits)
      << "bits of " << narrow << " must be unsigned of its width, got " << bits.dtype();
  if (narrow.is_bfloat16()) return bfloat16_to_float32(bits);
  return float8_to_float32(f, bits);
}

Expr float32_to_narrow_bits(DataType narrow, const Expr& value) {
  const fp::Format& f = narrow_format(narrow.element_of());
  PRIMJIT_ICHECK(value.dtype().element_of() == DataType::Float(32))
      << "conversion to " << narrow << " needs a float32 value, got " << value.dtype();
  if (narrow.is_bfloat16()) return float32_to_bfloat16(value);
  return float32_to_float8(f, value);
}

// =============================================================================================
// The pass
// =============================================================================================

namespace {

// Pure value computations: narrow operands are computed in float32, like arithmetic.
bool is_compute_op(const Call* op) {
  if (!op->op.defined()) return false;
  OpKind kind = op->op->op_kind;
  return kind == OpKind::kMath || kind == OpKind::kSelect || kind == OpKind::kMessage;
}

// Does the function mention one of the narrow types anywhere (values, pointers, buffers)?
class NarrowFinder : public StmtExprVisitor {
 public:
  explicit NarrowFinder(const NarrowStorage& spec) : spec_(spec) {}

  bool find(const PrimFunc& func) {
    found_ = spec_.is_narrow(func->ret_type);
    if (!found_) visit_function(func);
    return found_;
  }

  void visit_expr(const Expr& expr) override {
    if (found_) return;
    const auto* var = expr.as<VarNode>();
    if (spec_.is_narrow(expr.dtype()) || (var != nullptr && spec_.is_narrow(var->pointee))) {
      found_ = true;
      return;
    }
    StmtExprVisitor::visit_expr(expr);
  }
  void visit_buffer_def(const Buffer& buffer) override {
    found_ = found_ || spec_.is_narrow(buffer->dtype);
    if (!found_) StmtExprVisitor::visit_buffer_def(buffer);
  }
  void visit(const AttrStmt* op) override {
    if (const auto* buffer = op->node.as<BufferNode>()) {
      found_ = found_ || spec_.is_narrow(buffer->dtype);
    }
    if (const auto* var = op->node.as<VarNode>()) visit_expr(Var(var));
    StmtExprVisitor::visit(op);
  }

 private:
  const NarrowStorage& spec_;
  bool found_ = false;
};

class Legalizer : public StmtExprMutator {
 public:
  explicit Legalizer(const NarrowStorage& spec) : spec_(spec) {}

  PrimFunc run(const PrimFunc& func) {
    std::vector<Var> params;
    params.reserve(func->params.size());
    for (const Var& param : func->params) params.push_back(legalize_param(param));
    Stmt body = mutate_stmt(func->body);
    DataType ret = narrow(func->ret_type) ? storage_of(func->ret_type) : func->ret_type;
    return PrimFunc::make(std::move(params), {}, std::move(body), ret, func->attrs);
  }

  // --- variables and buffers ---------------------------------------------------------------

  Expr mutate(const VarNode* op) override {
    const Remap& remap = remap_var(op);
    if (remap.widen_uses) return widen(op->dtype, remap.var);
    return remap.var;
  }

  Buffer mutate_buffer_def(const Buffer& buffer) override {
    Buffer b = StmtExprMutator::mutate_buffer_def(buffer);  // remaps the data pointer
    if (!narrow(b->dtype)) return b;
    Buffer storage = Buffer::make(b->data, storage_of(b->dtype), b->shape, b->strides,
                                  b->elem_offset, b->name, b->data_alignment, b->offset_factor);
    remap_buffer(buffer, storage);
    return storage;
  }

  Stmt mutate(const AttrStmt* op) override {
    Ref<Object> node = op->node;
    if (const auto* var = node.as<VarNode>()) {
      node = remap_var(var).var;
    } else if (const auto* buffer = node.as<BufferNode>()) {
      node = mutate_buffer_use(Buffer(buffer));
    }
    Stmt rebuilt = StmtExprMutator::mutate(op);
    if (node.same_as(op->node)) return rebuilt;
    const auto* attr = rebuilt.as<AttrStmt>();
    return AttrStmt::make(std::move(node), attr->key, attr->value, attr->body);
  }

  // --- loads and stores --------------------------------------------------------------------

  Expr mutate(const BufferLoad* op) override {
    if (!narrow(op->dtype)) return StmtExprMutator::mutate(op);
    return widen(op->dtype, load_bits(op));
  }

  Stmt mutate(const BufferStore* op) override {
    if (!narrow(op->buffer->dtype)) return StmtExprMutator::mutate(op);
    Buffer buffer = storage_buffer(op->buffer);
    Expr value = to_storage(op->value);
    std::vector<Expr> indices = op->indices;
    mutate_exprs(op->indices, &indices);
    return BufferStore::make(std::move(buffer), std::move(value), std::move(indices));
  }

  // --- values --------------------------------------------------------------------------------

  Expr mutate(const FloatImm* op) override {
    if (!narrow(op->dtype)) return Expr(op);
    return FloatImm::make(DataType::Float(32),
                          fp::round_to(narrow_format(op->dtype), static_cast<float>(op->value)));
  }

  Expr mutate(const Cast* op) override {
    const DataType to = op->dtype;
    const DataType from = op->value.dtype();
    if (!narrow(to) && !narrow(from)) return StmtExprMutator::mutate(op);
    if (to == from) return mutate_expr(op->value);
    // An explicit cast to a narrow type rounds; its result is then computed on in float32.
    if (narrow(to)) return widen(to, float32_to_narrow_bits(to, as_float32(op->value)));
    Expr value = mutate_expr(op->value);  // float32
    return value.dtype() == to ? value : Cast::make(to, std::move(value));
  }

  Expr mutate(const Call* op) override {
    if (op->is_op("reinterpret")) {
      Expr bits = reinterpret_bits(op);
      return narrow(op->dtype) ? widen(op->dtype, bits) : bits;
    }
    if (is_compute_op(op)) {
      std::vector<Expr> args = op->args;
      bool changed = mutate_exprs(op->args, &args);
      if (!changed && !narrow(op->dtype)) return Expr(op);
      return Call::make(compute_of(op->dtype), op->op, std::move(args));
    }
    Expr call = opaque_call(op);
    return narrow(op->dtype) ? widen(op->dtype, call) : call;
  }

  // An evaluated call keeps its storage-typed result (e.g. T.ret of a narrow value).
  Stmt mutate(const Evaluate* op) override {
    const auto* call = op->value.as<Call>();
    if (call == nullptr || call->is_op("reinterpret") || is_compute_op(call)) {
      return StmtExprMutator::mutate(op);
    }
    Expr value = opaque_call(call);
    return value.same_as(op->value) ? Stmt(op) : Evaluate::make(std::move(value));
  }

 private:
  // What a variable becomes: `var` itself, a pointer to storage, a float32 variable (Bind,
  // Let), or a storage-typed parameter whose uses are widened.
  struct Remap {
    Var var;
    bool widen_uses = false;
  };

  bool narrow(DataType t) const { return spec_.is_narrow(t); }
  DataType storage_of(DataType t) const { return DataType::UInt(spec_.storage_bits, t.lanes()); }
  DataType compute_of(DataType t) const { return narrow(t) ? DataType::Float(32, t.lanes()) : t; }
  Expr widen(DataType t, const Expr& bits) const { return narrow_bits_to_float32(t, bits); }

  const Remap& remap_var(const VarNode* op) {
    auto it = vars_.find(op);
    if (it != vars_.end()) return it->second;
    Var var(op);
    if (op->is_pointer() && narrow(op->pointee)) {
      var = Var::make_pointer(op->name, storage_of(op->pointee), op->storage_scope);
    } else if (narrow(op->dtype)) {
      var = Var::make(op->name, compute_of(op->dtype));
    }
    return vars_.emplace(op, Remap{var, false}).first->second;
  }

  Var legalize_param(const Var& param) {
    if (param->is_pointer() || !narrow(param.dtype())) return remap_var(param.get()).var;
    // A narrow scalar argument arrives as its bits.
    Var var = Var::make(param->name, storage_of(param.dtype()));
    vars_.emplace(param.get(), Remap{var, true});
    return var;
  }

  Buffer storage_buffer(const Buffer& buffer) {
    Buffer result = mutate_buffer_use(buffer);
    PRIMJIT_ICHECK(!narrow(result->dtype))
        << spec_.pass_name << ": buffer '" << buffer->name << "' is used without a declaration";
    return result;
  }

  Expr load_bits(const BufferLoad* op) {
    Buffer buffer = storage_buffer(op->buffer);
    std::vector<Expr> indices = op->indices;
    mutate_exprs(op->indices, &indices);
    return BufferLoad::make(std::move(buffer), std::move(indices));
  }

  Expr as_float32(const Expr& value) {
    Expr result = mutate_expr(value);
    DataType f32 = DataType::Float(32, value.dtype().lanes());
    return result.dtype() == f32 ? result : Cast::make(f32, std::move(result));
  }

  // The storage bits of `e`, an expression of a narrow type. Bits are copied where they exist
  // (loads, literals, reinterprets, storage-typed calls); other values are computed in float32
  // and rounded once.
  Expr to_storage(const Expr& e) {
    const DataType t = e.dtype();
    PRIMJIT_ICHECK(narrow(t)) << "to_storage of " << t;
    switch (e.kind()) {
      case NodeKind::kFloatImm:
        return IntImm::make(storage_of(t), fp::encode(narrow_format(t),
                                                      static_cast<float>(e.as<FloatImm>()->value)));
      case NodeKind::kBufferLoad:
        return load_bits(e.as<BufferLoad>());
      case NodeKind::kVar: {
        const Remap& remap = remap_var(e.as<VarNode>());
        if (remap.widen_uses) return remap.var;
        break;
      }
      case NodeKind::kCast: {
        const auto* cast = e.as<Cast>();
        if (cast->value.dtype() == t) return to_storage(cast->value);
        return float32_to_narrow_bits(t, as_float32(cast->value));
      }
      case NodeKind::kSelect: {
        const auto* select = e.as<Select>();
        return Select::make(mutate_expr(select->condition), to_storage(select->true_value),
                            to_storage(select->false_value));
      }
      case NodeKind::kBroadcast: {
        const auto* broadcast = e.as<Broadcast>();
        return Broadcast::make(to_storage(broadcast->value), broadcast->lanes);
      }
      case NodeKind::kCall: {
        const auto* call = e.as<Call>();
        if (call->is_op("reinterpret")) return reinterpret_bits(call);
        if (!is_compute_op(call)) return opaque_call(call);
        break;
      }
      default:
        break;
    }
    return float32_to_narrow_bits(t, mutate_expr(e));
  }

  // `T.reinterpret` at the bit level: narrow types on either side become their storage type,
  // and a reinterpret between equal types is dropped.
  Expr reinterpret_bits(const Call* op) {
    const Expr& source = op->args[0];
    Expr bits = narrow(source.dtype()) ? to_storage(source) : mutate_expr(source);
    DataType to = narrow(op->dtype) ? storage_of(op->dtype) : op->dtype;
    if (bits.dtype() == to) return bits;
    if (bits.same_as(source) && to == op->dtype) return Expr(op);
    return Call::make(to, op->op, {std::move(bits)});
  }

  // Calls the pass cannot look into (externs, packed calls, other functions, pointers): narrow
  // arguments and results travel as their storage bits.
  Expr opaque_call(const Call* op) {
    bool changed = narrow(op->dtype);
    std::vector<Expr> args;
    args.reserve(op->args.size());
    for (const Expr& arg : op->args) {
      Expr m = narrow(arg.dtype()) ? to_storage(arg) : mutate_expr(arg);
      changed = changed || !m.same_as(arg);
      args.push_back(std::move(m));
    }
    if (!changed) return Expr(op);
    DataType t = narrow(op->dtype) ? storage_of(op->dtype) : op->dtype;
    return op->op.defined() ? Call::make(t, op->op, std::move(args))
                            : Call::make(t, op->callee, std::move(args));
  }

  const NarrowStorage& spec_;
  std::unordered_map<const VarNode*, Remap> vars_;
};

}  // namespace

Target deciding_target(const PrimFunc& func) {
  Target target = func->target();
  if (!target.defined() || !target->host.defined()) return target;
  bool device_code = false;
  post_order_visit(func->body, [&](const Ref<Object>& node) {
    if (const auto* attr_stmt = node.as<AttrStmt>()) {
      device_code =
          device_code || attr_stmt->key == attr::kThreadExtent ||
          attr_stmt->key == attr::kDeviceScope ||
          (attr_stmt->key == attr::kTarget && attr_stmt->node.as<TargetNode>() != nullptr);
    }
    if (const auto* loop = node.as<For>()) {
      device_code = device_code || loop->for_kind == ForKind::kThreadBinding;
    }
  });
  return device_code ? target : target->host;
}

PrimFunc storage_legalize(const PrimFunc& func, const std::string& name,
                          const NarrowStorage& spec) {
  if (has_native_support(deciding_target(func), spec)) return func;
  if (!NarrowFinder(spec).find(func)) return func;
  PRIMJIT_USER_CHECK(func->buffer_map.empty())
      << spec.pass_name << ": function '" << name << "' still binds " << func->buffer_map.size()
      << " buffer" << (func->buffer_map.size() == 1 ? "" : "s")
      << " to its parameters (buffer_map, e.g. '" << func->buffer_map.front().second->name
      << "'); this pass must run after MakePackedAPI, which declares them with DeclBuffer";
  return Legalizer(spec).run(func);
}

Pass make_storage_legalize_pass(NarrowStorage spec, std::string summary) {
  std::string name = spec.pass_name;
  auto run = [spec = std::move(spec)](const IRModule& module, const PassArgs& args) {
    check_no_args(spec.pass_name, args);
    IRModule out = module;
    for (const auto& [gvar, func] : module->functions) {
      PrimFunc legalized = storage_legalize(func, gvar->name, spec);
      if (!legalized.same_as(func)) out = out.with_function(gvar->name, legalized);
    }
    return out;
  };
  return Pass{std::move(name), std::move(summary), std::move(run)};
}

}  // namespace primjit::passes
