// End-to-end host code generation: IR text → default pipeline (target llvm) → LLVM → ORC, then
// called through the packed calling convention and compared with C++ references.
#include <gtest/gtest.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "jit/llvm/codegen_llvm.h"
#include "jit/llvm/orc_engine.h"
#include "jit/runtime/host_program.h"
#include "jit/runtime/host_runtime.h"
#include "primjit/dlpack.h"
#include "primjit/float_formats.h"
#include "primjit/ir/text.h"
#include "primjit/passes.h"
#include "tests/unit/jit/jit_test_util.h"
#include "tests/unit/test_util.h"

namespace primjit::jit {
namespace {

OrcEngine& engine() {
  static OrcEngine* e = new OrcEngine();  // lives as long as the process: code stays valid
  return *e;
}

IRModule lower(const std::string& text) {
  return passes::run_passes(parse(text), passes::default_pipeline(), {.verify_each = true});
}

// A host tensor with its DLTensor view.
template <typename T>
struct HostTensor {
  std::vector<T> data;
  std::vector<int64_t> shape;
  DLTensor dl{};

  HostTensor(std::vector<int64_t> dims, DLDataType dtype) : shape(std::move(dims)) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    data.resize(static_cast<size_t>(n));
    dl.data = data.data();
    dl.device = {kDLCPU, 0};
    dl.ndim = static_cast<int32_t>(shape.size());
    dl.dtype = dtype;
    dl.shape = shape.data();
  }
  PJValue arg() {
    PJValue v{};
    v.type_index = kPJDLTensorPtr;
    v.v_ptr = &dl;
    return v;
  }
};

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kI32{kDLInt, 32, 1};

PJValue int_arg(int64_t x) {
  PJValue v{};
  v.type_index = kPJInt;
  v.v_int64 = x;
  return v;
}
PJValue float_arg(double x) {
  PJValue v{};
  v.type_index = kPJFloat;
  v.v_float64 = x;
  return v;
}

class Compiled {
 public:
  Compiled(const std::string& text, const std::string& name)
      : program_(std::make_unique<HostProgram>(engine(), lower(text))),
        fn_(program_->function(name)) {}
  PJValue operator()(std::vector<PJValue> args) const {
    return call_packed(fn_, args.data(), static_cast<int32_t>(args.size()));
  }

 private:
  std::unique_ptr<HostProgram> program_;
  HostEntry fn_;
};

TEST(HostCodegen, VectorAddWithSeveralSizes) {
  Compiled vadd(test::kVectorAddText, "vadd");
  for (int64_t n : {1, 7, 1000, 4099}) {
    HostTensor<float> a({n}, kF32), b({n}, kF32), c({n}, kF32);
    for (int64_t i = 0; i < n; ++i) {
      a.data[i] = 0.5f * i;
      b.data[i] = 3.0f - i;
    }
    vadd({a.arg(), b.arg(), c.arg()});
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(c.data[i], a.data[i] + b.data[i]) << "n=" << n;
  }
}

TEST(HostCodegen, ScaleWithScalarArgument) {
  Compiled scale(R"(
@T.prim_func
def scale(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), s: T.float32, k: T.int32):
    T.func_attr({"target": T.target("llvm")})
    for i in range(64):
        B[i] = A[i] * s + T.Cast("float32", k)
)",
                 "scale");
  HostTensor<float> a({64}, kF32), b({64}, kF32);
  std::iota(a.data.begin(), a.data.end(), -10.0f);
  scale({a.arg(), b.arg(), float_arg(2.5), int_arg(3)});
  for (int i = 0; i < 64; ++i) ASSERT_EQ(b.data[i], a.data[i] * 2.5f + 3.0f);
  // An int is accepted for a float parameter.
  scale({a.arg(), b.arg(), int_arg(2), int_arg(0)});
  for (int i = 0; i < 64; ++i) ASSERT_EQ(b.data[i], a.data[i] * 2.0f);
}

