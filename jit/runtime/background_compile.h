// Background work of a Jit (JitOptions::tiered): compiles that run on threads of their own
// while calls go on, counted and bounded per Jit, cancelled or waited for when the Jit is
// destroyed; and the copy of a call's arguments a compile reads after the call has returned.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "primjit/dlpack.h"
#include "primjit/jit.h"

namespace primjit::jit {

/// A Jit's jobs, queued or running on background threads. A job takes a place first
/// (reserve), so that a call knows before it makes a cache entry whether a job will make its
/// variant; at most kMaxPending places are taken at once, so that a stream of new shapes
/// cannot queue compiles (and the cache entries they fill) without bound.
class BackgroundCompiles : public std::enable_shared_from_this<BackgroundCompiles> {
 public:
  /// Jobs queued or running per Jit.
  static constexpr int kMaxPending = 64;

  /// A job: runs with `cancelled` false on a background thread, or with `cancelled` true in
  /// close() when it had not started. Either way it handles its own errors: one that escapes
  /// is logged (warning) and dropped.
  using Job = std::function<void(bool cancelled)>;

  enum class Admission {
    kAdmitted,  // a place is taken: give it to run(), or back with unreserve()
    kFull,      // kMaxPending jobs are queued or running
    kClosed,    // the Jit is being destroyed: nothing runs in the background any more
  };
  /// Takes a place for one job.
  Admission reserve();
  /// Gives back a place that reserve() took and no job used.
  void unreserve();
  /// Runs `job` in a place that reserve() took: queued, then on a background thread.
  void run(Job job);
  /// Cancels the jobs that have not started (each runs with `cancelled` true, here) and waits
  /// for the running ones. Afterwards reserve() answers kClosed.
  void close();

  /// For tests: while held, background threads start no job (jobs stay queued, and close()
  /// cancels them). Affects every Jit of the process.
  static void hold_for_testing(bool held);

 private:
  friend struct BackgroundQueue;
  void finished();

  std::mutex mutex_;
  std::condition_variable idle_;
  int pending_ = 0;
  bool closed_ = false;
};

/// A place among a Jit's background compiles (BackgroundCompiles::reserve), given back unless a
/// job takes it.
class BackgroundPlace {
 public:
  BackgroundPlace() = default;
  BackgroundPlace(const BackgroundPlace&) = delete;
  BackgroundPlace& operator=(const BackgroundPlace&) = delete;
  ~BackgroundPlace() { reset(); }

  /// Takes a place in `background`; false (none taken) with the reason in `why`.
  bool take(BackgroundCompiles& background, BackgroundCompiles::Admission* why) {
    *why = background.reserve();
    if (*why == BackgroundCompiles::Admission::kAdmitted) background_ = &background;
    return background_ != nullptr;
  }
  /// Gives the place back, if one is held.
  void reset() {
    if (background_ != nullptr) std::exchange(background_, nullptr)->unreserve();
  }
  /// Runs `job` in the place (BackgroundCompiles::run).
  void run(BackgroundCompiles::Job job) {
    std::exchange(background_, nullptr)->run(std::move(job));
  }

 private:
  BackgroundCompiles* background_ = nullptr;
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
