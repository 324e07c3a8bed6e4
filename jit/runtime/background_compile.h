// Background work of a Jit (JitOptions::tiered): compiles that run on threads of their own
// while calls go on, counted so that the Jit can wait for them; and the copy of a call's arguments
// a compile reads after the call has returned.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "primjit/dlpack.h"
#include "primjit/jit.h"

namespace primjit::jit {

/// A Jit's jobs in flight on background tasks.
class BackgroundCompiles : public std::enable_shared_from_this<BackgroundCompiles> {
 public:
  /// Runs `job` on a background thread. The job handles its own errors: one that escapes is
  /// logged (warning) and dropped.
  void run(std::function<void()> job);
  /// Returns once no job of this owner is queued or running.
  void wait();
  /// Jobs queued or running.
  int pending();

 private:
  friend struct BackgroundQueue;
  void finished();

  std::mutex mutex_;
  std::condition_variable idle_;
  int pending_ = 0;
};

/// The arguments of a call as a compile reads them (dtypes, shapes, strides, byte offsets,
/// devices, data addresses, scalars), owned: the tensors' data is not copied and never read.
class OwnedArgs {
 public:
  explicit OwnedArgs(std::span<const Arg> args);
  OwnedArgs(const OwnedArgs&) = delete;
  OwnedArgs& operator=(const OwnedArgs&) = delete;
  std::span<const Arg> args() const { return args_; }

 private:
  std::vector<DLTensor> tensors_;
  std::vector<std::vector<int64_t>> shapes_, strides_;
  std::vector<Arg> args_;
};

}  // namespace primjit::jit
