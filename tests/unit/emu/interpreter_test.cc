// The reference interpreter runs device kernels exactly (shared memory, barriers, thread
// indices) at every stage of the pipeline: as written, after LowerDeviceKernelLaunch and after
// MakePackedAPI. Results are compared with references computed here in C++.
#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "examples/kernels.h"
#include "tests/unit/emu/emu_test_util.h"

namespace primjit::jit::emu {
namespace {

using test::floats;
using test::parse_module;
using test::stages;

constexpr const char* kReverse = R"(
@T.prim_func
def main(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 64)
    S = T.alloc_buffer((64,), "float32", scope="shared")
    S[tx] = A[bx * 64 + tx]
    T.tvm_storage_sync("shared")
    B[bx * 64 + tx] = S[63 - tx]
)";

constexpr const char* kBlockReduce = R"(
@T.prim_func
def main(A: T.Buffer((1024,), "float32"), B: T.Buffer((4,), "float32")):
    T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
    bx = T.launch_thread("blockIdx.x", 4)
    tx = T.launch_thread("threadIdx.x", 256)
    red = T.alloc_buffer((256,), "float32", scope="shared")
    red[tx] = A[bx * 256 + tx]
    T.tvm_storage_sync("shared")
    for k in range(8):
        stride: T.int32 = T.shift_right(128, k)
        if tx < stride:
            red[tx] = red[tx] + red[tx + stride]
        T.tvm_storage_sync("shared")
    if tx == 0:
        B[bx] = red[0]
)";

constexpr const char* kTiledMatmul = R"(
@T.prim_func
def main(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
    by = T.launch_thread("blockIdx.y", 4)
    bx = T.launch_thread("blockIdx.x", 4)
    ty = T.launch_thread("threadIdx.y", 8)
    tx = T.launch_thread("threadIdx.x", 8)
    As = T.alloc_buffer((8, 8), "float32", scope="shared.dyn")
    Bs = T.alloc_buffer((8, 8), "float32", scope="shared.dyn")
    acc = T.alloc_buffer((1,), "float32", scope="local")
    acc[0] = T.float32(0)
    for k0 in range(4):
        As[ty, tx] = A[by * 8 + ty, k0 * 8 + tx]
        Bs[ty, tx] = B[k0 * 8 + ty, bx * 8 + tx]
        T.tvm_storage_sync("shared.dyn")
        for k1 in range(8):
            acc[0] = acc[0] + As[ty, k1] * Bs[k1, tx]
        T.tvm_storage_sync("shared.dyn")
    C[by * 8 + ty, bx * 8 + tx] = acc[0]
)";

// The seed's example (TVM #19605): two sibling launches with two shared.dyn buffers each.
constexpr const char* kSeedTwoLaunch = R"(
@I.ir_module
class Module:
    @T.prim_func
    def main(X: T.Buffer((128,), "float32"), Y: T.Buffer((128,), "float32")):
        T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
        X_flat = T.decl_buffer(128, data=X.data)
        Y_flat = T.decl_buffer(128, data=Y.data)
        tx0 = T.env_thread("threadIdx.x")
        with T.attr(tx0, "thread_extent", 128):
            A_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            B_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            A_sh[tx0] = X_flat[tx0]
            B_sh[tx0] = A_sh[tx0]
            X_flat[tx0] = B_sh[tx0] * T.float32(2)
        tx1 = T.env_thread("threadIdx.x")
        with T.attr(tx1, "thread_extent", 128):
            C_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            D_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            C_sh[tx1] = Y_flat[tx1]
            D_sh[tx1] = C_sh[tx1] + X_flat[tx1]
            Y_flat[tx1] = D_sh[tx1]
)";

const int kCuda = kDLCUDA;

TEST(EmuKernels, ReverseThroughSharedMemory) {
  IRModule m = parse_module(kReverse);
  const std::vector<test::Stage> all = stages(m, "main");
  ASSERT_EQ(all.size(), 3u);  // unlowered, LowerDeviceKernelLaunch, MakePackedAPI
  for (const auto& stage : all) {
    SCOPED_TRACE(stage.name);
    HostTensor A(DataType::Float(32), {128}, kCuda), B(DataType::Float(32), {128}, kCuda);
    A.fill_random(1);
    Interpreter(stage.module).run("main", {A.dl(), B.dl()});
    for (int b = 0; b < 2; ++b) {
      for (int t = 0; t < 64; ++t)
        ASSERT_EQ(B.get(b * 64 + t), A.get(b * 64 + 63 - t)) << b << " " << t;
    }
  }
}

