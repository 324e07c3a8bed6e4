#include "jit/runtime/background_compile.h"

#include <tbb/task_arena.h>

#include <deque>
#include <exception>
#include <utility>

#include "primjit/log.h"

namespace primjit::jit {

// The jobs of all Jits, run by the tasks of one arena: each task runs the oldest job. A job
// travels through this queue (under its mutex) rather than in the task, so that a thread
// sanitizer sees it handed over.
struct BackgroundQueue {
  struct Job {
    std::shared_ptr<BackgroundCompiles> owner;
    std::function<void()> work;
  };

  std::mutex mutex;
  std::deque<Job> jobs;
  // Its tasks run on TBB's worker threads (the callers never join it).
  tbb::task_arena arena;

  BackgroundQueue() { arena.initialize(); }

  // Never destroyed: a task may still run while the process exits.
  static BackgroundQueue& get() {
    static BackgroundQueue* queue = new BackgroundQueue;
    return *queue;
  }

  void run_one() {
    Job job;
    {
      std::lock_guard<std::mutex> lock(mutex);
      job = std::move(jobs.front());
      jobs.pop_front();
    }
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
  }
  queue.arena.enqueue([] { BackgroundQueue::get().run_one(); });
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
