// BF16StorageLegalize and FP8StorageLegalize, checked by evaluating the IR they produce.
//
// A small evaluator below runs the handful of node kinds the conversion formulas and the
// legalized stores use (integer and float32 arithmetic, bitwise ops, shifts, Select, Let,
// reinterpret, loads) over a batch of inputs at once. The formulas must agree bit for bit with
// primjit/float_formats.h: on every bfloat16 and float8 pattern when widening, and on a large
// sample of float32 inputs (special values, every exponent, rounding ties and their
// neighbours, random patterns) when narrowing. The evaluator also rejects shifts by the full
// width or more, in either arm of a Select, since code generators treat those as undefined.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "passes/storage_legalize.h"
#include "primjit/float_formats.h"
#include "primjit/ir.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/text.h"
#include "primjit/ir/verify.h"
#include "primjit/passes.h"

namespace primjit::passes {
namespace {

using Bits = std::vector<uint64_t>;

// ---- the evaluator ---------------------------------------------------------------------------

// Every value is held as raw bits, `batch` rows of `lanes` each ([row][lane]).
class Evaluator {
 public:
  explicit Evaluator(size_t batch) : batch_(batch) {}

  void bind(const Var& var, Bits values) {
    ASSERT_EQ(values.size(), size(var.dtype()));
    env_[var.get()] = std::move(values);
  }
  void set_buffer(const std::string& name, Bits contents) { buffers_[name] = std::move(contents); }

  Bits eval(const Expr& e) {
    const DataType t = e.dtype();
    switch (e.kind()) {
      case NodeKind::kIntImm:
        return Bits(size(t), wrap(t, static_cast<uint64_t>(e.as<IntImm>()->value)));
      case NodeKind::kFloatImm:
        EXPECT_EQ(t, DataType::Float(32));
        return Bits(size(t), std::bit_cast<uint32_t>(static_cast<float>(e.as<FloatImm>()->value)));
      case NodeKind::kVar: {
        auto it = env_.find(e.as<VarNode>());
        if (it == env_.end()) throw std::runtime_error("unbound variable " + print(e));
        return it->second;
      }
      case NodeKind::kLet: {
        const auto* let = e.as<Let>();
        env_[let->var.get()] = eval(let->value);
        Bits result = eval(let->body);
        env_.erase(let->var.get());
        return result;
      }
      // Wrapping addition, subtraction and multiplication are the same on int and uint bits.
      case NodeKind::kAdd:
        return binary(e.as<Add>(), std::plus<>(), std::plus<float>(), true);
      case NodeKind::kSub:
        return binary(e.as<Sub>(), std::minus<>(), std::minus<float>(), true);
      case NodeKind::kMul:
        return binary(e.as<Mul>(), std::multiplies<>(), std::multiplies<float>(), true);
      case NodeKind::kDiv:
        return binary(e.as<Div>(), nullptr, std::divides<float>());
      case NodeKind::kMin:
        return binary(
            e.as<Min>(), [](uint64_t a, uint64_t b) { return std::min(a, b); },
            [](float a, float b) { return std::min(a, b); });
      case NodeKind::kMax:
        return binary(
            e.as<Max>(), [](uint64_t a, uint64_t b) { return std::max(a, b); },
            [](float a, float b) { return std::max(a, b); });
      case NodeKind::kEQ:
        return compare(e.as<EQ>(), [](auto a, auto b) { return a == b; });
      case NodeKind::kNE:
        return compare(e.as<NE>(), [](auto a, auto b) { return a != b; });
      case NodeKind::kLT:
        return compare(e.as<LT>(), [](auto a, auto b) { return a < b; });
      case NodeKind::kLE:
        return compare(e.as<LE>(), [](auto a, auto b) { return a <= b; });
      case NodeKind::kGT:
        return compare(e.as<GT>(), [](auto a, auto b) { return a > b; });
      case NodeKind::kGE:
        return compare(e.as<GE>(), [](auto a, auto b) { return a >= b; });
      case NodeKind::kSelect: {
        const auto* select = e.as<Select>();
        // Select evaluates all three operands.
        Bits c = eval(select->condition);
        Bits a = eval(select->true_value);
        Bits b = eval(select->false_value);
        const size_t lanes = t.lanes();
        const bool scalar_condition = select->condition.dtype().lanes() == 1;
        for (size_t i = 0; i < a.size(); ++i) {
          if (!c[scalar_condition ? i / lanes : i]) a[i] = b[i];
        }
        return a;
      }
      case NodeKind::kCast: {
        const auto* cast = e.as<Cast>();
        Bits v = eval(cast->value);
        const DataType from = cast->value.dtype();
        if (from.is_uint() && t.is_uint()) {
          for (uint64_t& x : v) x = wrap(t, x);
          return v;
        }
        ADD_FAILURE() << "evaluator: unsupported cast " << print(e);
        return v;
      }
      case NodeKind::kBroadcast: {
        const auto* broadcast = e.as<Broadcast>();
        Bits v = eval(broadcast->value);
        Bits out(size(t));
        for (size_t i = 0; i < out.size(); ++i) out[i] = v[i / broadcast->lanes];
        return out;
      }
      case NodeKind::kRamp: {
        const auto* ramp = e.as<Ramp>();
        Bits base = eval(ramp->base);
        Bits stride = eval(ramp->stride);
        Bits out(size(t));
        for (size_t i = 0; i < out.size(); ++i) {
          size_t row = i / ramp->lanes;
          out[i] = wrap(t, base[row] + stride[row] * (i % ramp->lanes));
        }
        return out;
      }
      case NodeKind::kBufferLoad: {
        const auto* load = e.as<BufferLoad>();
        EXPECT_EQ(load->indices.size(), 1u);
        auto it = buffers_.find(load->buffer->name);
        if (it == buffers_.end()) throw std::runtime_error("no contents for " + print(e));
        Bits index = eval(load->indices[0]);
        Bits out(size(t));
        for (size_t i = 0; i < out.size(); ++i) out[i] = it->second.at(index[i]);
        return out;
      }
      case NodeKind::kCall:
        return call(e.as<Call>());
      default:
        throw std::runtime_error("evaluator: unsupported node " + print(e));
    }
  }