TEST(HostCodegen, TransposeReductionAndReturnValue) {
  Compiled transpose(R"(
@T.prim_func
def transpose(A: T.Buffer((5, 3), "int32"), B: T.Buffer((3, 5), "int32")):
    T.func_attr({"target": T.target("llvm")})
    for i, j in T.grid(3, 5):
        B[i, j] = A[j, i]
)",
                     "transpose");
  HostTensor<int32_t> a({5, 3}, kI32), b({3, 5}, kI32);
  std::iota(a.data.begin(), a.data.end(), 0);
  transpose({a.arg(), b.arg()});
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) ASSERT_EQ(b.data[i * 5 + j], a.data[j * 3 + i]);

  Compiled sum(R"(
@T.prim_func
def total(a: T.handle) -> T.float64:
    T.func_attr({"target": T.target("llvm")})
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    acc = T.alloc_buffer((1,), "float64", scope="local")
    acc[0] = T.float64(0)
    for i in range(n):
        acc[0] = acc[0] + T.Cast("float64", A[i])
    return acc[0]
)",
               "total");
  HostTensor<float> x({1000}, kF32);
  double expected = 0;
  for (int i = 0; i < 1000; ++i) {
    x.data[i] = std::sin(0.01f * i);
    expected += static_cast<double>(x.data[i]);
  }
  PJValue r = sum({x.arg()});
  EXPECT_EQ(r.type_index, kPJFloat);
  EXPECT_EQ(r.v_float64, expected);
}

TEST(HostCodegen, IntegerSemanticsMatchCxx) {
  Compiled f(R"(
@T.prim_func
def ints(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32"), C: T.Buffer((8,), "int8")):
    T.func_attr({"target": T.target("llvm")})
    for i in range(8):
        B[i] = A[i] // 3 + A[i] % 3 * 100 + T.truncdiv(A[i], 3) * 10000
        C[i] = T.Cast("int8", A[i] * 37)
)",
             "ints");
  HostTensor<int32_t> a({8}, kI32), b({8}, kI32);
  HostTensor<int8_t> c({8}, DLDataType{kDLInt, 8, 1});
  a.data = {-7, -6, -1, 0, 1, 5, 7, 100};
  a.dl.data = a.data.data();
  f({a.arg(), b.arg(), c.arg()});
  for (int i = 0; i < 8; ++i) {
    int32_t x = a.data[i];
    int32_t fd = x / 3 - ((x % 3 != 0) && ((x % 3 < 0) != (3 < 0)) ? 1 : 0);
    int32_t fm = x - fd * 3;
    EXPECT_EQ(b.data[i], fd + fm * 100 + (x / 3) * 10000) << x;
    EXPECT_EQ(c.data[i], static_cast<int8_t>(static_cast<uint32_t>(x) * 37u)) << x;
  }
}

TEST(HostCodegen, Float16Arithmetic) {
  Compiled f(R"(
@T.prim_func
def half(A: T.Buffer((16,), "float16"), B: T.Buffer((16,), "float16")):
    T.func_attr({"target": T.target("llvm")})
    for i in range(16):
        B[i] = (A[i] + T.float16(0.25)) * T.float16(1.5)
)",
             "half");
  HostTensor<_Float16> a({16}, DLDataType{kDLFloat, 16, 1}), b({16}, DLDataType{kDLFloat, 16, 1});
  for (int i = 0; i < 16; ++i) a.data[i] = static_cast<_Float16>(i * 0.37f - 2);
  f({a.arg(), b.arg()});
  for (int i = 0; i < 16; ++i) {
    // Each operation rounds to float16 (an add then a multiply cannot fuse).
    _Float16 sum = a.data[i] + static_cast<_Float16>(0.25f);
    _Float16 expected = sum * static_cast<_Float16>(1.5f);
    EXPECT_EQ(static_cast<float>(b.data[i]), static_cast<float>(expected)) << i;
  }
}

TEST(HostCodegen, BFloat16ComputesInFloat32AndRoundsOnStore) {
  // The CPU has no bfloat16 arithmetic: the legalization computes in float32 and rounds once.
  Compiled f(R"(
@T.prim_func
def bf(A: T.Buffer((64,), "bfloat16"), B: T.Buffer((64,), "bfloat16")):
    T.func_attr({"target": T.target("llvm")})
    for i in range(64):
        B[i] = A[i] * A[i] + T.bfloat16(0.5)
)",
             "bf");
  HostTensor<uint16_t> a({64}, DLDataType{kDLBfloat, 16, 1}), b({64}, DLDataType{kDLBfloat, 16, 1});
  for (int i = 0; i < 64; ++i) a.data[i] = fp::float_to_bfloat16_bits(0.37f * i - 11.0f);
  f({a.arg(), b.arg()});
  for (int i = 0; i < 64; ++i) {
    float x = fp::bfloat16_bits_to_float(a.data[i]);
    float exact = std::fma(x, x, 0.5f);  // x * x is exact in float32 for 8-bit mantissas
    EXPECT_EQ(b.data[i], fp::float_to_bfloat16_bits(exact)) << i;
  }
}

