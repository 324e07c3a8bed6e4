#include "jit/cuda/codegen_cuda.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "jit/cuda/semantics_cuda.h"
#include "jit/cuda/source_printer.h"
#include "jit/runtime/launch_limits.h"
#include "primjit/arith.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"

namespace primjit::jit {
namespace {

constexpr int64_t kMaxThreadsPerBlock = LaunchLimits{}.max_threads_per_block;

// Helpers the source may need; each is emitted once, and only when used. The semantics
// helpers (integer division, shifts, min/max, conversions) are in semantics_cuda.h.
enum class Helper { kReinterpret, kCpAsync };

// C++ operator precedence, tightest first. A printed expression carries the precedence of its
// outermost operator so parentheses appear only where they are needed.
enum Prec : int {
  kPrimary = 1,  // names, literals, calls, a[i], p->x
  kUnary = 2,    // casts, !, ~, unary -, *p, &x
  kMul = 3,
  kAdd = 4,
  kShift = 5,
  kRel = 6,
  kEq = 7,
  kBitAnd = 8,
  kBitXor = 9,
  kBitOr = 10,
  kLogAnd = 11,
  kLogOr = 12,
  kCond = 13,
  kAny = 14,
};

struct Code {
  std::string text;
  int prec = kPrimary;
};

// `c` as an operand that may be at most as loose as `max_prec`.
std::string wrap(const Code& c, int max_prec) {
  return c.prec <= max_prec ? c.text : "(" + c.text + ")";
}

bool is_narrow_int(DataType t) { return t.is_integer() && t.bits() < 32; }

bool reads_memory(const Expr& e) {
  bool found = false;
  post_order_visit(e, [&](const Ref<Object>& node) {
    found = found || node.as<BufferLoad>() != nullptr || node.as<Call>() != nullptr;
  });
  return found;
}

std::string c_string_literal(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\%03o", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// The shortest decimal text that reads back as `v` (as float when `single`).
std::string shortest_decimal(double v, bool single) {
  char buf[64];
  std::to_chars_result r = single ? std::to_chars(buf, buf + sizeof(buf), static_cast<float>(v))
                                  : std::to_chars(buf, buf + sizeof(buf), v);
  std::string text(buf, r.ptr);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

// The CUDA vector type with `t`'s element type and lane count, when the toolkit has one that
// is naturally aligned to its size (float4, int2, half2, ...).
std::optional<std::string> natural_vector_type(DataType t) {
  static const std::map<std::pair<std::string, int>, std::string> kTypes = {
      {{"float32", 2}, "float2"},
      {{"float32", 4}, "float4"},
      {{"float64", 2}, "double2"},
      {{"int32", 2}, "int2"},
      {{"int32", 4}, "int4"},
      {{"uint32", 2}, "uint2"},
      {{"uint32", 4}, "uint4"},
      {{"int16", 2}, "short2"},
      {{"int16", 4}, "short4"},
      {{"uint16", 2}, "ushort2"},
      {{"uint16", 4}, "ushort4"},
      {{"int8", 4}, "char4"},
      {{"uint8", 4}, "uchar4"},
      {{"int64", 2}, "longlong2"},
      {{"uint64", 2}, "ulonglong2"},
      {{"float16", 2}, "half2"},
      {{"bfloat16", 2}, "nv_bfloat162"},
  };
  auto it = kTypes.find({t.element_of().str(), t.lanes()});
  if (it == kTypes.end()) return std::nullopt;
  return it->second;
}

std::string make_vector_fn(const std::string& type) {
  if (type == "half2") return "make_half2";
  if (type == "nv_bfloat162") return "make_bfloat162";
  return "make_" + type;
}

const char* lane_member(int lane) {
  static const char* const kMembers[] = {"x", "y", "z", "w"};
  return kMembers[lane];
}

// How CUDA code computes the math builtins that have no C library function in the op table
// (the others call it: "expf" for float, "exp" for double).
enum class CudaMath {
  kFunction,  // the CUDA math function of the op's name (rsqrtf, rsqrt)
  kSigmoid,   // 1 / (1 + exp(-x))
  kClassify,  // isnan, isinf, isfinite: CUDA's classification functions on float or double
};

const OpMap<CudaMath>& cuda_math() {
  static const OpMap<CudaMath> lowering = [] {
    OpMap<CudaMath> m("CUDA code generation's math lowering");
    m.set("rsqrt", CudaMath::kFunction)
        .set("sigmoid", CudaMath::kSigmoid)
        .set("isnan", CudaMath::kClassify)
        .set("isinf", CudaMath::kClassify)
        .set("isfinite", CudaMath::kClassify);
    std::vector<std::string> missing =
        m.missing([](const OpNode& op) { return op.is_math() && op.libm.empty(); });
    PRIMJIT_ICHECK(missing.empty()) << m.what() << " lacks T." << missing.front();
    return m;
  }();
  return lowering;
}

// State shared by the functions of one module.
struct ModuleState {
  CudaCodegenOptions options;
  bool uses_fp16 = false;
  bool uses_bf16 = false;
  bool uses_fp8 = false;
  std::set<Helper> helpers;
  std::set<SemanticsHelper> semantics;
  // Names every function must keep free: function symbols, helpers, extern shared arrays.
  std::set<std::string> reserved;
  // Symbols of the module's device functions, by IR function name.
  std::map<std::string, std::string> device_functions;
};

class FunctionCodegen : public ExprFunctor<FunctionCodegen, Code, int>,
                        public StmtFunctor<FunctionCodegen, void> {
 public:
  FunctionCodegen(ModuleState& m, std::string symbol, bool is_kernel)
      : m_(m), symbol_(std::move(symbol)), is_kernel_(is_kernel) {
    for (const std::string& name : m_.reserved) names_.reserve(name);
  }

  // Emits the whole function; returns its source text.
  std::string emit(const PrimFunc& f, CudaKernelInfo* info) {
    PRIMJIT_USER_CHECK(f->buffer_map.empty())
        << "CUDA code generation: " << where() << " still has a buffer_map; lower it with the "
        << "default pipeline (SplitHostDevice gives kernels plain pointer parameters)";
    reserve_extern_call_names(f->body);

    const AttrValue* noalias_attr = f->attr(attr::kNoAlias);
    const bool noalias =
        noalias_attr != nullptr && noalias_attr->is_bool() && noalias_attr->as_bool();
    std::vector<std::string> params;
    for (const Var& p : f->params) {
      std::string name = names_.unique(p->name);
      var_names_[p.get()] = name;
      if (p->is_pointer() || p.dtype().is_handle()) {
        trusted_pointers_.insert(p.get());
        params.push_back(pointer_type(p.get()) +
                         (noalias && p->is_pointer() ? " __restrict__ " : " ") + name);
        if (info != nullptr) info->param_types.push_back(DataType::Handle());
      } else {
        PRIMJIT_USER_CHECK(p.dtype().is_scalar())
            << "CUDA code generation: parameter '" << p->name << "' of " << where()
            << " has the vector type " << p.dtype() << "; kernels take scalars and pointers";
        params.push_back(scalar_type(p.dtype()) + " " + name);
        if (info != nullptr) info->param_types.push_back(p.dtype());
      }
    }
    std::string joined;
    for (size_t i = 0; i < params.size(); ++i) joined += (i == 0 ? "" : ", ") + params[i];

    std::string head;
    if (is_kernel_) {
      int64_t threads = static_thread_count(f->body);
      // The message of the launch-time check (launch_limits.h), which the interpreter shares.
      if (std::string why = threads_per_block_error(LaunchLimits{}, threads); !why.empty()) {
        PRIMJIT_USER_ERROR() << "CUDA code generation: " << where() << " launches " << why;
      }
      head = "extern \"C\" __global__ void ";
      if (threads > 0) head += "__launch_bounds__(" + std::to_string(threads) + ") ";
      if (info != nullptr) info->static_threads = threads;
    } else {
      head = "extern \"C\" __device__ " + return_type(f->ret_type) + " ";
    }
    prototype_ = head + symbol_ + "(" + joined + ")";

    w_.open(prototype_);
    visit_stmt(f->body);
    w_.close();
    if (std::string why = shared_memory_error(LaunchLimits{}, static_shared_bytes_, 0);
        !why.empty()) {
      PRIMJIT_USER_ERROR() << "CUDA code generation: " << where() << " " << why;
    }
    if (info != nullptr) info->dyn_shared_align = dyn_shared_align_;
    return w_.str();
  }

  const std::string& prototype() const { return prototype_; }

  // --- types --------------------------------------------------------------------------------

  std::string scalar_type(DataType t) {
    PRIMJIT_USER_CHECK(t.is_scalar())
        << "CUDA code generation: no C type for the vector " << t << " here (in " << where() << ")";
    static const std::map<std::string, std::string> kTypes = {
        {"bool", "bool"},
        {"int8", "int8_t"},
        {"int16", "int16_t"},
        {"int32", "int"},
        {"int64", "long long"},
        {"uint8", "uint8_t"},
        {"uint16", "uint16_t"},
        {"uint32", "unsigned int"},
        {"uint64", "uint64_t"},
        {"float16", "half"},
        {"float32", "float"},
        {"float64", "double"},
        {"bfloat16", "__nv_bfloat16"},
        {"float8_e4m3fn", "__nv_fp8_e4m3"},
        {"float8_e5m2", "__nv_fp8_e5m2"},
        {"handle", "void*"},
    };
    auto it = kTypes.find(t.str());
    PRIMJIT_USER_CHECK(it != kTypes.end())
        << "CUDA code generation: dtype " << t << " is not supported (in " << where() << ")";
    // The toolkit header each narrow floating type needs.
    m_.uses_fp16 = m_.uses_fp16 || (t.is_float() && t.bits() == 16);
    m_.uses_bf16 = m_.uses_bf16 || t.is_bfloat16();
    m_.uses_fp8 = m_.uses_fp8 || t.is_float8();
    return it->second;
  }

  // The C type of a buffer element or a vector value with a natural CUDA vector type.
  std::string element_type(DataType t) {
    if (t.is_scalar()) return scalar_type(t);
    std::optional<std::string> vt = natural_vector_type(t);
    PRIMJIT_USER_CHECK(vt.has_value())
        << "CUDA code generation: buffers of " << t << " are not supported (in " << where()
        << "); use a scalar element type with vector (Ramp) indices";
    scalar_type(t.element_of());  // records the header the element type needs
    return *vt;
  }

  std::string pointer_type(const VarNode* v) {
    if (!v->is_pointer() || v->pointee.is_void()) return "void*";
    return element_type(v->pointee) + "*";
  }

  std::string return_type(DataType t) { return t.is_void() ? "void" : scalar_type(t); }

  // --- expressions --------------------------------------------------------------------------

  Code visit(const IntImm* op, int) { return int_literal(op->dtype, op->value); }

  Code visit(const FloatImm* op, int) {
    DataType t = op->dtype;
    double v = op->value;
    bool single = !(t.is_float() && t.bits() == 64);
    Code lit;
    if (std::isnan(v)) {
      lit = {single ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000LL)",
             kPrimary};
    } else if (std::isinf(v)) {
      std::string inf =
          single ? "__int_as_float(0x7f800000)" : "__longlong_as_double(0x7ff0000000000000LL)";
      lit = v > 0 ? Code{inf, kPrimary} : Code{"-" + inf, kUnary};
    } else {
      std::string text = shortest_decimal(v, single) + (single ? "f" : "");
      lit = {text, text[0] == '-' ? kUnary : kPrimary};
    }
    if (t.is_float() && t.bits() >= 32) return lit;
    return from_float(t, lit);
  }

  Code visit(const StringImm* op, int) { return {c_string_literal(op->value), kPrimary}; }

  Code visit(const VarNode* op, int lane) {
    const std::string& name = name_of(op);
    if (lane < 0) return {name, kPrimary};
    if (natural_vector_type(op->dtype).has_value()) {
      return {name + "." + lane_member(lane), kPrimary};
    }
    return {name + "[" + std::to_string(lane) + "]", kPrimary};
  }

  Code visit(const Add* op, int lane) { return binary(op, "+", kAdd, lane); }
  Code visit(const Sub* op, int lane) { return binary(op, "-", kAdd, lane); }
  Code visit(const Mul* op, int lane) { return binary(op, "*", kMul, lane); }
  Code visit(const Div* op, int lane) {
    if (op->dtype.is_floating()) return binary(op, "/", kMul, lane);
    return int_division(op, "/", "primjit_truncdiv", false, lane);
  }
  Code visit(const Mod* op, int lane) {
    if (op->dtype.is_floating()) {
      return float_math(op->dtype, "fmod", {sub(op->a, lane), sub(op->b, lane)});
    }
    return int_division(op, "%", "primjit_truncmod", false, lane);
  }
  Code visit(const FloorDiv* op, int lane) {
    DataType t = op->dtype;
    if (t.is_floating()) {
      // The quotient rounded to t (narrow types too), then floor.
      Code q = float_binary(t, op->a, op->b, "/", kMul, lane, /*keep_type=*/true);
      return float_math(t, "floor", {q});
    }
    return int_division(op, "/", "primjit_floordiv", true, lane);
  }
  Code visit(const FloorMod* op, int lane) {
    DataType t = op->dtype.element_of();
    if (t.is_floating()) {
      std::vector<Code> args = {sub(op->a, lane), sub(op->b, lane)};
      if (t.is_float() && t.bits() >= 32) {
        m_.semantics.insert(SemanticsHelper::kFloorModFloat);
        return call("primjit_floormod", args);
      }
      m_.semantics.insert(SemanticsHelper::kFloorModNarrow);
      return call("primjit_floormod_narrow<" + scalar_type(t) + ">", args);
    }
    return int_division(op, "%", "primjit_floormod", true, lane);
  }
  Code visit(const Min* op, int lane) { return min_max(op->dtype, op->a, op->b, true, lane); }
  Code visit(const Max* op, int lane) { return min_max(op->dtype, op->a, op->b, false, lane); }
  Code visit(const EQ* op, int lane) { return compare(op->a, op->b, "==", kEq, lane); }
  Code visit(const NE* op, int lane) { return compare(op->a, op->b, "!=", kEq, lane); }
  Code visit(const LT* op, int lane) { return compare(op->a, op->b, "<", kRel, lane); }
  Code visit(const LE* op, int lane) { return compare(op->a, op->b, "<=", kRel, lane); }
  Code visit(const GT* op, int lane) { return compare(op->a, op->b, ">", kRel, lane); }
  Code visit(const GE* op, int lane) { return compare(op->a, op->b, ">=", kRel, lane); }
  Code visit(const And* op, int lane) { return logical(op->a, op->b, "&&", kLogAnd, lane); }
  Code visit(const Or* op, int lane) { return logical(op->a, op->b, "||", kLogOr, lane); }
  Code visit(const Not* op, int lane) { return {"!" + wrap(sub(op->a, lane), kUnary), kUnary}; }

  Code visit(const Select* op, int lane) {
    if (has_side_effects(op->true_value) || has_side_effects(op->false_value)) {
      check_scalar(op->dtype, "a Select with side effects", lane);
      // All three operands run, left to right, as the IR says.
      std::string c = names_.unique("cond");
      std::string t = names_.unique("true_value");
      std::string f = names_.unique("false_value");
      std::string type = scalar_type(op->dtype);
      return immediately_invoked(
          type, "bool " + c + " = " + sub(op->condition, -1).text + "; " + type + " " + t + " = " +
                    sub(op->true_value, -1).text + "; " + type + " " + f + " = " +
                    sub(op->false_value, -1).text + "; return " + c + " ? " + t + " : " + f + ";");
    }
    return conditional(sub(op->condition, lane), sub(op->true_value, lane),
                       sub(op->false_value, lane));
  }

  Code visit(const Cast* op, int lane) {
    return cast(op->dtype.element_of(), op->value.dtype().element_of(), sub(op->value, lane));
  }

  Code visit(const Let* op, int lane) {
    check_scalar(op->dtype, "a Let expression", lane);
    // A chain of Lets becomes one lambda with a local per binding.
    std::string body;
    Expr rest(op);
    while (const auto* let = rest.as<Let>()) {
      PRIMJIT_USER_CHECK(let->var.dtype().is_scalar())
          << "CUDA code generation: Let of the vector variable '" << let->var->name << "' in "
          << where() << " is not supported; bind it with a statement instead";
      std::string name = names_.unique(let->var->name);
      body += value_type(let->var.get()) + " " + name + " = " +
              coerce_to_var(let->var.get(), let->value) + "; ";
      var_names_[let->var.get()] = name;
      rest = let->body;
    }
    return immediately_invoked(scalar_type(op->dtype), body + "return " + sub(rest, -1).text + ";");
  }

  Code visit(const BufferLoad* op, int lane) {
    const Buffer& buf = op->buffer;
    Expr index = flat_index(buf, op->indices);
    if (index.dtype().is_vector()) {
      PRIMJIT_USER_CHECK(lane >= 0) << "CUDA code generation: a vector load of '" << buf->name
                                    << "' used as a scalar in " << where();
      if (std::optional<Code> whole = vector_access(buf, index, op->dtype, /*is_store=*/false)) {
        return {wrap(*whole, kPrimary) + "->" + lane_member(lane), kPrimary};
      }
      return {wrap(pointer_of(buf), kPrimary) + "[" + sub(index, lane).text + "]", kPrimary};
    }
    std::string element = wrap(pointer_of(buf), kPrimary) + "[" + sub(index, -1).text + "]";
    if (op->dtype.is_vector()) {  // an element of a buffer of vectors (float4, ...)
      PRIMJIT_USER_CHECK(lane >= 0) << "CUDA code generation: a vector load of '" << buf->name
                                    << "' used as a scalar in " << where();
      return {element + "." + lane_member(lane), kPrimary};
    }
    return {element, kPrimary};
  }

  Code visit(const Ramp* op, int lane) {
    PRIMJIT_USER_CHECK(lane >= 0) << "CUDA code generation: a Ramp used as a scalar in " << where();
    if (lane == 0) return sub(op->base, -1);
    DataType t = op->base.dtype();
    Expr offset = as_const_int(op->stride) ? IntImm::make(t, *as_const_int(op->stride) * lane)
                                           : Mul::make(op->stride, IntImm::make(t, lane));
    return sub(arith::simplify(Add::make(op->base, offset)), -1);
  }

  Code visit(const Broadcast* op, int lane) {
    PRIMJIT_USER_CHECK(lane >= 0) << "CUDA code generation: a Broadcast used as a scalar in "
                                  << where();
    return sub(op->value, -1);
  }

  Code visit(const Call* op, int lane) {
    if (!op->op.defined()) return call_function(op, lane);
    const std::string& name = op->op->name;
    if (name == "if_then_else") {
      return conditional(sub(op->args[0], lane), sub(op->args[1], lane), sub(op->args[2], lane));
    }
    if (name == "likely") return sub(op->args[0], lane);
    if (name == "reinterpret") return reinterpret(op, lane);
    if (name == "shift_left" || name == "shift_right") return shift(op, lane);
    if (name == "bitwise_and")
      return infix(sub(op->args[0], lane), "&", kBitAnd, sub(op->args[1], lane));
    if (name == "bitwise_or")
      return infix(sub(op->args[0], lane), "|", kBitOr, sub(op->args[1], lane));
    if (name == "bitwise_xor")
      return infix(sub(op->args[0], lane), "^", kBitXor, sub(op->args[1], lane));
    if (name == "bitwise_not") {
      if (op->dtype.is_bool()) return {"!" + wrap(sub(op->args[0], lane), kUnary), kUnary};
      return narrow_result(op->dtype, {"~" + wrap(sub(op->args[0], lane), kUnary), kUnary});
    }
    if (name == "isnullptr") return {wrap(sub(op->args[0], -1), kRel) + " == nullptr", kEq};
    if (Code math; math_call(op, lane, &math)) return math;
    check_scalar(op->dtype, "T." + name, lane);
    if (name == "tvm_storage_sync") return storage_sync(op);
    if (name == "tvm_access_ptr") return access_ptr(op);
    if (name == "address_of") {
      const auto* load = op->args[0].as<BufferLoad>();
      PRIMJIT_USER_CHECK(load != nullptr && load->dtype.is_scalar())
          << "CUDA code generation: T.address_of needs a scalar buffer load (in " << where() << ")";
      return {"&" + visit(load, -1).text, kUnary};
    }
    if (name == "ptx_cp_async") return cp_async(op);
    if (name == "ptx_commit_group") return {"asm volatile(\"cp.async.commit_group;\")", kPrimary};
    if (name == "ptx_wait_group") {
      std::optional<int64_t> n = as_const_int(op->args[0]);
      PRIMJIT_USER_CHECK(n.has_value()) << "CUDA code generation: T.ptx_wait_group needs a "
                                           "constant group count (in "
                                        << where() << ")";
      return {"asm volatile(\"cp.async.wait_group " + std::to_string(*n) + ";\")", kPrimary};
    }
    if (name == "call_extern" || name == "call_pure_extern") {
      const auto* fn = op->args.empty() ? nullptr : op->args[0].as<StringImm>();
      PRIMJIT_USER_CHECK(fn != nullptr && NameTable::is_valid_identifier(fn->value))
          << "CUDA code generation: T." << name << " needs a function name that is a C "
          << "identifier first (in " << where() << ")";
      std::vector<Code> args;
      for (size_t i = 1; i < op->args.size(); ++i) args.push_back(sub(op->args[i], -1));
      return call(fn->value, args);
    }
    if (name == "ret") {
      PRIMJIT_USER_ERROR() << "CUDA code generation: T.ret inside an expression in " << where()
                           << "; only `T.ret(value)` as a statement of a device function is "
                              "supported";
    }
    PRIMJIT_USER_ERROR() << "CUDA code generation: T." << name << " is not supported in device "
                         << "code (in " << where() << ")";
  }

  // --- statements ---------------------------------------------------------------------------

  void visit(const Bind* op) {
    const VarNode* v = op->var.get();
    std::string name = names_.unique(v->name);
    DataType t = v->dtype;
    if (t.is_vector()) {
      if (std::optional<std::string> vt = natural_vector_type(t)) {
        scalar_type(t.element_of());
        w_.line(*vt + " " + name + " = " + vector_value(op->value).text + ";");
      } else {
        std::string lanes;
        for (int i = 0; i < t.lanes(); ++i) {
          lanes += (i == 0 ? "" : ", ") + sub(op->value, i).text;
        }
        w_.line(scalar_type(t.element_of()) + " " + name + "[" + std::to_string(t.lanes()) +
                "] = {" + lanes + "};");
      }
      var_names_[v] = name;
      return;
    }
    w_.line(value_type(v) + " " + name + " = " + coerce_to_var(v, op->value) + ";");
    var_names_[v] = name;
    if (t.is_integer()) an_.bind(op->var, op->value);
  }

  void visit(const AttrStmt* op) {
    if (op->key == attr::kThreadExtent) {
      const IterVarNode* iv = op->iter_var();
      PRIMJIT_USER_CHECK(iv != nullptr) << "CUDA code generation: thread_extent without an "
                                           "IterVar in "
                                        << where();
      static const std::set<std::string> kTags = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                                  "threadIdx.x", "threadIdx.y", "threadIdx.z"};
      PRIMJIT_USER_CHECK(kTags.count(iv->thread_tag) != 0)
          << "CUDA code generation: thread tag '" << iv->thread_tag << "' in " << where()
          << " is not supported; use blockIdx.x/y/z or threadIdx.x/y/z (virtual threads must be "
             "lowered first)";
      const Var& var = iv->var;
      std::string name = names_.unique(var->name);
      var_names_[var.get()] = name;
      std::string type = scalar_type(var.dtype());
      w_.line(type + " " + name + " = (" + type + ")" + iv->thread_tag + ";");
      arith::Analyzer::Scope scope(an_);
      if (var.dtype().is_integer()) {
        Expr extent = op->value;
        if (extent.dtype() != var.dtype()) extent = Cast::make(var.dtype(), extent);
        an_.bind(var, IntImm::make(var.dtype(), 0), extent);
      }
      visit_stmt(op->body);
      return;
    }
    PRIMJIT_USER_CHECK(op->key != attr::kVirtualThread)
        << "CUDA code generation: virtual threads in " << where() << " must be lowered first";
    arith::Analyzer::Scope scope(an_);
    visit_stmt(op->body);
  }

  void visit(const AssertStmt* op) {
    std::string message;
    if (const auto* text = op->message.as<StringImm>()) {
      // One comment line: no line breaks, and no backslash that could continue it.
      for (char c : text->value) message += (c == '\n' || c == '\r' || c == '\\') ? ' ' : c;
    } else {
      message = "(formatted message)";
    }
    w_.line("// assert: " + message);
    w_.line("if (!" + wrap(sub(op->condition, -1), kUnary) + ") __trap();");
  }

  void visit(const BufferStore* op) {
    const Buffer& buf = op->buffer;
    Expr index = flat_index(buf, op->indices);
    DataType t = op->value.dtype();
    if (t.is_scalar() || !index.dtype().is_vector()) {
      PRIMJIT_USER_CHECK(t.is_scalar() || t == buf->dtype)
          << "CUDA code generation: a store of " << t << " into '" << buf->name
          << "' at a scalar index (in " << where() << ")";
      std::string value = t.is_scalar() ? sub(op->value, -1).text : vector_value(op->value).text;
      w_.line(wrap(pointer_of(buf), kPrimary) + "[" + sub(index, -1).text + "] = " + value + ";");
      return;
    }
    check_no_effects(op->value, "a vector store");
    if (std::optional<Code> whole = vector_access(buf, index, t, /*is_store=*/true)) {
      w_.line("*" + wrap(*whole, kUnary) + " = " + vector_value(op->value).text + ";");
      return;
    }
    // Scatter: every lane is computed before the first store.
    std::string tmp = names_.unique("lanes");
    std::string lanes;
    for (int i = 0; i < t.lanes(); ++i) lanes += (i == 0 ? "" : ", ") + sub(op->value, i).text;
    w_.open("");
    w_.line(scalar_type(t.element_of()) + " " + tmp + "[" + std::to_string(t.lanes()) + "] = {" +
            lanes + "};");
    for (int i = 0; i < t.lanes(); ++i) {
      w_.line(wrap(pointer_of(buf), kPrimary) + "[" + sub(index, i).text + "] = " + tmp + "[" +
              std::to_string(i) + "];");
    }
    w_.close();
  }

  void visit(const AllocBuffer* op) {
    const Buffer& buf = op->buffer;
    const VarNode* data = buf->data.get();
    const std::string& scope = buf->scope();
    DataType elem = data->pointee.is_void() ? buf->dtype : data->pointee;
    std::string type = element_type(elem);
    int align = std::max(buf->data_alignment > 0 ? buf->data_alignment : 64, elem.bytes());
    if (scope == "shared.dyn") {
      PRIMJIT_USER_CHECK(dyn_shared_buffer_.empty())
          << "CUDA code generation: " << where() << " has two shared.dyn allocations ('"
          << dyn_shared_buffer_ << "' and '" << buf->name
          << "'); they would share the same memory. Run MergeSharedMemoryAllocations";
      dyn_shared_buffer_ = buf->name;
      std::string name = names_.unique(buf->name);
      m_.reserved.insert(name);  // extern names stay unique across the translation unit
      var_names_[data] = name;
      pointer_align_[data] = align;
      dyn_shared_align_ = align;
      w_.line("extern __shared__ __align__(" + std::to_string(align) + ") " + type + " " + name +
              "[];");
    } else if (scope == "shared" || scope == "local") {
      std::optional<int64_t> count = op->constant_allocation_size();
      PRIMJIT_USER_CHECK(count.has_value() && *count > 0)
          << "CUDA code generation: " << scope << " buffer '" << buf->name << "' in " << where()
          << " needs a constant, positive size; use scope \"shared.dyn\" for a size known only "
             "at launch";
      int64_t elements = *count * std::max(1, buf->dtype.lanes()) / std::max(1, elem.lanes());
      std::string name = names_.unique(buf->name);
      var_names_[data] = name;
      if (scope == "shared") {
        static_shared_bytes_ += elements * elem.bytes();
        pointer_align_[data] = align;
        w_.line("__shared__ __align__(" + std::to_string(align) + ") " + type + " " + name + "[" +
                std::to_string(elements) + "];");
      } else {
        pointer_align_[data] = elem.bytes();
        w_.line(type + " " + name + "[" + std::to_string(elements) + "];");
      }
    } else {
      PRIMJIT_USER_ERROR() << "CUDA code generation: buffer '" << buf->name << "' in " << where()
                           << " is allocated in scope \"" << scope
                           << "\"; a kernel can allocate only shared, shared.dyn or local memory "
                              "(pass global buffers as parameters)";
    }
    declare_view(buf);
  }

  void visit(const DeclBuffer* op) { declare_view(op->buffer); }

  void visit(const SeqStmt* op) {
    for (const Stmt& s : op->seq) visit_stmt(s);
  }

  void visit(const For* op) {
    PRIMJIT_USER_CHECK(op->for_kind != ForKind::kThreadBinding)
        << "CUDA code generation: loop over '" << op->loop_var->name << "' bound to "
        << op->thread_tag << " in " << where()
        << "; express thread indices with T.launch_thread (thread_extent)";
    PRIMJIT_USER_CHECK(op->for_kind != ForKind::kParallel)
        << "CUDA code generation: T.parallel loop over '" << op->loop_var->name << "' in "
        << where() << "; bind it to a thread index instead";
    const Var& v = op->loop_var;
    DataType t = v.dtype();
    std::string type = scalar_type(t);
    Code min = sub(op->min, -1);
    Expr end_expr = arith::simplify(Add::make(op->min, op->extent));
    Code end = sub(end_expr, -1);
    if (reads_memory(end_expr)) {  // the extent is evaluated once, before the loop
      std::string end_name = names_.unique(v->name + "_end");
      w_.line(type + " " + end_name + " = " + end.text + ";");
      end = {end_name, kPrimary};
    }
    std::string name = names_.unique(v->name);
    var_names_[v.get()] = name;
    if (op->for_kind == ForKind::kUnrolled &&
        passes::unroll_within_limit(*op, m_.options.max_unroll, "CUDA code generation")) {
      w_.line("#pragma unroll");
    }
    w_.open("for (" + type + " " + name + " = " + min.text + "; " + name + " < " +
            wrap(end, kRel - 1) + "; ++" + name + ")");
    {
      arith::Analyzer::Scope scope(an_);
      if (t.is_integer()) an_.bind(v, op->min, op->extent);
      visit_stmt(op->body);
    }
    w_.close();
  }

  void visit(const While* op) {
    w_.open("while (" + sub(op->condition, -1).text + ")");
    {
      arith::Analyzer::Scope scope(an_);
      visit_stmt(op->body);
    }
    w_.close();
  }

  void visit(const IfThenElse* op) {
    arith::Analyzer::Scope chain(an_);  // holds the negated conditions of an else-if chain
    w_.open("if (" + sub(op->condition, -1).text + ")");
    const IfThenElse* current = op;
    while (true) {
      {
        arith::Analyzer::Scope scope(an_);
        an_.assume(current->condition);
        visit_stmt(current->then_case);
      }
      if (!current->else_case.defined()) {
        w_.close();
        return;
      }
      // `else if` chains stay flat.
      if (const auto* next = current->else_case.as<IfThenElse>()) {
        w_.dedent();
        w_.line("} else if (" + sub(next->condition, -1).text + ") {");
        w_.indent();
        an_.assume(Not::make(current->condition));
        current = next;
        continue;
      }
      w_.dedent();
      w_.line("} else {");
      w_.indent();
      {
        arith::Analyzer::Scope scope(an_);
        an_.assume(Not::make(current->condition));
        visit_stmt(current->else_case);
      }
      w_.close();
      return;
    }
  }

  void visit(const Evaluate* op) {
    if (op->value.as<IntImm>() != nullptr) return;
    const auto* call = op->value.as<Call>();
    if (call != nullptr && call->is_op("ret")) {
      PRIMJIT_USER_CHECK(!is_kernel_ && call->args.size() == 1)
          << "CUDA code generation: T.ret in " << where()
          << "; kernels return nothing (LowerDeviceKernelLaunch removes `T.ret(0)`)";
      w_.line("return " + sub(call->args[0], -1).text + ";");
      return;
    }
    if (!has_side_effects(op->value)) return;  // nothing observable to do
    check_scalar(op->value.dtype(), "an evaluated expression", -1);
    w_.line(sub(op->value, -1).text + ";");
  }

 private:
  std::string where() const {
    return (is_kernel_ ? "kernel '" : "device function '") + symbol_ + "'";
  }

  // An expression as an operand: vector values need a lane, scalars ignore it.
  Code sub(const Expr& e, int lane) {
    if (e.dtype().is_vector()) {
      PRIMJIT_USER_CHECK(lane >= 0)
          << "CUDA code generation: a " << e.dtype()
          << " value is used where a scalar is needed (in " << where() << ")";
      return visit_expr(e, lane);
    }
    return visit_expr(e, -1);
  }

  void check_scalar(DataType t, const std::string& what, int lane) {
    PRIMJIT_USER_CHECK(lane < 0 && t.lanes() <= 1)
        << "CUDA code generation: " << what << " on vectors (" << t << ") is not supported (in "
        << where() << ")";
  }

  void check_no_effects(const Expr& e, const char* what) {
    PRIMJIT_USER_CHECK(!has_side_effects(e))
        << "CUDA code generation: " << what << " whose value has side effects (in " << where()
        << ") would run them once per lane; compute the value into a variable first";
  }

  const std::string& name_of(const VarNode* v) {
    auto it = var_names_.find(v);
    PRIMJIT_USER_CHECK(it != var_names_.end())
        << "CUDA code generation: variable '" << v->name << "' is used in " << where()
        << " but not defined there (run VerifyWellFormed)";
    return it->second;
  }

  // Extern functions called by name must not be hidden by local variables.
  void reserve_extern_call_names(const Stmt& body) {
    post_order_visit(body, [&](const Ref<Object>& node) {
      const auto* call = node.as<Call>();
      if (call == nullptr || !(call->is_op("call_extern") || call->is_op("call_pure_extern"))) {
        return;
      }
      if (const auto* fn = call->args.empty() ? nullptr : call->args[0].as<StringImm>()) {
        names_.reserve(fn->value);
      }
    });
  }

  // Threads per block: the product of the first extent of each threadIdx tag, Binds met before
  // it inlined (the rule of LowerDeviceKernelLaunch); 0 when one is not constant.
  static int64_t static_thread_count(const Stmt& body) {
    VarMap binds;
    std::map<std::string, Expr> extents;
    std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
      if (const auto* bind = s.as<Bind>()) {
        binds[bind->var.get()] = substitute(bind->value, binds);
      } else if (const auto* attr_stmt = s.as<AttrStmt>()) {
        const IterVarNode* iv = attr_stmt->iter_var();
        if (iv != nullptr && attr_stmt->key == attr::kThreadExtent &&
            !extents.count(iv->thread_tag)) {
          extents[iv->thread_tag] = substitute(attr_stmt->value, binds);
        }
        walk(attr_stmt->body);
      } else if (const auto* seq = s.as<SeqStmt>()) {
        for (const Stmt& c : seq->seq) walk(c);
      } else if (const auto* loop = s.as<For>()) {
        walk(loop->body);
      } else if (const auto* loop = s.as<While>()) {
        walk(loop->body);
      } else if (const auto* branch = s.as<IfThenElse>()) {
        walk(branch->then_case);
        if (branch->else_case.defined()) walk(branch->else_case);
      }
    };
    walk(body);
    int64_t threads = 1;
    for (const char* tag : {"threadIdx.x", "threadIdx.y", "threadIdx.z"}) {
      auto it = extents.find(tag);
      if (it == extents.end()) continue;
      std::optional<int64_t> n = as_const_int(arith::simplify(it->second));
      if (!n.has_value() || *n <= 0) return 0;
      threads *= *n;
      if (threads > kMaxThreadsPerBlock) return threads;  // too many: the caller reports it
    }
    return threads;
  }

