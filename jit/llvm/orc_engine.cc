#include "jit/llvm/orc_engine.h"

#include <llvm/AsmParser/Parser.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/InstCombine/InstCombine.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Scalar/SimplifyCFG.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <map>
#include <mutex>
#include <vector>

#include "jit/llvm/vector_math.h"
#include "primjit/error.h"
#include "primjit/log.h"

namespace primjit::jit {
namespace {

std::string to_string(llvm::Error error) { return llvm::toString(std::move(error)); }

// Converts an llvm::Expected at the LLVM boundary into a primjit::Error naming `what`.
template <typename T>
T take(llvm::Expected<T> value, std::string_view what) {
  if (!value) PRIMJIT_USER_ERROR() << what << ": " << to_string(value.takeError());
  return std::move(*value);
}

void check(llvm::Error error, std::string_view what) {
  if (error) PRIMJIT_USER_ERROR() << what << ": " << to_string(std::move(error));
}

// The last error ORC reported on this thread (materialization failures such as unresolved
// symbols are reported here rather than through the lookup's own error).
thread_local std::string t_session_error;

void initialize_llvm_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

llvm::OptimizationLevel optimization_level(int level) {
  switch (level) {
    case 0:
      return llvm::OptimizationLevel::O0;
    case 1:
      return llvm::OptimizationLevel::O1;
    case 2:
      return llvm::OptimizationLevel::O2;
    default:
      return llvm::OptimizationLevel::O3;
  }
}

llvm::CodeGenOptLevel codegen_level(int level) {
  switch (level) {
    case 0:
      return llvm::CodeGenOptLevel::None;
    case 1:
      return llvm::CodeGenOptLevel::Less;
    case 2:
      return llvm::CodeGenOptLevel::Default;
    default:
      return llvm::CodeGenOptLevel::Aggressive;
  }
}

void optimize(llvm::Module& module, llvm::TargetMachine& machine, int level) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder(&machine);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel opt = optimization_level(level);
  if (level > 0) {
    llvm::FunctionPassManager light;
    light.addPass(llvm::EarlyCSEPass());
    light.addPass(llvm::InstCombinePass());
    light.addPass(llvm::SimplifyCFGPass());
    for (llvm::Function& f : module) {
      if (f.isDeclaration() || !f.hasFnAttribute(kGlueFunctionAttr)) continue;
      light.run(f, fam);
      f.removeFnAttr(kGlueFunctionAttr);
      f.addFnAttr(llvm::Attribute::NoInline);
      f.addFnAttr(llvm::Attribute::OptimizeNone);
    }
  }
  llvm::ModulePassManager pipeline =
      level == 0 ? builder.buildO0DefaultPipeline(opt) : builder.buildPerModuleDefaultPipeline(opt);
  pipeline.run(module, mam);
}

std::string module_text(const llvm::Module& module) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  module.print(stream, nullptr);
  return text;
}

// The assembly `machine` emits for `module`, from a copy (code generation changes the IR).
std::string assembly_text(const llvm::Module& module, llvm::TargetMachine& machine) {
  std::unique_ptr<llvm::Module> copy = llvm::CloneModule(module);
  llvm::SmallString<0> text;
  llvm::raw_svector_ostream stream(text);
  llvm::legacy::PassManager passes;
  PRIMJIT_ICHECK(
      !machine.addPassesToEmitFile(passes, stream, nullptr, llvm::CodeGenFileType::AssemblyFile))
      << "the host target cannot emit assembly";
  passes.run(*copy);
  return std::string(text.str());
}

}  // namespace

struct OrcEngine::Impl {
  OrcOptions options;
  llvm::orc::JITTargetMachineBuilder machine_builder{llvm::Triple()};
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::string triple;
  std::string cpu;
  std::string features;
  // Why the vector math library could not be loaded ("" when it is).
  std::string vector_math_error;

  // TargetMachines are not thread-safe; each compile borrows one from this pool.
  std::mutex pool_mutex;
  std::vector<std::unique_ptr<llvm::TargetMachine>> machine_pool;