TEST(EmuKernels, BlockReduction) {
  IRModule m = parse_module(kBlockReduce);
  const std::vector<test::Stage> all = stages(m, "main");
  ASSERT_EQ(all.size(), 3u);  // unlowered, LowerDeviceKernelLaunch, MakePackedAPI
  for (const auto& stage : all) {
    SCOPED_TRACE(stage.name);
    HostTensor A(DataType::Float(32), {1024}, kCuda), B(DataType::Float(32), {4}, kCuda);
    A.fill_random(2);
    Interpreter(stage.module).run("main", {A.dl(), B.dl()});
    for (int b = 0; b < 4; ++b) {
      std::vector<float> red(256);
      for (int t = 0; t < 256; ++t) red[t] = static_cast<float>(A.get(b * 256 + t));
      for (int stride = 128; stride > 0; stride /= 2) {
        for (int t = 0; t < stride; ++t) red[t] = red[t] + red[t + stride];
      }
      EXPECT_EQ(static_cast<float>(B.get(b)), red[0]) << "block " << b;
    }
  }
}

TEST(EmuKernels, TiledMatmulWithTwoDimensionalThreads) {
  IRModule m = parse_module(kTiledMatmul);
  const std::vector<test::Stage> all = stages(m, "main");
  ASSERT_EQ(all.size(), 3u);  // unlowered, LowerDeviceKernelLaunch, MakePackedAPI
  for (const auto& stage : all) {
    SCOPED_TRACE(stage.name);
    HostTensor A(DataType::Float(32), {32, 32}, kCuda), B(DataType::Float(32), {32, 32}, kCuda);
    HostTensor C(DataType::Float(32), {32, 32}, kCuda);
    A.fill_random(3);
    B.fill_random(4);
    Interpreter(stage.module).run("main", {A.dl(), B.dl(), C.dl()});
    for (int i = 0; i < 32; ++i) {
      for (int j = 0; j < 32; ++j) {
        float acc = 0;
        for (int k = 0; k < 32; ++k) {
          acc = acc + static_cast<float>(A.get(i * 32 + k)) * static_cast<float>(B.get(k * 32 + j));
        }
        ASSERT_EQ(static_cast<float>(C.get(i * 32 + j)), acc) << i << ", " << j;
      }
    }
  }
}

TEST(EmuKernels, SeedTwoLaunchMergeExample) {
  IRModule m = parse_module(kSeedTwoLaunch);
  const std::vector<test::Stage> all = stages(m, "main");
  ASSERT_EQ(all.size(), 3u);  // unlowered, LowerDeviceKernelLaunch, MakePackedAPI
  for (const auto& stage : all) {
    SCOPED_TRACE(stage.name);
    HostTensor X(DataType::Float(32), {128}, kCuda), Y(DataType::Float(32), {128}, kCuda);
    X.fill_random(5);
    Y.fill_random(6);
    HostTensor X0 = X, Y0 = Y;
    Interpreter(stage.module).run("main", {X.dl(), Y.dl()});
    for (int i = 0; i < 128; ++i) {
      const float x = static_cast<float>(X0.get(i)) * 2.0f;
      ASSERT_EQ(static_cast<float>(X.get(i)), x) << i;
      ASSERT_EQ(static_cast<float>(Y.get(i)), static_cast<float>(Y0.get(i)) + x) << i;
    }
  }
}

TEST(EmuKernels, BuilderVectorAddWithRaggedLastBlock) {
  IRModule m = IRModule::from_function("vector_add_cuda", examples::vector_add_cuda());
  const std::vector<test::Stage> all = stages(m, "vector_add_cuda");
  ASSERT_EQ(all.size(), 3u);  // unlowered, LowerDeviceKernelLaunch, MakePackedAPI
  for (const auto& stage : all) {
    SCOPED_TRACE(stage.name);
    const int64_t n = 300;  // two blocks of 256 threads; the guard stops the last 212
    HostTensor A(DataType::Float(32), {n}, kCuda), B(DataType::Float(32), {n}, kCuda),
        C(DataType::Float(32), {n}, kCuda);
    A.fill_random(7);
    B.fill_random(8);
    Interpreter(stage.module).run("vector_add_cuda", {A.dl(), B.dl(), C.dl()});
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(static_cast<float>(C.get(i)),
                static_cast<float>(A.get(i)) + static_cast<float>(B.get(i)))
          << i;
    }
  }
}

