// Where the text parser found the statements and functions of a module, so that diagnostics
// about the parsed module name FILE:LINE:COL as parse errors do. IR nodes carry no positions;
// a SourceMap filled by parse() keeps them beside the module, keyed by node identity:
//
//   primjit::SourceMap source_map;
//   primjit::IRModule m = primjit::parse(text, "kernel.tir", source_map);
//   primjit::verify_well_formed(m, source_map);  // ParseError at "kernel.tir:9:11: error: ..."
//
// The map keeps every node it names alive, so an address it records never comes to name another
// node; a node made later (by a pass) has no entry, and a diagnostic about it falls back to the
// nearest enclosing statement that has one, or to no location.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "primjit/ir/function.h"
#include "primjit/ir/object.h"
#include "primjit/ir/text.h"

namespace primjit {

/// A 1-based position in the parsed text; line 0 means unknown.
struct SourceLocation {
  int line = 0;
  int column = 0;
  bool known() const { return line > 0; }
  bool operator==(const SourceLocation&) const = default;
};

class SourceMap {
 public:
  /// Forgets everything and takes `text` (copied) as the contents of `file`.
  void reset(std::string file, std::string_view text);
  const std::string& file() const { return file_; }

  /// `node` (a statement or a function) begins at `where`.
  void add(const Ref<Object>& node, SourceLocation where);
  /// The statement beginning at `stmt` names `entity` (a variable or buffer) at `use` after the
  /// block that defined it has ended: where a verifier reports the use out of scope. The first
  /// such use per statement and entity is kept.
  void add_late_use(const Ref<Object>& entity, SourceLocation stmt, SourceLocation use);

  /// Where `node` begins, or an unknown location.
  SourceLocation find(const Object* node) const;
  /// The use of `entity` recorded for the statement beginning at `stmt`, or an unknown location.
  SourceLocation find_late_use(const Object* entity, SourceLocation stmt) const;

  /// "FILE:LINE:COL: error: MESSAGE\n<the source line>\n<caret under COL>" (ParseError's form).
  std::string diagnostic(SourceLocation where, const std::string& message) const;

 private:
  struct UseKey {
    const Object* entity;
    int line;
    int column;
    bool operator==(const UseKey&) const = default;
  };
  struct UseKeyHash {
    size_t operator()(const UseKey& k) const;
  };

  std::string file_;
  std::string text_;
  std::vector<size_t> line_starts_;
  std::vector<Ref<Object>> kept_;  // every node named below, alive as long as the map
  std::unordered_map<const Object*, SourceLocation> nodes_;
  std::unordered_map<UseKey, SourceLocation, UseKeyHash> late_uses_;
};

/// parse() that also fills `source_map` with where each statement and function came from.
IRModule parse(std::string_view text, std::string_view file_name, SourceMap& source_map);

/// well_formed_errors() of a module parse() made with `source_map`: each problem starts with the
/// FILE:LINE:COL of the offending use, else of its statement or function, where known.
std::vector<std::string> well_formed_errors(const IRModule& module, const SourceMap& source_map);
/// verify_well_formed() of a parsed module: throws ParseError located at the first problem
/// (its what() lists the others after it, each located the same way); a problem with no known
/// location throws primjit::Error as verify_well_formed(module) does.
void verify_well_formed(const IRModule& module, const SourceMap& source_map);

}  // namespace primjit
