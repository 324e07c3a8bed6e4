// primjit-opt: parse IR text, run passes, print the result.
//
//   primjit-opt FILE [--passes=P1,P2{key=value,...}] [--pipeline=default|default-no-cse]
//   [--target=cuda|llvm|emu]
//               [--verify-each] [--print-after-all] [--check-expected]
//               [--emit=tir|llvm|llvm-opt|asm|cuda|ptx] [--list-passes] [--no-verify-input]
//
// --emit=llvm prints the host code as generated, llvm-opt after LLVM's optimizer and asm as the
// host CPU's assembly: both from the JIT's own engine (its pipeline, options and opt level, for
// this machine's CPU), so they show the code a variant runs, less the variant's symbol suffix.
//
// FILE may be "-" for standard input. The parsed module is verified before any pass runs,
// unless --no-verify-input (for passes such as ConvertSSA that repair ill-formed IR).
// --check-expected reads a golden file: sections separated by lines `# -----`; a section
// holding `# expected-error: TEXT` must fail (parse, verify or pass) with TEXT in the message;
// any other section is an input whose expected result is the next section. Each input section
// starts with a one-line comment stating the rule; a `# passes: P1,P2` line in an input
// section runs those passes instead of the command line's. Prints "PASS: rule" / "FAIL: rule" per
// case and a closing "N passed, M failed" line. With --check-semantics as well (a build with the
// backends), every input section also runs in the reference interpreter before and after the
// passes (as --check-semantics does for one module): a case whose results change fails; a case
// the interpreter cannot run (no callable function, device code, inputs out of bounds) is
// counted as skipped, not failed.
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "primjit/error.h"
#include "primjit/ir.h"
#include "primjit/ir/source_map.h"
#include "primjit/ir/structural.h"
#include "primjit/ir/text.h"
#include "primjit/ir/verify.h"
#include "primjit/passes.h"
#include "primjit/version.h"
#include "tools/tool_main.h"

// Without primjit_jit (a build with PRIMJIT_WITH_LLVM or PRIMJIT_WITH_CUDA OFF) primjit-opt
// parses, runs passes and prints; --emit=llvm|cuda|ptx and --check-semantics need the backends.
#if PRIMJIT_HAVE_JIT
#include "jit/cuda/codegen_cuda.h"
#include "jit/cuda/nvrtc_compiler.h"
#include "jit/emu/differential.h"
#include "jit/llvm/codegen_llvm.h"
#include "jit/llvm/orc_engine.h"
#include "primjit/jit.h"
#endif

namespace {

namespace pj = primjit;

constexpr const char* kUsage =
    "usage: primjit-opt FILE [--passes=P1,P2] [--pipeline=default|default-no-cse]\n"
    "                   [--target=cuda|llvm|emu] [--verify-each] [--print-after-all]\n"
    "                   [--check-expected] [--emit=tir|llvm|llvm-opt|asm|cuda|ptx]\n"
    "                   [--list-passes] [--no-verify-input]\n"
    "                   [--check-semantics[=DIM=VALUE,...]] [--version]\n"
    "  --emit=llvm        host LLVM IR before LLVM's optimizer; llvm-opt: after it, as the JIT\n"
    "                     optimizes it; asm: the assembly the JIT makes of it for this CPU\n";

struct Options {
  std::string file;
  std::vector<std::string> passes;
  std::string target;
  std::string emit = "tir";
  bool verify_each = false;
  bool print_after_all = false;
  bool check_expected = false;
  bool list_passes = false;
  bool verify_input = true;
  std::optional<std::string> check_semantics;  // dimension values, "n=128,m=4"
};

Options parse_args(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value_of = [&](const std::string& flag) -> std::optional<std::string> {
      if (arg.rfind(flag + "=", 0) == 0) return arg.substr(flag.size() + 1);
      return std::nullopt;
    };
    if (auto v = value_of("--passes")) {
      for (std::string& p : pj::passes::split_pass_list(*v)) options.passes.push_back(std::move(p));
    } else if (auto v = value_of("--pipeline")) {
      PRIMJIT_USER_CHECK(*v == "default" || *v == "default-no-cse")
          << "unknown pipeline '" << *v << "'; use --pipeline=default or default-no-cse";
      pj::passes::PipelineOptions pipeline;
      pipeline.common_subexpr_elim = *v == "default";
      for (std::string& p : pj::passes::default_pipeline(pipeline)) {
        options.passes.push_back(std::move(p));
      }
    } else if (auto v = value_of("--target")) {
      PRIMJIT_USER_CHECK(*v == "cuda" || *v == "llvm" || *v == "emu")
          << "unknown --target '" << *v << "'; use cuda, llvm or emu";
      options.target = *v;
    } else if (auto v = value_of("--emit")) {
      PRIMJIT_USER_CHECK(*v == "tir" || *v == "llvm" || *v == "llvm-opt" || *v == "asm" ||
                         *v == "cuda" || *v == "ptx")
          << "unknown --emit '" << *v << "'; use tir, llvm, llvm-opt, asm, cuda or ptx";
      options.emit = *v;
    } else if (arg == "--verify-each") {
      options.verify_each = true;
    } else if (arg == "--print-after-all") {
      options.print_after_all = true;
    } else if (arg == "--check-expected") {
      options.check_expected = true;
    } else if (arg == "--no-verify-input") {
      options.verify_input = false;
    } else if (arg == "--check-semantics" || arg.rfind("--check-semantics=", 0) == 0) {
      options.check_semantics = arg.size() > 18 ? arg.substr(18) : "";
    } else if (arg == "--list-passes") {
      options.list_passes = true;
    } else if (arg == "-h" || arg == "--help") {
      std::cout << kUsage << pj::tools::kEnvironmentHelp;
      std::exit(0);
    } else if (arg == "--version") {
      std::cout << "primjit-opt " << pj::version() << "\n";
      std::exit(0);
    } else if (!arg.empty() && arg[0] == '-' && arg != "-") {
      PRIMJIT_USER_ERROR() << "unknown option '" << arg << "'\n" << kUsage;
    } else {
      PRIMJIT_USER_CHECK(options.file.empty())
          << "only one input file is accepted (got '" << options.file << "' and '" << arg << "')";
      options.file = arg;
    }
  }
  PRIMJIT_USER_CHECK(options.list_passes || !options.file.empty()) << "no input file\n" << kUsage;
  return options;
}

