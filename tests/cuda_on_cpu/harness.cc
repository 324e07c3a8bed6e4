#include "tests/cuda_on_cpu/harness.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <sstream>
#include <vector>

#include "jit/cuda/codegen_cuda.h"
#include "jit/emu/differential.h"
#include "jit/emu/fiber.h"
#include "jit/emu/interpreter.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"
#include "primjit/passes.h"
#include "tests/cuda_on_cpu/shim/cuda_on_cpu_thread.h"

namespace primjit::cuda_on_cpu {
namespace {

namespace fs = std::filesystem;

// --- the compiled kernels ---------------------------------------------------------------------

using Entry = void (*)(void**);

// A shared object of one module's kernels: an entry point per kernel taking cuLaunchKernel's
// `void** kernelParams`.
class KernelLibrary {
 public:
  explicit KernelLibrary(const fs::path& path) {
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    PRIMJIT_USER_CHECK(handle_ != nullptr) << "cannot load the compiled kernels: " << dlerror();
    thread_ = static_cast<PrimjitCpuThread**>(dlsym(handle_, "primjit_cpu_thread"));
    PRIMJIT_USER_CHECK(thread_ != nullptr) << "the kernel library lacks primjit_cpu_thread";
  }
  ~KernelLibrary() { dlclose(handle_); }
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  Entry entry(const std::string& kernel) const {
    void* f = dlsym(handle_, ("primjit_cpu_entry_" + kernel).c_str());
    PRIMJIT_USER_CHECK(f != nullptr) << "the kernel library lacks kernel '" << kernel << "'";
    return reinterpret_cast<Entry>(f);
  }
  PrimjitCpuThread** thread() const { return thread_; }

