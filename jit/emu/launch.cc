// Kernel launches: the grid of a launch, its blocks (in parallel on oneTBB), the threads of a
// block (in order, or as fibers when the launch has barriers), barriers and deadlock detection.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <set>
#include <sstream>

#include "jit/emu/compiler.h"
#include "jit/emu/fiber.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/text.h"

namespace primjit::jit::emu {

int thread_dim_of(const std::string& tag) {
  static const char* const kTags[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                      "threadIdx.x", "threadIdx.y", "threadIdx.z"};
  for (int d = 0; d < kNumThreadDims; ++d) {
    if (tag == kTags[d]) return d;
  }
  return -1;
}

const char* thread_dim_name(int dim) {
  static const char* const kTags[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                      "threadIdx.x", "threadIdx.y", "threadIdx.z"};
  return dim >= 0 && dim < kNumThreadDims ? kTags[dim] : "?";
}

Block::Block(const Grid& grid, int64_t linear) : grid(grid), linear(linear) {
  index[0] = linear % grid.extents[kBlockX];
  index[1] = linear / grid.extents[kBlockX] % grid.extents[kBlockY];
  index[2] = linear / (grid.extents[kBlockX] * grid.extents[kBlockY]);
}

std::string Block::coords() const {
  return "(" + std::to_string(index[0]) + ", " + std::to_string(index[1]) + ", " +
         std::to_string(index[2]) + ")";
}

std::string Block::thread_coords(int64_t thread) const {
  const int64_t x = thread % grid.extents[kThreadX];
  const int64_t y = thread / grid.extents[kThreadX] % grid.extents[kThreadY];
  const int64_t z = thread / (grid.extents[kThreadX] * grid.extents[kThreadY]);
  return "(" + std::to_string(x) + ", " + std::to_string(y) + ", " + std::to_string(z) + ")";
}

namespace {

struct Cancelled {};  // unwinds a fiber whose block failed; never escapes the fiber

// ThreadSanitizer does not see oneTBB's synchronization (the library is not instrumented) and
// reports its task bookkeeping as races, so a ThreadSanitizer build runs the blocks in order.
#if defined(__SANITIZE_THREAD__)
constexpr bool kParallelBlocks = false;
#else
constexpr bool kParallelBlocks = true;
#endif

constexpr size_t kDefaultStackBytes =
#if defined(__SANITIZE_ADDRESS__)
    512 * 1024;
#else
    256 * 1024;
#endif

// "threads (0, 0, 0)..(63, 0, 0), (70, 0, 0)" for a sorted list of linear thread indices.
std::string describe_threads(const Block& block, const std::vector<int64_t>& threads) {
  std::ostringstream os;
  os << (threads.size() == 1 ? "thread " : "threads ");
  size_t ranges = 0;
  for (size_t i = 0; i < threads.size();) {
    size_t j = i;
    while (j + 1 < threads.size() && threads[j + 1] == threads[j] + 1) ++j;
    if (ranges == 4) {
      os << ", and " << threads.size() - i << " more";
      break;
    }
    os << (ranges ? ", " : "") << block.thread_coords(threads[i]);
    if (j > i) os << ".." << block.thread_coords(threads[j]);
    ++ranges;
    i = j + 1;
  }
  return os.str();
}

void setup_thread(const Exec& host, Block& block, int64_t t, Frame* frame, Exec* ex) {
  frame->func = host.frame->func;
  frame->slots = host.frame->slots;
  frame->vslots = host.frame->vslots;
  frame->launch = host.frame->launch;
  ex->block = &block;
  ex->thread = t;
  for (int d = 0; d < 3; ++d)
    ex->thread_index[static_cast<size_t>(d)] = block.index[static_cast<size_t>(d)];
  ex->thread_index[kThreadX] = t % block.grid.extents[kThreadX];
  ex->thread_index[kThreadY] = t / block.grid.extents[kThreadX] % block.grid.extents[kThreadY];
  ex->thread_index[kThreadZ] = t / (block.grid.extents[kThreadX] * block.grid.extents[kThreadY]);
}

}  // namespace

/// Runs the threads of one block as fibers that switch at barriers.
class FiberScheduler {
 public:
  FiberScheduler(const Exec& host, Block& block, const CStmt& body, size_t stack_bytes)
      : host_(host), block_(block) {
    block.scheduler = this;
    threads_.reserve(static_cast<size_t>(block.grid.threads_per_block));
    for (int64_t t = 0; t < block.grid.threads_per_block; ++t) {
      auto th = std::make_unique<Thread>(host.session);
      setup_thread(host, block, t, &th->frame, &th->ex);
      Thread* raw = th.get();
      th->fiber = std::make_unique<Fiber>(stack_bytes, [raw, &body] {
        try {
          body.exec(raw->ex);
        } catch (const Cancelled&) {
          raw->fiber->set_unwound();  // the block failed elsewhere
        } catch (...) {
          raw->fiber->set_unwound();
          raw->error = std::current_exception();
        }
      });
      threads_.push_back(std::move(th));
    }
  }
  ~FiberScheduler() { block_.scheduler = nullptr; }