std::string read_input(const std::string& file) {
  if (file == "-") {
    std::ostringstream text;
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream in(file);
  PRIMJIT_USER_CHECK(in.good()) << "cannot read '" << file << "'";
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Gives every function without a "target" attribute the requested target.
pj::IRModule apply_target(pj::IRModule module, const std::string& kind) {
  if (kind.empty()) return module;
  pj::Target target = kind == "llvm"   ? pj::Target::llvm()
                      : kind == "cuda" ? pj::Target::cuda()
                                       : pj::Target::emu();
  for (const auto& [gvar, func] : module->functions) {
    if (!func->target().defined())
      module = module.with_function(gvar->name, func.with_attr(pj::attr::kTarget, target));
  }
  return module;
}

// Parses the input file; an ill-formed module is reported at FILE:LINE:COL, as parse errors are.
pj::IRModule parse_input(const std::string& text, const Options& options) {
  pj::SourceMap source_map;
  pj::IRModule module = pj::parse(text, options.file == "-" ? "<stdin>" : options.file, source_map);
  if (options.verify_input) pj::verify_well_formed(module, source_map);
  return module;
}

pj::IRModule run(const pj::IRModule& input, const Options& options) {
  if (options.verify_input) pj::verify_well_formed(input);
  pj::passes::RunOptions run_options;
  run_options.verify_each = options.verify_each;
  run_options.print_after_all = options.print_after_all;
  return pj::passes::run_passes(apply_target(input, options.target), options.passes, run_options);
}

// --- golden files -----------------------------------------------------------------------------

struct Section {
  std::string text;
  int first_line = 1;
};

std::vector<Section> split_sections(const std::string& text) {
  std::vector<Section> sections(1);
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line == "# -----") {
      sections.push_back(Section{"", number + 1});
      continue;
    }
    sections.back().text += line + "\n";
  }
  return sections;
}

// The section's first comment line: the rule it states.
std::string rule_of(const Section& section) {
  std::istringstream in(section.text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# expected-error:", 0) == 0 || line.rfind("# from ", 0) == 0 ||
        line.rfind("# passes:", 0) == 0) {
      continue;
    }
    if (line.rfind("# ", 0) == 0) return line.substr(2);
  }
  return "(no rule comment) at line " + std::to_string(section.first_line);
}

// The text after `prefix` on the section's first line that starts with it.
std::optional<std::string> directive(const Section& section, const std::string& prefix) {
  std::istringstream in(section.text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) {
      std::string text = line.substr(prefix.size());
      while (!text.empty() && text.front() == ' ') text.erase(text.begin());
      return text;
    }
  }
  return std::nullopt;
}