  // --- buffers and pointers -----------------------------------------------------------------

  // Row-major (or strided) flattening for buffers still accessed with several indices.
  Expr flat_index(const Buffer& buf, const std::vector<Expr>& indices) {
    if (indices.size() == 1 && buf->strides.empty()) return indices[0];
    for (const Expr& i : indices) {
      PRIMJIT_USER_CHECK(i.dtype().is_scalar())
          << "CUDA code generation: vector index into the multi-dimensional buffer '" << buf->name
          << "' in " << where() << "; run FlattenBuffer";
    }
    Expr index;
    Expr stride;
    for (size_t k = indices.size(); k-- > 0;) {
      DataType t = indices[k].dtype();
      Expr s = !buf->strides.empty() ? buf->strides[k] : stride;
      if (s.defined() && s.dtype() != t) s = Cast::make(t, s);
      Expr term = s.defined() ? Mul::make(indices[k], s) : indices[k];
      index = index.defined() ? Add::make(term, index.dtype() == t ? index : Cast::make(t, index))
                              : term;
      if (buf->strides.empty()) {
        Expr dim = buf->shape[k].dtype() == t ? buf->shape[k] : Cast::make(t, buf->shape[k]);
        stride = stride.defined() ? Mul::make(stride, dim) : dim;
      }
    }
    if (!index.defined()) return IntImm::make(DataType::Int(32), 0);
    return arith::simplify(index);
  }