  // Registered modules: their trackers and (optionally) optimized IR.
  mutable std::mutex modules_mutex;
  ModuleKey next_key = 1;
  std::map<ModuleKey, llvm::orc::ResourceTrackerSP> trackers;
  std::map<ModuleKey, std::string> kept_ir;
  std::once_flag runtime_once;

  std::unique_ptr<llvm::TargetMachine> borrow_machine() {
    {
      std::lock_guard<std::mutex> lock(pool_mutex);
      if (!machine_pool.empty()) {
        auto machine = std::move(machine_pool.back());
        machine_pool.pop_back();
        return machine;
      }
    }
    return take(machine_builder.createTargetMachine(), "cannot create an LLVM target machine");
  }

  void return_machine(std::unique_ptr<llvm::TargetMachine> machine) {
    std::lock_guard<std::mutex> lock(pool_mutex);
    machine_pool.push_back(std::move(machine));
  }

  ModuleKey compile_and_link(llvm::Module& module, bool user_input) {
    std::string optimized;
    std::unique_ptr<llvm::MemoryBuffer> object = compile(module, user_input, &optimized);
    return link(std::move(object), module.getModuleIdentifier(), std::move(optimized));
  }

  ModuleKey link(std::unique_ptr<llvm::MemoryBuffer> object, const std::string& name,
                 std::string optimized) {
    llvm::orc::ResourceTrackerSP tracker = jit->getMainJITDylib().createResourceTracker();
    check(jit->addObjectFile(tracker, std::move(object)), "cannot link module '" + name + "'");
    std::lock_guard<std::mutex> lock(modules_mutex);
    ModuleKey key = next_key++;
    trackers.emplace(key, tracker);
    if (options.keep_optimized_ir) kept_ir.emplace(key, std::move(optimized));
    return key;
  }

  // Verifies, optimizes and compiles `module` to an object; its optimized IR goes to
  // `optimized` (when not null) if the engine keeps it, and the texts `dumps` asks for to it.
  std::unique_ptr<llvm::MemoryBuffer> compile(llvm::Module& module, bool user_input,
                                              std::string* optimized,
                                              CompileDumps* dumps = nullptr) {
    std::string problems;
    llvm::raw_string_ostream problem_stream(problems);
    if (llvm::verifyModule(module, &problem_stream)) {
      problem_stream.flush();
      if (user_input)
        PRIMJIT_USER_ERROR() << "invalid LLVM IR in module '" << module.getModuleIdentifier()
                             << "': " << problems;
      PRIMJIT_INTERNAL_ERROR() << "generated LLVM IR does not verify: " << problems;
    }
    module.setDataLayout(jit->getDataLayout());
    module.setTargetTriple(triple);

    std::unique_ptr<llvm::TargetMachine> machine = borrow_machine();
    std::unique_ptr<llvm::MemoryBuffer> object;
    try {
      if (dumps != nullptr && dumps->want_ir) dumps->ir = module_text(module);
      optimize(module, *machine, options.opt_level);
      if (dumps != nullptr && dumps->want_optimized_ir) dumps->optimized_ir = module_text(module);
      if (dumps != nullptr && dumps->want_assembly) {
        dumps->assembly = assembly_text(module, *machine);
      }
      llvm::orc::SimpleCompiler compiler(*machine);
      object = take(compiler(module), "LLVM code generation failed");
    } catch (...) {
      return_machine(std::move(machine));
      throw;
    }
    return_machine(std::move(machine));

    if (options.keep_optimized_ir && optimized != nullptr) {
      llvm::raw_string_ostream stream(*optimized);
      module.print(stream, nullptr);
    }
    return object;
  }
};

