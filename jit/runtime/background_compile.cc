#include "jit/runtime/background_compile.h"

#include <algorithm>
#include <deque>
#include <exception>
#include <system_error>
#include <thread>
#include <utility>

#include "primjit/log.h"

namespace primjit::jit {

// The jobs of all Jits, run oldest first by a few background threads. A job travels through this
// queue (under its mutex), not in the thread's function object. Plain threads, not TBB tasks:
// a compile costs milliseconds, so a thread's start does not matter, and ThreadSanitizer
// follows them (it does not see oneTBB reuse a finished task's memory for the next enqueued
// one, and reports that as a race).
struct BackgroundQueue {
  struct Job {
    std::shared_ptr<BackgroundCompiles> owner;
    BackgroundCompiles::Job work;
  };

  std::mutex mutex;
  std::condition_variable released;  // `held` cleared, or jobs taken away by close()
  std::deque<Job> jobs;
  int threads = 0;    // running the queue
  bool held = false;  // hold_for_testing
  // At most this many compiles at once, leaving a core to the calls (the compiles of 20 new
  // shapes on 20 threads of a 2-core machine slowed the calls that run meanwhile 2.6x).
  const int max_threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - 1);

  // Never destroyed: a background thread may still be on its way out while the process exits.
  static BackgroundQueue& get() {
    static BackgroundQueue* queue = new BackgroundQueue;
    return *queue;
  }

  // A background thread: runs jobs until the queue is empty.
  void drain() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mutex);
        released.wait(lock, [&] { return !held || jobs.empty(); });
        if (jobs.empty()) {
          --threads;
          return;
        }
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      run(job, /*cancelled=*/false);
    }
  }

  static void run(Job& job, bool cancelled) {
    try {
      job.work(cancelled);
    } catch (const std::exception& e) {
      PRIMJIT_LOG_WARNING << "a background compile failed: " << e.what();
    } catch (...) {
      PRIMJIT_LOG_WARNING << "a background compile failed";
    }
    // Its captures go first (a kernel, perhaps the last reference to its Jit's state), then
    // the owner learns that it has finished.
    job.work = nullptr;
    job.owner->finished();
  }
};

BackgroundCompiles::Admission BackgroundCompiles::reserve() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return Admission::kClosed;
  if (pending_ >= kMaxPending) return Admission::kFull;
  ++pending_;
  return Admission::kAdmitted;
}

void BackgroundCompiles::unreserve() { finished(); }

void BackgroundCompiles::run(Job job) {
  BackgroundQueue::Job queued{shared_from_this(), std::move(job)};
  BackgroundQueue& queue = BackgroundQueue::get();
  bool closed;
  {
    // closed_ is read and the job queued under one lock, so close() (which sets closed_
    // before it sweeps the queue) either sees the job to cancel or this sees closed_.
    std::lock_guard<std::mutex> lock(mutex_);
    closed = closed_;
    if (!closed) {
      std::lock_guard<std::mutex> queue_lock(queue.mutex);
      queue.jobs.push_back(std::move(queued));
      if (queue.threads >= queue.max_threads) return;  // a running thread will take it
      ++queue.threads;
    }
  }
  if (closed) {  // reserved before close() began: close() waits for it, cancelled here
    BackgroundQueue::run(queued, /*cancelled=*/true);
    return;
  }
  try {
    std::thread([&queue] { queue.drain(); }).detach();
  } catch (const std::system_error&) {
    queue.drain();  // no thread to be had: compile now, in the caller
  }
}

void BackgroundCompiles::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }
  // Jobs that have not started are cancelled; the running ones are waited for (a compile
  // cannot be interrupted).
  std::vector<BackgroundQueue::Job> cancelled;
  BackgroundQueue& queue = BackgroundQueue::get();
  {
    std::lock_guard<std::mutex> lock(queue.mutex);
    std::deque<BackgroundQueue::Job> others;
    for (BackgroundQueue::Job& job : queue.jobs) {
      (job.owner.get() == this ? cancelled.emplace_back() : others.emplace_back()) = std::move(job);
    }
    queue.jobs = std::move(others);
    queue.released.notify_all();  // threads held with nothing left to run may leave
  }
  for (BackgroundQueue::Job& job : cancelled) BackgroundQueue::run(job, /*cancelled=*/true);
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return pending_ == 0; });
}

void BackgroundCompiles::hold_for_testing(bool held) {
  BackgroundQueue& queue = BackgroundQueue::get();
  std::lock_guard<std::mutex> lock(queue.mutex);
  queue.held = held;
  queue.released.notify_all();
}

void BackgroundCompiles::finished() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (--pending_ == 0) idle_.notify_all();
}

OwnedArgs::OwnedArgs(std::span<const Arg> args) : args_(args.begin(), args.end()) {
  size_t count = 0;
  for (const Arg& a : args) count += a.value.type_index == kPJDLTensorPtr;
  // Reserved: the arguments point into these vectors.
  tensors_.reserve(count);
  shapes_.reserve(count);
  strides_.reserve(count);
  for (Arg& a : args_) {
    if (a.value.type_index != kPJDLTensorPtr) continue;
    const auto* t = static_cast<const DLTensor*>(a.value.v_ptr);
    DLTensor& copy = tensors_.emplace_back(*t);
    const size_t ndim = t->ndim > 0 ? static_cast<size_t>(t->ndim) : 0;
    std::vector<int64_t>& shape = shapes_.emplace_back();
    std::vector<int64_t>& strides = strides_.emplace_back();
    if (t->shape != nullptr) shape.assign(t->shape, t->shape + ndim);
    if (t->strides != nullptr) strides.assign(t->strides, t->strides + ndim);
    copy.shape = t->shape != nullptr ? shape.data() : nullptr;
    copy.strides = t->strides != nullptr ? strides.data() : nullptr;
    a = Arg(&copy);
  }
}

}  // namespace primjit::jit