 private:
  size_t size(DataType t) const { return batch_ * t.lanes(); }

  static uint64_t wrap(DataType t, uint64_t v) {
    return t.bits() >= 64 ? v : v & ((uint64_t{1} << t.bits()) - 1);
  }
  static float as_float(uint64_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits)); }
  static uint64_t float_bits(float f) { return std::bit_cast<uint32_t>(f); }

  template <typename Node, typename IntOp, typename FloatOp>
  Bits binary(const Node* op, IntOp int_op, FloatOp float_op, bool signed_ok = false) {
    const DataType t = op->dtype;
    Bits a = eval(op->a);
    Bits b = eval(op->b);
    for (size_t i = 0; i < a.size(); ++i) {
      if (t.element_of() == DataType::Float(32)) {
        a[i] = float_bits(float_op(as_float(a[i]), as_float(b[i])));
      } else if constexpr (!std::is_same_v<IntOp, std::nullptr_t>) {
        EXPECT_TRUE(t.is_uint() || (signed_ok && t.is_int())) << "evaluator: unsupported " << t;
        a[i] = wrap(t, int_op(a[i], b[i]));
      } else {
        ADD_FAILURE() << "evaluator: unsupported " << t;
      }
    }
    return a;
  }

  template <typename Node, typename Cmp>
  Bits compare(const Node* op, Cmp cmp) {
    const DataType t = op->a.dtype();
    Bits a = eval(op->a);
    Bits b = eval(op->b);
    for (size_t i = 0; i < a.size(); ++i) {
      if (t.element_of() == DataType::Float(32)) {
        a[i] = cmp(as_float(a[i]), as_float(b[i]));
      } else {
        EXPECT_TRUE(t.is_uint()) << "evaluator: integer ops are unsigned only, got " << t;
        a[i] = cmp(a[i], b[i]);
      }
    }
    return a;
  }