OrcEngine::OrcEngine(OrcOptions options) : impl_(std::make_unique<Impl>()) {
  PRIMJIT_USER_CHECK(options.opt_level >= 0 && options.opt_level <= 3)
      << "LLVM optimization level must be 0, 1, 2 or 3, not " << options.opt_level;
  initialize_llvm_once();
  impl_->options = options;
  impl_->machine_builder =
      take(llvm::orc::JITTargetMachineBuilder::detectHost(), "cannot detect the host CPU");
  impl_->machine_builder.setCodeGenOptLevel(codegen_level(options.opt_level));
  // What LLJIT expects under JITLink on x86-64 ELF; objects we compile ourselves must match.
  impl_->machine_builder.setRelocationModel(llvm::Reloc::PIC_);
  impl_->machine_builder.setCodeModel(llvm::CodeModel::Small);
  // Contraction is primjit's decision (an explicit T.fma, see FuseMultiplyAdd): the back end
  // never fuses a multiply and an add on its own.
  impl_->machine_builder.getOptions().AllowFPOpFusion = llvm::FPOpFusion::Strict;
  impl_->triple = impl_->machine_builder.getTargetTriple().str();
  impl_->cpu = impl_->machine_builder.getCPU();
  impl_->features = impl_->machine_builder.getFeatures().getString();
  impl_->jit =
      take(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(impl_->machine_builder).create(),
           "cannot create the LLVM ORC JIT");
  impl_->jit->getExecutionSession().setErrorReporter(
      [](llvm::Error error) { t_session_error = to_string(std::move(error)); });
  // Vectorized math calls the vector function ABI variants of glibc's libmvec, which the
  // process need not have loaded: search it explicitly (a missing one fails at link time).
  auto vector_math = llvm::orc::DynamicLibrarySearchGenerator::Load(
      kVectorMathLibrary, impl_->jit->getDataLayout().getGlobalPrefix());
  if (vector_math) {
    impl_->jit->getMainJITDylib().addGenerator(std::move(*vector_math));
  } else {
    impl_->vector_math_error = to_string(vector_math.takeError());
  }
  PRIMJIT_LOG_DEBUG << "ORC engine for " << impl_->triple << " (" << impl_->cpu << "), O"
                    << options.opt_level;
}

OrcEngine::~OrcEngine() = default;

OrcEngine::ModuleKey OrcEngine::add_module(std::unique_ptr<llvm::Module> module,
                                           std::unique_ptr<llvm::LLVMContext> context) {
  PRIMJIT_ICHECK(module != nullptr && context != nullptr)
      << "add_module needs a module and context";
  PRIMJIT_ICHECK(&module->getContext() == context.get()) << "module does not belong to context";
  return impl_->compile_and_link(*module, /*user_input=*/false);
}

std::string OrcEngine::compile_object(std::unique_ptr<llvm::Module> module,
                                      std::unique_ptr<llvm::LLVMContext> context,
                                      CompileDumps* dumps) {
  PRIMJIT_ICHECK(module != nullptr && context != nullptr)
      << "compile_object needs a module and context";
  PRIMJIT_ICHECK(&module->getContext() == context.get()) << "module does not belong to context";
  // No optimized IR is kept: the object may be linked elsewhere (another process).
  std::unique_ptr<llvm::MemoryBuffer> object =
      impl_->compile(*module, /*user_input=*/false, /*optimized=*/nullptr, dumps);
  return object->getBuffer().str();
}

OrcEngine::ModuleKey OrcEngine::add_object(std::string_view object, std::string_view name) {
  std::unique_ptr<llvm::MemoryBuffer> buffer = llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(object.data(), object.size()), llvm::StringRef(name.data(), name.size()));
  return impl_->link(std::move(buffer), std::string(name), "");
}

OrcEngine::ModuleKey OrcEngine::add_ir_text(std::string_view ir_text,
                                            std::string_view module_name) {
  llvm::LLVMContext context;
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> module = llvm::parseAssemblyString(
      llvm::StringRef(ir_text.data(), ir_text.size()), diagnostic, context);
  if (!module) {
    std::string message;
    llvm::raw_string_ostream stream(message);
    diagnostic.print(std::string(module_name).c_str(), stream, /*ShowColors=*/false);
    stream.flush();
    PRIMJIT_USER_ERROR() << "cannot parse LLVM IR: " << message;
  }
  module->setModuleIdentifier(std::string(module_name));
  return impl_->compile_and_link(*module, /*user_input=*/true);
}

