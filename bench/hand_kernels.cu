// bench_kernels' kernels written by hand in CUDA C, compiled ahead of time by the toolkit's nvcc
// (tools/gpu-bundle.sh: `nvcc -O3 -fatbin` for sm_90 plus compute_90 PTX) and loaded from the
// image by bench_kernels (PRIMJIT_HAND_KERNELS names it): the baseline "what nvcc makes of the
// same algorithm". Launch them as primjit launches its versions:
//   hand_vector_add        C = A + B on n float32; blocks of 256 threads, one element each,
//                          ceil(n / 256) blocks (examples::vector_add_cuda)
//   hand_tiled_matmul_<N>  C = A @ B on N x N float32 (N = 1024, 4096); one 256-thread block
//                          per 16 x 16 tile of C, (N / 16)^2 blocks, tiles of A and B staged
//                          through shared memory (bench_kernels' tiled_matmul)

template <int N>
__device__ __forceinline__ void tiled_matmul(const float* __restrict__ A,
                                             const float* __restrict__ B, float* __restrict__ C) {
  constexpr int kTiles = N / 16;
  __shared__ float A_tile[16][16];
  __shared__ float B_tile[16][16];
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const int row = blockIdx.x / kTiles * 16 + ty;
  const int col = blockIdx.x % kTiles * 16 + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < kTiles; ++k0) {
    A_tile[ty][tx] = A[row * N + k0 * 16 + tx];
    B_tile[ty][tx] = B[(k0 * 16 + ty) * N + col];
    __syncthreads();
#pragma unroll
    for (int k1 = 0; k1 < 16; ++k1) acc += A_tile[ty][k1] * B_tile[k1][tx];
    __syncthreads();
  }
  C[row * N + col] = acc;
}

extern "C" __global__ void __launch_bounds__(256)
    hand_tiled_matmul_1024(const float* __restrict__ A, const float* __restrict__ B,
                           float* __restrict__ C) {
  tiled_matmul<1024>(A, B, C);
}

extern "C" __global__ void __launch_bounds__(256)
    hand_tiled_matmul_4096(const float* __restrict__ A, const float* __restrict__ B,
                           float* __restrict__ C) {
  tiled_matmul<4096>(A, B, C);
}

extern "C" __global__ void __launch_bounds__(256)
    hand_vector_add(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                    int n) {
  const int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) C[i] = A[i] + B[i];
}