  static bool zero_offset(const Buffer& buf) {
    return !buf->elem_offset.defined() || as_const_int(buf->elem_offset) == 0;
  }

  // The C element type of `buf` differs from its data pointer's.
  static bool needs_typed_view(const Buffer& buf) {
    const VarNode* data = buf->data.get();
    return data->pointee.is_void() || data->pointee != buf->dtype;
  }

  // A typed pointer for buffers that view their data at another type or offset (the views
  // over the merged shared buffer); declared where the buffer is.
  void declare_view(const Buffer& buf) {
    if (!needs_typed_view(buf) && zero_offset(buf)) return;
    std::string type = element_type(buf->dtype);
    Code base = {name_of(buf->data.get()), kPrimary};
    Code ptr = needs_typed_view(buf) ? Code{"(" + type + "*)" + base.text, kUnary} : base;
    if (!zero_offset(buf)) ptr = infix(ptr, "+", kAdd, sub(buf->elem_offset, -1));
    std::string name = names_.unique(buf->name);
    w_.line(type + "* " + name + " = " + ptr.text + ";");
    views_[buf.get()] = name;
  }

  Code pointer_of(const Buffer& buf) {
    if (auto it = views_.find(buf.get()); it != views_.end()) return {it->second, kPrimary};
    Code base = {name_of(buf->data.get()), kPrimary};
    if (needs_typed_view(buf)) base = {"(" + element_type(buf->dtype) + "*)" + base.text, kUnary};
    if (!zero_offset(buf)) base = infix(base, "+", kAdd, sub(buf->elem_offset, -1));
    return base;
  }