  Bits call(const Call* op) {
    const DataType t = op->dtype;
    if (op->is_op("reinterpret")) {
      const DataType from = op->args[0].dtype();
      EXPECT_EQ(from.bits(), t.bits());
      EXPECT_EQ(from.lanes(), t.lanes());
      return eval(op->args[0]);
    }
    if (op->args.size() != 2)
      throw std::runtime_error("evaluator: unsupported call " + print(Expr(op)));
    EXPECT_TRUE(t.is_uint()) << print(Expr(op));
    Bits a = eval(op->args[0]);
    Bits b = eval(op->args[1]);
    const std::string& name = op->op->name;
    for (size_t i = 0; i < a.size(); ++i) {
      if (name == "shift_left" || name == "shift_right") {
        if (b[i] >= static_cast<uint64_t>(t.bits())) {
          ADD_FAILURE() << "shift by " << b[i] << " in " << print(Expr(op));
          a[i] = 0;
        } else {
          a[i] = wrap(t, name == "shift_left" ? a[i] << b[i] : a[i] >> b[i]);
        }
      } else if (name == "bitwise_and") {
        a[i] &= b[i];
      } else if (name == "bitwise_or") {
        a[i] |= b[i];
      } else {
        throw std::runtime_error("evaluator: unsupported call " + print(Expr(op)));
      }
    }
    return a;
  }

  size_t batch_;
  std::unordered_map<const VarNode*, Bits> env_;
  std::map<std::string, Bits> buffers_;
};

// ---- inputs and references -------------------------------------------------------------------

const DataType kBF16 = DataType::BFloat16();
const DataType kE4M3 = DataType::Float8E4M3FN();
const DataType kE5M2 = DataType::Float8E5M2();

std::string hex(uint64_t v) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

// Special values, every exponent with boundary mantissas, random patterns, and for `formats`
// every rounding tie between neighbouring codes with the float32 values next to it.
std::vector<uint32_t> float32_samples(const std::vector<const fp::Format*>& formats) {
  std::vector<uint32_t> out = {0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000,
                               0xFFC00000, 0x7F800001, 0xFF800001, 0x7FBFFFFF, 0x7FFFFFFF,
                               0x00000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x7F7F8000,
                               0x7F7F7FFF, 0x7F7FC000};
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint32_t exponent = 0; exponent < 256; ++exponent) {
      std::vector<uint32_t> mantissas = {0, 0x7FFFFF, 0x400000, 0x3FFFFF, 0x400001};
      for (int k = 0; k < 23; ++k) {
        for (uint32_t m : {1u << k, (1u << k) - 1, (1u << k) + 1, 3u << k}) {
          mantissas.push_back(m & 0x7FFFFF);
        }
      }
      for (uint32_t m : mantissas) out.push_back(sign | (exponent << 23) | m);
    }
  }
  for (const fp::Format* f : formats) {
    const int total = 1 + f->exponent_bits + f->mantissa_bits;
    const uint32_t sign_bit = 1u << (total - 1);
    for (uint32_t code = 0; code + 1 < sign_bit; ++code) {
      float lo = fp::decode(*f, code);
      float hi = fp::decode(*f, code + 1);
      if (!std::isfinite(lo) || !std::isfinite(hi)) continue;
      uint32_t mid = std::bit_cast<uint32_t>((lo + hi) / 2);  // exact: few mantissa bits
      for (uint32_t bits : {mid - 1, mid, mid + 1}) {
        out.push_back(bits);
        out.push_back(bits | 0x80000000u);
      }
    }
    // Past the largest finite value: the tie with the next power and beyond.
    float max = fp::decode(*f, f->max_bits);
    float step = max - fp::decode(*f, f->max_bits - 1);
    for (float x : {max + step / 2, max + step, max * 2}) {
      uint32_t bits = std::bit_cast<uint32_t>(x);
      for (uint32_t b : {bits - 1, bits, bits + 1}) out.push_back(b);
    }
  }
  std::mt19937 rng(20240611);
  for (int i = 0; i < (1 << 18); ++i) out.push_back(static_cast<uint32_t>(rng()));
  return out;
}

// Evaluates `build(input)` on every input; `lanes` inputs per row.
Bits evaluate(DataType input_type, const Bits& inputs,
              const std::function<Expr(const Expr&)>& build) {
  const size_t lanes = input_type.lanes();
  EXPECT_EQ(inputs.size() % lanes, 0u);
  Var x = Var::make("x", input_type);
  Expr formula = build(x);
  Evaluator eval(inputs.size() / lanes);
  eval.bind(x, inputs);
  return eval.eval(formula);
}