  void run() {
    std::exception_ptr error = schedule();
    if (!error) return;
    cancelling_ = true;
    for (auto& th : threads_) {
      if (th->fiber->started() && !th->fiber->finished()) th->fiber->resume();
    }
    std::rethrow_exception(error);
  }

  /// Called by the running thread at a barrier: suspends it until every thread arrives.
  void wait(Exec& ex) {
    Thread& th = *threads_[static_cast<size_t>(ex.thread)];
    th.state = State::kWaiting;
    th.site = ex.stmt;
    th.fiber->yield();
    if (cancelling_) throw Cancelled{};
  }

 private:
  enum class State { kRunnable, kWaiting, kDone };
  struct Thread {
    explicit Thread(Session& session) : ex(session, &frame, &locals) {}
    Frame frame;
    AllocTable locals;
    Exec ex;
    std::unique_ptr<Fiber> fiber;
    State state = State::kRunnable;
    const CStmt* site = nullptr;
    std::exception_ptr error;
  };

  std::exception_ptr schedule() {
    while (true) {
      for (auto& th : threads_) {
        if (th->state != State::kRunnable) continue;
        th->fiber->resume();
        if (th->fiber->finished()) {
          th->state = State::kDone;
          if (th->error) return th->error;
        }
      }
      std::map<const CStmt*, std::vector<int64_t>> waiting;
      std::vector<int64_t> done;
      for (int64_t t = 0; t < static_cast<int64_t>(threads_.size()); ++t) {
        const Thread& th = *threads_[static_cast<size_t>(t)];
        if (th.state == State::kWaiting) waiting[th.site].push_back(t);
        if (th.state == State::kDone) done.push_back(t);
      }
      if (waiting.empty()) return end_interval();
      if (!done.empty() || waiting.size() > 1) return deadlock(waiting, done);
      if (std::exception_ptr e = end_interval()) return e;
      for (auto& th : threads_) {
        if (th->state == State::kWaiting) th->state = State::kRunnable;
      }
    }
  }

  std::exception_ptr end_interval() {
    try {
      block_.end_interval();
    } catch (...) {
      return std::current_exception();
    }
    return nullptr;
  }

  std::exception_ptr deadlock(const std::map<const CStmt*, std::vector<int64_t>>& waiting,
                              const std::vector<int64_t>& done) const {
    std::ostringstream os;
    os << "barrier deadlock in block " << block_.coords() << " of function '"
       << host_.frame->func->name << "': the threads of the block disagree about the barrier: ";
    bool first = true;
    for (const auto& [site, threads] : waiting) {
      os << (first ? "" : "; ") << describe_threads(block_, threads) << " wait at `"
         << (site ? stmt_text(site->stmt) : "?") << "`";
      first = false;
    }
    if (!done.empty()) {
      os << "; " << describe_threads(block_, done) << (done.size() == 1 ? " has" : " have")
         << " finished without reaching it";
    }
    os << " (every thread of a block must reach the same barrier)";
    return std::make_exception_ptr(Error(os.str()));
  }

