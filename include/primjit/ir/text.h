// The text format: a TVMScript subset (see the project README, "IR text format").
// Printing is deterministic and `parse(print(m))` is structurally equal to `m`.
#pragma once

#include <string>
#include <string_view>

#include "primjit/error.h"
#include "primjit/ir/function.h"

namespace primjit {

/// A syntax or semantic error in IR text. what() is
/// "FILE:LINE:COL: error: MESSAGE\n<the source line>\n<caret under COL>".
class ParseError : public Error {
 public:
  ParseError(const std::string& what, std::string file, int line, int column, std::string message)
      : Error(what),
        file_(std::move(file)),
        line_(line),
        column_(column),
        message_(std::move(message)) {}
  const std::string& file() const { return file_; }
  int line() const { return line_; }      // 1-based
  int column() const { return column_; }  // 1-based
  /// The message without location and source excerpt.
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  int line_;
  int column_;
  std::string message_;
};

/// Parses a module (`@I.ir_module class ...:`) or a single `@T.prim_func` (then named by its
/// def name). Throws ParseError. The result is not verified; call verify_well_formed.
IRModule parse(std::string_view text, std::string_view file_name = "<string>");

std::string print(const IRModule& module);
/// A single function printed as `@T.prim_func def NAME(...)`.
std::string print(const PrimFunc& func, std::string_view name = "main");
/// A statement or expression alone, as it would appear in a function (for diagnostics).
std::string print(const Stmt& stmt);
std::string print(const Expr& expr);

}  // namespace primjit