TEST(HostCodegen, ParallelLoopOverAMillionElements) {
  Compiled f(R"(
@T.prim_func
def par(a: T.handle, b: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i in T.parallel(n):
        B[i] = A[i] * T.float32(2) + T.float32(1)
)",
             "par");
  const int64_t n = 1 << 20;
  HostTensor<float> a({n}, kF32), b({n}, kF32);
  for (int64_t i = 0; i < n; ++i) a.data[i] = static_cast<float>(i % 1000);
  f({a.arg(), b.arg()});
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(b.data[i], a.data[i] * 2 + 1) << i;
}

// The task of a parallel loop runs a chunk [begin, end) per call. The same results under one
// thread and under the default arena, for an empty range, one element, extents that are not a
// multiple of any grain, a loop with a nonzero minimum (an empty one when n <= 1), a body with
// a Bind and an allocation, and a parallel loop nested in it (serial in the task) and after a
// serial loop.
TEST(HostCodegen, ParallelLoopsRunChunksUnderOneAndManyThreads) {
  Compiled f(R"(
@T.prim_func
def par(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n, 4), "float32")
    C = T.match_buffer(c, (n,), "int32")
    for i in T.parallel(n):
        x: T.float32 = A[i] * T.float32(2)
        tmp = T.alloc_buffer((4,), "float32", scope="local")
        for j in T.parallel(4):
            tmp[j] = x + T.Cast("float32", j)
        for j in range(4):
            B[i, j] = tmp[j] + T.Cast("float32", i)
    for r in range(3):
        for i in T.parallel(1, n):
            C[i] = C[i] + i * (r + 1)
)",
             "par");
  for (int threads : {1, 0}) {
    for (int64_t n : {0, 1, 2, 1000, 100003}) {
      HostTensor<float> a({n}, kF32), b({n, 4}, kF32);
      HostTensor<int32_t> c({n}, kI32);
      for (int64_t i = 0; i < n; ++i) a.data[i] = static_cast<float>(i % 977) * 0.5f;
      auto run = [&] { f({a.arg(), b.arg(), c.arg()}); };
      if (threads == 1) {
        tbb::task_arena(1).execute(run);
      } else {
        run();
      }
      for (int64_t i = 0; i < n; ++i) {
        for (int j = 0; j < 4; ++j) {
          ASSERT_EQ(b.data[i * 4 + j], a.data[i] * 2 + j + static_cast<float>(i))
              << "threads " << threads << ", n " << n << ", i " << i << ", j " << j;
        }
        ASSERT_EQ(c.data[i], i == 0 ? 0 : static_cast<int32_t>(i * 6))
            << "threads " << threads << ", n " << n << ", i " << i;
      }
    }
  }
}

TEST(HostCodegen, ErrorsInsideAParallelLoopAreReported) {
  Compiled f(R"(
@T.prim_func
def checked(a: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int32()
    A = T.match_buffer(a, (n,), "int32")
    for i in T.parallel(n):
        assert A[i] >= 0, T.format("negative value {} at index {}", A[i], i)
        A[i] = A[i] + 1
)",
             "checked");
  HostTensor<int32_t> a({5000}, kI32);
  a.data[4321] = -5;
  EXPECT_ERROR_CONTAINS(f({a.arg()}), "negative value -5 at index 4321");
  // Iterations before the failure may have run; after fixing the input, all of them run.
  a.data[4321] = 5;
  std::vector<int32_t> before = a.data;
  f({a.arg()});
  for (size_t i = 0; i < a.data.size(); ++i) ASSERT_EQ(a.data[i], before[i] + 1) << i;
}

