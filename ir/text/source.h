// The text being parsed and how every stage of the parser reports an error at a line and column.
// Private to the text parser (ir/text/).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "primjit/ir/text.h"

namespace primjit::text_internal {

/// The deepest nesting of brackets, unary operators and blocks the parser accepts.
constexpr int kMaxNesting = 200;

struct Loc {
  int line = 1;
  int col = 1;
};

class Source {
 public:
  Source(std::string_view text, std::string file) : text_(text), file_(std::move(file)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < text_.size(); ++i) {
      if (text_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::string_view text() const { return text_; }

  [[noreturn]] void fail(Loc loc, const std::string& message) const {
    throw ParseError(format(loc, message), file_, loc.line, std::max(loc.col, 1), message);
  }

  /// "FILE:LINE:COL: error: MESSAGE\n<the source line>\n<caret under COL>".
  std::string format(Loc loc, const std::string& message) const {
    int col = std::max(loc.col, 1);
    return file_ + ":" + std::to_string(loc.line) + ":" + std::to_string(col) +
           ": error: " + message + "\n" + line_text(loc.line) + "\n" +
           std::string(static_cast<size_t>(col - 1), ' ') + "^";
  }

 private:
  std::string line_text(int line) const {
    if (line < 1 || static_cast<size_t>(line) > line_starts_.size()) return "";
    size_t begin = line_starts_[static_cast<size_t>(line - 1)];
    size_t end = text_.find('\n', begin);
    if (end == std::string_view::npos) end = text_.size();
    std::string out(text_.substr(begin, end - begin));
    if (!out.empty() && out.back() == '\r') out.pop_back();
    return out;
  }

  std::string_view text_;
  std::string file_;
  std::vector<size_t> line_starts_;
};

}  // namespace primjit::text_internal
