// A fake CUDA driver for tests on machines without a GPU (libprimjit_fake_cuda.so).
//
// primjit loads it instead of libcuda.so.1 when PRIMJIT_CUDA_DRIVER_LIBRARY names it. It exports
// cuGetProcAddress_v2 and implements the driver entry points primjit uses: device memory is host
// memory, copies are memcpy, memset is memset, modules are the images NVRTC made (checked for the
// device's architecture), and kernels are NOT executed: launches are recorded in a log. It keeps
// the driver's rules that tests need: contexts per device (a function launched on a context that
// did not load its module is CUDA_ERROR_INVALID_HANDLE), shared memory limits (static + dynamic
// <= the opt-in maximum; dynamic <= the function's MAX_DYNAMIC_SHARED_SIZE_BYTES, whose default
// is 48 KiB - static), and stream capture in global mode (synchronizing calls, cuMemAlloc and
// work on the legacy default stream fail and invalidate the capture). A graph replays its
// captured launches into the log.
//
// Configured at cuInit by the environment:
//   FAKE_CUDA_DEVICES=90,80          one device per entry, with that compute capability (90)
//   FAKE_CUDA_DRIVER_VERSION=13000   what cuDriverGetVersion reports (13000)
//   FAKE_CUDA_SHARED_OPTIN=232448    shared memory per block with opt-in (232448)
//   FAKE_CUDA_FAULT_NEXT_SYNC=1      the next synchronizing call fails (CUDA_ERROR_ILLEGAL_ADDRESS)
//
// Log lines (one per call that does work), e.g.
//   launch fn=k ctx=0 stream=0 grid=4,1,1 block=256,1,1 shared=0 static=1024
//   memsetD8 ctx=0 stream=0 ptr=0x... value=0 bytes=64
//   memcpyHtoD ctx=0 stream=0 bytes=64          (also memcpyDtoH, memcpyDtoD)
//   moduleLoad ctx=0 kind=cubin arch=90 | moduleUnload ctx=0 | ctxSynchronize ctx=0
//   streamSynchronize stream=1 | eventSynchronize | funcSetAttribute fn=k maxDynamicShared=N
//   graphLaunch stream=1 launches=2 (followed by the replayed launch lines)
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

/// The calls recorded since the last fake_cuda_reset, one per line ('\n'-terminated). The text
/// stays valid until the next call of a fake_cuda_* function.
const char* fake_cuda_log(void);

/// Clears the log and the settings made with fake_cuda_set (back to the environment's);
/// loaded modules, memory, streams and contexts stay.
void fake_cuda_reset(void);

/// Changes a setting at run time. Keys: "driver_version", "shared_optin", "fault_next_sync"
/// (the next synchronizing call fails with CUDA_ERROR_ILLEGAL_ADDRESS), "fault_next_launch"
/// (the next cuLaunchKernel fails with CUDA_ERROR_LAUNCH_FAILED), and "static_shared:<kernel>"
/// (the static shared memory of every function named <kernel>, instead of the image's).
/// Returns 0, or -1 for an unknown key.
int fake_cuda_set(const char* key, long value);

/// Reads a counter: "modules" (loaded now), "allocations" (live now), "launches" (since reset),
/// "context_queries" (cuCtxGetCurrent calls since reset), "contexts" (primary contexts retained
/// now), "streams" (live now). -1 for an unknown key.
long fake_cuda_get(const char* key);

#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
#include <sstream>
#include <string>
#include <vector>

/// The lines of fake_cuda_log() that start with `prefix` (all lines for "").
inline std::vector<std::string> fake_cuda_log_lines(const std::string& prefix) {
  std::vector<std::string> lines;
  std::istringstream in(fake_cuda_log());
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) lines.push_back(line);
  }
  return lines;
}
#endif