TEST(HostCodegen, BadCallsGiveTheCheckMessages) {
  Compiled vadd(test::kVectorAddText, "vadd");
  HostTensor<float> a({8}, kF32), b({8}, kF32), c({8}, kF32), short_c({7}, kF32);
  HostTensor<int32_t> wrong_dtype({8}, kI32);
  HostTensor<float> two_d({2, 4}, kF32);
  EXPECT_ERROR_CONTAINS(vadd({a.arg(), b.arg()}), "Expected 3 arguments when calling");
  EXPECT_ERROR_CONTAINS(vadd({a.arg(), b.arg()}), ", got 2");
  EXPECT_ERROR_CONTAINS(vadd({a.arg(), int_arg(3), c.arg()}),
                        "Mismatched type on argument #1 when calling:\n  `vadd(A: Tensor([n], "
                        "float32), B: Tensor([n], float32), C: Tensor([n], float32))`,\n  "
                        "expected Tensor, got int");
  EXPECT_ERROR_CONTAINS(vadd({a.arg(), b.arg(), short_c.arg()}),
                        "Mismatched C.shape[0] on argument #2");
  EXPECT_ERROR_CONTAINS(vadd({a.arg(), b.arg(), short_c.arg()}),
                        "expected to match A.shape[0], got 7");
  EXPECT_ERROR_CONTAINS(vadd({a.arg(), wrong_dtype.arg(), c.arg()}),
                        "Mismatched B.dtype on argument #1");
  EXPECT_ERROR_CONTAINS(vadd({a.arg(), wrong_dtype.arg(), c.arg()}), "expected float32, got int32");
  EXPECT_ERROR_CONTAINS(vadd({two_d.arg(), b.arg(), c.arg()}), "expected 1, got 2");
  HostTensor<float> null_data({8}, kF32);
  null_data.dl.data = nullptr;
  EXPECT_ERROR_CONTAINS(vadd({a.arg(), null_data.arg(), c.arg()}), "B data pointer is NULL");
  HostTensor<float> on_gpu({8}, kF32);
  on_gpu.dl.device = {kDLCUDA, 0};
  EXPECT_ERROR_CONTAINS(vadd({on_gpu.arg(), b.arg(), c.arg()}), "expected cpu, got cuda");
  int64_t strides[] = {2};
  a.dl.strides = strides;
  EXPECT_ERROR_CONTAINS(vadd({a.arg(), b.arg(), c.arg()}), "expected to be compact array");
  a.dl.strides = nullptr;
  // Still works afterwards.
  a.data[3] = 1;
  b.data[3] = 2;
  vadd({a.arg(), b.arg(), c.arg()});
  EXPECT_EQ(c.data[3], 3.0f);
}

