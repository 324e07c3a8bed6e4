// Small building blocks for printing C-like source text: an indenting line writer and a table
// that turns IR names into unique, valid C identifiers. Used by the CUDA code generator; free of
// IR and CUDA headers.
#pragma once

#include <set>
#include <string>
#include <string_view>

namespace primjit::jit {

/// Collects lines of source with the current indentation (two spaces per level).
///
///   SourceWriter w;
///   w.open("if (x > 0)");      // "if (x > 0) {"
///   w.line("y = x;");          // "  y = x;"
///   w.close();                 // "}"
class SourceWriter {
 public:
  /// One line at the current indentation; an empty `text` gives an empty line.
  void line(std::string_view text);
  /// A line at column 0 regardless of the indentation (preprocessor directives).
  void raw_line(std::string_view text);
  /// `header {` (just `{` when header is empty), then one more level of indentation.
  void open(std::string_view header = "");
  /// One level less, then `}` followed by `trailer` (e.g. " else {" or ";").
  void close(std::string_view trailer = "");
  void indent() { ++depth_; }
  void dedent();
  int depth() const { return depth_; }

  const std::string& str() const { return text_; }

 private:
  std::string text_;
  int depth_ = 0;
};

/// Unique C identifiers for IR names. `unique(hint)` sanitizes the hint (characters outside
/// [A-Za-z0-9_] become '_', a leading digit or underscore gets a "v" prefix, an empty hint is
/// "v") and, when the result is taken or reserved, appends `_1`, `_2`, ... (the first free one).
/// The result depends only on the order of the calls, so printing is deterministic.
class NameTable {
 public:
  /// A table that already refuses C++ keywords and the CUDA built-in names a kernel body can
  /// see (threadIdx, half, float4, ...).
  NameTable();

  /// Marks `name` as taken, without checking it.
  void reserve(const std::string& name) { taken_.insert(name); }
  bool is_taken(const std::string& name) const { return taken_.count(name) != 0; }
  /// A fresh identifier based on `hint`; it is taken from now on.
  std::string unique(std::string_view hint);

  /// `hint` made a valid identifier (no uniqueness).
  static std::string sanitize(std::string_view hint);
  /// True for [A-Za-z_][A-Za-z0-9_]* that is not a C++ keyword.
  static bool is_valid_identifier(std::string_view name);

 private:
  std::set<std::string> taken_;
};

}  // namespace primjit::jit