 private:
  void* handle_ = nullptr;
  PrimjitCpuThread** thread_ = nullptr;
};

// The source compiled: the shim, the generated CUDA C, then an entry point per kernel.
std::string library_source(const jit::CudaModuleSource& cuda, const std::string& code) {
  std::ostringstream os;
  os << code << "\n// Entry points of the CUDA-on-CPU harness.\n";
  for (const jit::CudaKernelInfo& k : cuda.kernels) {
    os << "extern \"C\" __attribute__((visibility(\"default\"))) void primjit_cpu_entry_" << k.name
       << "(void** a) {\n  " << k.name << "(";
    for (size_t i = 0; i < k.param_types.size(); ++i) {
      os << (i ? ", " : "") << "primjit_cpu::Arg{a[" << i << "]}";
    }
    os << ");\n}\n";
  }
  return os.str();
}

// Compiles `source` into dir/kernels.so; returns the compiler's messages on failure.
std::string compile(const fs::path& dir, const std::string& source) {
  std::ofstream(dir / "kernels.cc") << source;
  std::string command = std::string(PRIMJIT_CUDA_ON_CPU_CXX) +
                        " -std=c++20 -O1 -ffp-contract=off -fno-fast-math -fno-strict-aliasing"
                        " -fPIC -shared -DPRIMJIT_CUDA_ON_CPU -I " PRIMJIT_CUDA_ON_CPU_SHIM_DIR
                        " -include cuda_on_cpu.h -o " +
                        (dir / "kernels.so").string() + " " + (dir / "kernels.cc").string() +
                        " > " + (dir / "log.txt").string() + " 2>&1";
  if (std::system(command.c_str()) == 0) return "";
  std::ifstream log(dir / "log.txt");
  std::stringstream text;
  text << log.rdbuf();
  std::string s = text.str();
  if (s.size() > 4000) s = s.substr(0, 4000) + "\n...";
  return s;
}

// --- running a launch -------------------------------------------------------------------------

struct Cancelled {};  // unwinds a waiting fiber of a failed block
struct Trapped {};    // __trap()

struct ThreadState {
  PrimjitCpuThread t{};
  std::unique_ptr<jit::emu::Fiber> fiber;
  int waiting = -1;  // the barrier's scope while waiting at one
  bool done = false;
  std::string error;
};

ThreadState* g_current = nullptr;
bool g_cancel = false;

void sync_barrier(int scope) {
  ThreadState* self = g_current;
  self->waiting = scope;
  self->fiber->yield();
  if (g_cancel) throw Cancelled{};
}

void trap() { throw Trapped{}; }

std::string thread_name(const PrimjitCpuThread& t) {
  std::ostringstream os;
  os << "block (" << t.block_idx.x << ", " << t.block_idx.y << ", " << t.block_idx.z << ") thread ("
     << t.thread_idx.x << ", " << t.thread_idx.y << ", " << t.thread_idx.z << ")";
  return os.str();
}

// Runs one block; returns an error message, or "".
std::string run_block(const KernelLibrary& lib, Entry entry, void** args,
                      const PrimjitCpuDim3& block, const PrimjitCpuDim3& grid_dim,
                      const PrimjitCpuDim3& block_dim, unsigned char* dyn_shared) {
  const int64_t n = int64_t{block_dim.x} * block_dim.y * block_dim.z;
  std::vector<ThreadState> threads(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    ThreadState& s = threads[static_cast<size_t>(i)];
    s.t.thread_idx = {static_cast<unsigned>(i % block_dim.x),
                      static_cast<unsigned>(i / block_dim.x % block_dim.y),
                      static_cast<unsigned>(i / (int64_t{block_dim.x} * block_dim.y))};
    s.t.block_idx = block;
    s.t.block_dim = block_dim;
    s.t.grid_dim = grid_dim;
    s.t.dyn_shared = dyn_shared;
    s.t.sync = &sync_barrier;
    s.t.trap = &trap;
    ThreadState* sp = &s;
    s.fiber = std::make_unique<jit::emu::Fiber>(256 * 1024, [sp, entry, args] {
      try {
        entry(args);
      } catch (const Cancelled&) {
        sp->fiber->set_unwound();
      } catch (const Trapped&) {
        sp->error = "__trap() (a failed assert)";
        sp->fiber->set_unwound();
      } catch (const std::exception& e) {
        sp->error = e.what();
        sp->fiber->set_unwound();
      }
      sp->done = true;
    });
  }
  auto resume = [&](ThreadState& s) {
    s.waiting = -1;
    *lib.thread() = &s.t;
    g_current = &s;
    s.fiber->resume();
  };
  std::string error;
  while (error.empty()) {
    for (ThreadState& s : threads) {
      if (!s.done) resume(s);
      if (!s.error.empty()) {
        error = thread_name(s.t) + ": " + s.error;
        break;
      }
    }
    if (!error.empty()) break;
    const ThreadState* finished = nullptr;
    const ThreadState* waiting = nullptr;
    bool mixed = false;
    for (const ThreadState& s : threads) {
      if (s.done) {
        finished = &s;
      } else {
        if (waiting != nullptr && waiting->waiting != s.waiting) mixed = true;
        waiting = &s;
      }
    }
    if (waiting == nullptr) return "";
    if (finished != nullptr) {
      error = thread_name(waiting->t) + " waits at a barrier that " + thread_name(finished->t) +
              " never reaches (it returned)";
    } else if (mixed) {
      error = "threads of block wait at both __syncthreads() and __syncwarp()";
    }
  }
  g_cancel = true;  // unwind the waiting fibers
  for (ThreadState& s : threads) {
    if (s.fiber->started() && !s.done) resume(s);
  }
  g_cancel = false;
  return error;
}

// The kernel's arguments as cuLaunchKernel takes them, and its launch dimensions.
struct Launch {
  std::vector<std::vector<unsigned char>> storage;
  std::vector<void*> params;
  int64_t dims[6] = {1, 1, 1, 1, 1, 1};  // blockIdx.x/y/z, threadIdx.x/y/z
  int64_t dyn_bytes = 0;
};

Launch make_launch(const jit::CudaKernelInfo& k, std::span<const jit::emu::Arg> args) {
  using jit::emu::Arg;
  PRIMJIT_USER_CHECK(args.size() == k.param_types.size() + k.launch_params.size())
      << "kernel '" << k.name << "' launched with " << args.size() << " arguments, expected "
      << k.param_types.size() << " parameters and " << k.launch_params.size()
      << " launch parameters";
  Launch l;
  for (size_t i = 0; i < k.param_types.size(); ++i) {
    DataType t = k.param_types[i];
    const Arg& a = args[i];
    std::vector<unsigned char> bytes(8, 0);
    if (t.is_handle()) {
      void* p = a.kind() == Arg::Kind::kTensor ? a.tensor()->data : a.as_pointer();
      std::memcpy(bytes.data(), &p, sizeof p);
    } else if (t.is_float() && t.bits() == 32) {
      float v = static_cast<float>(a.as_float());
      std::memcpy(bytes.data(), &v, sizeof v);
    } else if (t.is_float() && t.bits() == 64) {
      double v = a.as_float();
      std::memcpy(bytes.data(), &v, sizeof v);
    } else if (t.is_int() || t.is_uint() || t.is_bool()) {
      int64_t v = a.kind() == Arg::Kind::kFloat ? static_cast<int64_t>(a.as_float()) : a.as_int();
      std::memcpy(bytes.data(), &v, static_cast<size_t>(std::max(1, t.bits() / 8)));  // LE
    } else {
      PRIMJIT_USER_ERROR() << "CUDA-on-CPU: parameter " << i << " of kernel '" << k.name
                           << "' has dtype " << t << ", which the harness cannot pass";
    }
    l.storage.push_back(std::move(bytes));
  }
  for (auto& s : l.storage) l.params.push_back(s.data());
  static const char* const kTags[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                      "threadIdx.x", "threadIdx.y", "threadIdx.z"};
  for (size_t j = 0; j < k.launch_params.size(); ++j) {
    int64_t v = args[k.param_types.size() + j].as_int();
    const std::string& tag = k.launch_params[j];
    if (tag == attr::kUseDynSharedMemory) l.dyn_bytes = v;
    for (int d = 0; d < 6; ++d) {
      if (tag == kTags[d]) l.dims[d] = v;
    }
  }
  return l;
}

void run_launch(const KernelLibrary& lib, const jit::CudaKernelInfo& k, Launch& l) {
  Entry entry = lib.entry(k.name);
  for (int64_t d : l.dims) {
    PRIMJIT_USER_CHECK(d >= 1 && d <= (1 << 20))
        << "CUDA-on-CPU: kernel '" << k.name << "' launched with an extent of " << d;
  }
  const PrimjitCpuDim3 grid{static_cast<unsigned>(l.dims[0]), static_cast<unsigned>(l.dims[1]),
                            static_cast<unsigned>(l.dims[2])};
  const PrimjitCpuDim3 block{static_cast<unsigned>(l.dims[3]), static_cast<unsigned>(l.dims[4]),
                             static_cast<unsigned>(l.dims[5])};
  const size_t dyn = static_cast<size_t>(std::max<int64_t>(l.dyn_bytes, 0));
  for (unsigned z = 0; z < grid.z; ++z) {
    for (unsigned y = 0; y < grid.y; ++y) {
      for (unsigned x = 0; x < grid.x; ++x) {
        // Fresh dynamic shared memory for each block, aligned as CUDA's (256 bytes).
        std::vector<unsigned char> shared(dyn + 256, 0);
        auto* base = reinterpret_cast<unsigned char*>(
            (reinterpret_cast<uintptr_t>(shared.data()) + 255) & ~uintptr_t{255});
        std::string error = run_block(lib, entry, l.params.data(), {x, y, z}, grid, block, base);
        PRIMJIT_USER_CHECK(error.empty())
            << "CUDA-on-CPU: kernel '" << k.name << "' failed in " << error;
      }
    }
  }
}

// --- inputs and comparison --------------------------------------------------------------------

struct Inputs {
  std::vector<jit::emu::HostTensor> tensors;
  std::vector<int> tensor_of_param;  // -1 for a scalar
  std::vector<jit::emu::Arg> scalars;
};

int64_t dim_value(const Expr& e, const CheckOptions& o) {
  if (std::optional<int64_t> c = as_const_int(e)) return *c;
  if (const auto* v = e.as<VarNode>()) {
    auto it = o.dims.find(v->name);
    return it == o.dims.end() ? o.default_dim : it->second;
  }
  PRIMJIT_USER_ERROR() << "CUDA-on-CPU: a buffer dimension is neither a constant nor a variable";
}

Inputs make_inputs(const PrimFunc& f, const CheckOptions& o) {
  Inputs in;
  for (size_t i = 0; i < f->params.size(); ++i) {
    const Var& p = f->params[i];
    const Buffer* buffer = nullptr;
    for (const auto& [var, buf] : f->buffer_map) {
      if (var.get() == p.get()) buffer = &buf;
    }
    if (buffer != nullptr) {
      std::vector<int64_t> shape;
      for (const Expr& e : (*buffer)->shape) shape.push_back(dim_value(e, o));
      in.tensors.emplace_back((*buffer)->dtype, shape, kDLCUDA);  // the kernels want device memory
      in.tensors.back().fill_random(o.seed * 131 + i);
      in.tensor_of_param.push_back(static_cast<int>(in.tensors.size() - 1));
      in.scalars.emplace_back();
    } else {
      in.tensor_of_param.push_back(-1);
      DataType t = p.dtype();
      if (t.is_floating()) {
        in.scalars.emplace_back(0.75);
      } else {
        in.scalars.emplace_back(dim_value(p, o));
      }
    }
  }
  return in;
}

std::vector<jit::emu::Arg> args_of(Inputs& in) {
  std::vector<jit::emu::Arg> args;
  for (size_t i = 0; i < in.tensor_of_param.size(); ++i) {
    int t = in.tensor_of_param[i];
    args.push_back(t >= 0 ? jit::emu::Arg(in.tensors[static_cast<size_t>(t)].dl()) : in.scalars[i]);
  }
  return args;
}

// Mantissa bits of a floating dtype (for ulp distances).
int mantissa_bits(DataType t) {
  if (t.is_bfloat16()) return 7;
  if (t.is_float8()) return t.str() == "float8_e5m2" ? 2 : 3;
  if (t.bits() == 16) return 10;
  if (t.bits() == 64) return 52;
  return 23;
}

// "" when the values agree: bit for bit (NaN equals NaN; -0 differs from +0), or within
// `max_ulp` units in the last place of `t`.
bool same_value(DataType t, double a, double b, int max_ulp) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return std::signbit(a) == std::signbit(b) || max_ulp > 0;
  if (max_ulp == 0 || !t.is_floating() || std::isinf(a) || std::isinf(b)) return false;
  const double mag = std::max(std::fabs(a), std::fabs(b));
  const double ulp = std::ldexp(1.0, std::max(std::ilogb(mag), -126) - mantissa_bits(t));
  return std::fabs(a - b) <= max_ulp * ulp;
}

// The largest max_ulp of the math ops the module calls (0 without any).
int module_max_ulp(const IRModule& m) {
  int ulp = 0;
  for (const auto& [gvar, f] : m->functions) {
    post_order_visit(f->body, [&](const Ref<Object>& node) {
      if (const auto* call = node.as<Call>(); call != nullptr && call->op.defined()) {
        if (call->op->is_math()) ulp = std::max(ulp, call->op->max_ulp);
      }
    });
  }
  return ulp;
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "primjit_cuda_on_cpu.XXXXXX").string();
    PRIMJIT_USER_CHECK(mkdtemp(pattern.data()) != nullptr) << "cannot make a temporary directory";
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

bool is_kernel(const PrimFunc& f) {
  return f->is_kernel() && f->target().defined() && f->target()->kind == "cuda";
}

}  // namespace