TEST(HostCodegen, EmitsNoaliasVectorsAndParallelFor) {
  IRModule lowered = lower(R"(
@T.prim_func
def f(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    T.func_attr({"target": T.target("llvm")})
    for i in T.parallel(16):
        B[T.Ramp(i * 4, 1, 4)] = A[T.Ramp(i * 4, 1, 4)] + T.Broadcast(T.float32(1), 4)
)");
  std::string ir = to_llvm_text(codegen_llvm(passes::lower_for_host(lowered)));
  EXPECT_NE(ir.find("ptr noalias"), std::string::npos) << ir;
  EXPECT_NE(ir.find("<4 x float>"), std::string::npos) << ir;
  EXPECT_NE(ir.find("call i32 @primjit_rt_parallel_for"), std::string::npos) << ir;
  // One call per chunk: the task loops over [begin, end) itself.
  EXPECT_NE(ir.find("(i64 %begin, i64 %end, ptr noalias %closure)"), std::string::npos) << ir;
}

// f(A, B): two vectors of `dtype` and length n, then `body`.
std::string two_vectors(const std::string& body, const std::string& dtype) {
  std::string text = R"(
@T.prim_func
def f(a: T.handle, b: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int32()
    A = T.match_buffer(a, (n,), "DT")
    B = T.match_buffer(b, (n,), "DT")
)" + body;
  for (size_t at = text.find("DT"); at != std::string::npos; at = text.find("DT", at)) {
    text.replace(at, 2, dtype);
  }
  return text;
}

// A symbolic trip count known to be a multiple of 16 but not of 32 (a bucketed variant's
// `n_16 * 16`) gets the interleave count that makes the vector step 16: 2 for float32, 4 for
// float64; multiples of 32, constant trip counts, loops holding a loop and narrow elements get
// none (LLVM's own choice).
std::vector<std::string> interleave_hints(const std::string& body, const std::string& dtype) {
  std::string ir =
      to_llvm_text(codegen_llvm(passes::lower_for_host(lower(two_vectors(body, dtype)))));
  std::vector<std::string> counts;
  const std::string key = "!\"llvm.loop.interleave.count\", i32 ";
  for (size_t at = ir.find(key); at != std::string::npos; at = ir.find(key, at + 1)) {
    counts.push_back(ir.substr(at + key.size(), ir.find('}', at) - at - key.size()));
  }
  return counts;
}

TEST(HostCodegen, LoopsOfSixteensGetAVectorStepThatDividesSixteen) {
  using Counts = std::vector<std::string>;
  const std::string sixteens = "    for i in range(n // 16 * 16):\n        B[i] = A[i]\n";
  EXPECT_EQ(interleave_hints(sixteens, "float32"), (Counts{"2"}));
  EXPECT_EQ(interleave_hints(sixteens, "float64"), (Counts{"4"}));
  EXPECT_EQ(interleave_hints(sixteens, "int8"), Counts{});
  EXPECT_EQ(interleave_hints("    for i in range(n // 32 * 32):\n        B[i] = A[i]\n", "float32"),
            Counts{});
  EXPECT_EQ(interleave_hints("    for i in range(n):\n        B[i] = A[i]\n", "float32"), Counts{});
  EXPECT_EQ(interleave_hints("    for i in range(16):\n        B[i] = A[i]\n", "float32"),
            Counts{});
  // Only the innermost loop of a nest.
  EXPECT_EQ(interleave_hints("    for j in range(n // 16 * 16):\n        for i in range(2):\n"
                             "            B[i] = A[j]\n"
                             "    for j in range(2):\n"
                             "        for i in range(n // 16 * 16):\n"
                             "            B[i] = A[i] + A[j]\n",
                             "float32"),
            (Counts{"2"}));
}

// HostCodegenOptions::runtime_unroll = false (a kBucketed variant's compile): loops with a
// symbolic trip count are marked not to be unrolled at run time; constant ones are not marked.
TEST(HostCodegen, RuntimeUnrollOffMarksTheSymbolicLoops) {
  const std::string body =
      "    for i in range(n):\n        B[i] = A[i]\n"
      "    for i in range(8):\n        B[i] = A[i] + T.float32(1)\n";
  IRModule lowered = passes::lower_for_host(lower(two_vectors(body, "float32")));
  // The loops whose metadata lists the node `!{!"llvm.loop.unroll.runtime.disable"}`.
  auto marked_loops = [](const std::string& ir) {
    const std::string node = " = !{!\"llvm.loop.unroll.runtime.disable\"}";
    const size_t at = ir.find(node);
    if (at == std::string::npos) return 0;
    const size_t start = ir.rfind('\n', at) + 1;
    const std::string id = ir.substr(start, at - start);  // "!7"
    int loops = 0;
    std::istringstream lines(ir);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("distinct !{") == std::string::npos) continue;
      loops += line.find(", " + id + ",") != std::string::npos ||
               line.find(", " + id + "}") != std::string::npos;
    }
    return loops;
  };
  EXPECT_EQ(marked_loops(to_llvm_text(codegen_llvm(lowered))), 0);
  std::string off = to_llvm_text(codegen_llvm(lowered, "", {.runtime_unroll = false}));
  EXPECT_EQ(marked_loops(off), 1) << off;  // the loop over n, not the one over 8
}

