// Per-call streams, CUDA graph capture and prepared launches against the fake driver
// (tests/fake_cuda/): which stream each launch goes to, what a capture records, and that a
// prepared call replays exactly the launches of a call, all read from the fake's log.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "examples/kernels.h"
#include "jit/cuda/driver.h"
#include "primjit/error.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/tensor.h"
#include "tests/fake_cuda/fake_cuda.h"
#include "tests/unit/jit/cuda_graph_api.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

constexpr DLDevice kGpu0{kDLCUDA, 0};
constexpr DLDevice kCpu{kDLCPU, 0};

// The fake's log lines that start with `prefix`.
std::vector<std::string> log_lines(const std::string& prefix) {
  return fake_cuda_log_lines(prefix);
}

using test::error_of;

const test::CudaGraphApi& api() { return test::CudaGraphApi::get(); }

// A stream of the test's own, and its name in the fake's log.
struct Stream {
  CUstream stream = nullptr;
  std::string name;
  Stream() {
    jit::CudaDriver::get().make_current(0);
    test::cuda_ok(api().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    synchronize();
    std::vector<std::string> sync = log_lines("streamSynchronize stream=");
    name = sync.back().substr(std::string("streamSynchronize stream=").size());
  }
  ~Stream() { api().cuStreamDestroy(stream); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  void synchronize() const {
    test::cuda_ok(api().cuStreamSynchronize(stream), "cuStreamSynchronize");
  }
  CallOptions on() const { return CallOptions{.cuda_stream = stream}; }
};

std::string vector_add_launch(const std::string& stream) {
  return "launch fn=vector_add_cuda_kernel ctx=0 stream=" + stream +
         " grid=4,1,1 block=256,1,1 shared=0 static=0";
}

class FakeGpuStream : public testing::Test {
 protected:
  void SetUp() override {
    const char* library = std::getenv("PRIMJIT_CUDA_DRIVER_LIBRARY");
    ASSERT_TRUE(library != nullptr && std::string(library).find("fake") != std::string::npos)
        << "run through ctest: PRIMJIT_CUDA_DRIVER_LIBRARY must name the fake driver";
    jit::CudaDriver::get().make_current(0);
    fake_cuda_reset();
  }
  Tensor zeros(std::vector<int64_t> shape) {
    return Tensor::zeros(std::move(shape), DataType::Float(32), kGpu0);
  }
};

// The stream comes with the call: a new stream compiles and loads nothing, and kernels that
// differ only in their default stream share the variant.
TEST_F(FakeGpuStream, CallsOnNewStreamsShareTheVariant) {
  Jit jit;
  Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  Tensor a = zeros({1000}), b = zeros({1000}), c = zeros({1000});
  Stream s1, s2;
  fake_cuda_reset();
  k(a, b, c, s1.on());
  k(a, b, c, s2.on());
  k(a, b, c);  // the kernel's default stream: the legacy one
  Arg args[] = {a, b, c};
  k.call(args, s2.on());
  EXPECT_EQ(log_lines("launch"),
            (std::vector<std::string>{vector_add_launch(s1.name), vector_add_launch(s2.name),
                                      vector_add_launch("0"), vector_add_launch(s2.name)}));
  EXPECT_EQ(log_lines("moduleLoad").size(), 1u);
  EXPECT_EQ(k.stats().misses, 1u);
  EXPECT_EQ(k.stats().calls, 4u);

  Kernel on_s1 =
      jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda(), .cuda_stream = s1.stream});
  fake_cuda_reset();
  on_s1(a, b, c);
  on_s1(a, b, c, CallOptions{.cuda_stream = nullptr});  // named: the legacy stream
  EXPECT_EQ(log_lines("launch"),
            (std::vector<std::string>{vector_add_launch(s1.name), vector_add_launch("0")}));
  EXPECT_EQ(on_s1.stats().misses, 0u);
  EXPECT_TRUE(log_lines("moduleLoad").empty());
}

// Each thread's calls go to its own stream, whatever the other threads do at the same time.
TEST_F(FakeGpuStream, ThreadsCallOnTheirOwnStreams) {
  Jit jit;
  Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  Tensor a = zeros({1000}), b = zeros({1000}), c = zeros({1000});
  k(a, b, c);  // compiled before the threads start
  constexpr int kThreads = 6, kCalls = 25;
  std::vector<std::unique_ptr<Stream>> streams;
  for (int t = 0; t < kThreads; ++t) streams.push_back(std::make_unique<Stream>());
  fake_cuda_reset();
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      errors[t] = error_of([&] {
        for (int i = 0; i < kCalls; ++i) k(a, b, c, streams[t]->on());
      });
    });
  }
  for (std::thread& t : threads) t.join();
  std::map<std::string, int> per_stream;
  for (const std::string& line : log_lines("launch")) ++per_stream[line];
  std::map<std::string, int> expected;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    expected[vector_add_launch(streams[t]->name)] = kCalls;
  }
  EXPECT_EQ(per_stream, expected);
}