TEST(EmuKernels, BuilderRowSoftmax) {
  IRModule m = IRModule::from_function("row_softmax", examples::row_softmax());
  const std::vector<test::Stage> all = stages(m, "row_softmax");
  ASSERT_EQ(all.size(), 3u);  // unlowered, LowerDeviceKernelLaunch, MakePackedAPI
  for (const auto& stage : all) {
    SCOPED_TRACE(stage.name);
    const int rows = 3;
    HostTensor X(DataType::Float(32), {rows, 256}, kCuda),
        Y(DataType::Float(32), {rows, 256}, kCuda);
    X.fill_random(9);
    Interpreter(stage.module).run("row_softmax", {X.dl(), Y.dl()});
    for (int r = 0; r < rows; ++r) {
      std::vector<float> red(256);
      for (int t = 0; t < 256; ++t) red[t] = static_cast<float>(X.get(r * 256 + t));
      for (int s = 128; s > 0; s /= 2) {
        for (int t = 0; t < s; ++t) red[t] = std::fmax(red[t], red[t + s]);
      }
      const float row_max = red[0];
      std::vector<float> e(256);
      for (int t = 0; t < 256; ++t)
        e[t] = red[t] = std::exp(static_cast<float>(X.get(r * 256 + t)) - row_max);
      for (int s = 128; s > 0; s /= 2) {
        for (int t = 0; t < s; ++t) red[t] = red[t] + red[t + s];
      }
      float sum = 0;
      for (int t = 0; t < 256; ++t) {
        ASSERT_EQ(static_cast<float>(Y.get(r * 256 + t)), e[t] / red[0]) << r << ", " << t;
        sum += static_cast<float>(Y.get(r * 256 + t));
      }
      EXPECT_NEAR(sum, 1.0f, 1e-4f);
    }
  }
}

TEST(EmuKernels, BuilderMatmulRelu) {
  IRModule m = IRModule::from_function("matmul_relu", examples::matmul_relu());
  HostTensor A(DataType::Float(32), {128, 128}, kCuda), B(DataType::Float(32), {128, 128}, kCuda);
  A.fill_random(10);
  B.fill_random(11);
  for (int64_t i = 0; i < A.size(); ++i) A.set(i, A.get(i) - 0.5);  // negative results too
  // The reference, accumulating over k in order as the kernel does.
  const std::vector<float> a = floats(A), b = floats(B);
  std::vector<float> c(128 * 128);
  for (int i = 0; i < 128; ++i) {
    for (int j = 0; j < 128; ++j) {
      float acc = 0;
      for (int k = 0; k < 128; ++k) acc = acc + a[i * 128 + k] * b[k * 128 + j];
      c[i * 128 + j] = acc;
    }
  }
  const std::vector<test::Stage> all = stages(m, "matmul_relu");
  ASSERT_EQ(all.size(), 3u);  // unlowered, LowerDeviceKernelLaunch, MakePackedAPI
  for (const auto& stage : all) {
    SCOPED_TRACE(stage.name);
    HostTensor C(DataType::Float(32), {128, 128}, kCuda), D(DataType::Float(32), {128, 128}, kCuda);
    Interpreter(stage.module).run("matmul_relu", {A.dl(), B.dl(), C.dl(), D.dl()});
    const std::vector<float> c_out = floats(C), d_out = floats(D);
    int negatives = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      ASSERT_EQ(c_out[i], c[i]) << i;
      ASSERT_EQ(d_out[i], std::max(c[i], 0.0f)) << i;
      negatives += c[i] < 0;
    }
    EXPECT_GT(negatives, 0);  // the ReLU did something
  }
}

// A device target that runs on the CPU: kernels return an error code the host checks.
TEST(EmuKernels, EmuTargetKernelsReturnErrorCodes) {
  std::string text = kReverse;
  text.replace(text.find("T.target(\"cuda\", arch=\"sm_90\", host=\"llvm\")"),
               std::string("T.target(\"cuda\", arch=\"sm_90\", host=\"llvm\")").size(),
               "T.target(\"emu\", host=\"llvm\")");
  IRModule m = parse_module(text);
  IRModule split = test::lower(m, "SplitHostDevice");
  ASSERT_TRUE(split->contains("main_kernel"));
  EXPECT_TRUE(split->lookup("main_kernel")->ret_type.is_int());
  for (const IRModule& module : {m, split, test::lower(m, "LowerDeviceKernelLaunch")}) {
    HostTensor A(DataType::Float(32), {128}), B(DataType::Float(32), {128});
    A.fill_random(12);
    Interpreter(module).run("main", {A.dl(), B.dl()});
    for (int i = 0; i < 128; ++i) ASSERT_EQ(B.get(i), A.get(i / 64 * 64 + 63 - i % 64)) << i;
  }
}

