#include "jit/llvm/orc_engine.h"

#include <llvm/AsmParser/Parser.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
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
#include <llvm/Passes/StandardInstrumentations.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/InstCombine/InstCombine.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Scalar/SimplifyCFG.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include <algorithm>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>
#include <vector>

#include "jit/llvm/codegen_llvm.h"
#include "jit/llvm/missed_vectorization.h"
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

// Runs the pipeline for `level` on `module`; glue functions get the light pipeline and are
// kept out of the full one (`optnone`, which the pipeline honours: with argument checks that
// are compares and one branch per tensor, T.check_args, the full pipeline on a 3-tensor wrapper
// cost a cold first call about 5 ms of its 17 and the wrapper ran no faster). A module of glue
// only (`glue_only`) skips the module pipeline.
void optimize(llvm::Module& module, llvm::TargetMachine& machine, int level, bool glue_only) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  // Without this instrumentation the pipelines ignore `optnone` and run every pass on glue
  // (GVN and jump threading on a wrapper of a thousand checks took most of its compile).
  llvm::PassInstrumentationCallbacks callbacks;
  llvm::OptNoneInstrumentation optnone(/*DebugLogging=*/false);
  optnone.registerCallbacks(callbacks);
  llvm::PassBuilder builder(&machine, llvm::PipelineTuningOptions(), std::nullopt, &callbacks);
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
    light.addPass(llvm::EarlyCSEPass(/*UseMemorySSA=*/true));
    light.addPass(llvm::SimplifyCFGPass());
    for (llvm::Function& f : module) {
      if (f.isDeclaration() || !f.hasFnAttribute(kGlueFunctionAttr)) continue;
      light.run(f, fam);
      f.removeFnAttr(kGlueFunctionAttr);
      f.addFnAttr(llvm::Attribute::NoInline);
      f.addFnAttr(llvm::Attribute::OptimizeNone);
    }
  }
  if (glue_only) return;
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

// Names of the functions `module` defines as glue (kGlueFunctionAttr), taken before the
// optimizer removes the attribute.
std::set<std::string> glue_function_names(const llvm::Module& module) {
  std::set<std::string> names;
  for (const llvm::Function& f : module) {
    if (!f.isDeclaration() && f.hasFnAttribute(kGlueFunctionAttr)) names.insert(f.getName().str());
  }
  return names;
}

// Glue with fewer instructions than this is compiled by the optimizing code generator (on a
// second thread, beside the loop nests, where the host has one; else with them): a wrapper
// runs on every call, and the fast register allocator's spills made a wrapper of 3 tensors
// 20 % slower per call (16 tensors: 40 %). Larger glue (with T.check_args, beyond about 1,600
// tensor parameters) is compiled apart by the fast code generator, which keeps the compile
// linear in the number of parameters (the optimizing allocator took minutes on a wrapper of
// 1,000 tensors' inline checks).
constexpr size_t kGlueApartInstructions = 8192;

size_t glue_instructions(const llvm::Module& module, const std::set<std::string>& glue) {
  size_t count = 0;
  for (const llvm::Function& f : module) {
    if (!f.isDeclaration() && glue.count(f.getName().str()) > 0) count += f.getInstructionCount();
  }
  return count;
}

// Whether `value` is used outside the functions for which `inside` holds (a use by a constant
// expression or a global's initializer counts as outside).
template <typename Inside>
bool used_outside(const llvm::GlobalValue& value, const Inside& inside) {
  for (const llvm::User* user : value.users()) {
    const auto* instruction = llvm::dyn_cast<llvm::Instruction>(user);
    if (instruction == nullptr || !inside(*instruction->getFunction())) return true;
  }
  return false;
}