std::string CheckResult::str() const {
  if (!skipped.empty()) return "skipped: " + skipped;
  if (!failure.empty()) return "FAILED: " + failure + "\n--- generated source ---\n" + source;
  return "ok (" + std::to_string(kernels) + " kernels)";
}

CheckResult check_module(const IRModule& input, const CheckOptions& options) {
  CheckResult r;
  // Functions without a target get cuda's (with an llvm host), as primjit-opt --target=cuda.
  IRModule module = input;
  for (const auto& [gvar, func] : input->functions) {
    if (!func->target().defined()) {
      module = module.with_function(gvar->name, func.with_attr(attr::kTarget, Target::cuda()));
    }
  }
  std::string fname = options.function;
  if (fname.empty()) {
    for (const auto& [gvar, func] : module->functions) {
      if (!func->is_kernel()) fname = gvar->name;
    }
  }
  PrimFunc user = module->find(fname);
  if (!user.defined()) {
    r.skipped = "no function to call";
    return r;
  }
  IRModule lowered;
  jit::CudaModuleSource cuda;
  try {
    lowered = passes::run_passes(module, passes::default_pipeline());
    cuda = jit::codegen_cuda(lowered);
  } catch (const Error& e) {
    r.skipped = std::string("does not lower for cuda: ") + e.what();
    return r;
  }
  r.kernels = static_cast<int>(cuda.kernels.size());
  if (cuda.kernels.empty()) {
    r.skipped = "no kernels";
    return r;
  }
  const int max_ulp = module_max_ulp(lowered);

  // The reference: the interpreter runs the whole lowered module.
  Inputs ref;
  try {
    ref = make_inputs(user, options);
    std::vector<jit::emu::Arg> args = args_of(ref);
    jit::emu::Interpreter(lowered).run(fname, args);
  } catch (const Error& e) {
    r.skipped = std::string("the interpreter cannot run it: ") + e.what();
    return r;
  }

  r.source = cuda.code;
  if (options.edit_source) options.edit_source(r.source);
  TempDir dir;
  if (std::string log = compile(dir.path(), library_source(cuda, r.source)); !log.empty()) {
    r.failure = "the generated source does not compile as host C++:\n" + log;
    return r;
  }

  // The same host code with the kernels compiled: launches call them by symbol.
  IRModule host = lowered;
  std::map<std::string, const jit::CudaKernelInfo*> by_symbol;
  for (const jit::CudaKernelInfo& k : cuda.kernels) by_symbol[k.name] = &k;
  for (const auto& [gvar, func] : lowered->functions) {
    if (is_kernel(func)) host = host.without_function(gvar->name);
  }
  try {
    KernelLibrary lib(dir.path() / "kernels.so");
    jit::emu::Options emu_options;
    emu_options.checked = false;
    emu_options.symbol_lookup = [&](const std::string& name) -> jit::emu::ExternFunction {
      auto it = by_symbol.find(name);
      if (it == by_symbol.end()) return {};
      const jit::CudaKernelInfo* k = it->second;
      return [&lib, k](std::span<const jit::emu::Arg> args) {
        Launch l = make_launch(*k, args);
        run_launch(lib, *k, l);
        return jit::emu::Arg(int32_t{0});
      };
    };
    Inputs cpu = make_inputs(user, options);
    std::vector<jit::emu::Arg> args = args_of(cpu);
    jit::emu::Interpreter(host, emu_options).run(fname, args);
    for (size_t t = 0; t < cpu.tensors.size() && r.failure.empty(); ++t) {
      const jit::emu::HostTensor& a = cpu.tensors[t];
      const jit::emu::HostTensor& b = ref.tensors[t];
      for (int64_t i = 0; i < a.size(); ++i) {
        if (!same_value(a.dtype(), a.get(i), b.get(i), max_ulp)) {
          std::ostringstream os;
          os.precision(17);
          os << "tensor argument " << t << " differs at " << a.index_text(i) << ": CUDA on CPU "
             << a.get(i) << ", interpreter " << b.get(i)
             << (max_ulp ? " (beyond " + std::to_string(max_ulp) + " ulp)" : "");
          r.failure = os.str();
          break;
        }
      }
    }
  } catch (const Error& e) {
    r.failure = e.what();
  }
  return r;
}

}  // namespace primjit::cuda_on_cpu