// Thread-bound loops launch like thread_extent attributes; a virtual thread is a loop.
TEST(EmuKernels, ThreadBoundLoopsAndVirtualThreads) {
  IRModule m = parse_module(R"(
@T.prim_func
def main(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            S = T.alloc_buffer((64,), "float32", scope="shared")
            S[tx] = A[bx * 64 + tx]
            T.tvm_storage_sync("shared")
            B[bx * 64 + tx] = S[63 - tx]
)");
  HostTensor A(DataType::Float(32), {128}), B(DataType::Float(32), {128});
  A.fill_random(17);
  Interpreter(m).run("main", {A.dl(), B.dl()});
  for (int i = 0; i < 128; ++i) ASSERT_EQ(B.get(i), A.get(i / 64 * 64 + 63 - i % 64)) << i;

  IRModule v = parse_module(R"(
@T.prim_func
def main(A: T.Buffer((8,), "float32")):
    tx = T.launch_thread("threadIdx.x", 4)
    with T.launch_thread("vthread", 2) as vt:
        A[vt * 4 + tx] = T.Cast("float32", vt * 10 + tx)
)");
  HostTensor V(DataType::Float(32), {8});
  Interpreter(v).run("main", {V.dl()});
  for (int i = 0; i < 8; ++i) EXPECT_EQ(V.get(i), i / 4 * 10 + i % 4) << i;
}

// Scalar parameters, symbolic shapes and return values, on the host.
TEST(EmuHost, ScalarsShapesAndReturnValues) {
  IRModule m = parse_module(R"(
@T.prim_func
def main(a: T.handle, x: T.float32) -> T.float32:
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    s = T.alloc_buffer((1,), "float32")
    s[0] = T.float32(0)
    for i in range(n):
        s[0] = s[0] + A[i] * x
    return s[0]
)");
  HostTensor A(DataType::Float(32), {5});
  for (int i = 0; i < 5; ++i) A.set(i, i + 1);
  // As written, and packed (the result comes back through the PJValue *result).
  IRModule packed = test::lower(
      m.with_function("main", m->lookup("main").with_attr(attr::kTarget, Target::llvm())),
      "MakePackedAPI");
  for (const IRModule& module : {m, packed}) {
    std::optional<Arg> r = Interpreter(module).run("main", {A.dl(), 2.0f});
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->kind(), Arg::Kind::kFloat);
    EXPECT_EQ(r->as_float(), 30.0);
  }
}

// A helper function called through a GlobalVar, and a pointer-typed parameter.
TEST(EmuHost, FunctionCalls) {
  IRModule m = parse_module(R"(
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def square(x: T.int32) -> T.int32:
        return x * x

    @T.prim_func
    def main(A: T.Buffer((4,), "int32")):
        for i in range(4):
            A[i] = Module.square(A[i]) + 1
)");
  HostTensor A(DataType::Int(32), {4});
  for (int i = 0; i < 4; ++i) A.set(i, i - 2);
  Interpreter(m).run("main", {A.dl()});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(A.get(i), (i - 2) * (i - 2) + 1);
}

TEST(EmuHost, ConcurrentRunsOnOneInterpreter) {
  Interpreter interp(parse_module(kReverse));
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (int rep = 0; rep < 3; ++rep) {
        HostTensor A(DataType::Float(32), {128}), B(DataType::Float(32), {128});
        A.fill_random(100 + k * 10 + rep);
        interp.run("main", {A.dl(), B.dl()});
        bool good = true;
        for (int i = 0; i < 128; ++i) good = good && B.get(i) == A.get(i / 64 * 64 + 63 - i % 64);
        ok[static_cast<size_t>(k)] += good;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int k = 0; k < 4; ++k) EXPECT_EQ(ok[static_cast<size_t>(k)], 3) << "thread " << k;
}