bool blank(const std::string& text) {
  for (char ch : text) {
    if (ch == '#') return false;  // comments count as content (a rule line)
    if (ch != ' ' && ch != '\n' && ch != '\t') return false;
  }
  return true;
}

#if PRIMJIT_HAVE_JIT
// The interpreter's options from --check-semantics[=DIM=VALUE,...].
pj::jit::emu::DifferentialOptions semantics_options(const Options& options) {
  pj::jit::emu::DifferentialOptions check;
  std::istringstream items(*options.check_semantics);
  for (std::string item; std::getline(items, item, ',');) {
    size_t eq = item.find('=');
    PRIMJIT_USER_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < item.size() &&
                       item.find_first_not_of("-0123456789", eq + 1) == std::string::npos)
        << "--check-semantics: expected DIM=VALUE (e.g. n=128), got '" << item << "'";
    check.dims[item.substr(0, eq)] = std::stoll(item.substr(eq + 1));
  }
  return check;
}
#endif  // PRIMJIT_HAVE_JIT

// Semantic checks of the golden cases: how many ran, and how many the interpreter could not.
struct SemanticsCount {
  int checked = 0;
  int skipped = 0;
};

// "" when the passes keep the results of `input` (or the interpreter cannot run it: `count`
// says which), else what changed.
std::string check_case_semantics(const pj::IRModule& input, const Options& options,
                                 SemanticsCount* count) {
#if PRIMJIT_HAVE_JIT
  pj::jit::emu::DifferentialReport report = pj::jit::emu::check_pipeline(
      apply_target(input, options.target), options.passes, semantics_options(options));
  ++(report.num_checked() > 0 || !report.ok() ? count->checked : count->skipped);
  if (report.ok()) return "";
  return report.pipeline_error.empty() ? report.str() : report.pipeline_error + "\n";
#else
  (void)input, (void)options, (void)count;  // main_impl refuses --check-semantics here
  return "";
#endif
}

int check_expected(const std::string& text, const Options& options) {
  std::vector<Section> sections = split_sections(text);
  std::erase_if(sections, [](const Section& s) { return blank(s.text); });
  int passed = 0;
  int failed = 0;
  SemanticsCount semantics;
  auto fail = [&](const std::string& rule, const std::string& why) {
    ++failed;
    std::cout << "FAIL: " << rule << "\n" << why << "\n";
  };
  for (size_t i = 0; i < sections.size(); ++i) {
    const Section& input = sections[i];
    std::string rule = rule_of(input);
    std::string name = options.file + ":" + std::to_string(input.first_line);
    Options section_options = options;
    if (std::optional<std::string> passes = directive(input, "# passes:")) {
      section_options.passes = pj::passes::split_pass_list(*passes);
    }
    if (std::optional<std::string> error = directive(input, "# expected-error:")) {
      try {
        run(pj::parse(input.text, name), section_options);
        fail(rule, "  expected an error containing '" + *error + "', but the input was accepted");
      } catch (const pj::Error& e) {
        if (std::string(e.what()).find(*error) == std::string::npos) {
          fail(rule, "  expected an error containing '" + *error + "', got:\n" + e.what());
        } else {
          ++passed;
          std::cout << "PASS: " << rule << "\n";
        }
      }
      continue;
    }
    if (i + 1 >= sections.size()) {
      fail(rule, "  input at line " + std::to_string(input.first_line) +
                     " has no expected section after it");
      break;
    }
    const Section& expected_section = sections[++i];
    try {
      pj::IRModule parsed = pj::parse(input.text, name);
      pj::IRModule actual = run(parsed, section_options);
      pj::IRModule expected = pj::parse(
          expected_section.text, options.file + ":" + std::to_string(expected_section.first_line));
      std::string changed;
      if (std::optional<std::string> diff = pj::structural_diff(actual, expected)) {
        fail(rule, "  difference: " + *diff + "\n--- actual:\n" + pj::print(actual) +
                       "--- expected:\n" + pj::print(expected));
      } else if (options.check_semantics &&
                 !(changed = check_case_semantics(parsed, section_options, &semantics)).empty()) {
        fail(rule, "  the passes change the results of the case at " + name + ":\n" + changed);
      } else {
        ++passed;
        std::cout << "PASS: " << rule << "\n";
      }
    } catch (const pj::Error& e) {
      fail(rule, std::string("  error: ") + e.what());
    }
  }
  if (options.check_semantics) {
    std::cout << "semantics: " << semantics.checked << " cases run before and after the passes, "
              << semantics.skipped << " skipped (the interpreter cannot run them)\n";
    if (semantics.checked == 0 && !sections.empty()) {
      // A golden registered for semantic checks whose every case skips would check only text.
      ++failed;
      std::cout << "FAIL: --check-semantics ran no case in the interpreter (each needs inputs "
                   "it can generate and no unknown extern call); remove the flag or add a case "
                   "that runs\n";
    }
  }
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed == 0 && passed > 0 ? 0 : 1;
}

