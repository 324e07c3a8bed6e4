// The C-family printer without CUDA: a printer for plain C++ that runs a kernel's thread indices
// as loops (the shape of a CPU check of generated kernels) needs only CPrinter's hooks.
#include "jit/cuda/c_printer.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "primjit/error.h"
#include "primjit/ir/text.h"
#include "primjit/passes.h"

namespace primjit::jit {
namespace {

class PlainCppPrinter final : public CPrinter {
 public:
  explicit PlainCppPrinter(std::string symbol)
      : CPrinter("C++ code generation", std::move(symbol), /*is_kernel=*/true, {}, 8) {}

  std::set<SemanticsHelper> helpers;

 private:
  std::optional<std::string> extension_type(DataType) override { return std::nullopt; }
  Code special_float(double v, bool) override {
    return v != v ? Code{"NAN", kPrimary} : Code{v > 0 ? "INFINITY" : "-INFINITY", kUnary};
  }
  Code to_compute_float(DataType, const Code& v) override { return v; }
  Code from_float(DataType, const Code& v) override { return v; }
  Code lower_call(const Call* op, int) override {
    PRIMJIT_USER_ERROR() << "no builtins here: T." << op->op->name;
  }
  Code call_function(const Call* op, int) override {
    PRIMJIT_USER_ERROR() << "no calls here: " << op->callee->name;
  }
  void require(SemanticsHelper helper) override { helpers.insert(helper); }
  // Every thread of the launch in turn.
  void print_thread_extent(const AttrStmt* op) override {
    const Var& var = op->iter_var()->var;
    std::string name = names_.unique(var->name);
    var_names_[var.get()] = name;
    std::string type = scalar_type(var.dtype());
    w_.open("for (" + type + " " + name + " = 0; " + name + " < " +
            wrap(sub(op->value, -1), kRel - 1) + "; ++" + name + ")");
    visit_stmt(op->body);
    w_.close();
  }
  void print_allocation(const AllocBuffer* op, DataType, const std::string&, int) override {
    PRIMJIT_USER_ERROR() << "no allocations here: " << op->buffer->name;
  }
  std::string function_head(const PrimFunc&) override { return "extern \"C\" void "; }
  const char* trap_statement() const override { return "abort();"; }
};

PrimFunc lowered_kernel(const std::string& text) {
  IRModule m = passes::run_passes(parse(text), passes::default_pipeline(), {.verify_each = true});
  for (const auto& [gvar, func] : m->functions) {
    if (func->is_kernel()) return func;
  }
  ADD_FAILURE() << "no kernel in:\n" << print(m);
  return PrimFunc();
}

TEST(CPrinter, PrintsAKernelAsPlainCppThroughItsHooks) {
  PrimFunc kernel = lowered_kernel(R"(
@T.prim_func
def add_one(A_handle: T.handle, B_handle: T.handle):
    T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
    n = T.int32(is_size_var=True)
    A = T.match_buffer(A_handle, (n,), "float32")
    B = T.match_buffer(B_handle, (n,), "float32")
    blockIdx_x = T.launch_thread("blockIdx.x", (n + 127) // 128)
    threadIdx_x = T.launch_thread("threadIdx.x", 128)
    i: T.int32 = blockIdx_x * 128 + threadIdx_x
    if i < n:
        B[i] = A[i] + T.float32(1)
)");
  ASSERT_TRUE(kernel.defined());
  PlainCppPrinter printer("add_one_kernel");
  std::string code = printer.emit(kernel);
  EXPECT_EQ(
      code,
      "extern \"C\" void add_one_kernel(float* __restrict__ A, float* __restrict__ B, int n) "
      "{\n"
      "  for (int blockIdx_x = 0; blockIdx_x < primjit_floordiv(n + 127, 128); ++blockIdx_x) {\n"
      "    for (int threadIdx_x = 0; threadIdx_x < 128; ++threadIdx_x) {\n"
      "      int i = blockIdx_x * 128 + threadIdx_x;\n"
      "      if (i < n) {\n"
      "        B[i] = A[i] + 1.0f;\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n");
  EXPECT_EQ(printer.param_types().size(), 3u);
  // The printer does not know n >= 0 here: the floor division goes through its helper.
  EXPECT_EQ(printer.helpers, std::set<SemanticsHelper>{SemanticsHelper::kIntDivision});
}

TEST(CPrinter, ATargetWithoutABuiltinSaysWhichOne) {
  PrimFunc kernel = lowered_kernel(R"(
@T.prim_func
def sync(A_handle: T.handle):
    T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
    A = T.match_buffer(A_handle, (32,), "float32")
    threadIdx_x = T.launch_thread("threadIdx.x", 32)
    A[threadIdx_x] = T.float32(0)
    T.tvm_storage_sync("shared")
)");
  ASSERT_TRUE(kernel.defined());
  PlainCppPrinter printer("sync_kernel");
  try {
    printer.emit(kernel);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("no builtins here: T.tvm_storage_sync"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace primjit::jit
