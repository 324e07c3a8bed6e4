// Every math builtin of the op table lowers on every backend: a function applying each one
// (made from the table, so a new row is covered without touching this test) runs on llvm and
// emu, which agree within the table's ulp bound, and its CUDA source compiles with NVRTC.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "jit/cuda/codegen_cuda.h"
#include "jit/cuda/nvrtc_compiler.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/passes.h"
#include "primjit/tensor.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

using test::ulp_distance;

// B[k] = T.op(A[k]) (or T.op(A[k], A[k + 1], ...)) for the k-th math op; bool results as 0/1.
std::string math_function(const std::string& dtype, const std::string& target_line,
                          std::vector<Op>* ops, const std::string& launch = "") {
  std::string body;
  for (const Op& op : Op::all()) {
    if (!op->is_math()) continue;
    size_t k = ops->size();
    ops->push_back(op);
    std::string call = "T." + op->name + "(";
    for (int i = 0; i < op->num_args; ++i) {
      call += (i == 0 ? "A[" : ", A[") + std::to_string(k + static_cast<size_t>(i)) + "]";
    }
    call += ")";
    if (op->type_rule == OpTypeRule::kBoolOfArg) {
      call = "T.Select(" + call + ", T." + dtype + "(1), T." + dtype + "(0))";
    }
    body += "        B[" + std::to_string(k) + "] = " + call + "\n";
  }
  return "@T.prim_func\ndef mathops(A: T.Buffer((64,), \"" + dtype + "\"), B: T.Buffer((64,), \"" +
         dtype + "\")):\n    T.func_attr({\"target\": " + target_line + "})\n" + launch +
         "    if True:\n" + body;
}

template <typename F, typename I>
void check_llvm_against_emu(const std::string& dtype, DataType t) {
  std::vector<Op> ops;
  PrimFunc f = parse(math_function(dtype, "T.target(\"llvm\")", &ops))->lookup("mathops");
  Jit jit;
  std::vector<Tensor> out;
  for (const Target& target : {Target::llvm(), Target::emu()}) {
    Tensor a = Tensor::zeros({64}, t), b = Tensor::zeros({64}, t);
    for (int i = 0; i < 64; ++i) a.data<F>()[i] = static_cast<F>(0.37 + 0.113 * i);
    jit.kernel(f, {.target = target})(a, b);
    out.push_back(std::move(b));
  }
  // The function really ran: T.exp is the table's first row.
  ASSERT_EQ(ops[0]->name, "exp");
  EXPECT_LE((ulp_distance<F, I>(out[0].data<F>()[0], std::exp(static_cast<F>(0.37)))), 2);
  for (size_t k = 0; k < ops.size(); ++k) {
    F x = out[0].data<F>()[k], y = out[1].data<F>()[k];
    // Each backend is within max_ulp of the exact result, so within twice that of each other.
    EXPECT_LE((ulp_distance<F, I>(x, y)), 2 * ops[k]->max_ulp)
        << dtype << " T." << ops[k]->name << ": llvm " << x << ", emu " << y;
  }
}

TEST(OpLowering, EveryMathOpAgreesOnLlvmAndEmuWithinItsBound) {
  check_llvm_against_emu<float, int32_t>("float32", DataType::Float(32));
  check_llvm_against_emu<double, int64_t>("float64", DataType::Float(64));
}

// docs/semantics.md states each math op's bound: its row in the math table ("| `exp` | 2 |")
// must say what the op table says.
TEST(OpLowering, TheSemanticsTableStatesEveryMathOpsBound) {
  std::ifstream in(std::string(PRIMJIT_DOCS_DIR) + "/semantics.md");
  ASSERT_TRUE(in.good());
  std::vector<std::string> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `", 0) == 0) rows.push_back(line);
  }
  for (const Op& op : Op::all()) {
    if (!op->is_math()) continue;
    bool found = false;
    for (const std::string& row : rows) {
      size_t cell_end = row.find(" | ", 2);
      if (cell_end == std::string::npos) continue;
      std::string first = row.substr(2, cell_end - 2);
      if (first.find("`" + op->name + "`") == std::string::npos) continue;
      found = true;
      EXPECT_EQ(std::atoi(row.c_str() + cell_end + 3), op->max_ulp) << row;
    }
    EXPECT_TRUE(found) << "docs/semantics.md has no row for T." << op->name;
  }
}

TEST(OpLowering, EveryMathOpCompilesForCuda) {
  for (const char* dtype : {"float32", "float64", "float16"}) {
    std::vector<Op> ops;
    std::string text = math_function(dtype, "T.target(\"cuda\", arch=\"sm_90\", host=\"llvm\")",
                                     &ops, "    tx = T.launch_thread(\"threadIdx.x\", 1)\n");
    IRModule lowered = passes::run_passes(parse(text), passes::default_pipeline());
    jit::CudaModuleSource source = jit::codegen_cuda(lowered);
    jit::DeviceImage image = jit::nvrtc_compile({"mathops.cu", source.code}, {.arch = 90});
    EXPECT_FALSE(image.data.empty()) << dtype;
  }
}

}  // namespace
}  // namespace primjit
