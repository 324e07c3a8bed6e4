// Typed pass options: a pass declares its options once, as the fields of a struct with their
// defaults, plus a name, a type and a help line per field. `typed_pass` turns that declaration
// and the pass's rewrite into a registered Pass whose arguments are checked and converted by
// parse_pass_options (the one parser) before the rewrite sees them. For example:
//
//   struct UnrollLoopsOptions {
//     int64_t max = kDefaultMaxUnroll;
//   };
//   PassOptions<UnrollLoopsOptions> options;
//   options.add_int("max", &UnrollLoopsOptions::max, "the most iterations to unroll", 0);
//   return typed_pass<UnrollLoopsOptions>("UnrollLoops", "...", options, run);
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "primjit/passes.h"

namespace primjit::passes {

template <typename Options>
class PassOptions {
 public:
  /// An integer option stored in `field`; its default is the field's initial value.
  PassOptions& add_int(std::string name, int64_t Options::*field, std::string help,
                       int64_t min = INT64_MIN) {
    declared_.push_back({std::move(name), PassOption::Type::kInt, std::to_string(Options{}.*field),
                         std::move(help), min});
    setters_.push_back([field](Options& o, const std::string&, const PassOptionValue& v) {
      o.*field = std::get<int64_t>(v);
    });
    return *this;
  }
  /// A boolean option (true/false, 1/0) stored in `field`.
  PassOptions& add_bool(std::string name, bool Options::*field, std::string help) {
    declared_.push_back({std::move(name), PassOption::Type::kBool,
                         Options{}.*field ? "true" : "false", std::move(help)});
    setters_.push_back([field](Options& o, const std::string&, const PassOptionValue& v) {
      o.*field = std::get<bool>(v);
    });
    return *this;
  }
  /// Integer values under names the pass does not declare (`placeholder` is shown, e.g.
  /// "<name>"), collected by name into `field`.
  PassOptions& add_named_ints(std::string placeholder,
                              std::map<std::string, int64_t> Options::*field, std::string help) {
    declared_.push_back({std::move(placeholder), PassOption::Type::kInt, "", std::move(help)});
    setters_.push_back([field](Options& o, const std::string& key, const PassOptionValue& v) {
      (o.*field)[key] = std::get<int64_t>(v);
    });
    return *this;
  }

  const std::vector<PassOption>& declared() const { return declared_; }

  /// The options of one invocation of `pass`: the defaults, overridden by `args`.
  Options parse(std::string_view pass, const PassArgs& args) const {
    Options options;
    for (auto& [key, value] : parse_pass_options(pass, declared_, args)) {
      setters_[index_of(key)](options, key, value);
    }
    return options;
  }

 private:
  // The declaration `key` matched in parse_pass_options: its own, else the placeholder.
  size_t index_of(const std::string& key) const {
    size_t any = declared_.size();
    for (size_t i = 0; i < declared_.size(); ++i) {
      if (declared_[i].name == key) return i;
      if (declared_[i].name.starts_with('<')) any = i;
    }
    return any;
  }

  std::vector<PassOption> declared_;
  std::vector<std::function<void(Options&, const std::string&, const PassOptionValue&)>> setters_;
};

/// A registered pass with declared options: `run` receives them parsed and typed.
template <typename Options>
Pass typed_pass(std::string name, std::string summary, PassOptions<Options> options,
                std::function<IRModule(const IRModule&, const Options&)> run) {
  std::vector<PassOption> declared = options.declared();
  auto wrapper = [name, options = std::move(options), run = std::move(run)](const IRModule& module,
                                                                            const PassArgs& args) {
    return run(module, options.parse(name, args));
  };
  return Pass{std::move(name), std::move(summary), std::move(wrapper), std::move(declared)};
}

}  // namespace primjit::passes