void* OrcEngine::lookup(std::string_view symbol) {
  t_session_error.clear();
  auto address = impl_->jit->lookup(llvm::StringRef(symbol.data(), symbol.size()));
  if (!address) {
    std::string error = to_string(address.takeError());
    if (t_session_error.find("_ZGV") != std::string::npos) {
      PRIMJIT_USER_ERROR() << "cannot link '" << symbol << "': its vectorized math needs "
                           << kVectorMathLibrary << " (glibc's vector math library; glibc 2.35 "
                           << "or newer has every function primjit calls): "
                           << (impl_->vector_math_error.empty() ? t_session_error
                                                                : impl_->vector_math_error)
                           << "; run on a host with glibc 2.35 or newer (Debian 12: libc6)";
    }
    if (!t_session_error.empty()) {
      PRIMJIT_USER_ERROR() << "cannot link '" << symbol << "': " << t_session_error
                           << " (an extern function the code calls is not defined in this "
                              "process)";
    }
    PRIMJIT_USER_ERROR() << "symbol '" << symbol << "' is not defined in the JIT session (" << error
                         << "); was its module removed or never added?";
  }
  return address->toPtr<void*>();
}

void OrcEngine::remove(ModuleKey key) {
  llvm::orc::ResourceTrackerSP tracker;
  {
    std::lock_guard<std::mutex> lock(impl_->modules_mutex);
    auto it = impl_->trackers.find(key);
    PRIMJIT_USER_CHECK(it != impl_->trackers.end())
        << "JIT module " << key << " is not loaded (already removed?)";
    tracker = it->second;
    impl_->trackers.erase(it);
    impl_->kept_ir.erase(key);
  }
  check(tracker->remove(), "cannot remove JIT module");
}

void OrcEngine::define_symbol(std::string_view name, void* address) {
  llvm::orc::SymbolMap symbols;
  symbols[impl_->jit->mangleAndIntern(llvm::StringRef(name.data(), name.size()))] =
      llvm::orc::ExecutorSymbolDef(llvm::orc::ExecutorAddr::fromPtr(address),
                                   llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
  check(impl_->jit->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(symbols))),
        "cannot define runtime symbol '" + std::string(name) + "'");
}

void OrcEngine::register_runtime_once(void (*define)(OrcEngine&)) {
  std::call_once(impl_->runtime_once, [&] { define(*this); });
}

std::string OrcEngine::optimized_ir(ModuleKey key) const {
  PRIMJIT_USER_CHECK(impl_->options.keep_optimized_ir)
      << "optimized IR was not kept: construct the engine with OrcOptions::keep_optimized_ir";
  std::lock_guard<std::mutex> lock(impl_->modules_mutex);
  auto it = impl_->kept_ir.find(key);
  PRIMJIT_USER_CHECK(it != impl_->kept_ir.end()) << "JIT module " << key << " is not loaded";
  return it->second;
}

const std::string& OrcEngine::target_triple() const { return impl_->triple; }
const std::string& OrcEngine::cpu_name() const { return impl_->cpu; }
const std::string& OrcEngine::cpu_features() const { return impl_->features; }
int OrcEngine::opt_level() const { return impl_->options.opt_level; }

std::string llvm_version() { return LLVM_VERSION_STRING; }

HostTarget detect_host_target() {
  initialize_llvm_once();
  llvm::orc::JITTargetMachineBuilder builder =
      take(llvm::orc::JITTargetMachineBuilder::detectHost(), "cannot detect the host CPU");
  return HostTarget{builder.getTargetTriple().str(), builder.getCPU()};
}

}  // namespace primjit::jit