  // Known alignment in bytes of `buf`'s first element.
  int64_t buffer_alignment(const Buffer& buf) {
    const VarNode* data = buf->data.get();
    int64_t align = std::max(1, buf->dtype.element_of().bytes());
    if (auto it = pointer_align_.find(data); it != pointer_align_.end()) {
      align = it->second;
    } else if (trusted_pointers_.count(data) != 0) {
      // Parameters: the buffer's declared alignment, as TVM assumes for its arguments.
      align = buf->data_alignment > 0 ? buf->data_alignment : 64;
    }
    if (!zero_offset(buf)) {
      std::optional<int64_t> off = as_const_int(buf->elem_offset);
      int64_t bytes = off ? *off * buf->dtype.bytes() : buf->dtype.element_of().bytes();
      align = std::gcd(align, bytes == 0 ? align : bytes);
    }
    return align;
  }

  // `*(T4*)(ptr + base)` for a contiguous, provably aligned access with a natural vector type.
  std::optional<Code> vector_access(const Buffer& buf, const Expr& index, DataType t,
                                    bool is_store) {
    PRIMJIT_USER_CHECK(buf->dtype.is_scalar())
        << "CUDA code generation: vector index into '" << buf->name << "', a buffer of "
        << buf->dtype << " (in " << where() << "); index its elements with scalars";
    const auto* ramp = index.as<Ramp>();
    if (ramp == nullptr || as_const_int(ramp->stride) != 1) return std::nullopt;
    std::optional<std::string> vt = natural_vector_type(t);
    if (!vt.has_value()) return std::nullopt;
    const int64_t bytes = t.bytes();
    const int64_t elem = t.element_of().bytes();
    if (buffer_alignment(buf) % bytes != 0) return std::nullopt;
    arith::ModularSet ms = an_.modular_set(ramp->base);
    if ((ms.coeff * elem) % bytes != 0 || (ms.base * elem) % bytes != 0) return std::nullopt;
    scalar_type(t.element_of());
    Code addr = as_const_int(ramp->base) == 0
                    ? pointer_of(buf)
                    : infix(pointer_of(buf), "+", kAdd, sub(ramp->base, -1));
    return Code{"(" + std::string(is_store ? "" : "const ") + *vt + "*)" + wrap(addr, kUnary),
                kUnary};
  }

