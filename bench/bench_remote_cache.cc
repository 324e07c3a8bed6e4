// The first call of a kernel on a machine that has never compiled it: compiled locally, or
// loaded from the remote (Redis) tier that another machine filled. Each iteration is a new Jit
// (a new ORC session, as in a new process) with an empty disk cache; only the first call is
// timed. The server is a redis-server of the benchmark's own on 127.0.0.1 (without one the
// benchmarks skip themselves).
#include "bench/bench_main.h"
#include "jit/runtime/remote_cache.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/tensor.h"
#include "tests/redis_server.h"

namespace primjit {
namespace {

PrimFunc matmul() {
  return parse(R"(
@T.prim_func
def matmul(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int32()
    A = T.match_buffer(a, (n, n), "float32")
    B = T.match_buffer(b, (n, n), "float32")
    C = T.match_buffer(c, (n, n), "float32")
    for i in T.parallel(n):
        for j in range(n):
            C[i, j] = T.float32(0)
            for k in range(n):
                C[i, j] = C[i, j] + A[i, k] * B[k, j]
)")
      ->lookup("matmul");
}

struct Fixture {
  test::RedisServer server;
  test::TempDir dir{"primjit_bench_remote"};
  test::TeamKeyFiles keys{dir};
  JitOptions options(bool remote, int run) const {
    JitOptions o;
    o.disk_cache = DiskCacheMode::kEnabled;
    o.cache_dir = dir.str() + "/disk" + std::to_string(run);  // empty each time
    if (remote) {
      o.remote_cache = server.url();
      o.remote_key_file = keys.reader;
    }
    return o;
  }
};

Fixture& fixture() {
  static Fixture f;  // destroyed at exit: the server stops
  return f;
}

void first_call(benchmark::State& state, bool remote) {
  Fixture& f = fixture();
  if (!f.server.available()) {
    state.SkipWithError("redis-server is not installed");
    return;
  }
  const int64_t n = 64;
  Tensor a = Tensor::zeros({n, n}, DataType::Float(32)),
         b = Tensor::zeros({n, n}, DataType::Float(32)),
         c = Tensor::zeros({n, n}, DataType::Float(32));
  {  // another machine filled the server
    JitOptions o = f.options(false, -1);
    o.remote_cache = f.server.url();
    o.remote_key_file = f.keys.writer;
    Jit jit(o);
    jit.kernel(matmul())(a, b, c);
  }
  static int run = 0;
  for (auto _ : state) {
    Jit jit(f.options(remote, run++));
    Kernel k = jit.kernel(matmul());
    auto start = std::chrono::steady_clock::now();
    k(a, b, c);
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    KernelStats s = k.stats();
    if ((remote ? s.remote_hits : s.misses) != 1) {
      state.SkipWithError("the first call did not take the expected path");
      bench::fail();
      return;
    }
  }
}

void BM_FirstCallCompiled(benchmark::State& state) { first_call(state, false); }
void BM_FirstCallRemoteHit(benchmark::State& state) { first_call(state, true); }

}  // namespace
}  // namespace primjit

BENCHMARK(primjit::BM_FirstCallCompiled)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(primjit::BM_FirstCallRemoteHit)->UseManualTime()->Unit(benchmark::kMillisecond);

PRIMJIT_BENCHMARK_MAIN();