  const Exec& host_;
  Block& block_;
  std::vector<std::unique_ptr<Thread>> threads_;
  bool cancelling_ = false;
};

void barrier(Exec& ex, const std::string& scope) {
  if (ex.block == nullptr) return;  // host code: nothing to wait for
  if (scope == "warp") return;      // the interpreter runs no warps concurrently
  if (scope != "shared" && scope != "shared.dyn") {
    throw UnsupportedError("T.tvm_storage_sync(\"" + scope +
                           "\") is not supported by the interpreter" + ex.where());
  }
  if (ex.block->scheduler != nullptr) {
    ex.block->scheduler->wait(ex);
    return;
  }
  PRIMJIT_ICHECK(ex.block->grid.threads_per_block == 1)
      << "a barrier in a block run without fibers";
  ex.block->end_interval();
}

namespace {

class ThreadBindStmt : public CStmt {
 public:
  ThreadBindStmt(Stmt s, int dim, int slot, DataType var, CExprPtr min, CExprPtr extent,
                 CStmtPtr body)
      : CStmt(std::move(s)),
        dim_(dim),
        slot_(slot),
        var_(var),
        min_(std::move(min)),
        extent_(std::move(extent)),
        body_(std::move(body)) {}
  void exec(Exec& ex) const override {
    ex.stmt = this;
    PRIMJIT_ICHECK(ex.block != nullptr) << "thread binding outside a launch";
    if (ex.checked()) {
      const int64_t extent = extent_->eval(ex).i;
      const int64_t launched = ex.block->grid.extents[static_cast<size_t>(dim_)];
      PRIMJIT_USER_CHECK(extent == launched)
          << "thread extent mismatch: the statement declares " << thread_dim_name(dim_)
          << " with extent " << extent << ", but the kernel was launched with " << launched
          << ex.where();
    }
    const int64_t min = min_ ? min_->eval(ex).i : 0;
    ex.slot(slot_) = from_integer(var_, min + ex.thread_index[static_cast<size_t>(dim_)], false);
    body_->exec(ex);
  }

 private:
  int dim_;
  int slot_;
  TypeInfo var_;
  CExprPtr min_, extent_;
  CStmtPtr body_;
};

class VirtualThreadStmt : public CStmt {
 public:
  VirtualThreadStmt(Stmt s, int slot, DataType var, CExprPtr extent, CStmtPtr body)
      : CStmt(std::move(s)),
        slot_(slot),
        var_(var),
        extent_(std::move(extent)),
        body_(std::move(body)) {}
  void exec(Exec& ex) const override {
    ex.stmt = this;
    const int64_t extent = extent_->eval(ex).i;
    if (extent > 0) ex.tick(extent);
    for (int64_t i = 0; i < extent && !ex.frame->returned; ++i) {
      ex.slot(slot_) = from_integer(var_, i, false);
      body_->exec(ex);
    }
  }

 private:
  int slot_;
  TypeInfo var_;
  CExprPtr extent_;
  CStmtPtr body_;
};

class LaunchStmt : public CStmt {
 public:
  LaunchStmt(Stmt s, std::vector<std::pair<int, CExprPtr>> extents, bool uses_barrier,
             CStmtPtr as_thread)
      : CStmt(std::move(s)),
        extents_(std::move(extents)),
        uses_barrier_(uses_barrier),
        as_thread_(std::move(as_thread)) {}

