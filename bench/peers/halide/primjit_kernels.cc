// TVMScript texts of the peer benchmark's kernels. Scheduled variants say in the IR what
// Halide's schedules say: T.parallel over rows or chunks, T.vectorized inner loops (a marked
// reduction is the user's permission to reassociate it: LowerVectorReductions), T.unroll of
// the rows of a register tile.
#include "bench/peers/halide/primjit_kernels.h"

#include <stdexcept>

#include "bench/peers/halide/reference.h"
#include "primjit/ir/text.h"

namespace primjit::bench::peers {
namespace {

static_assert(kSaxpyChunk == 8192 && kTileRows == 4 && kTileCols == 16,
              "the texts below write the chunk and the tile as numbers");

constexpr const char* kSaxpyNaive = R"(
@T.prim_func
def saxpy_naive(a: T.handle, b: T.handle, c: T.handle, alpha: T.float32):
    T.func_attr({"target": T.target("llvm")})
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    C = T.match_buffer(c, (n,), "float32")
    for i in range(n):
        C[i] = A[i] * alpha + B[i]
)";

// Chunks of kSaxpyChunk (8192) elements over the threads, each a vectorized loop.
constexpr const char* kSaxpyScheduled = R"(
@T.prim_func
def saxpy_scheduled(a: T.handle, b: T.handle, c: T.handle, alpha: T.float32):
    T.func_attr({"target": T.target("llvm")})
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    C = T.match_buffer(c, (n,), "float32")
    for chunk in T.parallel((n + T.int64(8191)) // T.int64(8192)):
        base: T.int64 = chunk * T.int64(8192)
        for j in T.vectorized(T.min(T.int64(8192), n - base)):
            C[base + j] = A[base + j] * alpha + B[base + j]
)";

constexpr const char* kMatmulNaive = R"(
@T.prim_func
def matmul_naive(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int64()
    A = T.match_buffer(a, (n, n), "float32")
    B = T.match_buffer(b, (n, n), "float32")
    C = T.match_buffer(c, (n, n), "float32")
    acc = T.alloc_buffer((1,), "float32", scope="local")
    for i in range(n):
        for j in range(n):
            acc[0] = T.float32(0)
            for k in range(n):
                acc[0] = acc[0] + A[i, k] * B[k, j]
            C[i, j] = acc[0]
)";

// i-k-j order; `{rows}` is range (serial) or T.parallel; `{name}` the function's name.
constexpr const char* kMatmulIkj = R"(
@T.prim_func
def {name}(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int64()
    A = T.match_buffer(a, (n, n), "float32")
    B = T.match_buffer(b, (n, n), "float32")
    C = T.match_buffer(c, (n, n), "float32")
    for i in {rows}(n):
        for j in range(n):
            C[i, j] = T.float32(0)
        for k in range(n):
            for j in range(n):
                C[i, j] = C[i, j] + A[i, k] * B[k, j]
)";

// Row tiles of 4 over the threads; a 4 x 16 block of C accumulated in a local tile over all
// of k (rows unrolled, columns vectorized), then stored. n must be a multiple of 16.
constexpr const char* kMatmulTiled = R"(
@T.prim_func
def matmul_tiled(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int64()
    A = T.match_buffer(a, (n, n), "float32")
    B = T.match_buffer(b, (n, n), "float32")
    C = T.match_buffer(c, (n, n), "float32")
    for io in T.parallel(n // T.int64(4)):
        for jo in range(n // T.int64(16)):
            acc = T.alloc_buffer((4, 16), "float32", scope="local")
            for ii in T.unroll(4):
                for ji in T.vectorized(16):
                    acc[ii, ji] = T.float32(0)
            for k in range(n):
                for ii in T.unroll(4):
                    a_ik: T.float32 = A[io * T.int64(4) + T.int64(ii), k]
                    for ji in T.vectorized(16):
                        acc[ii, ji] = acc[ii, ji] + a_ik * B[k, jo * T.int64(16) + T.int64(ji)]
            for ii in T.unroll(4):
                for ji in T.vectorized(16):
                    C[io * T.int64(4) + T.int64(ii), jo * T.int64(16) + T.int64(ji)] = acc[ii, ji]
)";

// Per row: the maximum, e = exp(x - max) into Y, their sum, Y / sum. `{rows}` is range or
// T.parallel, `{cols}` range or T.vectorized (which makes the max and sum vector reductions);
// `{name}` the function's name.
constexpr const char* kSoftmax = R"(
@T.prim_func
def {name}(x: T.handle, y: T.handle):
    T.func_attr({"target": T.target("llvm")})
    m = T.int64()
    n = T.int64()
    X = T.match_buffer(x, (m, n), "float32")
    Y = T.match_buffer(y, (m, n), "float32")
    for r in {rows}(m):
        mx = T.alloc_buffer((1,), "float32", scope="local")
        s = T.alloc_buffer((1,), "float32", scope="local")
        mx[0] = X[r, 0]
        for j in {cols}(n):
            mx[0] = T.max(mx[0], X[r, j])
        for j in {cols}(n):
            Y[r, j] = T.exp(X[r, j] - mx[0])
        s[0] = T.float32(0)
        for j in {cols}(n):
            s[0] = s[0] + Y[r, j]
        for j in {cols}(n):
            Y[r, j] = Y[r, j] / s[0]
)";

std::string fill(std::string text, const std::string& key, const std::string& value) {
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at)) {
    text.replace(at, key.size(), value);
    at += value.size();
  }
  return text;
}

}  // namespace

std::string primjit_kernel_text(const std::string& kernel) {
  if (kernel == "saxpy_naive") return kSaxpyNaive;
  if (kernel == "saxpy_scheduled") return kSaxpyScheduled;
  if (kernel == "matmul_naive") return kMatmulNaive;
  if (kernel == "matmul_ikj") return fill(fill(kMatmulIkj, "{rows}", "range"), "{name}", kernel);
  if (kernel == "matmul_parallel") {
    return fill(fill(kMatmulIkj, "{rows}", "T.parallel"), "{name}", kernel);
  }
  if (kernel == "matmul_tiled") return kMatmulTiled;
  if (kernel == "softmax_plain") {
    return fill(fill(fill(kSoftmax, "{rows}", "range"), "{cols}", "range"), "{name}", kernel);
  }
  if (kernel == "softmax_scheduled") {
    return fill(fill(fill(kSoftmax, "{rows}", "T.parallel"), "{cols}", "T.vectorized"), "{name}",
                kernel);
  }
  throw std::invalid_argument("no primjit text for kernel '" + kernel + "'");
}

Kernel primjit_kernel(Jit& jit, const std::string& kernel, const KernelOptions& options) {
  const std::string text = primjit_kernel_text(kernel);
  const size_t name_at = text.find("def ") + 4;  // the text's one function
  return jit.kernel(parse(text), text.substr(name_at, text.find('(', name_at) - name_at), options);
}

}  // namespace primjit::bench::peers