  // A whole vector value of a natural vector type: a vector load, a variable, or make_T(...).
  Code vector_value(const Expr& e) {
    DataType t = e.dtype();
    std::optional<std::string> vt = natural_vector_type(t);
    PRIMJIT_ICHECK(vt.has_value()) << "no vector type for " << t;
    if (const auto* load = e.as<BufferLoad>()) {
      Expr index = flat_index(load->buffer, load->indices);
      if (std::optional<Code> whole = vector_access(load->buffer, index, t, false)) {
        return {"*" + wrap(*whole, kUnary), kUnary};
      }
    }
    if (const auto* var = e.as<VarNode>()) return {name_of(var), kPrimary};
    std::vector<Code> lanes;
    for (int i = 0; i < t.lanes(); ++i) lanes.push_back(sub(e, i));
    return call(make_vector_fn(*vt), lanes);
  }

  // --- expression helpers -------------------------------------------------------------------

  Code int_literal(DataType t, int64_t value) {
    if (t.is_bool()) return {value != 0 ? "true" : "false", kPrimary};
    if (t.is_uint() && t.bits() == 64) {
      return {std::to_string(static_cast<uint64_t>(value)) + "ULL", kPrimary};
    }
    if (t.is_uint() && t.bits() == 32) {
      return {std::to_string(static_cast<uint32_t>(value)) + "U", kPrimary};
    }
    if (t.is_int() && t.bits() == 64) {
      if (value == std::numeric_limits<int64_t>::min()) {
        return {"(-9223372036854775807LL - 1LL)", kPrimary};
      }
      std::string text = std::to_string(value) + "LL";
      return {text, value < 0 ? kUnary : kPrimary};
    }
    if (value == std::numeric_limits<int32_t>::min()) return {"(-2147483647 - 1)", kPrimary};
    std::string text = std::to_string(value);  // narrow types promote to int anyway
    return {text, value < 0 ? kUnary : kPrimary};
  }