  void exec(Exec& host) const override {
    host.stmt = this;
    if (host.block != nullptr) {
      throw UnsupportedError("a kernel launch from inside a kernel is not supported" +
                             host.where());
    }
    Grid grid;
    std::array<bool, kNumThreadDims> declared{};
    for (const auto& [dim, extent] : extents_) {
      grid.extents[static_cast<size_t>(dim)] = extent->eval(host).i;
      declared[static_cast<size_t>(dim)] = true;
    }
    if (const LaunchConfig* launch = host.frame->launch) {
      for (int d = 0; d < kNumThreadDims; ++d) {
        const size_t k = static_cast<size_t>(d);
        if (!launch->given[k]) continue;
        if (host.checked()) {
          PRIMJIT_USER_CHECK(declared[k] ? launch->extents[k] == grid.extents[k]
                                         : launch->extents[k] == 1)
              << "launch extent mismatch: kernel '" << host.frame->func->name
              << "' is launched with " << thread_dim_name(d) << " = " << launch->extents[k]
              << ", but its thread extent is " << (declared[k] ? grid.extents[k] : 1)
              << host.where();
        }
        grid.extents[k] = launch->extents[k];
      }
      grid.dyn_shmem_bytes = launch->dyn_shmem_bytes;
    }
    bool empty = false;
    for (int d = 0; d < kNumThreadDims; ++d) {
      PRIMJIT_USER_CHECK(grid.extents[static_cast<size_t>(d)] >= 0)
          << "kernel launch with a negative extent " << grid.extents[static_cast<size_t>(d)]
          << " for " << thread_dim_name(d) << host.where();
      empty |= grid.extents[static_cast<size_t>(d)] == 0;
    }
    if (empty) return;  // an empty grid runs nothing
    // What CUDA would refuse, refused with the CUDA runtime's message (launch_limits.h).
    const std::string why = launch_config_error(
        host.session.program.options.launch_limits,
        {grid.extents[kBlockX], grid.extents[kBlockY], grid.extents[kBlockZ]},
        {grid.extents[kThreadX], grid.extents[kThreadY], grid.extents[kThreadZ]},
        std::max<int64_t>(grid.dyn_shmem_bytes, 0));
    PRIMJIT_USER_CHECK(why.empty())
        << "launching kernel '" << host.frame->func->name << "': " << why;
    grid.num_blocks = grid.extents[kBlockX] * grid.extents[kBlockY] * grid.extents[kBlockZ];
    grid.threads_per_block =
        grid.extents[kThreadX] * grid.extents[kThreadY] * grid.extents[kThreadZ];
    if (grid.num_blocks == 0 || grid.threads_per_block == 0) return;
    run_grid(host, grid);
  }

 private:
  void run_block(Exec& host, const Grid& grid, int64_t b) const {
    host.session.charge_steps(grid.threads_per_block, host);  // one step per thread
    Block block(grid, b);
    if (uses_barrier_ && grid.threads_per_block > 1) {
      size_t stack = host.session.program.options.fiber_stack_bytes;
      FiberScheduler scheduler(host, block, *as_thread_, stack ? stack : kDefaultStackBytes);
      scheduler.run();
      return;
    }
    for (int64_t t = 0; t < grid.threads_per_block; ++t) {
      Frame frame;
      AllocTable locals;
      Exec ex(host.session, &frame, &locals);
      setup_thread(host, block, t, &frame, &ex);
      as_thread_->exec(ex);
    }
    block.end_interval();
  }

  void run_grid(Exec& host, const Grid& grid) const {
    if (!kParallelBlocks || !host.session.program.options.parallel_blocks || grid.num_blocks == 1) {
      for (int64_t b = 0; b < grid.num_blocks; ++b) run_block(host, grid, b);
      return;
    }
    // The error of the lowest failing block is reported; blocks after it may be skipped.
    std::atomic<int64_t> first_failed{std::numeric_limits<int64_t>::max()};
    std::mutex mutex;
    std::exception_ptr error;
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, grid.num_blocks),
                      [&](const tbb::blocked_range<int64_t>& range) {
                        for (int64_t b = range.begin(); b < range.end(); ++b) {
                          if (b > first_failed.load(std::memory_order_relaxed)) return;
                          try {
                            run_block(host, grid, b);
                          } catch (...) {
                            std::lock_guard lock(mutex);
                            if (b < first_failed.load()) {
                              first_failed.store(b);
                              error = std::current_exception();
                            }
                          }
                        }
                      });
    if (error) std::rethrow_exception(error);
  }

  std::vector<std::pair<int, CExprPtr>> extents_;
  bool uses_barrier_;
  CStmtPtr as_thread_;
};