// The hinted loops compute what they did, for odd and even multiples of 16.
TEST(HostCodegen, LoopsOfSixteensComputeEveryElement) {
  Compiled f(two_vectors("    for i in range(n // 16 * 16):\n"
                         "        B[i] = A[i] * T.float32(2) + T.float32(1)\n",
                         "float32"),
             "f");
  for (int64_t n : {15, 16, 31, 32, 48, 80, 95, 144, 272, 1000}) {
    HostTensor<float> a({n}, kF32), b({n}, kF32);
    for (int64_t i = 0; i < n; ++i) {
      a.data[static_cast<size_t>(i)] = static_cast<float>(i);
      b.data[static_cast<size_t>(i)] = -7.0f;
    }
    f({a.arg(), b.arg()});
    for (int64_t i = 0; i < n; ++i) {
      const float want = i < n / 16 * 16 ? 2.0f * static_cast<float>(i) + 1.0f : -7.0f;
      ASSERT_EQ(b.data[static_cast<size_t>(i)], want) << "n = " << n << ", i = " << i;
    }
  }
}

// Values the host widens to int64 for the runtime (launch extents here) read as their type:
// a uint8 extent of 200 is 200, not -56.
TEST(HostCodegen, UnsignedLaunchExtentsAreZeroExtended) {
  IRModule lowered = lower(R"(
@T.prim_func
def main(A: T.Buffer((256,), "float32"), m: T.uint8):
    T.func_attr({"target": T.target("cuda", host="llvm")})
    with T.launch_thread("threadIdx.x", m) as tx:
        A[tx] = T.float32(1)
)");
  std::string ir = to_llvm_text(codegen_llvm(passes::lower_for_host(lowered)));
  EXPECT_NE(ir.find("zext i8 %m to i64"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("sext i8 %m"), std::string::npos) << ir;
}

TEST(HostCodegen, UnloadingFreesTheVariant) {
  // Symbols of a removed variant are gone; a new variant gets its own symbols.
  auto program = std::make_unique<HostProgram>(engine(), lower(test::kVectorAddText));
  HostEntry fn = program->function("vadd");
  EXPECT_NE(fn.fn, nullptr);
  EXPECT_EQ(fn.self, nullptr);  // it launches no kernel: no kernel table
  std::string symbol = "vadd" + program->symbol_suffix();
  EXPECT_EQ(engine().lookup(symbol), reinterpret_cast<void*>(fn.fn));
  program.reset();
  EXPECT_ERROR_CONTAINS(engine().lookup(symbol), "is not defined in the JIT session");
  EXPECT_ERROR_CONTAINS(HostProgram(engine(), lower(test::kVectorAddText)).function("nope"),
                        "no packed host function 'nope'");
}

}  // namespace
}  // namespace primjit::jit

namespace primjit::jit {
namespace {

// The resident set size in KiB, or -1 when /proc/self/statm cannot be read.
long resident_kib() {
  long pages_total = 0, pages_resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  if (std::fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = -1;
  std::fclose(f);
  const long page_kib = sysconf(_SC_PAGESIZE) / 1024;
  return pages_resident < 0 || page_kib <= 0 ? -1 : pages_resident * page_kib;
}

TEST(HostCodegen, LoadingAndUnloadingVariantsKeepsMemoryFlat) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's quarantine keeps freed memory resident";
#endif
  IRModule lowered = lower(test::kVectorAddText);
  HostTensor<float> a({4}, kF32), b({4}, kF32), c({4}, kF32);
  auto cycle = [&] {
    HostProgram program(engine(), lowered);
    PJValue args[] = {a.arg(), b.arg(), c.arg()};
    call_packed(program.function("vadd"), args, 3);
  };
  for (int i = 0; i < 50; ++i) cycle();  // warm up allocator pools
  long before = resident_kib();
  ASSERT_GT(before, 0) << "cannot read the resident set size from /proc/self/statm";
  for (int i = 0; i < 400; ++i) cycle();
  long after = resident_kib();
  ASSERT_GT(after, 0);
  long growth = after - before;
  // A leaked variant costs tens of KiB (code, symbols, IR): 400 of them would exceed these
  // limits. Measured: at most 176 KiB over 400 variants (RelWithDebInfo, 4 KiB pages), so 2 MiB
  // leaves a wide margin; ThreadSanitizer's shadow memory keeps the looser limit.
#if defined(__SANITIZE_THREAD__)
  constexpr long kLimitKib = 4096;
#else
  constexpr long kLimitKib = 2048;
#endif
  EXPECT_LT(growth, kLimitKib) << "resident memory grew by " << growth << " KiB over 400 variants";
}

}  // namespace
}  // namespace primjit::jit

