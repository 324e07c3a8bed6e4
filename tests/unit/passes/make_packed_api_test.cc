// MakePackedAPI rules the goldens (tests/passes/make_packed_api.tir) cannot show: which
// functions it leaves alone (compared by identity), idempotence, and the errors that only IR
// the verifier would reject reaches.
#include <gtest/gtest.h>

#include "primjit/ir.h"
#include "primjit/ir/structural.h"
#include "primjit/ir/text.h"
#include "primjit/passes.h"
#include "tests/unit/test_util.h"

namespace primjit::passes {
namespace {

IRModule make_packed_api(const IRModule& module) { return run_passes(module, {"MakePackedAPI"}); }

TEST(MakePackedAPI, LeavesKernelsPrivateAndDeviceOnlyFunctionsAlone) {
  IRModule module = parse(R"(
@I.ir_module
class Module:
    @T.prim_func
    def kernel(A: T.handle("float32", "global")):
        T.func_attr({"calling_conv": 2, "target": T.target("cuda", arch="sm_90")})
        A_1 = T.decl_buffer((4,), "float32", data=A)
        A_1[0] = T.float32(0)

    @T.prim_func
    def device_only(x: T.int32) -> T.int32:
        T.func_attr({"target": T.target("cuda", arch="sm_90")})
        return x

    @T.prim_func(private=True)
    def helper(x: T.int32) -> T.int32:
        T.func_attr({"target": T.target("llvm")})
        return x

    @T.prim_func
    def main(x: T.int32) -> T.int32:
        T.func_attr({"target": T.target("llvm")})
        return x
)");
  IRModule out = make_packed_api(module);
  for (const char* name : {"kernel", "device_only", "helper"}) {
    EXPECT_TRUE(out->lookup(name).same_as(module->lookup(name))) << name;
  }
  PrimFunc main = out->lookup("main");
  ASSERT_EQ(main->params.size(), 4u);
  EXPECT_EQ(main->params[2].dtype(), DataType::Int(32));
  EXPECT_EQ(main->ret_type, DataType::Int(32));
  EXPECT_EQ(main->attr(attr::kCallingConv)->as_int(), 1);
  EXPECT_TRUE(main->buffer_map.empty());
}

TEST(MakePackedAPI, IsIdempotent) {
  IRModule module = parse(R"(
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((8,), "float32"), s: T.float32):
        T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
        A[0] = s
)");
  IRModule once = make_packed_api(module);
  EXPECT_FALSE(structural_equal(once, module));
  EXPECT_EQ(once->lookup("main")->target().str(), Target::llvm().str());
  IRModule twice = make_packed_api(once);
  EXPECT_TRUE(twice.same_as(once));
}

TEST(MakePackedAPI, NamesVariablesNoArgumentDefines) {
  // The verifier rejects this input, so only a direct call of the pass reaches the check.
  IRModule module = parse(R"(
@I.ir_module
class Module:
    @T.prim_func
    def main(a: T.handle):
        T.func_attr({"target": T.target("llvm")})
        n = T.int32()
        A = T.match_buffer(a, (n * 2,), "float32")
        A[0] = T.float32(1)
)");
  EXPECT_ERROR_CONTAINS(make_packed_api(module), "uses variables [n] that no argument defines");
}

TEST(MakePackedAPI, RejectsParametersThePackedConventionCannotCarry) {
  IRModule vector_param = parse(R"(
@I.ir_module
class Module:
    @T.prim_func
    def main(x: T.float32x4):
        T.func_attr({"target": T.target("llvm")})
        T.evaluate(x)
)");
  EXPECT_ERROR_CONTAINS(make_packed_api(vector_param),
                        "parameter 'x' of 'main' has dtype float32x4");
}

}  // namespace
}  // namespace primjit::passes