TEST(EmuHost, SerialAndParallelBlocksAgree) {
  IRModule m = test::lower(parse_module(kBlockReduce), "LowerDeviceKernelLaunch");
  HostTensor A(DataType::Float(32), {1024}, kCuda), B1(DataType::Float(32), {4}, kCuda);
  A.fill_random(13);
  HostTensor B2 = B1;
  Options serial;
  serial.parallel_blocks = false;
  Interpreter(m).run("main", {A.dl(), B1.dl()});
  Interpreter(m, serial).run("main", {A.dl(), B2.dl()});
  EXPECT_EQ(floats(B1), floats(B2));
  // Both agree with the reference (the tree reduction of BlockReduction), not only with each
  // other.
  for (int b = 0; b < 4; ++b) {
    std::vector<float> red(256);
    for (int t = 0; t < 256; ++t) red[t] = static_cast<float>(A.get(b * 256 + t));
    for (int stride = 128; stride > 0; stride /= 2) {
      for (int t = 0; t < stride; ++t) red[t] = red[t] + red[t + stride];
    }
    EXPECT_EQ(static_cast<float>(B1.get(b)), red[0]) << "block " << b;
  }
}

// After MakePackedAPI the host function takes (self, args, num_args, result); run() packs the
// plain arguments, and the function's own checks report bad ones.
TEST(EmuPackedApi, RunsPackedFunctionsAndReportsTheirChecks) {
  IRModule m = parse_module(kReverse);
  IRModule packed = test::lower(m, "MakePackedAPI");
  ASSERT_TRUE(test::is_packed(packed, "main"));
  HostTensor A(DataType::Float(32), {128}, kCuda), B(DataType::Float(32), {128}, kCuda);
  A.fill_random(14);
  Interpreter interp(packed);
  interp.run("main", {A.dl(), B.dl()});
  for (int i = 0; i < 128; ++i) ASSERT_EQ(B.get(i), A.get(i / 64 * 64 + 63 - i % 64)) << i;

  HostTensor short_b(DataType::Float(32), {100}, kCuda);
  std::string message = primjit::test::error_of([&] {
    interp.run("main", {A.dl(), short_b.dl()});
  });
  EXPECT_NE(message.find("B.shape[0]"), std::string::npos) << message;
  message = primjit::test::error_of([&] { interp.run("main", {A.dl()}); });
  EXPECT_NE(message.find("Expected 2 arguments"), std::string::npos) << message;
  HostTensor ints(DataType::Int(32), {128}, kCuda);
  message = primjit::test::error_of([&] { interp.run("main", {A.dl(), ints.dl()}); });
  EXPECT_NE(message.find("dtype"), std::string::npos) << message;
}

TEST(EmuPackedApi, EveryKernelAfterMakePackedApi) {
  IRModule probe = test::lower(parse_module(kReverse), "MakePackedAPI");
  ASSERT_TRUE(test::is_packed(probe, "main"));
  // The kernel tests above run this stage too; check here that the stage really is the packed
  // function, with the builder's vector add.
  IRModule m = IRModule::from_function("vector_add_cuda", examples::vector_add_cuda());
  auto all = stages(m, "vector_add_cuda");
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2].name, "after MakePackedAPI");
  ASSERT_TRUE(test::is_packed(all[2].module, "vector_add_cuda"));
  EXPECT_FALSE(test::is_packed(all[1].module, "vector_add_cuda"));
  HostTensor A(DataType::Float(32), {10}, kCuda), B(DataType::Float(32), {10}, kCuda),
      C(DataType::Float(32), {10}, kCuda);
  A.fill_random(15);
  B.fill_random(16);
  Interpreter(all[2].module).run("vector_add_cuda", {A.dl(), B.dl(), C.dl()});
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(static_cast<float>(C.get(i)),
              static_cast<float>(A.get(i)) + static_cast<float>(B.get(i)));
  }
}

TEST(EmuHost, ArgumentErrorsNameTheParameter) {
  Interpreter interp(parse_module(kReverse));
  HostTensor A(DataType::Float(32), {128}), small(DataType::Float(32), {64});
  HostTensor ints(DataType::Int(32), {128});
  EXPECT_ERROR_CONTAINS(interp.run("main", {A.dl()}), "takes 2 arguments, got 1");
  EXPECT_ERROR_CONTAINS(interp.run("main", {A.dl(), small.dl()}),
                        "parameter 'B' (argument #1) of 'main' expects shape[0] = 128");
  EXPECT_ERROR_CONTAINS(interp.run("main", {A.dl(), ints.dl()}), "expects dtype float32");
  EXPECT_ERROR_CONTAINS(interp.run("main", {A.dl(), int64_t{3}}), "parameter 'B'");
  EXPECT_ERROR_CONTAINS(interp.run("nope", {A.dl()}), "nope");
}

}  // namespace
}  // namespace primjit::jit::emu
