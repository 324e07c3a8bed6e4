// Stage 1 of the text parser: the tokenizer. It follows Python's line structure: indentation
// becomes INDENT/DEDENT tokens, comments and blank lines vanish, and a line continues inside
// brackets or after a backslash. Private to the text parser (ir/text/).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/text/source.h"

namespace primjit::text_internal {

enum class Tok { kName, kInt, kFloat, kString, kOp, kNewline, kIndent, kDedent, kEnd };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;  // identifier, operator, or the decoded string value
  Loc loc;
  Loc end;  // just after the token
  uint64_t int_value = 0;
  double float_value = 0;
};

/// The tokens of the whole text, ending with kEnd. Throws ParseError for malformed text.
std::vector<Token> tokenize(const Source& source);

}  // namespace primjit::text_internal
