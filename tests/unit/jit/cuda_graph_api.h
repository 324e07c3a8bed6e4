// The CUDA driver's stream and graph entry points, for tests that run primjit's launches on
// streams of their own and capture them into graphs (primjit itself makes no streams or
// graphs). Resolved through cuGetProcAddress from the driver library the runtime loads
// ($PRIMJIT_CUDA_DRIVER_LIBRARY, else libcuda.so.1), after the runtime has loaded it.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace primjit::test {

struct CudaGraphApi {
  PFN_cuStreamCreate_v2000 cuStreamCreate = nullptr;
  PFN_cuStreamDestroy_v4000 cuStreamDestroy = nullptr;
  PFN_cuStreamSynchronize_v2000 cuStreamSynchronize = nullptr;
  PFN_cuStreamBeginCapture_v10010 cuStreamBeginCapture = nullptr;
  PFN_cuStreamEndCapture_v10000 cuStreamEndCapture = nullptr;
  PFN_cuGraphInstantiateWithFlags_v11040 cuGraphInstantiateWithFlags = nullptr;
  PFN_cuGraphLaunch_v10000 cuGraphLaunch = nullptr;
  PFN_cuGraphDestroy_v10000 cuGraphDestroy = nullptr;
  PFN_cuGraphExecDestroy_v10000 cuGraphExecDestroy = nullptr;

  /// The entry points; throws std::runtime_error when the library or one of them is missing.
  static const CudaGraphApi& get() {
    static const CudaGraphApi api = [] {
      const char* name = std::getenv("PRIMJIT_CUDA_DRIVER_LIBRARY");
      if (name == nullptr || *name == 0) name = "libcuda.so.1";
      void* library = dlopen(name, RTLD_NOW | RTLD_LOCAL);  // kept open, like the runtime's
      if (library == nullptr) throw std::runtime_error(std::string("cannot load ") + name);
      using GetProc = PFN_cuGetProcAddress_v12000;
      auto get_proc = reinterpret_cast<GetProc>(dlsym(library, "cuGetProcAddress_v2"));
      if (get_proc == nullptr) throw std::runtime_error("no cuGetProcAddress_v2");
      CudaGraphApi a;
      auto resolve = [&](const char* symbol, int version, auto* function) {
        void* pointer = nullptr;
        CUdriverProcAddressQueryResult status{};
        if (get_proc(symbol, &pointer, version, CU_GET_PROC_ADDRESS_DEFAULT, &status) !=
                CUDA_SUCCESS ||
            pointer == nullptr) {
          throw std::runtime_error(std::string("the driver lacks ") + symbol);
        }
        *function = reinterpret_cast<std::remove_reference_t<decltype(*function)>>(pointer);
      };
      resolve("cuStreamCreate", 2000, &a.cuStreamCreate);
      resolve("cuStreamDestroy", 4000, &a.cuStreamDestroy);
      resolve("cuStreamSynchronize", 2000, &a.cuStreamSynchronize);
      resolve("cuStreamBeginCapture", 10010, &a.cuStreamBeginCapture);
      resolve("cuStreamEndCapture", 10000, &a.cuStreamEndCapture);
      resolve("cuGraphInstantiateWithFlags", 11040, &a.cuGraphInstantiateWithFlags);
      resolve("cuGraphLaunch", 10000, &a.cuGraphLaunch);
      resolve("cuGraphDestroy", 10000, &a.cuGraphDestroy);
      resolve("cuGraphExecDestroy", 10000, &a.cuGraphExecDestroy);
      return a;
    }();
    return api;
  }
};

/// Throws std::runtime_error naming `what` when a driver call failed.
inline void cuda_ok(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) {
    throw std::runtime_error(std::string(what) + " failed with CUresult " +
                             std::to_string(static_cast<int>(result)));
  }
}

}  // namespace primjit::test