  static Code infix(const Code& a, const char* op, int prec, const Code& b) {
    // For the reader, shift and bitwise operators parenthesize any other binary operand.
    const bool bitwise = prec == kShift || (prec >= kBitAnd && prec <= kBitOr);
    const int left = bitwise && a.prec != prec ? kUnary : prec;
    const int right = bitwise ? kUnary : prec - 1;
    return {wrap(a, left) + " " + op + " " + wrap(b, right), prec};
  }

  static Code call(const std::string& fn, const std::vector<Code>& args) {
    std::string text = fn + "(";
    for (size_t i = 0; i < args.size(); ++i) text += (i == 0 ? "" : ", ") + args[i].text;
    return {text + ")", kPrimary};
  }

  static Code conditional(const Code& c, const Code& t, const Code& f) {
    return {wrap(c, kLogOr) + " ? " + wrap(t, kCond - 1) + " : " + wrap(f, kCond), kCond};
  }

  Code immediately_invoked(const std::string& type, const std::string& body) {
    return {"[&]() -> " + type + " { " + body + " }()", kPrimary};
  }

  // int8/int16/uint8/uint16 arithmetic runs in int after C's promotions: wrap it back.
  Code narrow_result(DataType t, const Code& c) {
    if (!is_narrow_int(t.element_of())) return c;
    return {"(" + scalar_type(t.element_of()) + ")" + wrap(c, kUnary), kUnary};
  }

  template <typename Node>
  Code binary(const Node* op, const char* sym, int prec, int lane) {
    DataType t = op->dtype;
    if (t.is_float8()) return float_binary(t, op->a, op->b, sym, prec, lane, /*keep_type=*/true);
    Code a = sub(op->a, lane);
    Code b = sub(op->b, lane);
    if (t.element_of().is_uint() && t.bits() < 32 && std::string(sym) == "*") {
      // uint16 * uint16 would overflow the promoted (signed) int.
      a = {"(unsigned int)" + wrap(a, kUnary), kUnary};
    }
    return narrow_result(t, infix(a, sym, prec, b));
  }

  // a `sym` b computed in float32 for float8 (or for the quotient of a floating FloorDiv).
  Code float_binary(DataType t, const Expr& ea, const Expr& eb, const char* sym, int prec, int lane,
                    bool keep_type) {
    Code a = sub(ea, lane);
    Code b = sub(eb, lane);
    if (!t.is_float8()) {
      Code r = infix(a, sym, prec, b);
      return keep_type ? r : to_compute_float(t, r);
    }
    Code r = infix(to_compute_float(t, a), sym, prec, to_compute_float(t, b));
    return keep_type ? from_float(t, r) : r;
  }

  Code compare(const Expr& ea, const Expr& eb, const char* sym, int prec, int lane) {
    DataType t = ea.dtype().element_of();
    Code a = sub(ea, lane);
    Code b = sub(eb, lane);
    if (t.is_float8()) {
      a = to_compute_float(t, a);
      b = to_compute_float(t, b);
    }
    return infix(a, sym, prec, b);
  }

  Code logical(const Expr& ea, const Expr& eb, const char* sym, int prec, int lane) {
    if (has_side_effects(eb)) {
      check_scalar(ea.dtype(), "And/Or with side effects", lane);
      // Both operands run, in order (no short circuit in the IR).
      std::string a = names_.unique("lhs");
      std::string b = names_.unique("rhs");
      return immediately_invoked("bool", "bool " + a + " = " + sub(ea, -1).text + "; bool " + b +
                                             " = " + sub(eb, -1).text + "; return " + a + " " +
                                             sym + " " + b + ";");
    }
    return infix(sub(ea, lane), sym, prec, sub(eb, lane));
  }

  Code min_max(DataType t, const Expr& ea, const Expr& eb, bool is_min, int lane) {
    DataType e = t.element_of();
    Code a = sub(ea, lane);
    Code b = sub(eb, lane);
    if ((e.is_float() && e.bits() == 16) || e.is_bfloat16()) {
      return call(is_min ? "__hmin" : "__hmax", {a, b});
    }
    if (e.is_float8()) {
      m_.semantics.insert(SemanticsHelper::kFloatMinMax);
      return from_float(e, call(is_min ? "primjit_fmin" : "primjit_fmax",
                                {to_compute_float(e, a), to_compute_float(e, b)}));
    }
    if (e.is_floating()) {
      m_.semantics.insert(SemanticsHelper::kFloatMinMax);
      return call(is_min ? "primjit_fmin" : "primjit_fmax", {a, b});
    }
    return call(is_min ? "min" : "max", {a, b});
  }

  // Integer division: C's operator where it is defined and equal to the IR's result (a divisor
  // that is provably neither 0 nor -1; for the floor forms also a non-negative dividend and a
  // positive divisor), else the helper that gives docs/semantics.md's results for every input.
  template <typename Node>
  Code int_division(const Node* op, const char* sym, const char* helper, bool floor, int lane) {
    if (lane < 0) {
      arith::ConstIntBound a = an_.const_int_bound(op->a);
      arith::ConstIntBound b = an_.const_int_bound(op->b);
      bool divisor_ok = b.min >= 1 || (op->dtype.is_int() && b.max <= -2);
      if (divisor_ok && (!floor || op->dtype.is_uint() || (a.min >= 0 && b.min >= 1))) {
        return binary(op, sym, kMul, lane);
      }
    }
    m_.semantics.insert(SemanticsHelper::kIntDivision);
    return narrow_result(op->dtype, call(helper, {sub(op->a, lane), sub(op->b, lane)}));
  }

  // shift_left / shift_right through primjit_shl/shr<T, U> (U: T's unsigned type).
  Code shift(const Call* op, int lane) {
    DataType t = op->dtype.element_of();
    PRIMJIT_USER_CHECK(t.is_integer() && !t.is_bool())
        << "CUDA code generation: T." << op->op->name << " needs integers, got " << t << " (in "
        << where() << ")";
    m_.semantics.insert(SemanticsHelper::kShift);
    std::string type = scalar_type(t);
    std::string utype = scalar_type(DataType::UInt(t.bits()));
    bool left = op->op->name == "shift_left";
    return call(std::string(left ? "primjit_shl<" : "primjit_shr<") + type + ", " + utype + ">",
                {sub(op->args[0], lane), sub(op->args[1], lane)});
  }

  // A floating value (float or double, or a narrow float) as integer type `to`: saturating, NaN
  // to 0, through primjit_ftoi.
  Code float_to_int(DataType to, DataType from, const Code& v) {
    bool dbl = from.is_float() && from.bits() == 64;
    Code x = dbl ? v : float_of(from, v);
    m_.semantics.insert(SemanticsHelper::kFloatToInt);
    int bits = to.bits();
    std::string suffix = dbl ? "" : "f";
    std::string lo = to.is_int() ? "-0x1p" + std::to_string(bits - 1) + suffix : "0.0" + suffix;
    std::string hi = "0x1p" + std::to_string(to.is_int() ? bits - 1 : bits) + suffix;
    int64_t min = to.is_int() ? (bits == 64 ? std::numeric_limits<int64_t>::min()
                                            : -(int64_t{1} << (bits - 1)))
                              : 0;
    int64_t max = to.is_int() ? (bits == 64 ? std::numeric_limits<int64_t>::max()
                                            : (int64_t{1} << (bits - 1)) - 1)
                              : (bits == 64 ? -1 : (int64_t{1} << bits) - 1);
    std::string type = scalar_type(to);
    return call("primjit_ftoi<" + type + ", " + (dbl ? "double" : "float") + ">",
                {x,
                 {lo, kUnary},
                 {hi, kPrimary},
                 {"(" + type + ")" + wrap(int_literal(to, min), kUnary), kUnary},
                 {"(" + type + ")" + wrap(int_literal(to, max), kUnary), kUnary}});
  }

  // A half/bfloat16/float8 value as float (float and double are returned as they are).
  Code to_compute_float(DataType t, const Code& v) {
    DataType e = t.element_of();
    if (e.is_float() && e.bits() == 16) {
      scalar_type(e);
      return call("__half2float", {v});
    }
    if (e.is_bfloat16()) {
      scalar_type(e);
      return call("__bfloat162float", {v});
    }
    if (e.is_float8()) return {"(float)" + wrap(v, kUnary), kUnary};
    return v;
  }

