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
    std::function<void()> work;
  };

  std::mutex mutex;
  std::deque<Job> jobs;
  int threads = 0;  // running the queue
  // At most this many compiles at once, leaving a core to the calls (the compiles of 20 new
  // shapes on 20 threads of a 2-core machine slowed the calls that run meanwhile 2.6x).
  const int max_threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - 1);

  // Never destroyed: a background thread may still run while the process exits.
  static BackgroundQueue& get() {
    static BackgroundQueue* queue = new BackgroundQueue;
    return *queue;
  }

  // A background thread: runs jobs until the queue is empty.
  void drain() {
    for (;;) {
      Job job;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (jobs.empty()) {
          --threads;
          return;
        }
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      run(job);
    }
  }

  static void run(Job& job) {
    try {
      job.work();
    } catch (const std::exception& e) {
      PRIMJIT_LOG_WARNING << "a background compile failed: " << e.what();
    } catch (...) {
      PRIMJIT_LOG_WARNING << "a background compile failed";
    }
    // Its captures go first (a kernel, perhaps the last reference to its Jit), then the owner
    // learns that it has finished.
    job.work = nullptr;
    job.owner->finished();
  }
};

void BackgroundCompiles::run(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++pending_;
  }
  BackgroundQueue& queue = BackgroundQueue::get();
  {
    std::lock_guard<std::mutex> lock(queue.mutex);
    queue.jobs.push_back({shared_from_this(), std::move(job)});
    if (queue.threads >= queue.max_threads) return;  // a running thread will take it
    ++queue.threads;
  }
  try {
    std::thread([&queue] { queue.drain(); }).detach();
  } catch (const std::system_error&) {
    queue.drain();  // no thread to be had: compile now, in the caller
  }
}

void BackgroundCompiles::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return pending_ == 0; });
}

int BackgroundCompiles::pending() {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_;
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