// Moves the functions of `module` that are not glue (`glue`: the names of those that are)
// into a module of their own, which is returned; null when there is nothing to split (no glue,
// only glue, or a module shape this does not handle). The two are optimized and compiled
// apart: the register allocator is chosen per target machine, and the optimizing one is
// superlinear on a long wrapper with many live values, so glue gets the light pipeline and a
// machine at CodeGenOptLevel::None (fast register allocation), and the loop nests keep the full
// pipeline and code generator (whose module passes then never walk the glue). Local functions
// called across the two become external under their own names (primjit's code generator
// suffixes every name per image, the vector math helpers through the module's name, so they
// stay unique in the JIT session); local constants are copied to both.
std::unique_ptr<llvm::Module> split_glue(llvm::Module& module, const std::set<std::string>& glue) {
  auto is_glue = [&](const llvm::Function& f) { return glue.count(f.getName().str()) > 0; };
  bool any_glue = false, any_other = false;
  for (const llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    (is_glue(f) ? any_glue : any_other) = true;
  }
  if (!any_glue || !any_other || !module.alias_empty() || !module.ifunc_empty()) return nullptr;
  // The lists of values kept from removal (the vector math helpers are on
  // llvm.compiler.used until the vectorizer has run) go with the side that defines each entry;
  // another appending global is a shape this does not handle.
  std::vector<std::pair<std::string, std::vector<llvm::Function*>>> used_lists;
  for (const llvm::GlobalVariable& g : module.globals()) {
    if (g.hasComdat()) return nullptr;
    if (!g.hasAppendingLinkage()) continue;
    if (g.getName() != "llvm.compiler.used" && g.getName() != "llvm.used") return nullptr;
    const auto* init = llvm::dyn_cast<llvm::ConstantArray>(g.getInitializer());
    if (init == nullptr) return nullptr;
    std::vector<llvm::Function*> entries;
    for (const llvm::Use& u : init->operands()) {
      auto* f = llvm::dyn_cast<llvm::Function>(u.get()->stripPointerCasts());
      if (f == nullptr) return nullptr;
      entries.push_back(f);
    }
    used_lists.emplace_back(g.getName().str(), std::move(entries));
  }
  for (const llvm::Function& f : module) {
    if (f.hasComdat()) return nullptr;
  }
  for (const auto& [name, entries] : used_lists) module.getGlobalVariable(name)->eraseFromParent();
  // Locals the other side refers to become external (a clone's reference to them is a
  // declaration); constant local variables are copied instead.
  for (llvm::Function& f : module) {
    if (f.isDeclaration() || !f.hasLocalLinkage()) continue;
    f.removeDeadConstantUsers();
    const bool side = is_glue(f);
    if (used_outside(f, [&](const llvm::Function& user) { return is_glue(user) == side; })) {
      f.setLinkage(llvm::GlobalValue::ExternalLinkage);
      f.setVisibility(llvm::GlobalValue::DefaultVisibility);
    }
  }
  for (llvm::GlobalVariable& g : module.globals()) {
    if (g.isDeclaration() || !g.hasLocalLinkage() || g.isConstant()) continue;
    g.removeDeadConstantUsers();
    if (used_outside(g, is_glue)) g.setLinkage(llvm::GlobalValue::ExternalLinkage);
  }
  // Cloning the loop nests is cheap; the glue (a thousand parameters' checks) stays in place.
  llvm::ValueToValueMapTy map;
  std::unique_ptr<llvm::Module> nests =
      llvm::CloneModule(module, map, [&](const llvm::GlobalValue* value) {
        if (const auto* f = llvm::dyn_cast<llvm::Function>(value)) return !is_glue(*f);
        const auto* g = llvm::dyn_cast<llvm::GlobalVariable>(value);
        return g != nullptr && g->hasLocalLinkage() && g->isConstant();
      });
  nests->setModuleIdentifier(module.getModuleIdentifier() + ".nests");
  for (llvm::Function& f : *nests) {
    if (f.isDeclaration()) f.removeFnAttr(kGlueFunctionAttr);
  }
  std::set<llvm::Function*> moved;
  for (llvm::Function& f : module) {
    if (!f.isDeclaration() && !is_glue(f)) {
      f.deleteBody();
      moved.insert(&f);
    }
  }
  for (const auto& [name, entries] : used_lists) {
    std::vector<llvm::GlobalValue*> glue_side, nests_side;
    for (llvm::Function* f : entries) {
      if (is_glue(*f)) {
        glue_side.push_back(f);
      } else if (auto* clone = llvm::dyn_cast_or_null<llvm::Function>(map.lookup(f))) {
        nests_side.push_back(clone);
      }
    }
    const bool compiler = name == "llvm.compiler.used";
    for (auto [m, values] : {std::pair(&module, glue_side), std::pair(nests.get(), nests_side)}) {
      if (values.empty()) continue;
      if (compiler) {
        llvm::appendToCompilerUsed(*m, values);
      } else {
        llvm::appendToUsed(*m, values);
      }
    }
  }
  // Functions of the loop nests that the glue does not call (the parallel bodies, the vector
  // math helpers) are not declared in it.
  for (auto it = module.begin(); it != module.end();) {
    llvm::Function& f = *it++;
    if (moved.count(&f) == 0) continue;
    f.removeDeadConstantUsers();
    if (f.use_empty()) f.eraseFromParent();
  }
  // Constants only the other module used.
  for (llvm::Module* m : {&module, nests.get()}) {
    for (auto it = m->global_begin(); it != m->global_end();) {
      llvm::GlobalVariable& g = *it++;
      g.removeDeadConstantUsers();
      if (g.hasLocalLinkage() && g.use_empty()) g.eraseFromParent();
    }
  }
  return nests;
}