  // A float (or double) value rounded to `t` when t is narrower than float.
  Code from_float(DataType t, const Code& v) {
    DataType e = t.element_of();
    if (e.is_float() && e.bits() == 16) {
      scalar_type(e);
      return call("__float2half_rn", {v});
    }
    if (e.is_bfloat16()) {
      scalar_type(e);
      return call("__float2bfloat16_rn", {v});
    }
    if (e.is_float8()) return call(scalar_type(e), {v});
    return v;
  }

  Code cast(DataType to, DataType from, const Code& v) {
    if (to == from) return v;
    auto is_narrow_float = [](DataType t) {
      return (t.is_float() && t.bits() == 16) || t.is_bfloat16() || t.is_float8();
    };
    if (to.is_bool()) {
      if (from.is_handle()) return {wrap(v, kRel) + " != nullptr", kEq};
      return {"(bool)" + wrap(to_compute_float(from, v), kUnary), kUnary};
    }
    if (to.is_handle()) return {"(void*)" + wrap(v, kUnary), kUnary};
    if (from.is_floating() && to.is_integer()) return float_to_int(to, from, v);
    if (is_narrow_float(from) && !is_narrow_float(to)) {
      Code f = to_compute_float(from, v);
      return to.is_float() && to.bits() == 32
                 ? f
                 : Code{"(" + scalar_type(to) + ")" + wrap(f, kUnary), kUnary};
    }
    // Everything becomes a narrow float through float32: float64 and integers round twice, as
    // on the other backends (docs/semantics.md).
    if (is_narrow_float(to)) return from_float(to, float_of(from, v));
    return {"(" + scalar_type(to) + ")" + wrap(v, kUnary), kUnary};
  }

  // Any value as a float (half/bfloat16/float8 exactly, integers and double rounded).
  Code float_of(DataType from, const Code& v) {
    if (from.is_float() && from.bits() == 32) return v;
    if ((from.is_float() && from.bits() == 16) || from.is_bfloat16() || from.is_float8()) {
      return to_compute_float(from, v);
    }
    return {"(float)" + wrap(v, kUnary), kUnary};
  }

  // Math builtins: the float or double CUDA function; narrower floats compute in float.
  bool math_call(const Call* op, int lane, Code* out) {
    if (!op->op->is_math()) return false;
    const std::string& name = op->op->name;
    DataType t = op->args[0].dtype().element_of();
    PRIMJIT_USER_CHECK(t.is_floating())
        << "CUDA code generation: T." << name << " needs a floating-point argument, got " << t
        << " (in " << where() << ")";
    std::vector<Code> args;
    for (const Expr& a : op->args) args.push_back(sub(a, lane));
    const CudaMath* how = cuda_math().find(op->op);
    if (how == nullptr) {
      *out = float_math(t, op->op->libm, args);
    } else if (*how == CudaMath::kClassify) {
      *out = call(name, {to_compute_float(t, args[0])});
    } else if (*how == CudaMath::kSigmoid) {
      bool dbl = t.is_float() && t.bits() == 64;
      Code x = to_compute_float(t, args[0]);
      Code e = float_math_raw(dbl, "exp", {{"-" + wrap(x, kUnary), kUnary}});
      Code one = {dbl ? "1.0" : "1.0f", kPrimary};
      *out = from_float(t, infix(one, "/", kMul, infix(one, "+", kAdd, e)));
    } else {
      *out = float_math(t, name, args);
    }
    return true;
  }

  // `name` applied in float (or double for float64), rounded back to t.
  Code float_math(DataType t, const std::string& name, std::vector<Code> args,
                  bool args_are_float = false) {
    DataType e = t.element_of();
    bool dbl = e.is_float() && e.bits() == 64;
    if (!args_are_float) {
      for (Code& a : args) a = to_compute_float(e, a);
    }
    return from_float(e, float_math_raw(dbl, name, args));
  }

  Code float_math_raw(bool dbl, const std::string& name, const std::vector<Code>& args) {
    // The C functions CUDA also has as fast, less accurate intrinsics (__expf, ...).
    static const std::set<std::string> kFast = {"exp", "exp10", "log", "log2", "log10",
                                                "sin", "cos",   "tan", "pow"};
    if (dbl) return call(name, args);
    if (m_.options.fast_math && kFast.count(name) != 0) return call("__" + name + "f", args);
    return call(name + "f", args);
  }

  Code reinterpret(const Call* op, int lane) {
    DataType to = op->dtype.element_of();
    DataType from = op->args[0].dtype().element_of();
    PRIMJIT_USER_CHECK(op->dtype.lanes() == op->args[0].dtype().lanes() && to.bits() == from.bits())
        << "CUDA code generation: T.reinterpret from " << op->args[0].dtype() << " to " << op->dtype
        << " needs the same lane count and element size (in " << where() << ")";
    m_.helpers.insert(Helper::kReinterpret);
    return call("primjit_reinterpret<" + scalar_type(to) + ", " + scalar_type(from) + ">",
                {sub(op->args[0], lane)});
  }

  Code storage_sync(const Call* op) {
    const auto* scope = op->args[0].as<StringImm>();
    PRIMJIT_USER_CHECK(scope != nullptr) << "CUDA code generation: T.tvm_storage_sync needs a "
                                            "scope string (in "
                                         << where() << ")";
    if (scope->value == "shared" || scope->value == "shared.dyn")
      return {"__syncthreads()", kPrimary};
    if (scope->value == "warp") return {"__syncwarp()", kPrimary};
    PRIMJIT_USER_ERROR() << "CUDA code generation: T.tvm_storage_sync(\"" << scope->value
                         << "\") in " << where()
                         << " is not supported; a kernel can synchronize \"shared\", "
                            "\"shared.dyn\" or \"warp\"";
  }

  // tvm_access_ptr(type, data, offset, extent, rw): data + offset in units of `type`.
  Code access_ptr(const Call* op) {
    const auto* data = op->args[1].as<VarNode>();
    PRIMJIT_USER_CHECK(data != nullptr)
        << "CUDA code generation: T.tvm_access_ptr needs a pointer variable (in " << where() << ")";
    DataType unit = op->args[0].dtype();
    if (unit.is_handle()) unit = data->pointee.is_void() ? DataType::UInt(8) : data->pointee;
    std::string type = element_type(unit);
    Code base = {name_of(data), kPrimary};
    if (data->pointee != unit) base = {"(" + type + "*)" + base.text, kUnary};
    if (as_const_int(op->args[2]) == 0) return base;
    return infix(base, "+", kAdd, sub(op->args[2], -1));
  }

  // ptx_cp_async(dst, dst_offset, src, src_offset, bytes): an asynchronous global -> shared
  // copy; offsets count elements of each pointer's type.
  Code cp_async(const Call* op) {
    std::optional<int64_t> bytes = as_const_int(op->args[4]);
    PRIMJIT_USER_CHECK(bytes && (*bytes == 4 || *bytes == 8 || *bytes == 16))
        << "CUDA code generation: T.ptx_cp_async copies 4, 8 or 16 constant bytes (in " << where()
        << ")";
    auto address = [&](const Expr& ptr, const Expr& offset) {
      const auto* v = ptr.as<VarNode>();
      Code base = sub(ptr, -1);
      if (v == nullptr || v->pointee.is_void()) base = {"(uint8_t*)" + wrap(base, kUnary), kUnary};
      if (as_const_int(offset) == 0) return base;
      return infix(base, "+", kAdd, sub(offset, -1));
    };
    m_.helpers.insert(Helper::kCpAsync);
    return call("primjit_cp_async<" + std::to_string(*bytes) + ">",
                {address(op->args[0], op->args[1]), address(op->args[2], op->args[3])});
  }

  Code call_function(const Call* op, int lane) {
    check_scalar(op->dtype, "a function call", lane);
    auto it = m_.device_functions.find(op->callee->name);
    PRIMJIT_USER_CHECK(it != m_.device_functions.end())
        << "CUDA code generation: " << where() << " calls '" << op->callee->name
        << "', which is not a device function of the module (kernels cannot call host code)";
    std::vector<Code> args;
    for (const Expr& a : op->args) args.push_back(sub(a, -1));
    return call(it->second, args);
  }

  // Declared C type of a scalar variable (pointers keep their element type).
  std::string value_type(const VarNode* v) {
    if (v->dtype.is_handle()) return pointer_type(v);
    return scalar_type(v->dtype);
  }

  // `value` as the initializer of `v`: pointers are cast to v's pointer type.
  std::string coerce_to_var(const VarNode* v, const Expr& value) {
    Code c = sub(value, -1);
    if (!v->dtype.is_handle()) return c.text;
    if (const auto* src = value.as<VarNode>();
        src != nullptr && pointer_type(src) == pointer_type(v)) {
      return c.text;
    }
    return "(" + pointer_type(v) + ")" + wrap(c, kUnary);
  }

