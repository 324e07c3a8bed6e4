// The fake CUDA driver's state, shared by its source files (see fake_cuda.h).
#pragma once

#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tests/fake_cuda/fake_image.h"

namespace fake_cuda {

struct Context {
  int device = 0;
};

struct Module;
struct Function {
  Module* module = nullptr;
  std::string name;
  int64_t static_shared = 0;
  int64_t max_dynamic_shared = 0;
};

struct Module {
  Context* context = nullptr;
  Image image;
  std::map<std::string, std::unique_ptr<Function>> functions;
};

// A unit of stream work: the log line it writes (given the stream's name) and what it does.
struct Work {
  std::function<std::string(const std::string& stream)> line;
  std::function<void()> action;
  bool launch = false;
};

struct Graph {
  std::vector<Work> nodes;
};

struct Stream {
  int id = 0;
  Context* context = nullptr;
  bool capturing = false;
  bool invalidated = false;
  std::unique_ptr<Graph> graph;
};

struct Event {
  std::chrono::steady_clock::time_point when;
};

struct Allocation {
  size_t bytes = 0;
  int device = 0;
};

struct Settings {
  long driver_version = 13000;
  long shared_optin = 232448;
  bool fault_next_sync = false;
  bool fault_next_launch = false;
  std::map<std::string, long> static_shared;  // by kernel name
};

struct State {
  std::mutex mutex;
  bool initialized = false;
  std::vector<int> archs = {90};
  Settings environment;  // what fake_cuda_reset returns to
  Settings settings;
  std::vector<std::unique_ptr<Context>> contexts;  // the primary context of each device
  std::vector<int> retained;
  std::set<Module*> modules;
  std::map<uintptr_t, Allocation> allocations;
  std::set<Stream*> streams;
  std::set<Graph*> graphs;
  std::set<Graph*> execs;
  std::set<Event*> events;
  int next_stream = 1;
  long launches = 0;
  long context_queries = 0;  // cuCtxGetCurrent calls
  std::vector<std::string> log;
  std::string log_text;
};

State& state();
/// The context current on this thread (cuCtxSetCurrent).
extern thread_local Context* t_current;
using Lock = std::lock_guard<std::mutex>;

/// nullptr and CU_STREAM_LEGACY: the legacy default stream, named "0" in the log.
bool is_legacy(CUstream stream);
std::string stream_name(CUstream stream);
bool valid_stream(State& s, CUstream stream);
bool any_capture(State& s);
void invalidate_captures(State& s);
/// A call the driver does not allow while a stream captures in global mode (it would
/// synchronize or allocate): it fails and invalidates the capture.
CUresult unsafe_during_capture(State& s);
/// A synchronizing call: where an asynchronous fault of earlier work is reported.
CUresult synchronizing(State& s);
void write_log(State& s, std::string line);
/// Work on a stream: captured into the stream's graph while it captures, else done now. Work
/// on the legacy default stream during a capture is an error that invalidates the capture.
CUresult submit(State& s, CUstream stream, Work work);

/// An entry point cuGetProcAddress hands out.
struct Entry {
  const char* name;
  int version;  // the ABI version this prototype starts at
  void* function;
};

template <typename F>
void* as_pointer(F* function) {
  return reinterpret_cast<void*>(function);
}

/// Streams, events and graphs (fake_streams.cc).
std::vector<Entry> stream_entries();

}  // namespace fake_cuda

// Every entry point starts with these: the state locked, cuInit called, a current context.
#define FAKE_LOCK()   \
  State& s = state(); \
  Lock lock(s.mutex); \
  if (!s.initialized) return CUDA_ERROR_NOT_INITIALIZED
#define FAKE_NEED_CONTEXT() \
  if (t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT
