// The fake CUDA driver's streams, events and graphs (see fake_cuda.h).
#include <chrono>

#include "tests/fake_cuda/fake_state.h"

namespace fake_cuda {
namespace {

Stream* find_stream(State& s, CUstream stream) {
  Stream* st = reinterpret_cast<Stream*>(stream);
  return s.streams.count(st) != 0 ? st : nullptr;
}

CUresult stream_create(CUstream* stream, unsigned) {
  FAKE_LOCK();
  FAKE_NEED_CONTEXT();
  auto st = std::make_unique<Stream>();
  st->id = s.next_stream++;
  st->context = t_current;
  *stream = reinterpret_cast<CUstream>(st.get());
  s.streams.insert(st.release());
  return CUDA_SUCCESS;
}

CUresult stream_destroy(CUstream stream) {
  FAKE_LOCK();
  Stream* st = find_stream(s, stream);
  if (st == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  s.streams.erase(st);
  delete st;
  return CUDA_SUCCESS;
}

CUresult stream_synchronize(CUstream stream) {
  FAKE_LOCK();
  if (!valid_stream(s, stream)) return CUDA_ERROR_INVALID_HANDLE;
  write_log(s, "streamSynchronize stream=" + stream_name(stream));
  return synchronizing(s);
}

CUresult stream_query(CUstream stream) {
  FAKE_LOCK();
  if (!valid_stream(s, stream)) return CUDA_ERROR_INVALID_HANDLE;
  return unsafe_during_capture(s);
}

CUresult stream_wait_event(CUstream stream, CUevent, unsigned) {
  FAKE_LOCK();
  return valid_stream(s, stream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult stream_begin_capture_mode(CUstream stream, CUstreamCaptureMode) {
  FAKE_LOCK();
  if (is_legacy(stream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  Stream* st = find_stream(s, stream);
  if (st == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (st->capturing) return CUDA_ERROR_ILLEGAL_STATE;
  st->capturing = true;
  st->invalidated = false;
  st->graph = std::make_unique<Graph>();
  write_log(s, "beginCapture stream=" + stream_name(stream));
  return CUDA_SUCCESS;
}

CUresult stream_begin_capture(CUstream stream) {
  return stream_begin_capture_mode(stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

CUresult stream_end_capture(CUstream stream, CUgraph* graph) {
  FAKE_LOCK();
  Stream* st = find_stream(s, stream);
  if (st == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (!st->capturing) return CUDA_ERROR_ILLEGAL_STATE;
  st->capturing = false;
  write_log(s, "endCapture stream=" + stream_name(stream) +
                   " nodes=" + std::to_string(st->graph->nodes.size()));
  std::unique_ptr<Graph> g = std::move(st->graph);
  if (st->invalidated) {
    *graph = nullptr;
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  *graph = reinterpret_cast<CUgraph>(g.get());
  s.graphs.insert(g.release());
  return CUDA_SUCCESS;
}

CUresult stream_is_capturing(CUstream stream, CUstreamCaptureStatus* status) {
  FAKE_LOCK();
  if (is_legacy(stream)) {
    if (any_capture(s)) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  }
  Stream* st = find_stream(s, stream);
  if (st == nullptr) {
    if (stream != CU_STREAM_PER_THREAD) return CUDA_ERROR_INVALID_HANDLE;
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  }
  *status = !st->capturing    ? CU_STREAM_CAPTURE_STATUS_NONE
            : st->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                              : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}

CUresult graph_instantiate(CUgraphExec* exec, CUgraph graph, unsigned long long) {
  FAKE_LOCK();
  Graph* g = reinterpret_cast<Graph*>(graph);
  if (s.graphs.count(g) == 0) return CUDA_ERROR_INVALID_HANDLE;
  auto e = std::make_unique<Graph>(*g);
  *exec = reinterpret_cast<CUgraphExec>(e.get());
  s.execs.insert(e.release());
  return CUDA_SUCCESS;
}

CUresult graph_launch(CUgraphExec exec, CUstream stream) {
  FAKE_LOCK();
  Graph* e = reinterpret_cast<Graph*>(exec);
  if (s.execs.count(e) == 0) return CUDA_ERROR_INVALID_HANDLE;
  Work replay;
  const size_t nodes = e->nodes.size();
  replay.line = [nodes](const std::string& st) {
    return "graphLaunch stream=" + st + " nodes=" + std::to_string(nodes);
  };
  replay.action = [&s, e, stream] {
    for (const Work& node : e->nodes) {
      write_log(s, node.line(stream_name(stream)));
      if (node.launch) ++s.launches;
      if (node.action) node.action();
    }
  };
  return submit(s, stream, std::move(replay));
}

CUresult graph_destroy(CUgraph graph) {
  FAKE_LOCK();
  Graph* g = reinterpret_cast<Graph*>(graph);
  if (s.graphs.erase(g) == 0) return CUDA_ERROR_INVALID_HANDLE;
  delete g;
  return CUDA_SUCCESS;
}

CUresult graph_exec_destroy(CUgraphExec exec) {
  FAKE_LOCK();
  Graph* e = reinterpret_cast<Graph*>(exec);
  if (s.execs.erase(e) == 0) return CUDA_ERROR_INVALID_HANDLE;
  delete e;
  return CUDA_SUCCESS;
}

CUresult event_create(CUevent* event, unsigned) {
  FAKE_LOCK();
  FAKE_NEED_CONTEXT();
  auto e = std::make_unique<Event>();
  *event = reinterpret_cast<CUevent>(e.get());
  s.events.insert(e.release());
  return CUDA_SUCCESS;
}

CUresult event_destroy(CUevent event) {
  FAKE_LOCK();
  Event* e = reinterpret_cast<Event*>(event);
  if (s.events.erase(e) == 0) return CUDA_ERROR_INVALID_HANDLE;
  delete e;
  return CUDA_SUCCESS;
}

CUresult event_record(CUevent event, CUstream stream) {
  FAKE_LOCK();
  Event* e = reinterpret_cast<Event*>(event);
  if (s.events.count(e) == 0 || !valid_stream(s, stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (is_legacy(stream) && any_capture(s)) {
    invalidate_captures(s);
    return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  }
  e->when = std::chrono::steady_clock::now();
  return CUDA_SUCCESS;
}

CUresult event_synchronize(CUevent event) {
  FAKE_LOCK();
  if (s.events.count(reinterpret_cast<Event*>(event)) == 0) return CUDA_ERROR_INVALID_HANDLE;
  write_log(s, "eventSynchronize");
  return synchronizing(s);
}

CUresult event_query(CUevent event) {
  FAKE_LOCK();
  return s.events.count(reinterpret_cast<Event*>(event)) != 0 ? CUDA_SUCCESS
                                                              : CUDA_ERROR_INVALID_HANDLE;
}

CUresult event_elapsed_time(float* ms, CUevent start, CUevent end) {
  FAKE_LOCK();
  Event* a = reinterpret_cast<Event*>(start);
  Event* b = reinterpret_cast<Event*>(end);
  if (s.events.count(a) == 0 || s.events.count(b) == 0) return CUDA_ERROR_INVALID_HANDLE;
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return CUDA_SUCCESS;
}

}  // namespace

std::vector<Entry> stream_entries() {
  return {
      {"cuStreamCreate", 2000, as_pointer(stream_create)},
      {"cuStreamDestroy", 4000, as_pointer(stream_destroy)},
      {"cuStreamSynchronize", 2000, as_pointer(stream_synchronize)},
      {"cuStreamQuery", 2000, as_pointer(stream_query)},
      {"cuStreamWaitEvent", 3020, as_pointer(stream_wait_event)},
      {"cuStreamBeginCapture", 10000, as_pointer(stream_begin_capture)},
      {"cuStreamBeginCapture", 10010, as_pointer(stream_begin_capture_mode)},
      {"cuStreamBeginCapture_v2", 10010, as_pointer(stream_begin_capture_mode)},
      {"cuStreamEndCapture", 10000, as_pointer(stream_end_capture)},
      {"cuStreamIsCapturing", 10000, as_pointer(stream_is_capturing)},
      {"cuGraphInstantiateWithFlags", 11040, as_pointer(graph_instantiate)},
      {"cuGraphLaunch", 10000, as_pointer(graph_launch)},
      {"cuGraphDestroy", 10000, as_pointer(graph_destroy)},
      {"cuGraphExecDestroy", 10000, as_pointer(graph_exec_destroy)},
      {"cuEventCreate", 2000, as_pointer(event_create)},
      {"cuEventDestroy", 4000, as_pointer(event_destroy)},
      {"cuEventRecord", 2000, as_pointer(event_record)},
      {"cuEventSynchronize", 2000, as_pointer(event_synchronize)},
      {"cuEventQuery", 2000, as_pointer(event_query)},
      {"cuEventElapsedTime", 2000, as_pointer(event_elapsed_time)},
  };
}

}  // namespace fake_cuda
