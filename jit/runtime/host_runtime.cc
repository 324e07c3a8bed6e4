#include "jit/runtime/host_runtime.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <atomic>

#include "jit/llvm/orc_engine.h"
#include "primjit/error.h"

namespace primjit::jit {
namespace {

thread_local std::string t_last_error;

}  // namespace

thread_local CallContext t_call_context;

void register_host_runtime(OrcEngine& engine) {
  engine.define_symbol(kSetErrorSymbol, reinterpret_cast<void*>(&primjit_rt_set_error));
  engine.define_symbol(kParallelForSymbol, reinterpret_cast<void*>(&primjit_rt_parallel_for));
  engine.define_symbol(kLaunchSymbol, reinterpret_cast<void*>(&primjit_rt_launch));
  engine.define_symbol(kCheckArgsSymbol, reinterpret_cast<void*>(&primjit_rt_check_args));
}

void set_last_error(std::string message) { t_last_error = std::move(message); }

PJValue call_packed(const HostEntry& entry, const PJValue* args, int32_t num_args) {
  PJValue result{};
  result.type_index = kPJNone;
  // The message is left by the failing call and taken here, so a successful call touches no
  // thread-local state.
  if (entry.fn(entry.self, args, num_args, &result) != 0) [[unlikely]] {
    std::string message;
    message.swap(t_last_error);
    PRIMJIT_USER_ERROR() << (message.empty() ? "compiled function failed without a message"
                                             : message);
  }
  return result;
}

}  // namespace primjit::jit

extern "C" void primjit_rt_set_error(const char* format, const PJValue* values,
                                     int32_t num_values) {
  primjit::jit::t_last_error = primjit::format_message(format, values, num_values);
}

extern "C" int32_t primjit_rt_parallel_for(int64_t begin, int64_t end,
                                           primjit::jit::ParallelBody body, void* closure) {
  if (begin >= end) return 0;
  const primjit::jit::CallContext call = primjit::jit::t_call_context;
  if (call.recording != nullptr) {
    // Replaying the launches of threads that ran at once would fix one order of many.
    primjit::jit::t_last_error =
        "the host code runs a parallel loop, whose launches a prepared call cannot replay in "
        "order; call the kernel instead of preparing it";
    return -1;
  }
  // Chunks of a 64th of the range, at most 1024 iterations: few enough to keep scheduling
  // cheap, small enough for stealing to balance the cores.
  const int64_t n = end - begin;
  const int64_t grain = std::max<int64_t>(1, std::min<int64_t>(1024, n / 64));
  std::atomic<bool> failed{false};
  std::string error;  // written only by the first body that fails
  tbb::task_group_context context;
  // Isolated: while this thread waits for the loop it runs only the loop's own chunks, never
  // an unrelated task of the caller's (which could call back into primjit mid-call).
  tbb::this_task_arena::isolate([&] {
    tbb::parallel_for(
        tbb::blocked_range<int64_t>(begin, end, grain),
        [&](const tbb::blocked_range<int64_t>& range) {
          // Kernels launched by the loop's body go to the call's stream on every thread.
          primjit::jit::CallScope scope(call);
          // One call per chunk: the task's own loop runs the chunk's iterations.
          if (body(range.begin(), range.end(), closure) != 0) {
            std::string message;
            message.swap(primjit::jit::t_last_error);  // this worker's message, taken
            if (!failed.exchange(true)) error = std::move(message);
            context.cancel_group_execution();
          }
        },
        context);
  });
  if (!failed) return 0;
  primjit::jit::t_last_error = error;  // the caller's thread reports it
  return -1;
}

extern "C" int32_t primjit_rt_launch(void* handle, const int64_t* launch, void** args) {
  if (handle == nullptr) {
    primjit::jit::t_last_error =
        "a kernel was launched before its code was loaded (its slot of the kernel table is "
        "empty); this is a bug in primjit's runtime";
    return -1;
  }
  return static_cast<primjit::jit::KernelHandle*>(handle)->launch(launch, args);
}