namespace primjit::jit {
namespace {

// A kernel run by the test itself: records the launch and adds the vectors on the CPU.
class RecordingKernel : public KernelHandle {
 public:
  int32_t launch(const int64_t* launch, void** args) noexcept override {
    launches.push_back({launch[0], launch[1]});
    const float* a = *static_cast<float**>(args[0]);
    const float* b = *static_cast<float**>(args[1]);
    float* c = *static_cast<float**>(args[2]);
    int32_t n = *static_cast<int32_t*>(args[3]);
    if (fail) {
      set_last_error("kernel failed on purpose");
      return -1;
    }
    for (int32_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
    return 0;
  }
  std::vector<std::pair<int64_t, int64_t>> launches;
  bool fail = false;
};

TEST(HostCodegen, LaunchesKernelsThroughTheLaunchAbi) {
  // The kernel targets the interpreter, but the host side is the same for every device.
  IRModule lowered = lower(R"(
@T.prim_func
def vadd(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"target": T.target("emu", host="llvm")})
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    C = T.match_buffer(c, (n,), "float32")
    bx = T.launch_thread("blockIdx.x", (n + 127) // 128)
    tx = T.launch_thread("threadIdx.x", 128)
    if bx * 128 + tx < n:
        C[bx * 128 + tx] = A[bx * 128 + tx] + B[bx * 128 + tx]
)");
  RecordingKernel kernel;
  std::string launched;
  HostProgram program(engine(), lowered, [&](const std::string& symbol) -> KernelHandle* {
    launched = symbol;
    return &kernel;
  });
  EXPECT_EQ(launched, "vadd_kernel");
  HostTensor<float> a({300}, kF32), b({300}, kF32), c({300}, kF32);
  std::iota(a.data.begin(), a.data.end(), 1.0f);
  std::iota(b.data.begin(), b.data.end(), 2.0f);
  PJValue args[] = {a.arg(), b.arg(), c.arg()};
  call_packed(program.function("vadd"), args, 3);
  ASSERT_EQ(kernel.launches.size(), 1u);
  EXPECT_EQ(kernel.launches[0], (std::pair<int64_t, int64_t>{3, 128}));  // blocks, threads
  for (int i = 0; i < 300; ++i) ASSERT_EQ(c.data[i], a.data[i] + b.data[i]);
  kernel.fail = true;
  EXPECT_ERROR_CONTAINS(call_packed(program.function("vadd"), args, 3), "kernel failed on purpose");
  // Without loaded kernel code the host module is refused before anything runs.
  HostProgram unbound(engine(), lowered);
  EXPECT_ERROR_CONTAINS(call_packed(unbound.function("vadd"), args, 3),
                        "launched before its code was loaded");
  EXPECT_ERROR_CONTAINS(unbound.bind_kernels({}), "no code was loaded for it");
}

}  // namespace
}  // namespace primjit::jit

namespace primjit::jit {
namespace {

// Kernel handles come through the packed `self` argument: a table with one slot per kernel the
// module launches, owned by the HostProgram (jit/common/host_abi.h).

// A kernel run by the test itself that only records its launches' first launch value (its
// thread count) under its own name.
class CountingKernel : public KernelHandle {
 public:
  int32_t launch(const int64_t* launch, void** args) noexcept override {
    std::lock_guard<std::mutex> lock(mutex);
    threads.push_back(launch[0]);
    return 0;
  }
  std::mutex mutex;
  std::vector<int64_t> threads;
};

constexpr const char* kTwoLaunches = R"(
@T.prim_func
def two(a: T.handle, b: T.handle):
    T.func_attr({"target": T.target("emu", host="llvm")})
    A = T.match_buffer(a, (64,), "float32")
    B = T.match_buffer(b, (64,), "float32")
    with T.launch_thread("threadIdx.x", 64) as tx0:
        A[tx0] = A[tx0] + T.float32(1)
    with T.launch_thread("threadIdx.x", 32) as tx1:
        B[tx1] = B[tx1] * T.float32(2)
)";

TEST(HostKernelTable, EachLaunchReadsItsKernelsSlot) {
  IRModule lowered = lower(kTwoLaunches);
  // The table's order is the order of the first launches in the code.
  HostImage image = compile_host(engine(), lowered);
  EXPECT_EQ(image.launched_kernels, (std::vector<std::string>{"two_kernel", "two_kernel_1"}));
  // No module globals: the handles are loaded from `self`.
  std::string ir = to_llvm_text(codegen_llvm(passes::lower_for_host(lowered)));
  EXPECT_EQ(ir.find("__primjit_kernel"), std::string::npos) << ir;
  EXPECT_EQ(ir.find(" global "), std::string::npos) << ir;

  CountingKernel first, second;
  HostProgram program(engine(), image);
  program.bind_kernels([&](const std::string& symbol) -> KernelHandle* {
    return symbol == "two_kernel" ? &first : symbol == "two_kernel_1" ? &second : nullptr;
  });
  HostEntry entry = program.function("two");
  ASSERT_NE(entry.self, nullptr);
  EXPECT_EQ(static_cast<KernelHandle**>(entry.self)[0], &first);
  EXPECT_EQ(static_cast<KernelHandle**>(entry.self)[1], &second);
  HostTensor<float> a({64}, kF32), b({64}, kF32);
  PJValue args[] = {a.arg(), b.arg()};
  call_packed(entry, args, 2);
  call_packed(entry, args, 2);
  EXPECT_EQ(first.threads, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(second.threads, (std::vector<int64_t>{32, 32}));
}

TEST(HostKernelTable, AnUnboundSlotIsAnErrorNotACrash) {
  IRModule lowered = lower(kTwoLaunches);
  HostProgram program(engine(), lowered);
  HostTensor<float> a({64}, kF32), b({64}, kF32);
  PJValue args[] = {a.arg(), b.arg()};
  EXPECT_ERROR_CONTAINS(call_packed(program.function("two"), args, 2),
                        "launched before its code was loaded");
  // A failed bind (the second kernel has no code) leaves the whole table unbound.
  CountingKernel first;
  EXPECT_ERROR_CONTAINS(program.bind_kernels([&](const std::string& symbol) -> KernelHandle* {
    return symbol == "two_kernel" ? &first : nullptr;
  }),
                        "launches kernel 'two_kernel_1', but no code was loaded for it");
  EXPECT_ERROR_CONTAINS(call_packed(program.function("two"), args, 2),
                        "launched before its code was loaded");
  EXPECT_TRUE(first.threads.empty());
}

// A kernel that adds 1 to row `row` of a (rows, 32) float32 matrix, one launch per row.
class RowKernel : public KernelHandle {
 public:
  int32_t launch(const int64_t* launch, void** args) noexcept override {
    float* a = *static_cast<float**>(args[0]);
    int32_t row = *static_cast<int32_t*>(args[1]);
    for (int64_t tx = 0; tx < launch[0]; ++tx) a[row * 32 + tx] += 1.0f;
    launches.fetch_add(1);
    return 0;
  }
  std::atomic<int> launches{0};
};

TEST(HostKernelTable, ParallelTasksLaunchWithTheCallersTable) {
  IRModule lowered = lower(R"(
@T.prim_func
def rows(a: T.handle):
    T.func_attr({"target": T.target("emu", host="llvm")})
    A = T.match_buffer(a, (64, 32), "float32")
    for r in T.parallel(64):
        with T.launch_thread("threadIdx.x", 32) as tx:
            A[r, tx] = A[r, tx] + T.float32(1)
)");
  // The launch is in a task run by the runtime's parallel-for, which gets the table in its
  // closure.
  std::string ir = to_llvm_text(codegen_llvm(passes::lower_for_host(lowered)));
  EXPECT_NE(ir.find("call i32 @primjit_rt_parallel_for"), std::string::npos) << ir;
  RowKernel kernel;
  HostProgram program(engine(), lowered,
                      [&](const std::string&) -> KernelHandle* { return &kernel; });
  HostTensor<float> a({64, 32}, kF32);
  std::iota(a.data.begin(), a.data.end(), 0.0f);
  PJValue args[] = {a.arg()};
  call_packed(program.function("rows"), args, 1);
  EXPECT_EQ(kernel.launches.load(), 64);
  for (int i = 0; i < 64 * 32; ++i) ASSERT_EQ(a.data[i], static_cast<float>(i) + 1.0f) << i;
}

}  // namespace
}  // namespace primjit::jit