// A compiled module is one object, or several (glue and loop nests) in a bundle: the magic
// below, then for each object its size (8 bytes, little endian) and its bytes.
constexpr char kBundleMagic[] = "\x7fPJOBJS";
constexpr size_t kBundleMagicSize = sizeof(kBundleMagic) - 1;

std::string bundle_objects(const std::vector<std::unique_ptr<llvm::MemoryBuffer>>& objects) {
  if (objects.size() == 1) return objects[0]->getBuffer().str();
  std::string out(kBundleMagic, kBundleMagicSize);
  for (const auto& object : objects) {
    uint64_t size = object->getBufferSize();
    for (int byte = 0; byte < 8; ++byte) out.push_back(static_cast<char>(size >> (8 * byte)));
    out.append(object->getBufferStart(), object->getBufferSize());
  }
  return out;
}

// The objects of a bundle (or the one object that is not a bundle), as views into `data`.
std::vector<std::string_view> unbundle_objects(std::string_view data, std::string_view name) {
  if (data.substr(0, kBundleMagicSize) != std::string_view(kBundleMagic, kBundleMagicSize)) {
    return {data};
  }
  std::vector<std::string_view> objects;
  size_t at = kBundleMagicSize;
  while (at < data.size()) {
    uint64_t size = 0;
    PRIMJIT_USER_CHECK(data.size() - at >= 8)
        << "cannot link '" << name << "': its object bundle is truncated (a corrupt cache entry? "
        << "clear the cache)";
    for (int byte = 0; byte < 8; ++byte) {
      size |= uint64_t{static_cast<unsigned char>(data[at + byte])} << (8 * byte);
    }
    at += 8;
    PRIMJIT_USER_CHECK(size <= data.size() - at)
        << "cannot link '" << name << "': its object bundle is truncated (a corrupt cache entry? "
        << "clear the cache)";
    objects.push_back(data.substr(at, size));
    at += size;
  }
  return objects;
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

  // TargetMachines are not thread-safe; each compile borrows one from a pool: machine_pool's
  // generate code at the engine's level, glue_pool's at CodeGenOptLevel::None (split_glue).
  std::mutex pool_mutex;
  std::vector<std::unique_ptr<llvm::TargetMachine>> machine_pool;
  std::vector<std::unique_ptr<llvm::TargetMachine>> glue_pool;

  // Registered modules: their trackers and (optionally) optimized IR.
  mutable std::mutex modules_mutex;
  ModuleKey next_key = 1;
  std::map<ModuleKey, llvm::orc::ResourceTrackerSP> trackers;
  std::map<ModuleKey, std::string> kept_ir;
  std::once_flag runtime_once;

  std::unique_ptr<llvm::TargetMachine> borrow_machine(bool glue = false) {
    {
      std::lock_guard<std::mutex> lock(pool_mutex);
      auto& pool = glue ? glue_pool : machine_pool;
      if (!pool.empty()) {
        auto machine = std::move(pool.back());
        pool.pop_back();
        return machine;
      }
    }
    if (!glue) {
      return take(machine_builder.createTargetMachine(), "cannot create an LLVM target machine");
    }
    llvm::orc::JITTargetMachineBuilder builder = machine_builder;
    builder.setCodeGenOptLevel(llvm::CodeGenOptLevel::None);
    return take(builder.createTargetMachine(), "cannot create an LLVM target machine");
  }

  void return_machine(std::unique_ptr<llvm::TargetMachine> machine, bool glue = false) {
    std::lock_guard<std::mutex> lock(pool_mutex);
    (glue ? glue_pool : machine_pool).push_back(std::move(machine));
  }

  ModuleKey compile_and_link(llvm::Module& module, bool user_input) {
    std::string optimized;
    std::vector<std::unique_ptr<llvm::MemoryBuffer>> objects =
        compile(module, user_input, &optimized);
    return link(std::move(objects), module.getModuleIdentifier(), std::move(optimized));
  }

  // Links the objects of one module under one tracker.
  ModuleKey link(std::vector<std::unique_ptr<llvm::MemoryBuffer>> objects, const std::string& name,
                 std::string optimized) {
    llvm::orc::ResourceTrackerSP tracker = jit->getMainJITDylib().createResourceTracker();
    for (auto& object : objects) {
      llvm::Error error = jit->addObjectFile(tracker, std::move(object));
      if (error) {
        llvm::consumeError(tracker->remove());
        check(std::move(error), "cannot link module '" + name + "'");
      }
    }
    std::lock_guard<std::mutex> lock(modules_mutex);
    ModuleKey key = next_key++;
    trackers.emplace(key, tracker);
    if (options.keep_optimized_ir) kept_ir.emplace(key, std::move(optimized));
    return key;
  }

  // One module optimized and compiled to an object, with its optimized IR and assembly when
  // asked for.
  struct CompiledPart {
    std::unique_ptr<llvm::MemoryBuffer> object;
    std::string optimized_ir;
    std::string assembly;
  };

  // `glue_only`: the module holds glue only (no module pipeline); `fast_codegen`: compiled by
  // a machine at CodeGenOptLevel::None (large glue, see split_glue).
  CompiledPart compile_part(llvm::Module& part, bool glue_only, bool fast_codegen, bool want_ir,
                            bool want_asm) {
    CompiledPart out;
    std::unique_ptr<llvm::TargetMachine> machine = borrow_machine(fast_codegen);
    try {
      // A T.vectorized loop that LLVM leaves scalar is logged with LLVM's reasons.
      watch_vectorization(part, [&] { optimize(part, *machine, options.opt_level, glue_only); });
      if (want_ir) out.optimized_ir = module_text(part);
      if (want_asm) out.assembly = assembly_text(part, *machine);
      llvm::orc::SimpleCompiler compiler(*machine);
      out.object = take(compiler(part), "LLVM code generation failed");
    } catch (...) {
      return_machine(std::move(machine), fast_codegen);
      throw;
    }
    return_machine(std::move(machine), fast_codegen);
    return out;
  }

  // Verifies, optimizes and compiles `module` to objects (one, or glue and loop nests: see
  // split_glue); its optimized IR goes to `optimized` (when not null) if the engine keeps it,
  // and the texts `dumps` asks for to it.
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> compile(llvm::Module& module, bool user_input,
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
    if (dumps != nullptr && dumps->want_ir) dumps->ir = module_text(module);

    // The parts, each with whether it is glue only.
    const std::set<std::string> glue =
        options.opt_level > 0 ? glue_function_names(module) : std::set<std::string>();
    const size_t glue_size = glue.empty() ? 0 : glue_instructions(module, glue);
    const bool large_glue = glue_size >= kGlueApartInstructions;
    // Small glue is compiled apart too, on a second thread, when the host has one: its light
    // pipeline and code generation then overlap the loop nests' (a cold first call of a
    // parallel vector add spends about 2 of its 9.5 ms on glue).
    static const bool second_thread = std::thread::hardware_concurrency() > 1;
    const bool overlap = !large_glue && glue_size > 0 && second_thread;
    std::unique_ptr<llvm::Module> nests =
        large_glue || overlap ? split_glue(module, glue) : nullptr;
    const bool want_text = (dumps != nullptr && dumps->want_optimized_ir) ||
                           (options.keep_optimized_ir && optimized != nullptr);
    const bool want_asm = dumps != nullptr && dumps->want_assembly;
    std::vector<std::unique_ptr<llvm::MemoryBuffer>> objects;
    std::string optimized_text;
    if (nests != nullptr && overlap) {
      // The glue goes to its own context (LLVM contexts are not shared between threads), as
      // bitcode, and is compiled by the optimizing code generator: a wrapper runs on every call.
      // Where no thread can be started, it is compiled after the loop nests.
      llvm::SmallVector<char, 0> bitcode;
      llvm::raw_svector_ostream stream(bitcode);
      llvm::WriteBitcodeToFile(module, stream);
      CompiledPart wrapper, loops;
      std::exception_ptr glue_error;
      auto compile_glue = [&] {
        try {
          llvm::LLVMContext context;
          llvm::Expected<std::unique_ptr<llvm::Module>> parsed = llvm::parseBitcodeFile(
              llvm::MemoryBufferRef(llvm::StringRef(bitcode.data(), bitcode.size()), "glue"),
              context);
          PRIMJIT_ICHECK(static_cast<bool>(parsed))
              << "the glue of a host module does not read back from bitcode: "
              << llvm::toString(parsed.takeError());
          wrapper = compile_part(**parsed, /*glue_only=*/true, /*fast_codegen=*/false, want_text,
                                 want_asm);
        } catch (...) {
          glue_error = std::current_exception();
        }
      };
      std::thread worker;
      try {
        worker = std::thread(compile_glue);
      } catch (const std::system_error&) {
        // No thread to be had: the glue is compiled after the loop nests, below.
      }
      try {
        loops = compile_part(*nests, false, false, want_text, want_asm);
      } catch (...) {
        if (worker.joinable()) worker.join();
        throw;
      }
      if (worker.joinable()) {
        worker.join();
      } else {
        compile_glue();
      }
      if (glue_error) std::rethrow_exception(glue_error);
      for (CompiledPart* part : {&wrapper, &loops}) {
        objects.push_back(std::move(part->object));
        optimized_text += part->optimized_ir;
        if (want_asm) dumps->assembly += part->assembly;
      }
    } else {
      std::vector<std::pair<llvm::Module*, bool>> parts{{&module, nests != nullptr}};
      if (nests != nullptr) {
        parts.emplace_back(nests.get(), false);
      } else if (large_glue) {
        parts[0].second = std::all_of(module.begin(), module.end(), [&](const llvm::Function& f) {
          return f.isDeclaration() || glue.count(f.getName().str()) > 0;
        });
      }
      for (auto [part, glue_only] : parts) {
        CompiledPart compiled = compile_part(*part, glue_only, glue_only, want_text, want_asm);
        objects.push_back(std::move(compiled.object));
        optimized_text += compiled.optimized_ir;
        if (want_asm) dumps->assembly += compiled.assembly;
      }
    }
    if (dumps != nullptr && dumps->want_optimized_ir) dumps->optimized_ir = optimized_text;
    if (options.keep_optimized_ir && optimized != nullptr) *optimized = std::move(optimized_text);
    return objects;
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
  return bundle_objects(
      impl_->compile(*module, /*user_input=*/false, /*optimized=*/nullptr, dumps));
}

OrcEngine::ModuleKey OrcEngine::add_object(std::string_view object, std::string_view name) {
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> buffers;
  for (std::string_view part : unbundle_objects(object, name)) {
    buffers.push_back(llvm::MemoryBuffer::getMemBufferCopy(
        llvm::StringRef(part.data(), part.size()), llvm::StringRef(name.data(), name.size())));
  }
  return impl_->link(std::move(buffers), std::string(name), "");
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

std::string compile_object(OrcEngine& engine, HostModule&& host, CompileDumps* dumps) {
  return engine.compile_object(std::move(host.module), std::move(host.context), dumps);
}

std::string llvm_version() { return LLVM_VERSION_STRING; }

HostTarget detect_host_target() {
  initialize_llvm_once();
  llvm::orc::JITTargetMachineBuilder builder =
      take(llvm::orc::JITTargetMachineBuilder::detectHost(), "cannot detect the host CPU");
  return HostTarget{builder.getTargetTriple().str(), builder.getCPU()};
}

}  // namespace primjit::jit
