// The pass registry and the pass manager. Passes are listed once, here; each pass lives in its
// own file and exposes a `Pass make_<name>_pass()` factory (declared in passes/pass_list.h).
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <iostream>

#include "ir/dump_config.h"
#include "passes/pass_list.h"
#include "primjit/error.h"
#include "primjit/ir/text.h"
#include "primjit/ir/verify.h"
#include "primjit/log.h"
#include "primjit/passes.h"

namespace primjit::passes {
namespace {

struct Invocation {
  const Pass* pass;
  PassArgs args;
};

// "Name" or "Name{k=v,k2=v2}" (';' separates options too). The values stay text here: the pass
// converts them through parse_pass_options when it runs.
Invocation parse_invocation(std::string_view text) {
  size_t brace = text.find('{');
  std::string_view name = text.substr(0, brace);
  Invocation invocation{&get_pass(name), {}};
  if (brace == std::string_view::npos) return invocation;
  PRIMJIT_USER_CHECK(text.back() == '}')
      << "pass arguments of '" << name << "' must end with '}': " << text;
  std::string_view body = text.substr(brace + 1, text.size() - brace - 2);
  while (!body.empty()) {
    size_t end = body.find_first_of(",;");
    std::string_view item = body.substr(0, end);
    size_t eq = item.find('=');
    PRIMJIT_USER_CHECK(eq != std::string_view::npos && eq > 0)
        << "pass argument '" << item << "' of " << name << " must look like key=value";
    invocation.args[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
    if (end == std::string_view::npos) break;
    body = body.substr(end + 1);
  }
  return invocation;
}

const char* type_name(PassOption::Type type) {
  switch (type) {
    case PassOption::Type::kInt:
      return "int";
    case PassOption::Type::kBool:
      return "bool";
    case PassOption::Type::kString:
      return "string";
  }
  return "?";
}

// "int", "int >= 0", "bool", "string".
std::string type_text(const PassOption& option) {
  std::string text = type_name(option.type);
  if (option.type == PassOption::Type::kInt && option.min != INT64_MIN) {
    text += " >= " + std::to_string(option.min);
  }
  return text;
}

std::string accepted_options(const std::vector<PassOption>& options) {
  if (options.empty()) return "it takes no options";
  std::string text = "accepted options:";
  for (const PassOption& option : options) text += "\n  " + describe_option(option);
  return text;
}

void dump(const std::string& dir, int index, const std::string& label, const IRModule& module) {
  char prefix[16];
  std::snprintf(prefix, sizeof(prefix), "%02d_", index);
  write_dump_file(dir, prefix + label + ".tir", print(module));
}

}  // namespace

std::string describe_option(const PassOption& option) {
  std::string text = option.name + "=" + type_text(option);
  if (!option.default_value.empty()) text += " (default " + option.default_value + ")";
  return text + ": " + option.help;
}

std::vector<std::pair<std::string, PassOptionValue>> parse_pass_options(
    std::string_view pass, const std::vector<PassOption>& options, const PassArgs& args) {
  std::vector<std::pair<std::string, PassOptionValue>> parsed;
  for (const auto& [key, text] : args) {
    const PassOption* option = nullptr;
    for (const PassOption& o : options) {
      if (o.name == key) option = &o;
      if (option == nullptr && o.name.starts_with('<')) option = &o;
    }
    PRIMJIT_USER_CHECK(option != nullptr)
        << "pass " << pass << " has no option '" << key << "'; " << accepted_options(options);
    auto ill_typed = [&]() -> std::string {
      return "pass " + std::string(pass) + ": option '" + key + "' must be " +
             (option->type == PassOption::Type::kInt ? "an " : "a ") + type_text(*option) +
             ", got '" + text + "'; " + accepted_options(options);
    };
    switch (option->type) {
      case PassOption::Type::kInt: {
        int64_t value = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        PRIMJIT_USER_CHECK(ec == std::errc() && end == text.data() + text.size() &&
                           value >= option->min)
            << ill_typed();
        parsed.emplace_back(key, value);
        break;
      }
      case PassOption::Type::kBool:
        PRIMJIT_USER_CHECK(text == "true" || text == "false" || text == "1" || text == "0")
            << ill_typed();
        parsed.emplace_back(key, text == "true" || text == "1");
        break;
      case PassOption::Type::kString:
        parsed.emplace_back(key, text);
        break;
    }
  }
  return parsed;
}

void check_no_args(const std::string& pass, const PassArgs& args) {
  parse_pass_options(pass, {}, args);
}

Pass function_pass(std::string name, std::string summary,
                   std::function<PrimFunc(const PrimFunc&)> rewrite) {
  auto run = [name, rewrite = std::move(rewrite)](const IRModule& module, const PassArgs& args) {
    check_no_args(name, args);
    IRModule out = module;
    for (const auto& [gvar, func] : module->functions) {
      PrimFunc rewritten = rewrite(func);
      if (!rewritten.same_as(func)) out = out.with_function(gvar->name, rewritten);
    }
    return out;
  };
  return Pass{std::move(name), std::move(summary), std::move(run)};
}

Pass body_pass(std::string name, std::string summary, std::function<Stmt(const Stmt&)> rewrite) {
  return function_pass(std::move(name), std::move(summary),
                       [rewrite = std::move(rewrite)](const PrimFunc& func) {
                         return func.with_body(rewrite(func->body));
                       });
}

const std::vector<Pass>& registered_passes() {
  static const std::vector<Pass> passes = [] {
    std::vector<Pass> list = {
        make_verify_well_formed_pass(),
        make_specialize_pass(),
        make_verify_device_memory_pass(),
        make_flatten_buffer_pass(),
        make_simplify_pass(),
        make_common_subexpr_elim_pass(),
        make_merge_shared_memory_allocations_pass(),
        make_remove_no_op_pass(),
        make_convert_ssa_pass(),
        make_unroll_loops_pass(),
        make_annotate_device_regions_pass(),
        make_split_host_device_pass(),
        make_lower_device_kernel_launch_pass(),
        make_make_packed_api_pass(),
        make_fp8_storage_legalize_pass(),
        make_bf16_storage_legalize_pass(),
        make_insert_division_checks_pass(),
        make_fuse_multiply_add_pass(),
        make_lower_parallel_loops_pass(),
        make_lower_compute_scopes_pass(),
        make_lower_vector_reductions_pass(),
        make_version_loops_pass(),
        make_vectorize_loop_pass(),
    };
    std::sort(list.begin(), list.end(),
              [](const Pass& a, const Pass& b) { return a.name < b.name; });
    return list;
  }();
  return passes;
}

const Pass& get_pass(std::string_view name) {
  for (const Pass& pass : registered_passes()) {
    if (pass.name == name) return pass;
  }
  std::string names;
  for (const Pass& pass : registered_passes()) names += (names.empty() ? "" : ", ") + pass.name;
  PRIMJIT_USER_ERROR() << "unknown pass '" << name << "'; registered passes: " << names;
}

std::vector<std::string> split_pass_list(std::string_view list) {
  std::vector<std::string> out;
  std::string current;
  int depth = 0;
  for (char ch : list) {
    if (ch == '{') ++depth;
    if (ch == '}') --depth;
    if (ch == ',' && depth == 0) {
      if (!current.empty()) out.push_back(current);
      current.clear();
      continue;
    }
    current += ch;
  }
  if (!current.empty()) out.push_back(current);
  return out;
}

namespace {

IRModule run_steps(IRModule module, const std::vector<Invocation>& steps,
                   const RunOptions& options) {
  const char* verify_env = std::getenv("PRIMJIT_VERIFY_EACH");
  bool verify_each =
      options.verify_each || (verify_env != nullptr && std::string(verify_env) == "1");
  std::string dump_dir = options.dump_dir;
  if (dump_dir.empty()) {
    DumpConfig dumps = dump_config_from_env();  // PRIMJIT_DUMP=ir or PRIMJIT_DUMP_IR
    if (dumps.ir) dump_dir = dumps.dir;
  }
  std::ostream& out = options.print_stream != nullptr ? *options.print_stream : std::cerr;
  if (!dump_dir.empty()) dump(dump_dir, 0, "input", module);

  int index = 0;
  for (const Invocation& step : steps) {
    auto start = std::chrono::steady_clock::now();
    module = step.pass->run(module, step.args);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (options.timings != nullptr) options.timings->push_back({step.pass->name, ms});
    PRIMJIT_LOG_DEBUG << "pass " << step.pass->name << " took " << ms << " ms";
    if (verify_each) {
      std::vector<std::string> errors = well_formed_errors(module);
      if (!errors.empty()) {
        std::string list;
        for (const std::string& e : errors) list += "\n  - " + e;
        PRIMJIT_USER_ERROR() << "the IR is not well formed after pass " << step.pass->name << ":"
                             << list;
      }
    }
    ++index;
    if (!dump_dir.empty()) dump(dump_dir, index, step.pass->name, module);
    if (options.print_after_all) {
      out << "# IR after " << step.pass->name << "\n" << print(module) << "\n";
    }
  }
  return module;
}

}  // namespace

IRModule run_passes(IRModule module, const std::vector<std::string>& invocations,
                    const RunOptions& options) {
  std::vector<Invocation> steps;
  for (const std::string& text : invocations) steps.push_back(parse_invocation(text));
  return run_steps(std::move(module), steps, options);
}

IRModule run_passes(IRModule module, const std::vector<Pass>& passes, const RunOptions& options) {
  std::vector<Invocation> steps;
  for (const Pass& pass : passes) steps.push_back(Invocation{&pass, {}});
  return run_steps(std::move(module), steps, options);
}

}  // namespace primjit::passes