  ModuleState& m_;
  std::string symbol_;
  bool is_kernel_;
  SourceWriter w_;
  NameTable names_;
  arith::Analyzer an_;
  std::string prototype_;
  std::unordered_map<const VarNode*, std::string> var_names_;
  std::unordered_map<const BufferNode*, std::string> views_;
  std::unordered_map<const VarNode*, int64_t> pointer_align_;
  std::unordered_set<const VarNode*> trusted_pointers_;
  std::string dyn_shared_buffer_;
  int dyn_shared_align_ = 0;
  int64_t static_shared_bytes_ = 0;  // __shared__ arrays (alignment padding aside)
};

bool is_cuda(const PrimFunc& f) {
  Target t = f->target();
  return t.defined() && t->kind == "cuda";
}

bool is_kernel(const PrimFunc& f) { return is_cuda(f) && f->is_kernel(); }

// A cuda function without a host target that is neither a kernel nor a packed entry point.
bool is_device_function(const PrimFunc& f) {
  return is_cuda(f) && !f->target()->host.defined() && f->calling_conv() == CallingConv::kDefault;
}

std::string symbol_of(const std::string& name, const PrimFunc& f) {
  std::string symbol = f->global_symbol().empty() ? name : f->global_symbol();
  PRIMJIT_USER_CHECK(NameTable::is_valid_identifier(symbol) && !NameTable().is_taken(symbol) &&
                     symbol.rfind("primjit_", 0) != 0)
      << "CUDA code generation: function '" << name << "' has the symbol '" << symbol
      << "', which cannot name a CUDA function (it must be a C identifier that is not a keyword, "
         "a CUDA built-in or start with primjit_); set another \"global_symbol\"";
  return symbol;
}

std::string preamble(const ModuleState& m, const std::vector<std::string>& kernel_names,
                     const std::string& arch) {
  SourceWriter w;
  std::string list;
  for (size_t i = 0; i < kernel_names.size(); ++i) list += (i == 0 ? "" : ", ") + kernel_names[i];
  w.line("// CUDA C generated by primjit" + (arch.empty() ? std::string() : " for " + arch) +
         (list.empty() ? std::string(": no kernels") : ": " + list) + ".");
  if (m.uses_fp16) w.raw_line("#include <cuda_fp16.h>");
  if (m.uses_bf16) w.raw_line("#include <cuda_bf16.h>");
  if (m.uses_fp8) w.raw_line("#include <cuda_fp8.h>");
  w.line("");
  // NVRTC has no <cstdint>.
  w.raw_line("#ifdef __CUDACC_RTC__");
  w.raw_line("typedef signed char int8_t;");
  w.raw_line("typedef short int16_t;");
  w.raw_line("typedef int int32_t;");
  w.raw_line("typedef long long int64_t;");
  w.raw_line("typedef unsigned char uint8_t;");
  w.raw_line("typedef unsigned short uint16_t;");
  w.raw_line("typedef unsigned int uint32_t;");
  w.raw_line("typedef unsigned long long uint64_t;");
  w.raw_line("#else");
  w.raw_line("#include <cstdint>");
  w.raw_line("#endif");
  const std::string kInline = "__device__ __forceinline__ ";
  for (SemanticsHelper helper : m.semantics) {
    w.line("");
    const std::string source = semantics_helper_source(helper);
    for (size_t begin = 0; begin < source.size();) {
      size_t end = source.find('\n', begin);
      if (end == std::string::npos) end = source.size();
      w.raw_line(std::string_view(source).substr(begin, end - begin));
      begin = end + 1;
    }
  }
  if (m.helpers.count(Helper::kReinterpret) != 0) {
    w.line("");
    w.line("// The bits of `value` as another type of the same size (T.reinterpret).");
    w.line("template <typename To, typename From>");
    w.open(kInline + "To primjit_reinterpret(From value)");
    w.line("static_assert(sizeof(To) == sizeof(From), \"reinterpret needs equal sizes\");");
    w.line("To result;");
    w.line("memcpy(&result, &value, sizeof(To));");
    w.line("return result;");
    w.close();
  }
  if (m.helpers.count(Helper::kCpAsync) != 0) {
    w.line("");
    w.line("// An asynchronous copy of N bytes from global to shared memory (T.ptx_cp_async).");
    w.line("template <int N>");
    w.open(kInline + "void primjit_cp_async(void* shared, const void* global)");
    w.line("unsigned int address = static_cast<unsigned int>(__cvta_generic_to_shared(shared));");
    w.line(
        "asm volatile(\"cp.async.ca.shared.global [%0], [%1], %2;\" ::\"r\"(address), "
        "\"l\"(global), \"n\"(N));");
    w.close();
  }
  return w.str();
}

}  // namespace

CudaModuleSource codegen_cuda(const IRModule& lowered, const CudaCodegenOptions& options) {
  CudaModuleSource out;
  ModuleState state;
  state.options = options;
  for (const char* helper : {"primjit_reinterpret", "primjit_cp_async", "signbit"}) {
    state.reserved.insert(helper);
  }
  for (const std::string& helper : semantics_helper_names()) state.reserved.insert(helper);
  // The functions the generated code may call must stay visible: no local may be named so.
  for (const Op& op : Op::all()) {
    if (!op->is_math()) continue;
    for (const std::string& fn : {op->name, op->libm}) {
      if (fn.empty()) continue;
      state.reserved.insert(fn);
      state.reserved.insert(fn + "f");
    }
  }
  for (const char* fn : {"make_half2", "make_bfloat162"}) {
    state.reserved.insert(fn);
  }

  std::vector<std::pair<std::string, PrimFunc>> kernels;
  std::vector<std::pair<std::string, PrimFunc>> device_functions;
  std::map<std::string, std::string> symbol_owner;
  for (const auto& [gvar, func] : lowered->functions) {
    bool kernel = is_kernel(func);
    if (!kernel && !is_device_function(func)) continue;
    std::string symbol = symbol_of(gvar->name, func);
    auto [it, fresh] = symbol_owner.emplace(symbol, gvar->name);
    PRIMJIT_USER_CHECK(fresh) << "CUDA code generation: functions '" << it->second << "' and '"
                              << gvar->name << "' both have the symbol '" << symbol << "'";
    state.reserved.insert(symbol);
    if (kernel) {
      kernels.emplace_back(symbol, func);
      std::string arch = func->target()->arch;
      PRIMJIT_USER_CHECK(out.arch.empty() || out.arch == arch)
          << "CUDA code generation: kernel '" << symbol << "' targets " << arch
          << " but an earlier kernel of the module targets " << out.arch
          << "; one translation unit has one architecture";
      out.arch = arch;
    } else {
      device_functions.emplace_back(symbol, func);
      state.device_functions[gvar->name] = symbol;
    }
  }

  std::string body;
  std::string prototypes;
  for (const auto& [symbol, func] : device_functions) {
    FunctionCodegen gen(state, symbol, /*is_kernel=*/false);
    body += "\n" + gen.emit(func, nullptr);
    prototypes += gen.prototype() + ";\n";
  }
  std::vector<std::string> names;
  for (const auto& [symbol, func] : kernels) {
    CudaKernelInfo info;
    info.name = symbol;
    if (const AttrValue* params = func->attr(attr::kKernelLaunchParams);
        params != nullptr && params->is_array()) {
      for (const AttrValue& p : params->as_array()) {
        if (p.is_string()) info.launch_params.push_back(p.as_string());
      }
    }
    FunctionCodegen gen(state, symbol, /*is_kernel=*/true);
    body += "\n" + gen.emit(func, &info);
    bool wants_dyn = std::find(info.launch_params.begin(), info.launch_params.end(),
                               attr::kUseDynSharedMemory) != info.launch_params.end();
    bool has_launch_params = func->attr(attr::kKernelLaunchParams) != nullptr;
    PRIMJIT_USER_CHECK(!has_launch_params || wants_dyn == (info.dyn_shared_align > 0))
        << "CUDA code generation: kernel '" << symbol << "' "
        << (wants_dyn ? "lists " : "does not list ") << attr::kUseDynSharedMemory
        << " in tirx.kernel_launch_params but " << (wants_dyn ? "has no" : "has a")
        << " shared.dyn allocation; rerun LowerDeviceKernelLaunch";
    names.push_back(symbol);
    out.kernels.push_back(std::move(info));
  }
  out.code = preamble(state, names, out.arch);
  if (!prototypes.empty()) out.code += "\n" + prototypes;
  out.code += body;
  return out;
}

}  // namespace primjit::jit