#if PRIMJIT_HAVE_JIT
// --check-semantics[=n=128,...]: runs the module in the reference interpreter before and after
// each pass on generated inputs (DIM=VALUE fixes a dimension or integer parameter) and reports
// the first pass that changes an output; exits 1 when one does.
int check_semantics(const std::string& text, const Options& options) {
  pj::IRModule input = parse_input(text, options);
  pj::jit::emu::DifferentialReport report = pj::jit::emu::check_pipeline(
      apply_target(input, options.target), options.passes, semantics_options(options));
  std::cout << report.str() << report.num_checked() << " checked, " << report.num_skipped()
            << " skipped, " << options.passes.size()
            << " passes: " << (report.ok() ? "no pass changed an output" : "semantics changed")
            << "\n";
  return report.ok() ? 0 : 1;
}
#endif  // PRIMJIT_HAVE_JIT

int main_impl(int argc, char** argv) {
  Options options = parse_args(argc, argv);
  if (options.list_passes) {
    for (const pj::passes::Pass& pass : pj::passes::registered_passes()) {
      std::cout << pass.name << "  " << pass.summary << "\n";
      for (const pj::passes::PassOption& option : pass.options) {
        std::cout << "    " << pj::passes::describe_option(option) << "\n";
      }
    }
    return 0;
  }
  std::string text = read_input(options.file);
#if !PRIMJIT_HAVE_JIT
  PRIMJIT_USER_CHECK(!options.check_semantics && options.emit == "tir")
      << (options.check_semantics ? std::string("--check-semantics") : "--emit=" + options.emit)
      << " needs the LLVM and CUDA backends; this primjit-opt was built without them";
#endif
  if (options.check_expected) return check_expected(text, options);
#if PRIMJIT_HAVE_JIT
  if (options.check_semantics) return check_semantics(text, options);
#endif
  pj::IRModule result = run(parse_input(text, options), options);
#if PRIMJIT_HAVE_JIT
  if (options.emit == "llvm" || options.emit == "llvm-opt" || options.emit == "asm") {
    // The host code as generated (before LLVM's optimizations), for reading and FileCheck.
    pj::jit::HostModule host = pj::jit::codegen_llvm(pj::passes::lower_for_host(result));
    if (options.emit == "llvm") {
      std::cout << pj::jit::to_llvm_text(host);
      return 0;
    }
    // After LLVM's optimizer, or as assembly: compiled by the engine a Jit uses, at the opt
    // level a Jit has by default (missed T.vectorized loops are logged as a Jit logs them).
    pj::jit::OrcEngine engine(pj::jit::OrcOptions{.opt_level = pj::JitOptions{}.opt_level});
    pj::jit::CompileDumps texts{.want_optimized_ir = options.emit == "llvm-opt",
                                .want_assembly = options.emit == "asm"};
    pj::jit::compile_object(engine, std::move(host), &texts);
    std::cout << (options.emit == "asm" ? texts.assembly : texts.optimized_ir);
    return 0;
  }
  if (options.emit == "cuda" || options.emit == "ptx") {
    // The device code: the kernels' CUDA C, or the PTX NVRTC makes of it (no GPU needed).
    pj::jit::CudaModuleSource cuda = pj::jit::codegen_cuda(result);
    if (options.emit == "cuda") {
      std::cout << cuda.code;
      return 0;
    }
    PRIMJIT_USER_CHECK(!cuda.kernels.empty())
        << "--emit=ptx: the module has no CUDA kernels (use --pipeline=default --target=cuda)";
    pj::jit::NvrtcOptions nvrtc;
    if (int arch = pj::Target::make("cuda", cuda.arch)->arch_number(); arch > 0) nvrtc.arch = arch;
    nvrtc.force_ptx = true;
    pj::jit::DeviceImage ptx = pj::jit::nvrtc_compile({"primjit_kernels.cu", cuda.code}, nvrtc);
    std::cout << ptx.data.c_str();  // without the terminating NUL
    return 0;
  }
#endif
  std::cout << pj::print(result);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return primjit::tools::run_tool("primjit-opt", argc, argv, main_impl);
}