void expect_widening_exact(DataType narrow, int lanes) {
  const fp::Format& f = narrow_format(narrow);
  const uint32_t count = 1u << (1 + f.exponent_bits + f.mantissa_bits);
  Bits inputs;
  for (uint32_t bits = 0; bits < count; ++bits) inputs.push_back(bits);
  while (inputs.size() % lanes != 0) inputs.push_back(0);
  const DataType storage = DataType::UInt(narrow.bits(), lanes);
  Bits out = evaluate(storage, inputs, [&](const Expr& x) {
    Expr e = narrow_bits_to_float32(narrow.with_lanes(lanes), x);
    EXPECT_EQ(e.dtype(), DataType::Float(32, lanes));
    return e;
  });
  for (size_t i = 0; i < count; ++i) {
    uint32_t expected = std::bit_cast<uint32_t>(
        narrow.is_bfloat16() ? fp::bfloat16_bits_to_float(static_cast<uint16_t>(inputs[i]))
                             : fp::decode(f, static_cast<uint32_t>(inputs[i])));
    ASSERT_EQ(out[i], expected) << narrow << " " << hex(inputs[i]) << " -> " << hex(out[i])
                                << ", expected " << hex(expected) << " ("
                                << std::bit_cast<float>(expected) << ")";
  }
}

void expect_narrowing_exact(DataType narrow, int lanes, const std::vector<uint32_t>& samples) {
  const fp::Format& f = narrow_format(narrow);
  Bits inputs(samples.begin(), samples.end());
  while (inputs.size() % lanes != 0) inputs.push_back(0);
  Bits out = evaluate(DataType::Float(32, lanes), inputs, [&](const Expr& x) {
    Expr e = float32_to_narrow_bits(narrow.with_lanes(lanes), x);
    EXPECT_EQ(e.dtype(), DataType::UInt(narrow.bits(), lanes));
    return e;
  });
  for (size_t i = 0; i < inputs.size(); ++i) {
    float x = std::bit_cast<float>(static_cast<uint32_t>(inputs[i]));
    uint32_t expected = fp::encode(f, x);
    ASSERT_EQ(out[i], expected) << narrow << " from " << hex(inputs[i]) << " (" << x << ") -> "
                                << hex(out[i]) << ", expected " << hex(expected);
  }
}

// ---- the formulas ----------------------------------------------------------------------------

TEST(StorageLegalizeFormulas, WideningIsExactOnEveryPattern) {
  for (DataType narrow : {kBF16, kE4M3, kE5M2}) {
    SCOPED_TRACE(narrow.str());
    expect_widening_exact(narrow, 1);
  }
}

TEST(StorageLegalizeFormulas, NarrowingMatchesFloatFormats) {
  const std::vector<uint32_t> samples =
      float32_samples({&fp::kBFloat16, &fp::kFloat8E4M3FN, &fp::kFloat8E5M2});
  ASSERT_GT(samples.size(), 400000u);
  for (DataType narrow : {kBF16, kE4M3, kE5M2}) {
    SCOPED_TRACE(narrow.str());
    expect_narrowing_exact(narrow, 1, samples);
  }
}

TEST(StorageLegalizeFormulas, Float8RoundTripsEveryFiniteCode) {
  for (DataType narrow : {kE4M3, kE5M2}) {
    const fp::Format& f = narrow_format(narrow);
    std::vector<uint32_t> samples;
    for (uint32_t code = 0; code < 256; ++code) {
      samples.push_back(std::bit_cast<uint32_t>(fp::decode(f, code)));
    }
    Bits out = evaluate(DataType::Float(32), Bits(samples.begin(), samples.end()),
                        [&](const Expr& x) { return float32_to_narrow_bits(narrow, x); });
    for (uint32_t code = 0; code < 256; ++code) {
      float value = fp::decode(f, code);
      if (std::isnan(value)) {
        EXPECT_EQ(out[code], (code & 0x80) | f.nan_bits) << narrow << " NaN " << hex(code);
      } else if (std::isinf(value)) {
        EXPECT_EQ(out[code], (code & 0x80) | f.max_bits) << narrow << " saturates " << hex(code);
      } else {
        EXPECT_EQ(out[code], code) << narrow << " " << value;
      }
    }
  }
}