// Kernels launched from a parallel loop of the host code run on oneTBB's threads, and still go
// to the call's stream.
TEST_F(FakeGpuStream, LaunchesFromAParallelHostLoopUseTheCallsStream) {
  Jit jit;
  Kernel k = jit.kernel(parse(R"(
@T.prim_func
def rows(A: T.Buffer((16, 32), "float32")):
    T.func_attr({"target": T.target("cuda", host="llvm")})
    for j in T.parallel(16):
        with T.launch_thread("threadIdx.x", 32) as tx:
            A[j, tx] = A[j, tx] + T.float32(1)
)")
                            ->lookup("rows"),
                        {.target = Target::cuda()});
  Tensor a = zeros({16, 32});
  Stream s;
  fake_cuda_reset();
  k(a, s.on());
  std::vector<std::string> launches = log_lines("launch");
  ASSERT_EQ(launches.size(), 16u);
  for (const std::string& line : launches) {
    EXPECT_NE(line.find(" stream=" + s.name + " "), std::string::npos) << line;
  }
  // Such host code is not something a prepared call can replay.
  EXPECT_NE(error_of([&] { k.prepare(a, s.on()); }).find("runs a parallel loop"),
            std::string::npos);
}

// Two kernels' launches captured into a graph on a stream and replayed: nothing illegal happens
// during the capture (the capture stays valid), and a first call refuses to compile in it.
TEST_F(FakeGpuStream, CaptureLaunchesIntoAGraphAndReplay) {
  Jit jit;
  Kernel add = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  Kernel softmax = jit.kernel(examples::row_softmax(), {.target = Target::cuda()});
  Tensor a = zeros({1000}), b = zeros({1000}), c = zeros({1000});
  Tensor s1 = zeros({10}), s2 = zeros({10}), s3 = zeros({10});
  Tensor x = zeros({37, 256}), y = zeros({37, 256});
  Stream s;
  add(a, b, c, s.on());  // loaded before the capture
  softmax(x, y, s.on());
  fake_cuda_reset();
  test::cuda_ok(api().cuStreamBeginCapture(s.stream, CU_STREAM_CAPTURE_MODE_GLOBAL),
                "cuStreamBeginCapture");
  add(a, b, c, s.on());
  std::string refused = error_of([&] { add(s1, s2, s3, s.on()); });
  EXPECT_NE(refused.find("kernel 'vector_add_cuda': this call would compile or load a variant "
                         "while its stream is capturing a CUDA graph"),
            std::string::npos)
      << refused;
  EXPECT_NE(refused.find("Kernel::prewarm"), std::string::npos) << refused;
  softmax(x, y, s.on());
  CUgraph graph = nullptr;
  test::cuda_ok(api().cuStreamEndCapture(s.stream, &graph), "cuStreamEndCapture");
  EXPECT_TRUE(log_lines("launch").empty());  // captured, not run
  EXPECT_TRUE(log_lines("moduleLoad").empty());
  EXPECT_EQ(log_lines("endCapture"),
            std::vector<std::string>{"endCapture stream=" + s.name + " nodes=2"});
  CUgraphExec exec = nullptr;
  test::cuda_ok(api().cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiate");
  for (int replay = 0; replay < 2; ++replay) {
    test::cuda_ok(api().cuGraphLaunch(exec, s.stream), "cuGraphLaunch");
  }
  s.synchronize();
  const std::string softmax_launch = "launch fn=row_softmax_kernel ctx=0 stream=" + s.name +
                                     " grid=37,1,1 block=256,1,1 shared=0 static=1024";
  EXPECT_EQ(log_lines("launch"),
            (std::vector<std::string>{vector_add_launch(s.name), softmax_launch,
                                      vector_add_launch(s.name), softmax_launch}));
  api().cuGraphExecDestroy(exec);
  api().cuGraphDestroy(graph);
  KernelStats st = add.stats();
  EXPECT_EQ(st.misses, 1u);  // the refused call compiled nothing
  EXPECT_EQ(st.variants, 1u);
}

// During a capture, a call on the default stream fails in the driver; the message says to
// call on the capturing stream.
TEST_F(FakeGpuStream, ADefaultStreamCallDuringACaptureSaysWhichStreamToUse) {
  Jit jit;
  Kernel add = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  Tensor a = zeros({1000}), b = zeros({1000}), c = zeros({1000});
  add(a, b, c);
  Stream s;
  test::cuda_ok(api().cuStreamBeginCapture(s.stream, CU_STREAM_CAPTURE_MODE_GLOBAL),
                "cuStreamBeginCapture");
  std::string message = error_of([&] { add(a, b, c); });
  EXPECT_NE(message.find("launching kernel 'vector_add_cuda_kernel'"), std::string::npos)
      << message;
  EXPECT_NE(message.find("CUDA_ERROR_STREAM_CAPTURE"), std::string::npos) << message;
  EXPECT_NE(message.find("CallOptions::cuda_stream"), std::string::npos) << message;
  CUgraph graph = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(s.stream, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

// A prepared call's launch() makes exactly the launches a call makes (two kernels with
// dynamic shared memory), on the prepared stream or another; preparing runs nothing, and the
// code stays loaded after the cache evicts the variant.
TEST_F(FakeGpuStream, PreparedLaunchReplaysTheLaunchesOfACall) {
  Jit jit(JitOptions{.cache_capacity = 1});
  Kernel k = jit.kernel(examples::matmul_relu(), {.target = Target::cuda()});
  Tensor a = zeros({128, 128}), b = zeros({128, 128}), c = zeros({128, 128});
  Tensor d = zeros({128, 128});
  Stream s, other;
  fake_cuda_reset();
  k(a, b, c, d, s.on());
  std::vector<std::string> call = log_lines("launch");
  ASSERT_EQ(call.size(), 2u);
  fake_cuda_reset();
  PreparedCall p = k.prepare(a, b, c, d, s.on());
  EXPECT_EQ(p.num_launches(), 2u);
  EXPECT_TRUE(log_lines("launch").empty());  // recorded, not run
  p.launch();
  EXPECT_EQ(log_lines("launch"), call);
  // Another stream: the same lines but for the stream.
  fake_cuda_reset();
  p.launch(other.stream);
  std::vector<std::string> on_other = call;
  for (std::string& line : on_other) {
    size_t at = line.find(" stream=" + s.name + " ");
    ASSERT_NE(at, std::string::npos) << line;
    line.replace(at, s.name.size() + 9, " stream=" + other.name + " ");
  }
  EXPECT_EQ(log_lines("launch"), on_other);
  // Evicted from the cache (capacity 1) by another kernel's variant: still loaded.
  Kernel add = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  Tensor v1 = zeros({1000}), v2 = zeros({1000}), v3 = zeros({1000});
  add(v1, v2, v3);
  EXPECT_EQ(k.stats().evictions, 1u);
  fake_cuda_reset();
  p.launch();
  EXPECT_EQ(log_lines("launch"), call);
  // A prepared launch can be captured too.
  fake_cuda_reset();
  test::cuda_ok(api().cuStreamBeginCapture(s.stream, CU_STREAM_CAPTURE_MODE_GLOBAL),
                "cuStreamBeginCapture");
  p.launch();
  CUgraph graph = nullptr;
  test::cuda_ok(api().cuStreamEndCapture(s.stream, &graph), "cuStreamEndCapture");
  CUgraphExec exec = nullptr;
  test::cuda_ok(api().cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiate");
  test::cuda_ok(api().cuGraphLaunch(exec, s.stream), "cuGraphLaunch");
  EXPECT_EQ(log_lines("launch"), call);
  api().cuGraphExecDestroy(exec);
  api().cuGraphDestroy(graph);
}

// A kernel whose host code returns a value is refused: a replay would not compute it.
TEST_F(FakeGpuStream, PrepareRefusesAFunctionThatReturnsAValue) {
  Jit jit;
  Kernel k = jit.kernel(parse(R"(
@T.prim_func
def count(A: T.Buffer((32,), "float32")) -> T.int32:
    T.func_attr({"target": T.target("cuda", host="llvm")})
    with T.launch_thread("threadIdx.x", 32) as tx:
        A[tx] = A[tx] + T.float32(1)
    return 32
)")
                            ->lookup("count"),
                        {.target = Target::cuda()});
  Tensor a = zeros({32});
  EXPECT_NE(error_of([&] { k.prepare(a); }).find("returns a value"), std::string::npos);
}

// Tensor::to with a stream copies after the work queued on it, then waits for it.
TEST_F(FakeGpuStream, CopiesOrderedOnTheCallsStream) {
  Tensor a = zeros({64});
  Stream s;
  fake_cuda_reset();
  Tensor host = a.to(kCpu, s.stream);
  EXPECT_EQ(log_lines("memcpyDtoH"),
            std::vector<std::string>{"memcpyDtoH ctx=0 stream=" + s.name + " bytes=256"});
  EXPECT_EQ(log_lines("streamSynchronize"),
            std::vector<std::string>{"streamSynchronize stream=" + s.name});
  fake_cuda_reset();
  Tensor back = host.to(kGpu0, s.stream);
  // (Making the destination may copy or set zeros on the default stream first.)
  EXPECT_EQ(log_lines("memcpyHtoD ctx=0 stream=" + s.name),
            std::vector<std::string>{"memcpyHtoD ctx=0 stream=" + s.name + " bytes=256"});
  EXPECT_EQ(back.device().device_type, kDLCUDA);
}

}  // namespace
}  // namespace primjit
