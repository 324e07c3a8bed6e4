// The state one CUDA thread sees when primjit's generated CUDA C runs on the CPU: its indices,
// the block's dynamic shared memory and the scheduler's barrier. Shared by the shim (compiled
// into each kernel library) and the harness that runs the blocks; plain C layout.
#pragma once

struct PrimjitCpuDim3 {
  unsigned int x, y, z;
};

struct PrimjitCpuThread {
  PrimjitCpuDim3 thread_idx, block_idx, block_dim, grid_dim;
  // The block's dynamic shared memory (extern __shared__), aligned to 256 bytes.
  unsigned char* dyn_shared;
  // Waits at a barrier: 0 for __syncthreads(), 1 for __syncwarp(). Returns when every thread
  // of the block (of the warp) has arrived.
  void (*sync)(int scope);
  // __trap(): ends the launch with an error.
  void (*trap)();
};