TEST(StorageLegalizeFormulas, VectorLanesConvertEachLane) {
  const std::vector<uint32_t> samples = float32_samples({&fp::kFloat8E4M3FN});
  for (DataType narrow : {kBF16, kE4M3, kE5M2}) {
    SCOPED_TRACE(narrow.str());
    expect_widening_exact(narrow, 4);
    expect_narrowing_exact(narrow, 8, samples);
  }
}

TEST(StorageLegalizeFormulas, SelectedSpotValues) {
  auto narrow_one = [](DataType t, float x) {
    return evaluate(DataType::Float(32), {std::bit_cast<uint32_t>(x)},
                    [&](const Expr& v) { return float32_to_narrow_bits(t, v); })[0];
  };
  EXPECT_EQ(narrow_one(kBF16, 1.0f), 0x3F80u);
  EXPECT_EQ(narrow_one(kBF16, std::numeric_limits<float>::max()), 0x7F80u);  // overflow: inf
  EXPECT_EQ(narrow_one(kBF16, -std::numeric_limits<float>::quiet_NaN()), 0xFFC0u);
  EXPECT_EQ(narrow_one(kE4M3, 448.0f), 0x7Eu);
  EXPECT_EQ(narrow_one(kE4M3, 1e9f), 0x7Eu);  // saturates
  EXPECT_EQ(narrow_one(kE4M3, -INFINITY), 0xFEu);
  EXPECT_EQ(narrow_one(kE4M3, std::ldexp(1.0f, -9)), 0x01u);   // smallest subnormal
  EXPECT_EQ(narrow_one(kE4M3, std::ldexp(1.0f, -10)), 0x00u);  // tie to even: 0
  EXPECT_EQ(narrow_one(kE4M3, std::ldexp(3.0f, -10)), 0x02u);  // tie to even: 2
  EXPECT_EQ(narrow_one(kE5M2, INFINITY), 0x7Bu);               // saturates, no inf
  EXPECT_EQ(narrow_one(kE5M2, std::ldexp(1.0f, -16)), 0x01u);  // smallest subnormal
  EXPECT_EQ(narrow_one(kE5M2, std::numeric_limits<float>::quiet_NaN()), 0x7Eu);
}

// ---- the passes ------------------------------------------------------------------------------

IRModule run(const IRModule& module, const std::string& pass) {
  IRModule out =
      run_passes(module, std::vector<std::string>{pass}, RunOptions{.verify_each = true});
  verify_well_formed(out);
  return out;
}

// Every dtype, pointee and buffer type met in a module (buffer_map, signature and body).
std::set<std::string> types_in(const IRModule& module) {
  std::set<std::string> types;
  for (const auto& [gvar, func] : module->functions) {
    types.insert(func->ret_type.element_of().str());
    auto expr = [&](const Expr& e) {
      types.insert(e.dtype().element_of().str());
      if (const auto* var = e.as<VarNode>(); var && var->is_pointer()) {
        types.insert(var->pointee.element_of().str());
      }
    };
    for (const Var& param : func->params) expr(param);
    post_order_visit(func->body, [&](const Ref<Object>& node) {
      if (is_expr_kind(node.kind())) expr(Expr(static_cast<const ExprNode*>(node.get())));
      if (const auto* alloc = node.as<AllocBuffer>()) types.insert(alloc->buffer->dtype.str());
      if (const auto* decl = node.as<DeclBuffer>()) types.insert(decl->buffer->dtype.str());
    });
  }
  return types;
}

std::string module_text(const std::string& target, const std::string& body) {
  return "@I.ir_module\nclass Module:\n    @T.prim_func\n    def main(A_1: T.handle(\"bfloat16\", "
         "\"global\"), B_1: T.handle(\"float8_e4m3fn\", \"global\"), C_1: T.handle(\"float32\", "
         "\"global\")):\n        T.func_attr({\"calling_conv\": 2" +
         (target.empty() ? std::string() : ", \"target\": " + target) +
         "})\n        A = T.decl_buffer((256,), \"bfloat16\", data=A_1)\n        B = "
         "T.decl_buffer((256,), \"float8_e4m3fn\", data=B_1)\n        C = T.decl_buffer((256,), "
         "data=C_1)\n" +
         body;
}

