// Checked mode catches planted bugs and says where: out-of-bounds accesses (against the buffer
// and against the allocation under a view), shared-memory races between the threads of a
// block, overlapping merged buffers, barrier divergence, reads of uninitialized shared memory,
// launch parameters that disagree with the kernel.
#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include "primjit/jit.h"
#include "tests/unit/emu/emu_test_util.h"

namespace primjit::jit::emu {
namespace {

using test::parse_module;

// Runs `main(X, Y)` (two float32[128] tensors) of `text` and returns the error message.
std::string run_error(const std::string& text, Options options = {}) {
  Interpreter interp(parse_module(text), options);
  HostTensor X(DataType::Float(32), {128}), Y(DataType::Float(32), {128});
  X.fill_random(1);
  Y.fill_random(2);
  return primjit::test::error_of([&] { interp.run("main", {X.dl(), Y.dl()}); });
}

#define EXPECT_HAS(text, part) \
  EXPECT_NE((text).find(part), std::string::npos) << "missing '" << (part) << "' in:\n" << (text)

constexpr const char* kHeader = R"(
@T.prim_func
def main(X: T.Buffer((128,), "float32"), Y: T.Buffer((128,), "float32")):
    T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
)";

std::string kernel(const std::string& body) { return std::string(kHeader) + body; }

TEST(EmuChecks, OutOfBoundsNamesBufferIndexThreadAndStatement) {
  std::string e = run_error(kernel(R"(
    bx = T.launch_thread("blockIdx.x", 1)
    tx = T.launch_thread("threadIdx.x", 128)
    Y[tx] = X[tx + 1]
)"));
  EXPECT_HAS(e,
             "out-of-bounds access: load of buffer 'X' at index [128], outside its shape (128,)");
  EXPECT_HAS(e, "in `Y[tx] = X[tx + 1]`");
  EXPECT_HAS(e, "block (0, 0, 0), thread (127, 0, 0)");
  EXPECT_HAS(e, "function 'main'");
}

TEST(EmuChecks, ErrorWhileOtherThreadsWaitAtABarrierCancelsThem) {
  std::string e = run_error(kernel(R"(
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_buffer((128,), "float32", scope="shared")
    S[tx] = X[tx]
    if tx == 5:
        Y[tx * 100] = S[tx]
    T.tvm_storage_sync("shared")
    Y[tx] = S[127 - tx]
)"));
  EXPECT_HAS(e, "store of buffer 'Y' at index [500]");
  EXPECT_HAS(e, "thread (5, 0, 0)");
}

TEST(EmuChecks, ViewIsCheckedAgainstItsAllocation) {
  // B's view (256 elements) is larger than the 768-byte merged allocation under it.
  std::string e = run_error(kernel(R"(
    tx = T.launch_thread("threadIdx.x", 128)
    buf_dyn_shmem = T.alloc_buffer((768,), "uint8", scope="shared.dyn")
    B = T.decl_buffer((256,), "float32", data=buf_dyn_shmem.data)
    B[tx + 128] = X[tx]
    T.tvm_storage_sync("shared.dyn")
    Y[tx] = B[tx + 128]
)"));
  EXPECT_HAS(e, "out-of-bounds access: store of buffer 'B' element 192 touches bytes [768, 772)");
  EXPECT_HAS(e, "allocation 'buf_dyn_shmem' (shared.dyn, 768 bytes)");
  EXPECT_HAS(e, "thread (64, 0, 0)");
}

TEST(EmuChecks, ViewOverATensorIsCheckedAgainstTheTensor) {
  // The view claims 256 elements of X, which has 128: its accesses past X are out of bounds,
  // whatever memory happens to follow X.
  std::string e = run_error(kernel(R"(
    X_view = T.decl_buffer((256,), "float32", data=X.data)
    for i in range(200):
        Y[i % 128] = X_view[i]
)"));
  EXPECT_HAS(e,
             "out-of-bounds access: load of buffer 'X_view' element 128 touches bytes [512, "
             "516) of allocation 'tensor argument 'X'' (512 bytes)");
  EXPECT_HAS(e, "in `Y[i % 128] = X_view[i]` (function 'main')");
}

TEST(EmuChecks, MissingBarrierIsARace) {
  std::string e = run_error(kernel(R"(
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_buffer((128,), "float32", scope="shared")
    S[tx] = X[tx]
    Y[tx] = S[127 - tx]
)"));
  // Threads run in order until a barrier: thread 63 reads S[64] before thread 64 writes it.
  EXPECT_HAS(e,
             "shared memory race in block (0, 0, 0) of function 'main': thread (64, 0, 0) "
             "writes byte 256 of allocation 'S' (shared, 512 bytes) (store of buffer 'S' "
             "element 64) in `S[tx] = X[tx]`, which thread (63, 0, 0) read in "
             "`Y[tx] = S[127 - tx]` since the last barrier");
  EXPECT_HAS(e, "T.tvm_storage_sync");
}

TEST(EmuChecks, BarrierRemovesTheRace) {
  EXPECT_EQ(run_error(kernel(R"(
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_buffer((128,), "float32", scope="shared")
    S[tx] = X[tx]
    T.tvm_storage_sync("shared")
    Y[tx] = S[127 - tx]
)")),
            "");
}

// T.ptx_cp_async's bytes land at some time before the copying thread's wait: an access to them
// earlier sees whatever the shared memory held (on a GPU: a previous kernel's data).
TEST(EmuChecks, AccessBeforeTheAsyncCopyIsWaitedForIsARace) {
  std::string e = run_error(kernel(R"(
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_buffer((128,), "float32", scope="shared")
    T.ptx_cp_async(S.data, tx, X.data, tx, 4)
    Y[tx] = S[tx]
)"));
  EXPECT_HAS(e,
             "asynchronous copy race: load of buffer 'S' element 0 reads byte 0 of allocation "
             "'S' (shared, 512 bytes), the destination of a T.ptx_cp_async of thread (0, 0, 0) "
             "that has not been waited for");
  EXPECT_HAS(e, "T.ptx_commit_group() then T.ptx_wait_group(0)");
  EXPECT_HAS(e, "in `Y[tx] = S[tx]`");
  // The wait leaves the newest committed group pending.
  EXPECT_HAS(run_error(kernel(R"(
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_buffer((128,), "float32", scope="shared")
    T.ptx_cp_async(S.data, tx, X.data, tx, 4)
    T.ptx_commit_group()
    T.ptx_wait_group(1)
    Y[tx] = S[tx]
)")),
             "asynchronous copy race");
  // A wait covers committed groups only.
  EXPECT_HAS(run_error(kernel(R"(
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_buffer((128,), "float32", scope="shared")
    T.ptx_cp_async(S.data, tx, X.data, tx, 4)
    T.ptx_wait_group(0)
    S[tx] = T.float32(1)
)")),
             "asynchronous copy race: store of buffer 'S' element 0 writes byte 0");
  // A negative count of pending groups is an error, not a wrap-around.
  EXPECT_HAS(run_error(kernel(R"(
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_buffer((128,), "float32", scope="shared")
    T.ptx_cp_async(S.data, tx, X.data, tx, 4)
    T.ptx_commit_group()
    T.ptx_wait_group(-2147483648)
    Y[tx] = S[tx]
)")),
             "T.ptx_wait_group(-2147483648): the number of groups left pending");
}

TEST(EmuChecks, WaitedForAsyncCopiesAreNoRace) {
  EXPECT_EQ(run_error(kernel(R"(
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_buffer((128,), "float32", scope="shared")
    S2 = T.alloc_buffer((128,), "float32", scope="shared")
    T.ptx_cp_async(S.data, tx, X.data, tx, 4)
    T.ptx_commit_group()
    T.ptx_cp_async(S2.data, tx, X.data, tx, 4)
    T.ptx_commit_group()
    T.ptx_wait_group(1)
    Y[tx] = S[tx]
    T.ptx_wait_group(0)
    Y[tx] = Y[tx] + S2[tx]
)")),
            "");
}

constexpr const char* kMergedLayout = R"(
    tx = T.launch_thread("threadIdx.x", 128)
    buf_dyn_shmem = T.alloc_buffer((BYTES,), "uint8", scope="shared.dyn")
    A = T.decl_buffer((128,), "float32", data=buf_dyn_shmem.data)
    B = T.decl_buffer((EXTENT,), "float32", data=buf_dyn_shmem.data)
    A[tx] = X[tx]
    B[tx + OFFSET] = Y[tx]
    T.tvm_storage_sync("shared.dyn")
    X[tx] = A[127 - tx] + B[127 - tx + OFFSET]
)";

std::string merged(int offset) {
  std::string body = kMergedLayout;
  auto replace_all = [&](const std::string& from, const std::string& to) {
    for (size_t p = body.find(from); p != std::string::npos; p = body.find(from, p + to.size())) {
      body.replace(p, from.size(), to);
    }
  };
  replace_all("BYTES", std::to_string((offset + 128) * 4));
  replace_all("EXTENT", std::to_string(offset + 128));
  replace_all("OFFSET", std::to_string(offset));
  return kernel(body);
}

TEST(EmuChecks, OverlappingMergedBuffersAreCaught) {
  // A and B are live together; a correct merge puts B after A (element offset 128).
  Interpreter good(parse_module(merged(128)));
  HostTensor X(DataType::Float(32), {128}), Y(DataType::Float(32), {128});
  X.fill_random(3);
  Y.fill_random(4);
  HostTensor X0 = X;
  good.run("main", {X.dl(), Y.dl()});
  for (int i = 0; i < 128; ++i) {
    ASSERT_EQ(static_cast<float>(X.get(i)),
              static_cast<float>(X0.get(127 - i)) + static_cast<float>(Y.get(127 - i)));
  }
  // A wrong layout: B starts at element 64, inside A. Thread 0's B[64] is thread 64's A[64].
  std::string e = run_error(merged(64));
  EXPECT_HAS(e,
             "shared memory race in block (0, 0, 0) of function 'main': thread (64, 0, 0) "
             "writes byte 256 of allocation 'buf_dyn_shmem' (shared.dyn, 768 bytes) (store "
             "of buffer 'A' element 64) in `A[tx] = X[tx]`, which thread (0, 0, 0) wrote in "
             "`B[tx + 64] = Y[tx]` since the last barrier");
}

TEST(EmuChecks, BarrierDivergenceIsADeadlock) {
  std::string e = run_error(kernel(R"(
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_buffer((128,), "float32", scope="shared")
    S[tx] = X[tx]
    if tx < 64:
        T.tvm_storage_sync("shared")
    Y[tx] = S[tx]
)"));
  EXPECT_HAS(e, "barrier deadlock in block (0, 0, 0) of function 'main'");
  EXPECT_HAS(e, "threads (0, 0, 0)..(63, 0, 0) wait at `T.tvm_storage_sync(\"shared\")`");
  EXPECT_HAS(e, "threads (64, 0, 0)..(127, 0, 0) have finished without reaching it");
}

TEST(EmuChecks, ThreadsAtDifferentBarriersAreReported) {
  std::string e = run_error(kernel(R"(
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_buffer((128,), "float32", scope="shared")
    if tx % 2 == 0:
        S[tx] = X[tx]
        T.tvm_storage_sync("shared")
    else:
        S[tx] = Y[tx]
        T.tvm_storage_sync("shared.dyn")
    Y[tx] = S[127 - tx]
)"));
  EXPECT_HAS(e, "barrier deadlock in block (0, 0, 0)");
  EXPECT_HAS(e,
             "(0, 0, 0), (2, 0, 0), (4, 0, 0), (6, 0, 0), and 60 more wait at "
             "`T.tvm_storage_sync(\"shared\")`");
  EXPECT_HAS(e, "wait at `T.tvm_storage_sync(\"shared.dyn\")`");
}

TEST(EmuChecks, UninitializedSharedReadIsReported) {
  std::string e = run_error(kernel(R"(
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_buffer((128,), "float32", scope="shared")
    if tx < 64:
        S[tx] = X[tx]
    T.tvm_storage_sync("shared")
    Y[tx] = S[127 - tx]
)"));
  EXPECT_HAS(e, "read of uninitialized memory: load of buffer 'S' element 127 reads byte 508");
  EXPECT_HAS(e, "allocation 'S' (shared, 512 bytes)");
  EXPECT_HAS(e, "in `Y[tx] = S[127 - tx]`");
  EXPECT_HAS(e, "thread (0, 0, 0)");
}

TEST(EmuChecks, UncheckedModeSkipsTheChecks) {
  Options unchecked;
  unchecked.checked = false;
  EXPECT_EQ(run_error(kernel(R"(
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_buffer((128,), "float32", scope="shared")
    S[tx] = X[tx]
    Y[tx] = S[127 - tx]
)"),
                      unchecked),
            "");
}

constexpr const char* kLowered = R"(
@I.ir_module
class Module:
    @T.prim_func
    def main_kernel(X: T.handle("float32", "global")):
        T.func_attr({"calling_conv": 2, "target": T.target("cuda", arch="sm_90"), "tirx.kernel_launch_params": ["threadIdx.x", "tirx.use_dyn_shared_memory"]})
        X_1 = T.decl_buffer((128,), "float32", data=X)
        tx = T.launch_thread("threadIdx.x", 128)
        S = T.alloc_buffer((128,), "float32", scope="shared.dyn")
        S[tx] = X_1[tx]
        T.tvm_storage_sync("shared.dyn")
        X_1[tx] = S[127 - tx]

    @T.prim_func
    def main(X: T.Buffer((128,), "float32"), Y: T.Buffer((128,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        T.call_packed("main_kernel", X.data, THREADS, BYTES)
)";

std::string lowered(int threads, int bytes) {
  std::string text = kLowered;
  text.replace(text.find("THREADS"), 7, std::to_string(threads));
  text.replace(text.find("BYTES"), 5, std::to_string(bytes));
  return text;
}

TEST(EmuChecks, LaunchParametersMustMatchTheKernel) {
  EXPECT_EQ(run_error(lowered(128, 512)), "");
  std::string e = run_error(lowered(64, 512));
  EXPECT_HAS(e,
             "launch extent mismatch: kernel 'main_kernel' is launched with threadIdx.x = 64, "
             "but its thread extent is 128");
  e = run_error(lowered(128, 256));
  EXPECT_HAS(e,
             "dynamic shared memory: buffer 'S' needs 512 bytes, but the kernel was launched "
             "with 256 bytes");
}

TEST(EmuChecks, FailedAssertCarriesTheFormattedMessage) {
  IRModule m = parse_module(R"tir(
@T.prim_func
def main(A: T.Buffer((4,), "int32"), n: T.int32):
    assert n < 3, T.format("n must be below 3, got {} (A[0] = {})", n, A[0])
    A[0] = n
)tir");
  HostTensor A(DataType::Int(32), {4});
  A.set(0, 42);
  try {
    Interpreter(m).run("main", {A.dl(), 7});
    FAIL() << "no error";
  } catch (const AssertionError& e) {
    EXPECT_STREQ(e.what(), "n must be below 3, got 7 (A[0] = 42)");
  }
  Interpreter(m).run("main", {A.dl(), 2});
  EXPECT_EQ(A.get(0), 2);
}

// The interpreter tags message values as compiled host code does (type_index_of), so a failed
// assert reads the same on both: signed and unsigned integers, bools, narrow floats.
TEST(EmuChecks, FailedAssertMessageMatchesCompiledCode) {
  IRModule m = parse_module(R"tir(
@T.prim_func
def main(A: T.Buffer((4,), "int32"), B: T.Buffer((2,), "uint8"), n: T.int32):
    T.func_attr({"target": T.target("llvm")})
    assert n < 3, T.format("n = {}, B[0] = {}, big: {}, half: {}, wide: {}", n, B[0], n > 5, T.Cast("float16", A[0]) * T.float16(0.5), T.Cast("uint32", A[1]))
    A[0] = n
)tir");
  HostTensor A(DataType::Int(32), {4});
  HostTensor B(DataType::UInt(8), {2});
  A.set(0, 3);
  A.set(1, -1);
  B.set(0, 200);
  const std::string expected = "n = 7, B[0] = 200, big: True, half: 1.5, wide: 4294967295";
  Interpreter interp(m);
  EXPECT_EQ(primjit::test::error_of([&] { interp.run("main", {A.dl(), B.dl(), 7}); }), expected);
  Jit jit;
  Kernel compiled = jit.kernel(m, "main");
  EXPECT_EQ(primjit::test::error_of([&] { compiled(A.dl(), B.dl(), 7); }), expected);
}

// Accesses keep their indices in a fixed array: a buffer with more dimensions is a clear error
// when the function is compiled, for loads, stores and T.address_of alike.
TEST(EmuChecks, BufferWithTooManyDimensionsIsAnError) {
  std::string shape, zeros;
  for (int d = 0; d < 17; ++d) {
    shape += d ? ", 1" : "1";
    zeros += d ? ", 0" : "0";
  }
  std::string text = R"tir(
@T.prim_func
def main(A: T.Buffer((4,), "int64"), a: T.handle):
    W = T.match_buffer(a, (SHAPE), "float32")
    A[0] = T.reinterpret("int64", T.address_of(W[ZEROS]))
)tir";
  text.replace(text.find("SHAPE"), 5, shape);
  text.replace(text.find("ZEROS"), 5, zeros);
  IRModule m = parse_module(text);
  HostTensor A(DataType::Int(64), {4});
  std::vector<int64_t> dims(17, 1);
  HostTensor W(DataType::Float(32), dims);
  std::string e = primjit::test::error_of([&] { Interpreter(m).run("main", {A.dl(), W.dl()}); });
  EXPECT_HAS(e, "buffer 'W' of function 'main' has 17 dimensions");
  EXPECT_HAS(e, "the interpreter supports at most 16");
}

TEST(EmuChecks, UnknownExternIsUnsupportedUnlessProvided) {
  IRModule m = parse_module(R"(
@T.prim_func
def main(A: T.Buffer((4,), "float32")):
    A[0] = T.call_extern("float32", "__my_fast_exp", A[1]) + T.call_extern("float32", "expf", A[2])
)");
  HostTensor A(DataType::Float(32), {4});
  A.set(1, 1.0);
  A.set(2, 0.0);
  try {
    Interpreter(m).run("main", {A.dl()});
    FAIL() << "no error";
  } catch (const UnsupportedError& e) {
    EXPECT_HAS(std::string(e.what()), "T.call_extern of '__my_fast_exp'");
    EXPECT_HAS(std::string(e.what()), "symbol_lookup");
  }
  Options options;
  options.symbol_lookup = [](const std::string& name) -> ExternFunction {
    if (name != "__my_fast_exp") return {};
    return [](std::span<const Arg> args) { return Arg(args[0].as_float() * 10); };
  };
  Interpreter(m, options).run("main", {A.dl()});
  EXPECT_EQ(A.get(0), 11.0);  // 1 * 10 + expf(0)
}

TEST(EmuChecks, IntegerDivisionByZeroIsReportedInCheckedArithmetic) {
  IRModule m = parse_module(R"(
@T.prim_func
def main(A: T.Buffer((2,), "int32")):
    A[0] = A[0] // A[1]
)");
  HostTensor A(DataType::Int(32), {2});
  A.set(0, 5);
  EXPECT_ERROR_CONTAINS(Interpreter(m, {.checked_arithmetic = true}).run("main", {A.dl()}),
                        "integer division by zero in `A[0] // A[1]` in `A[0] = A[0] // A[1]` "
                        "(function 'main')");
  // Without it the division has the result every backend gives (docs/semantics.md): -1.
  Interpreter(m).run("main", {A.dl()});
  EXPECT_EQ(A.get(0), -1);
}

TEST(EmuChecks, UninitializedLocalReadIsReported) {
  IRModule m = parse_module(R"(
@T.prim_func
def main(A: T.Buffer((2,), "float32")):
    acc = T.alloc_buffer((2,), "float32", scope="local")
    acc[0] = T.float32(1)
    A[0] = acc[0] + acc[1]
)");
  HostTensor A(DataType::Float(32), {2});
  EXPECT_ERROR_CONTAINS(Interpreter(m).run("main", {A.dl()}),
                        "read of uninitialized memory: load of buffer 'acc' element 1");
}

}  // namespace
}  // namespace primjit::jit::emu