// The grid of a launch, read like LowerDeviceKernelLaunch does: thread tags in first-appearance
// order with their extents, Binds met on the way inlined.
class GridCollector : public StmtExprVisitor {
 public:
  void visit_expr(const Expr& e) override {
    post_order_visit(e, [&](const Ref<Object>& node) {
      if (const auto* call = node.as<Call>()) {
        if (call->is_op("tvm_storage_sync") || call->callee.defined()) uses_barrier = true;
      }
    });
  }
  void visit(const Bind* op) override {
    binds_[op->var.get()] = substitute(op->value, binds_);
    inside.insert(op->var.get());
    visit_expr(op->value);
  }
  void visit(const AttrStmt* op) override {
    const IterVarNode* iv = op->iter_var();
    if (iv != nullptr) inside.insert(iv->var.get());
    if (iv != nullptr && op->key == attr::kThreadExtent) record(iv->thread_tag, op->value);
    StmtExprVisitor::visit(op);
  }
  void visit(const For* op) override {
    inside.insert(op->loop_var.get());
    if (op->for_kind == ForKind::kThreadBinding) record(op->thread_tag, op->extent);
    StmtExprVisitor::visit(op);
  }
  void visit(const AllocBuffer* op) override {
    inside.insert(op->buffer->data.get());
    StmtExprVisitor::visit(op);
  }
  void visit(const Let* op) override {
    inside.insert(op->var.get());
    StmtExprVisitor::visit(op);
  }

  std::vector<std::pair<int, Expr>> extents;
  std::set<const VarNode*> inside;
  bool uses_barrier = false;

 private:
  void record(const std::string& tag, const Expr& extent) {
    if (tag == "vthread" || tag == "cthread") return;
    const int dim = thread_dim_of(tag);
    PRIMJIT_USER_CHECK(dim >= 0) << "thread tag '" << tag
                                 << "' is not supported by the interpreter (use blockIdx.x/y/z, "
                                    "threadIdx.x/y/z or vthread)";
    if (seen_.insert(dim).second) extents.emplace_back(dim, substitute(extent, binds_));
  }
  VarMap binds_;
  std::set<int> seen_;
};

}  // namespace

CStmtPtr Compiler::launch(const Stmt& s) {
  GridCollector grid;
  grid.visit_stmt(s);
  std::vector<std::pair<int, CExprPtr>> extents;
  for (const auto& [dim, extent] : grid.extents) {
    post_order_visit(extent, [&](const Ref<Object>& node) {
      const auto* v = node.as<VarNode>();
      PRIMJIT_USER_CHECK(v == nullptr || grid.inside.count(v) == 0)
          << "the extent of " << thread_dim_name(dim) << " in the launch `" << stmt_text(s)
          << "` of function '" << name << "' depends on '" << v->name
          << "', which is defined inside the launch; the grid must be known when it starts";
    });
    extents.emplace_back(dim, convert(expr(extent), DataType::Int(64)));
  }
  ++launch_depth;
  CStmtPtr as_thread = stmt(s);
  --launch_depth;
  return std::make_unique<LaunchStmt>(s, std::move(extents), grid.uses_barrier,
                                      std::move(as_thread));
}

CStmtPtr Compiler::thread_binding(const Stmt& s, const Var& var, const std::string& tag,
                                  const Expr& min, const Expr& extent, const Stmt& body) {
  const int dim = thread_dim_of(tag);
  PRIMJIT_USER_CHECK(dim >= 0) << "thread tag '" << tag << "' of `" << stmt_text(s)
                               << "` is not supported by the interpreter";
  define(var.get());
  CExprPtr min_e = min.defined() ? convert(expr(min), DataType::Int(64)) : nullptr;
  CExprPtr extent_e = convert(expr(extent), DataType::Int(64));
  return std::make_unique<ThreadBindStmt>(s, dim, slot(var.get()), var.dtype(), std::move(min_e),
                                          std::move(extent_e), stmt(body));
}

CStmtPtr Compiler::virtual_thread(const Stmt& s, const Var& var, const Expr& extent,
                                  const Stmt& body) {
  define(var.get());
  CExprPtr extent_e = convert(expr(extent), DataType::Int(64));
  return std::make_unique<VirtualThreadStmt>(s, slot(var.get()), var.dtype(), std::move(extent_e),
                                             stmt(body));
}

}  // namespace primjit::jit::emu