const char* kMixedBody =
    "        for i in range(128):\n"
    "            A[i] = A[i + 128] * A[i] + T.Cast(\"bfloat16\", C[i])\n"
    "            B[i] = T.Cast(\"float8_e4m3fn\", C[i] * T.Cast(\"float32\", B[i + 128]))\n";

const char* kLaunchBody =
    "        with T.launch_thread(\"threadIdx.x\", 128) as i:\n"
    "            A[i] = A[i + 128] * A[i]\n"
    "            B[i] = T.Cast(\"float8_e4m3fn\", C[i])\n";

TEST(StorageLegalizePass, TargetDecidesPerFamily) {
  struct Row {
    std::string target;
    bool device_code;
    bool keeps_bf16;
    bool keeps_fp8;
  };
  const std::vector<Row> rows = {
      {"", false, false, false},
      {"T.target(\"llvm\")", false, false, false},
      {"T.target(\"emu\", host=\"llvm\")", true, false, false},
      {"T.target(\"cuda\", arch=\"sm_75\", host=\"llvm\")", true, false, false},
      {"T.target(\"cuda\", arch=\"sm_80\")", false, true, false},
      {"T.target(\"cuda\", arch=\"sm_86\")", true, true, false},
      {"T.target(\"cuda\", arch=\"sm_89\")", false, true, true},
      {"T.target(\"cuda\", arch=\"sm_90a\", host=\"llvm\")", true, true, true},
      // Host code whose target still names the device: the host decides.
      {"T.target(\"cuda\", arch=\"sm_90\", host=\"llvm\")", false, false, false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.target + (row.device_code ? " with a launch" : " without device code"));
    IRModule in = parse(module_text(row.target, row.device_code ? kLaunchBody : kMixedBody));
    IRModule bf16 = run(in, "BF16StorageLegalize");
    IRModule fp8 = run(in, "FP8StorageLegalize");
    EXPECT_EQ(bf16.same_as(in), row.keeps_bf16);
    EXPECT_EQ(fp8.same_as(in), row.keeps_fp8);
    std::set<std::string> after_bf16 = types_in(bf16);
    std::set<std::string> after_fp8 = types_in(fp8);
    EXPECT_EQ(after_bf16.count("bfloat16"), row.keeps_bf16 ? 1u : 0u);
    EXPECT_EQ(after_bf16.count("float8_e4m3fn"), 1u);  // not this pass's business
    EXPECT_EQ(after_fp8.count("float8_e4m3fn"), row.keeps_fp8 ? 1u : 0u);
    EXPECT_EQ(after_fp8.count("bfloat16"), 1u);
  }
}

TEST(StorageLegalizePass, SecondRunIsANoOp) {
  IRModule in = parse(module_text("T.target(\"llvm\")", kMixedBody));
  IRModule once = run(run(in, "FP8StorageLegalize"), "BF16StorageLegalize");
  std::set<std::string> types = types_in(once);
  EXPECT_EQ(types.count("bfloat16") + types.count("float8_e4m3fn"), 0u);
  EXPECT_TRUE(types.count("uint16") && types.count("uint8"));
  EXPECT_TRUE(run(once, "FP8StorageLegalize").same_as(once));
  EXPECT_TRUE(run(once, "BF16StorageLegalize").same_as(once));
}

TEST(StorageLegalizePass, OnlyFunctionsWithNarrowTypesChange) {
  IRModule in = parse(R"(@I.ir_module
class Module:
    @T.prim_func
    def plain(A: T.Buffer((16,), "float16"), x: T.float32):
        T.func_attr({"target": T.target("llvm")})
        for i in range(16):
            A[i] = T.Cast("float16", T.exp(x)) + A[i]

    @T.prim_func
    def narrow(A_1: T.handle("bfloat16", "global"), B_1: T.handle("float8_e5m2", "global")):
        T.func_attr({"target": T.target("llvm")})
        A = T.decl_buffer((16,), "bfloat16", data=A_1)
        B = T.decl_buffer((16,), "float8_e5m2", data=B_1)
        A[0] = T.Cast("bfloat16", B[0])
)");
  for (const char* pass : {"BF16StorageLegalize", "FP8StorageLegalize"}) {
    SCOPED_TRACE(pass);
    IRModule out = run(in, pass);
    // A buffer_map is only an error where the pass has something to do.
    EXPECT_TRUE(out->lookup("plain").same_as(in->lookup("plain")));
    EXPECT_FALSE(out->lookup("narrow").same_as(in->lookup("narrow")));
  }
}

TEST(StorageLegalizePass, BufferMapIsAnErrorWhenLegalizing) {
  const std::string text = R"(@I.ir_module
class Module:
    @T.prim_func
    def fn(A: T.Buffer((16,), "bfloat16")):
        T.func_attr({"target": T.target("TARGET")})
        A[0] = A[1]
)";
  auto with_target = [&](const std::string& target) {
    std::string t = text;
    return parse(t.replace(t.find("T.target(\"TARGET\")"), 18, target));
  };
  IRModule native = with_target("T.target(\"cuda\", arch=\"sm_80\")");
  EXPECT_TRUE(run(native, "BF16StorageLegalize").same_as(native));
  try {
    run(with_target("T.target(\"llvm\")"), "BF16StorageLegalize");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("BF16StorageLegalize: function 'fn'"), std::string::npos) << what;
    EXPECT_NE(what.find("must run after MakePackedAPI"), std::string::npos) << what;
  }
}

// The stored bits are what float32 arithmetic on the widened operands gives, rounded once.
TEST(StorageLegalizePass, StoresRoundTheFloat32ResultOnce) {
  IRModule in = parse(module_text("T.target(\"llvm\")", kMixedBody));
  IRModule out = run(run(in, "FP8StorageLegalize"), "BF16StorageLegalize");
  std::vector<const BufferStore*> stores;
  post_order_visit(out->lookup("main")->body, [&](const Ref<Object>& node) {
    if (const auto* store = node.as<BufferStore>()) stores.push_back(store);
  });
  ASSERT_EQ(stores.size(), 2u);
  const size_t n = 128;
  std::mt19937 rng(7);
  Bits a(256), b(256), c(256);
  for (uint64_t& x : a) x = rng() & 0xFFFF;
  for (uint64_t& x : b) x = rng() & 0xFF;
  for (uint64_t& x : c) x = std::bit_cast<uint32_t>(std::ldexp(float(rng() % 2001) - 1000, -6));
  a[0] = 0x7F80;  // inf
  a[128] = 0;     // inf * 0 = NaN
  b[129] = 0x7F;  // NaN
  Var i;
  post_order_visit(out->lookup("main")->body, [&](const Ref<Object>& node) {
    if (const auto* loop = node.as<For>()) i = loop->loop_var;
  });
  Evaluator eval(n);
  Bits rows(n);
  for (size_t r = 0; r < n; ++r) rows[r] = r;
  eval.bind(i, rows);
  eval.set_buffer("A", a);
  eval.set_buffer("B", b);
  eval.set_buffer("C", c);
  Bits stored_a = eval.eval(stores[0]->value);
  Bits stored_b = eval.eval(stores[1]->value);
  for (size_t r = 0; r < n; ++r) {
    auto bf = [&](uint64_t bits) {
      return fp::bfloat16_bits_to_float(static_cast<uint16_t>(bits));
    };
    float cf = std::bit_cast<float>(static_cast<uint32_t>(c[r]));
    float expected_a =
        bf(a[r + 128]) * bf(a[r]) + fp::round_to(fp::kBFloat16, cf);  // the explicit cast rounds
    EXPECT_EQ(stored_a[r], fp::encode(fp::kBFloat16, expected_a)) << "row " << r;
    float expected_b = cf * fp::decode(fp::kFloat8E4M3FN, static_cast<uint32_t>(b[r + 128]));
    EXPECT_EQ(stored_b[r], fp::encode(fp::kFloat8E4M3FN, expected_b)) << "row " << r;
  }
}

}  // namespace
}  // namespace primjit::passes
