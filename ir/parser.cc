// The text parser: TVMScript subset -> IR (see text.h and the README, "IR text format").
//
// Two stages:
//  1. A tokenizer with Python's line structure (indentation, comments, brackets continue lines)
//     and a recursive-descent parser with Python's operator precedence build a small syntax
//     tree. Only syntax is checked here.
//  2. Lowering walks the tree with a scope stack of names and builds the IR with the checked
//     make() functions. Every name must resolve to a definition earlier in the function; a
//     name still resolves after its block ends (as in Python), so text can describe IR that
//     the verifier rejects, and a Bind to a name that denotes a variable of the same type binds
//     that variable again. Anything the subset lacks is an error.
// Every failure is a ParseError at a line and column; errors from make() are converted at the
// expression or statement that caused them. Nothing else escapes parse().
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/scope_stack.h"
#include "ir/text_internal.h"
#include "primjit/ir/text.h"

namespace primjit {
namespace {

using text_internal::builtin_result_dtype;
using text_internal::op_rule;
using text_internal::same_expr;

constexpr int kMaxNesting = 200;  // brackets, unary operators, blocks

struct Loc {
  int line = 1;
  int col = 1;
};

// =============================================================================================
// Source text and errors
// =============================================================================================

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
    std::string source_line = line_text(loc.line);
    int col = std::max(loc.col, 1);
    std::string what = file_ + ":" + std::to_string(loc.line) + ":" + std::to_string(col) +
                       ": error: " + message + "\n" + source_line + "\n" +
                       std::string(static_cast<size_t>(col - 1), ' ') + "^";
    throw ParseError(what, file_, loc.line, col, message);
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

// =============================================================================================
// Tokenizer
// =============================================================================================

enum class Tok { kName, kInt, kFloat, kString, kOp, kNewline, kIndent, kDedent, kEnd };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;  // identifier, operator, or the decoded string value
  Loc loc;
  Loc end;  // just after the token
  uint64_t int_value = 0;
  double float_value = 0;
};

class Tokenizer {
 public:
  explicit Tokenizer(const Source& source) : src_(source), text_(source.text()) {}

  std::vector<Token> run() {
    indents_.push_back(0);
    bool line_start = true;
    while (true) {
      if (line_start && brackets_.empty()) {
        if (!begin_line()) break;
        line_start = false;
      }
      if (pos_ >= text_.size()) break;
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
        advance(1);
      } else if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') advance(1);
      } else if (c == '\\' && pos_ + 1 < text_.size() &&
                 (text_[pos_ + 1] == '\n' || (text_[pos_ + 1] == '\r' && pos_ + 2 < text_.size() &&
                                              text_[pos_ + 2] == '\n'))) {
        advance(text_[pos_ + 1] == '\r' ? 2 : 1);
        newline_char();
      } else if (c == '\n') {
        if (brackets_.empty()) {
          push_newline();
          line_start = true;
        }
        newline_char();
      } else {
        token();
      }
    }
    if (!brackets_.empty()) {
      const auto& [open, loc] = brackets_.back();
      src_.fail(loc, std::string("'") + open + "' was never closed");
    }
    push_newline();
    Loc eof = here();
    while (indents_.size() > 1) {
      indents_.pop_back();
      push(Tok::kDedent, "", eof, eof);
    }
    push(Tok::kEnd, "", eof, eof);
    return std::move(tokens_);
  }

 private:
  Loc here() const { return {line_, static_cast<int>(pos_ - line_start_) + 1}; }
  void advance(size_t n) { pos_ += n; }
  void newline_char() {
    ++pos_;
    ++line_;
    line_start_ = pos_;
  }

  void push(Tok kind, std::string text, Loc loc, Loc end) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.loc = loc;
    t.end = end;
    tokens_.push_back(std::move(t));
  }

  void push_newline() {
    if (tokens_.empty()) return;
    Tok last = tokens_.back().kind;
    if (last == Tok::kNewline || last == Tok::kIndent || last == Tok::kDedent) return;
    Loc end = tokens_.back().end;
    push(Tok::kNewline, "", end, end);
  }

  /// Measures the indentation of a logical line and emits INDENT/DEDENT. Skips blank and
  /// comment-only lines. Returns false at the end of the text.
  bool begin_line() {
    while (true) {
      size_t width = 0;
      std::optional<Loc> tab;  // an error only on a line with content
      while (pos_ < text_.size() &&
             (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\f')) {
        if (text_[pos_] == '\t' && !tab) tab = here();
        ++width;
        advance(1);
      }
      if (pos_ >= text_.size()) return false;
      char c = text_[pos_];
      if (c == '\r' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n') {
        advance(1);
        c = '\n';
      }
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') advance(1);
        if (pos_ >= text_.size()) return false;
        newline_char();
        continue;
      }
      if (c == '\n') {
        newline_char();
        continue;
      }
      if (tab) src_.fail(*tab, "tab character in indentation; indent with spaces");
      Loc loc = here();
      if (width > indents_.back()) {
        if (indents_.size() > kMaxNesting) src_.fail(loc, "blocks are nested too deeply");
        indents_.push_back(width);
        push(Tok::kIndent, "", loc, loc);
      } else {
        while (width < indents_.back()) {
          indents_.pop_back();
          push(Tok::kDedent, "", loc, loc);
        }
        if (width != indents_.back()) {
          src_.fail(loc, "unindent does not match any outer indentation level");
        }
      }
      return true;
    }
  }

  static bool is_name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  void token() {
    Loc loc = here();
    char c = text_[pos_];
    if (is_name_start(c)) {
      size_t begin = pos_;
      while (pos_ < text_.size() && (is_name_start(text_[pos_]) || is_digit(text_[pos_]))) {
        advance(1);
      }
      if (pos_ < text_.size() && (text_[pos_] == '"' || text_[pos_] == '\'')) {
        src_.fail(loc, "string prefixes (r\"\", b\"\", f\"\") are not supported");
      }
      push(Tok::kName, std::string(text_.substr(begin, pos_ - begin)), loc, here());
      return;
    }
    if (is_digit(c) || (c == '.' && pos_ + 1 < text_.size() && is_digit(text_[pos_ + 1]))) {
      number(loc);
      return;
    }
    if (c == '"' || c == '\'') {
      string(loc);
      return;
    }
    static const char* kOps[] = {"**", "//", "==", "!=", "<=", ">=", "<<", ">>", "->", "+=",
                                 "-=", "*=", "/=", "%=", ":=", "+",  "-",  "*",  "/",  "%",
                                 "<",  ">",  "=",  "(",  ")",  "[",  "]",  "{",  "}",  ",",
                                 ":",  ".",  ";",  "@",  "&",  "|",  "^",  "~"};
    for (const char* op : kOps) {
      std::string_view v(op);
      if (text_.substr(pos_, v.size()) != v) continue;
      advance(v.size());
      if (v == "(" || v == "[" || v == "{") {
        if (brackets_.size() >= kMaxNesting) src_.fail(loc, "brackets are nested too deeply");
        brackets_.emplace_back(v[0], loc);
      } else if (v == ")" || v == "]" || v == "}") {
        if (brackets_.empty()) src_.fail(loc, std::string("unmatched '") + v[0] + "'");
        char open = brackets_.back().first;
        char expected = open == '(' ? ')' : open == '[' ? ']' : '}';
        if (v[0] != expected) {
          src_.fail(loc,
                    std::string("closing '") + v[0] + "' does not match opening '" + open + "'");
        }
        brackets_.pop_back();
      }
      push(Tok::kOp, std::string(v), loc, here());
      return;
    }
    auto uc = static_cast<unsigned char>(c);
    if (uc < 0x20 || uc >= 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      src_.fail(loc, std::string("unexpected character 0x") + kHex[uc >> 4] + kHex[uc & 15]);
    }
    src_.fail(loc, std::string("unexpected character '") + c + "'");
  }

  void number(Loc loc) {
    size_t begin = pos_;
    bool hex = text_.substr(pos_, 2) == "0x" || text_.substr(pos_, 2) == "0X";
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      bool sign = (c == '+' || c == '-') && !hex && pos_ > begin &&
                  (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E');
      if (!(is_name_start(c) || is_digit(c) || c == '.' || sign)) break;
      advance(1);
    }
    std::string_view lexeme = text_.substr(begin, pos_ - begin);
    Token t;
    t.loc = loc;
    t.end = here();
    t.text = std::string(lexeme);
    auto bad = [&] { src_.fail(loc, "invalid number literal '" + std::string(lexeme) + "'"); };
    if (hex) {
      std::string_view digits = lexeme.substr(2);
      if (digits.empty()) bad();
      auto [end, ec] =
          std::from_chars(digits.data(), digits.data() + digits.size(), t.int_value, 16);
      if (ec == std::errc::result_out_of_range) src_.fail(loc, "integer literal is too large");
      if (ec != std::errc() || end != digits.data() + digits.size()) bad();
      t.kind = Tok::kInt;
    } else if (lexeme.find_first_not_of("0123456789") == std::string_view::npos) {
      if (lexeme.size() > 1 && lexeme[0] == '0' &&
          lexeme.find_first_not_of('0') != std::string_view::npos) {
        src_.fail(loc, "leading zeros in a decimal integer literal are not allowed");
      }
      auto [end, ec] = std::from_chars(lexeme.data(), lexeme.data() + lexeme.size(), t.int_value);
      if (ec == std::errc::result_out_of_range) src_.fail(loc, "integer literal is too large");
      if (ec != std::errc() || end != lexeme.data() + lexeme.size()) bad();
      t.kind = Tok::kInt;
    } else {
      if (lexeme.find_first_not_of("0123456789.eE+-") != std::string_view::npos) bad();
      auto [end, ec] = std::from_chars(lexeme.data(), lexeme.data() + lexeme.size(), t.float_value,
                                       std::chars_format::general);
      if (ec == std::errc::result_out_of_range) {
        src_.fail(loc, "floating literal is out of range; write T.float64(\"inf\") for infinity");
      }
      if (ec != std::errc() || end != lexeme.data() + lexeme.size()) bad();
      t.kind = Tok::kFloat;
    }
    tokens_.push_back(std::move(t));
  }

  void string(Loc loc) {
    char quote = text_[pos_];
    bool triple = text_.substr(pos_, 3) == std::string(3, quote);
    advance(triple ? 3 : 1);
    std::string value;
    while (true) {
      if (pos_ >= text_.size()) src_.fail(loc, "unterminated string literal");
      char c = text_[pos_];
      if (c == quote && (!triple || text_.substr(pos_, 3) == std::string(3, quote))) {
        advance(triple ? 3 : 1);
        break;
      }
      if (c == '\n') {
        if (!triple) src_.fail(loc, "unterminated string literal");
        value += c;
        newline_char();
        continue;
      }
      if (c != '\\') {
        value += c;
        advance(1);
        continue;
      }
      if (pos_ + 1 >= text_.size()) src_.fail(loc, "unterminated string literal");
      char e = text_[pos_ + 1];
      Loc escape_loc = here();
      advance(2);
      switch (e) {
        case 'n':
          value += '\n';
          break;
        case 't':
          value += '\t';
          break;
        case 'r':
          value += '\r';
          break;
        case '0':
          value += '\0';
          break;
        case '\\':
        case '\'':
        case '"':
          value += e;
          break;
        case '\n':
          --pos_;
          newline_char();
          break;
        case 'x': {
          auto hex = [&](size_t i) -> int {
            if (pos_ + i >= text_.size()) return -1;
            char h = text_[pos_ + i];
            if (h >= '0' && h <= '9') return h - '0';
            if (h >= 'a' && h <= 'f') return h - 'a' + 10;
            if (h >= 'A' && h <= 'F') return h - 'A' + 10;
            return -1;
          };
          int hi = hex(0);
          int lo = hex(1);
          if (hi < 0 || lo < 0)
            src_.fail(escape_loc, "invalid \\x escape; expected two hex digits");
          value += static_cast<char>(hi * 16 + lo);
          advance(2);
          break;
        }
        default:
          src_.fail(escape_loc, std::string("unknown escape sequence '\\") + e + "'");
      }
    }
    Token t;
    t.kind = Tok::kString;
    t.text = std::move(value);
    t.loc = loc;
    t.end = here();
    tokens_.push_back(std::move(t));
  }

  const Source& src_;
  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
  std::vector<size_t> indents_;
  std::vector<std::pair<char, Loc>> brackets_;
  std::vector<Token> tokens_;
};

// =============================================================================================
// Syntax tree
// =============================================================================================

enum class AK {
  kName,
  kAttr,       // items[0].text
  kCall,       // items[0](items[1:], keywords)
  kSubscript,  // items[0][items[1:]]
  kBinary,     // items[0] text items[1]
  kUnary,      // text items[0]  ("-", "+", "~", "not")
  kBoolOp,     // items[0] and/or items[1]
  kCompare,    // items[0] ops[0] items[1] ops[1] items[2] ...
  kInt,
  kFloat,
  kString,
  kBool,
  kNone,
  kTuple,
  kList,
  kDict,  // items: key0, value0, key1, value1, ...
};

struct Ast;
using AstPtr = std::unique_ptr<Ast>;

struct Keyword {
  std::string name;
  Loc loc;
  AstPtr value;
};

struct Ast {
  AK kind;
  Loc loc;     // start of the expression
  Loc op_loc;  // operator (binary, compare, bool op)
  std::string text;
  uint64_t int_value = 0;
  double float_value = 0;
  bool bool_value = false;
  int depth = 1;
  std::vector<AstPtr> items;
  std::vector<Keyword> keywords;
  std::vector<std::string> ops;
  std::vector<Loc> op_locs;
};

enum class SK { kExpr, kAssign, kAnnAssign, kFor, kWhile, kIf, kWith, kAssert, kReturn, kPass };

struct StmtAst;
using StmtPtr = std::unique_ptr<StmtAst>;

struct StmtAst {
  SK kind;
  Loc loc;
  AstPtr target;      // assignment target; for-loop targets (kTuple of names); with `as` name
  AstPtr annotation;  // annotated assignment
  AstPtr value;       // expression, assigned value, loop iterable, condition, with item
  AstPtr message;     // assert message
  std::vector<StmtPtr> body;
  std::vector<StmtPtr> orelse;
  bool has_else = false;
};

struct Param {
  std::string name;
  Loc loc;
  AstPtr annotation;
};

struct FuncAst {
  Loc loc;
  std::vector<AstPtr> decorators;
  std::string name;
  Loc name_loc;
  std::vector<Param> params;
  AstPtr ret;
  std::vector<StmtPtr> body;
};

struct FileAst {
  bool is_module = false;
  Loc class_loc;
  std::string class_name;
  std::vector<AstPtr> class_decorators;
  std::vector<FuncAst> funcs;
};

// =============================================================================================
// Syntax parser
// =============================================================================================

bool is_keyword(const std::string& s) {
  static const char* kWords[] = {
      "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
      "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
      "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};
  for (const char* w : kWords) {
    if (s == w) return true;
  }
  return false;
}

class SyntaxParser {
 public:
  SyntaxParser(const Source& src, std::vector<Token> tokens)
      : src_(src), tokens_(std::move(tokens)) {}

  FileAst file() {
    FileAst out;
    skip_newlines();
    while (is_name("from") || is_name("import")) import_line();
    if (!is_op("@")) {
      fail_here("expected a decorated definition: @I.ir_module class or @T.prim_func def");
    }
    std::vector<AstPtr> decorators = decorator_list();
    if (is_name("class")) {
      out.is_module = true;
      out.class_loc = peek().loc;
      out.class_decorators = std::move(decorators);
      next();
      out.class_name = expect_name("a class name");
      if (accept_op("(")) expect_op(")");
      expect_op(":");
      expect(Tok::kNewline, "a new line after 'class ...:'");
      if (peek().kind != Tok::kIndent) {
        src_.fail(tokens_[pos_ - 1].loc, "expected an indented block after 'class'");
      }
      next();
      while (peek().kind != Tok::kDedent && peek().kind != Tok::kEnd) {
        if (is_name("pass")) {
          next();
          expect(Tok::kNewline, "a new line");
          continue;
        }
        if (!is_op("@")) fail_here("expected a @T.prim_func function in the module class");
        std::vector<AstPtr> fdecorators = decorator_list();
        out.funcs.push_back(funcdef(std::move(fdecorators)));
      }
      if (peek().kind == Tok::kDedent) next();
    } else if (is_name("def")) {
      out.funcs.push_back(funcdef(std::move(decorators)));
    } else {
      fail_here("expected 'class' or 'def' after the decorator");
    }
    skip_newlines();
    if (peek().kind != Tok::kEnd) {
      fail_here("expected the end of the text: one @I.ir_module class or one @T.prim_func");
    }
    return out;
  }

 private:
  // --- token helpers --------------------------------------------------------------------------
  const Token& peek(size_t ahead = 0) const {
    size_t i = std::min(pos_ + ahead, tokens_.size() - 1);
    return tokens_[i];
  }
  const Token& next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool is_op(const char* op, size_t ahead = 0) const {
    return peek(ahead).kind == Tok::kOp && peek(ahead).text == op;
  }
  bool is_name(const char* name) const { return peek().kind == Tok::kName && peek().text == name; }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool accept_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  [[noreturn]] void fail_here(const std::string& message) const { src_.fail(peek().loc, message); }
  std::string describe(const Token& t) const {
    switch (t.kind) {
      case Tok::kName:
        return "'" + t.text + "'";
      case Tok::kInt:
      case Tok::kFloat:
        return "number '" + t.text + "'";
      case Tok::kString:
        return "a string";
      case Tok::kOp:
        return "'" + t.text + "'";
      case Tok::kNewline:
        return "the end of the line";
      case Tok::kIndent:
        return "an indented block";
      case Tok::kDedent:
        return "the end of the block";
      case Tok::kEnd:
        return "the end of the text";
    }
    return "?";
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) fail_here(std::string("expected '") + op + "', got " + describe(peek()));
  }
  void expect(Tok kind, const char* what) {
    if (peek().kind != kind)
      fail_here(std::string("expected ") + what + ", got " + describe(peek()));
    next();
  }
  std::string expect_name(const char* what) {
    if (peek().kind != Tok::kName || is_keyword(peek().text)) {
      fail_here(std::string("expected ") + what + ", got " + describe(peek()));
    }
    return next().text;
  }
  void skip_newlines() {
    while (peek().kind == Tok::kNewline) next();
  }

  // Only the header lines TVMScript itself writes are accepted.
  void import_line() {
    Loc loc = peek().loc;
    std::string text;
    while (peek().kind != Tok::kNewline && peek().kind != Tok::kEnd) {
      bool glue = text.empty() || peek().text == "." || text.back() == '.';
      text += glue ? "" : " ";
      text += next().text;
    }
    static const char* kAllowed[] = {"from tvm.script import ir as I",
                                     "from tvm.script import tir as T",
                                     "from tvm.script import tirx as T", "import tvm"};
    bool ok = false;
    for (const char* allowed : kAllowed) ok = ok || text == allowed;
    if (!ok)
      src_.fail(loc,
                "unsupported import; only 'from tvm.script import tir as T' and "
                "'from tvm.script import ir as I' may appear");
    skip_newlines();
  }

  std::vector<AstPtr> decorator_list() {
    std::vector<AstPtr> out;
    while (accept_op("@")) {
      out.push_back(expr());
      expect(Tok::kNewline, "a new line after the decorator");
      skip_newlines();
    }
    return out;
  }

  FuncAst funcdef(std::vector<AstPtr> decorators) {
    FuncAst f;
    f.loc = peek().loc;
    f.decorators = std::move(decorators);
    if (!accept_name("def")) fail_here("expected 'def' after the decorator");
    f.name_loc = peek().loc;
    f.name = expect_name("a function name");
    expect_op("(");
    while (!is_op(")")) {
      Param p;
      p.loc = peek().loc;
      if (is_op("*") || is_op("**")) fail_here("*args and **kwargs are not supported");
      p.name = expect_name("a parameter name");
      if (!is_op(":")) {
        src_.fail(p.loc, "parameter '" + p.name +
                             "' needs a type annotation (T.int32, "
                             "T.handle, T.Buffer(...))");
      }
      next();
      p.annotation = expr();
      if (is_op("=")) fail_here("default parameter values are not supported");
      f.params.push_back(std::move(p));
      if (!accept_op(",")) break;
    }
    expect_op(")");
    if (accept_op("->")) f.ret = expr();
    f.body = suite("def");
    return f;
  }

  /// The block after a ':' header: an indented block, or simple statements on the same line.
  std::vector<StmtPtr> suite(const char* keyword) {
    expect_op(":");
    std::vector<StmtPtr> out;
    if (peek().kind != Tok::kNewline) {
      simple_statements(&out);
      return out;
    }
    const Token& newline = next();
    if (peek().kind != Tok::kIndent) {
      src_.fail(newline.loc, std::string("expected an indented block after '") + keyword + "'");
    }
    next();
    if (++block_depth_ > kMaxNesting) fail_here("blocks are nested too deeply");
    while (peek().kind != Tok::kDedent && peek().kind != Tok::kEnd) statement(&out);
    --block_depth_;
    if (peek().kind == Tok::kDedent) next();
    return out;
  }

  void statement(std::vector<StmtPtr>* out) {
    const Token& t = peek();
    if (t.kind == Tok::kIndent) fail_here("unexpected indent");
    if (t.kind == Tok::kName) {
      const std::string& w = t.text;
      if (w == "if") {
        out->push_back(if_stmt());
        return;
      }
      if (w == "while") {
        auto s = make_stmt(SK::kWhile);
        next();
        s->value = expr();
        s->body = suite("while");
        if (is_name("else")) fail_here("'while ... else' is not supported");
        out->push_back(std::move(s));
        return;
      }
      if (w == "for") {
        out->push_back(for_stmt());
        return;
      }
      if (w == "with") {
        auto s = make_stmt(SK::kWith);
        next();
        s->value = expr();
        if (accept_name("as")) {
          Loc loc = peek().loc;
          auto name = std::make_unique<Ast>();
          name->kind = AK::kName;
          name->loc = loc;
          name->text = expect_name("a name after 'as'");
          s->target = std::move(name);
        }
        if (is_op(",")) fail_here("only one context manager per 'with' is supported");
        s->body = suite("with");
        out->push_back(std::move(s));
        return;
      }
      if (w == "elif" || w == "else") fail_here("'" + w + "' without a matching 'if'");
      if (w == "def" || w == "class") fail_here("nested '" + w + "' is not supported");
      if (w == "try" || w == "except" || w == "finally" || w == "async") {
        fail_here("'" + w + "' is not supported in the TVMScript subset");
      }
    }
    if (t.kind == Tok::kOp && t.text == "@") {
      fail_here("decorators are only allowed on the module's functions");
    }
    simple_statements(out);
  }

  void simple_statements(std::vector<StmtPtr>* out) {
    while (true) {
      out->push_back(simple_statement());
      if (!accept_op(";")) break;
      if (peek().kind == Tok::kNewline) break;
    }
    if (peek().kind != Tok::kNewline) {
      fail_here("expected the end of the statement, got " + describe(peek()));
    }
    next();
  }

  StmtPtr make_stmt(SK kind) {
    auto s = std::make_unique<StmtAst>();
    s->kind = kind;
    s->loc = peek().loc;
    return s;
  }

  StmtPtr if_stmt() {
    auto s = make_stmt(SK::kIf);
    next();  // 'if' or 'elif'
    s->value = expr();
    s->body = suite("if");
    if (is_name("elif")) {
      s->has_else = true;
      s->orelse.push_back(if_stmt());
    } else if (is_name("else")) {
      next();
      s->has_else = true;
      s->orelse = suite("else");
    }
    return s;
  }

  StmtPtr for_stmt() {
    auto s = make_stmt(SK::kFor);
    next();
    auto targets = std::make_unique<Ast>();
    targets->kind = AK::kTuple;
    targets->loc = peek().loc;
    bool paren = accept_op("(");
    do {
      if (is_name("in")) break;
      auto name = std::make_unique<Ast>();
      name->kind = AK::kName;
      name->loc = peek().loc;
      name->text = expect_name("a loop variable name");
      targets->items.push_back(std::move(name));
    } while (accept_op(","));
    if (paren) expect_op(")");
    if (targets->items.empty()) fail_here("expected a loop variable name");
    if (!accept_name("in")) fail_here("expected 'in', got " + describe(peek()));
    s->target = std::move(targets);
    s->value = expr();
    s->body = suite("for");
    if (is_name("else")) fail_here("'for ... else' is not supported");
    return s;
  }

  StmtPtr simple_statement() {
    const Token& t = peek();
    if (t.kind == Tok::kName) {
      const std::string& w = t.text;
      if (w == "pass") {
        auto s = make_stmt(SK::kPass);
        next();
        return s;
      }
      if (w == "return") {
        auto s = make_stmt(SK::kReturn);
        next();
        if (peek().kind == Tok::kNewline || is_op(";")) {
          src_.fail(s->loc, "'return' needs a value (T.ret); a void function just ends");
        }
        s->value = expr();
        return s;
      }
      if (w == "assert") {
        auto s = make_stmt(SK::kAssert);
        next();
        s->value = expr();
        if (accept_op(",")) s->message = expr();
        return s;
      }
      if (w == "break" || w == "continue" || w == "del" || w == "global" || w == "nonlocal" ||
          w == "raise" || w == "import" || w == "from" || w == "yield" || w == "lambda") {
        fail_here("'" + w + "' is not supported in the TVMScript subset");
      }
    }
    Loc loc = t.loc;
    AstPtr first = expr_list();
    if (is_op(":")) {
      auto s = std::make_unique<StmtAst>();
      s->kind = SK::kAnnAssign;
      s->loc = loc;
      next();
      s->target = std::move(first);
      s->annotation = expr();
      if (!accept_op("=")) {
        src_.fail(s->target->loc, "an annotated variable needs a value: name: T.int32 = value");
      }
      s->value = expr();
      return s;
    }
    if (is_op("=")) {
      auto s = std::make_unique<StmtAst>();
      s->kind = SK::kAssign;
      s->loc = loc;
      next();
      s->target = std::move(first);
      s->value = expr_list();
      if (is_op("=")) fail_here("chained assignment is not supported");
      return s;
    }
    for (const char* aug : {"+=", "-=", "*=", "/=", "%=", ":="}) {
      if (is_op(aug)) fail_here(std::string("'") + aug + "' is not supported");
    }
    auto s = std::make_unique<StmtAst>();
    s->kind = SK::kExpr;
    s->loc = loc;
    s->value = std::move(first);
    return s;
  }

  // --- expressions ----------------------------------------------------------------------------
  AstPtr node(AK kind, Loc loc) {
    auto a = std::make_unique<Ast>();
    a->kind = kind;
    a->loc = loc;
    return a;
  }
  AstPtr finish(AstPtr a) {
    int depth = 0;
    for (const AstPtr& item : a->items) depth = std::max(depth, item->depth);
    for (const Keyword& kw : a->keywords) depth = std::max(depth, kw.value->depth);
    a->depth = depth + 1;
    if (a->depth > kMaxExprDepth) {  // the IR's limit, also for operator chains (a + b + c ...)
      src_.fail(a->loc, "expression nesting depth " + std::to_string(a->depth) +
                            " exceeds the limit of " + std::to_string(kMaxExprDepth) +
                            "; bind parts of the expression to variables");
    }
    return a;
  }

  struct DepthGuard {
    SyntaxParser* p;
    explicit DepthGuard(SyntaxParser* parser) : p(parser) {
      if (++p->expr_depth_ > kMaxNesting) p->fail_here("expression is nested too deeply");
    }
    ~DepthGuard() { --p->expr_depth_; }
  };

  /// `a, b` without brackets is a tuple (statement level).
  AstPtr expr_list() {
    Loc loc = peek().loc;
    AstPtr first = expr();
    if (!is_op(",")) return first;
    AstPtr tuple = node(AK::kTuple, loc);
    tuple->items.push_back(std::move(first));
    while (accept_op(",")) {
      if (is_op("=") || is_op(":") || peek().kind == Tok::kNewline) break;
      tuple->items.push_back(expr());
    }
    return finish(std::move(tuple));
  }

  AstPtr expr() {
    DepthGuard guard(this);
    AstPtr e = or_test();
    if (is_name("if")) {
      fail_here(
          "conditional expressions (a if c else b) are not supported; use T.Select or "
          "T.if_then_else");
    }
    if (is_op(":=")) fail_here("':=' is not supported");
    return e;
  }

  AstPtr bool_op(const char* word, AstPtr (SyntaxParser::*operand)()) {
    AstPtr left = (this->*operand)();
    while (is_name(word)) {
      Loc op_loc = next().loc;
      AstPtr n = node(AK::kBoolOp, left->loc);
      n->op_loc = op_loc;
      n->text = word;
      n->items.push_back(std::move(left));
      n->items.push_back((this->*operand)());
      left = finish(std::move(n));
    }
    return left;
  }
  AstPtr or_test() { return bool_op("or", &SyntaxParser::and_test); }
  AstPtr and_test() { return bool_op("and", &SyntaxParser::not_test); }
  AstPtr not_test() {
    if (is_name("not")) {
      DepthGuard guard(this);
      Loc loc = next().loc;
      AstPtr n = node(AK::kUnary, loc);
      n->op_loc = loc;
      n->text = "not";
      n->items.push_back(not_test());
      return finish(std::move(n));
    }
    return comparison();
  }

  AstPtr comparison() {
    AstPtr first = bitor_expr();
    AstPtr cmp;
    while (true) {
      std::string op;
      const Token& t = peek();
      if (t.kind == Tok::kOp && (t.text == "<" || t.text == ">" || t.text == "==" ||
                                 t.text == "!=" || t.text == "<=" || t.text == ">=")) {
        op = t.text;
      } else if (t.kind == Tok::kName &&
                 (t.text == "in" || t.text == "is" || (t.text == "not" && peek(1).text == "in"))) {
        fail_here("'" + t.text + "' comparisons are not supported");
      } else {
        break;
      }
      Loc op_loc = next().loc;
      if (!cmp) {
        cmp = node(AK::kCompare, first->loc);
        cmp->items.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->op_locs.push_back(op_loc);
      cmp->items.push_back(bitor_expr());
    }
    if (!cmp) return first;
    cmp->op_loc = cmp->op_locs.front();
    return finish(std::move(cmp));
  }

  AstPtr binary_level(std::initializer_list<const char*> ops, AstPtr (SyntaxParser::*operand)()) {
    AstPtr left = (this->*operand)();
    while (true) {
      const char* matched = nullptr;
      for (const char* op : ops) {
        if (is_op(op)) matched = op;
      }
      if (matched == nullptr) return left;
      Loc op_loc = next().loc;
      AstPtr n = node(AK::kBinary, left->loc);
      n->op_loc = op_loc;
      n->text = matched;
      n->items.push_back(std::move(left));
      n->items.push_back((this->*operand)());
      left = finish(std::move(n));
    }
  }
  AstPtr bitor_expr() { return binary_level({"|"}, &SyntaxParser::bitxor_expr); }
  AstPtr bitxor_expr() { return binary_level({"^"}, &SyntaxParser::bitand_expr); }
  AstPtr bitand_expr() { return binary_level({"&"}, &SyntaxParser::shift_expr); }
  AstPtr shift_expr() { return binary_level({"<<", ">>"}, &SyntaxParser::arith_expr); }
  AstPtr arith_expr() { return binary_level({"+", "-"}, &SyntaxParser::term); }
  AstPtr term() { return binary_level({"*", "/", "//", "%", "@"}, &SyntaxParser::factor); }

  AstPtr factor() {
    if (is_op("-") || is_op("+") || is_op("~")) {
      DepthGuard guard(this);
      const Token& t = next();
      AstPtr n = node(AK::kUnary, t.loc);
      n->op_loc = t.loc;
      n->text = t.text;
      n->items.push_back(factor());
      return finish(std::move(n));
    }
    return power();
  }

  AstPtr power() {
    AstPtr base = primary();
    if (is_op("**")) {
      Loc op_loc = next().loc;
      AstPtr n = node(AK::kBinary, base->loc);
      n->op_loc = op_loc;
      n->text = "**";
      n->items.push_back(std::move(base));
      n->items.push_back(factor());
      return finish(std::move(n));
    }
    return base;
  }

  AstPtr primary() {
    AstPtr e = atom();
    while (true) {
      if (is_op(".")) {
        next();
        AstPtr n = node(AK::kAttr, e->loc);
        n->op_loc = peek().loc;
        if (peek().kind != Tok::kName) fail_here("expected an attribute name after '.'");
        n->text = next().text;
        n->items.push_back(std::move(e));
        e = finish(std::move(n));
      } else if (is_op("(")) {
        DepthGuard guard(this);
        next();
        AstPtr n = node(AK::kCall, e->loc);
        n->op_loc = e->loc;
        n->items.push_back(std::move(e));
        call_arguments(n.get());
        e = finish(std::move(n));
      } else if (is_op("[")) {
        DepthGuard guard(this);
        next();
        AstPtr n = node(AK::kSubscript, e->loc);
        n->items.push_back(std::move(e));
        if (is_op("]")) fail_here("expected an index");
        while (!is_op("]")) {
          if (is_op(":")) fail_here("slices are not supported; use T.Ramp for vector indices");
          n->items.push_back(expr());
          if (is_op(":")) fail_here("slices are not supported; use T.Ramp for vector indices");
          if (!accept_op(",")) break;
        }
        expect_op("]");
        e = finish(std::move(n));
      } else {
        return e;
      }
    }
  }

  void call_arguments(Ast* call) {
    bool seen_keyword = false;
    while (!is_op(")")) {
      if (is_op("*") || is_op("**")) fail_here("argument unpacking is not supported");
      if (peek().kind == Tok::kName && is_op("=", 1)) {
        Keyword kw;
        kw.loc = peek().loc;
        kw.name = next().text;
        next();  // '='
        kw.value = expr();
        for (const Keyword& other : call->keywords) {
          if (other.name == kw.name)
            src_.fail(kw.loc, "keyword argument '" + kw.name + "' repeated");
        }
        call->keywords.push_back(std::move(kw));
        seen_keyword = true;
      } else {
        if (seen_keyword) fail_here("positional argument follows keyword argument");
        call->items.push_back(expr());
      }
      if (!accept_op(",")) break;
    }
    expect_op(")");
  }

  AstPtr atom() {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::kName: {
        if (t.text == "True" || t.text == "False") {
          AstPtr n = node(AK::kBool, t.loc);
          n->bool_value = t.text == "True";
          next();
          return n;
        }
        if (t.text == "None") {
          AstPtr n = node(AK::kNone, t.loc);
          next();
          return n;
        }
        if (t.text == "lambda") fail_here("lambda is not supported");
        if (is_keyword(t.text)) fail_here("invalid syntax: unexpected '" + t.text + "'");
        AstPtr n = node(AK::kName, t.loc);
        n->text = t.text;
        next();
        return n;
      }
      case Tok::kInt: {
        AstPtr n = node(AK::kInt, t.loc);
        n->int_value = t.int_value;
        n->text = t.text;
        next();
        return n;
      }
      case Tok::kFloat: {
        AstPtr n = node(AK::kFloat, t.loc);
        n->float_value = t.float_value;
        n->text = t.text;
        next();
        return n;
      }
      case Tok::kString: {
        AstPtr n = node(AK::kString, t.loc);
        while (peek().kind == Tok::kString) n->text += next().text;
        return n;
      }
      case Tok::kOp:
        break;
      default:
        fail_here("expected an expression, got " + describe(t));
    }
    Loc loc = t.loc;
    if (accept_op("(")) {
      DepthGuard guard(this);
      if (accept_op(")")) return node(AK::kTuple, loc);
      AstPtr first = expr();
      if (accept_op(")")) return first;  // parenthesized expression
      AstPtr tuple = node(AK::kTuple, loc);
      tuple->items.push_back(std::move(first));
      while (accept_op(",")) {
        if (is_op(")")) break;
        tuple->items.push_back(expr());
      }
      expect_op(")");
      return finish(std::move(tuple));
    }
    if (accept_op("[")) {
      DepthGuard guard(this);
      AstPtr list = node(AK::kList, loc);
      while (!is_op("]")) {
        list->items.push_back(expr());
        if (!accept_op(",")) break;
      }
      expect_op("]");
      return finish(std::move(list));
    }
    if (accept_op("{")) {
      DepthGuard guard(this);
      AstPtr dict = node(AK::kDict, loc);
      while (!is_op("}")) {
        dict->items.push_back(expr());
        expect_op(":");
        dict->items.push_back(expr());
        if (!accept_op(",")) break;
      }
      expect_op("}");
      return finish(std::move(dict));
    }
    fail_here("expected an expression, got " + describe(t));
  }

  const Source& src_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int expr_depth_ = 0;
  int block_depth_ = 0;
};

// =============================================================================================
// Lowering: syntax tree -> IR
// =============================================================================================

/// What a name stands for.
struct Entity {
  enum Kind { kVar, kBuffer, kEnvThread } kind = kVar;
  Var var;
  Buffer buffer;
  std::string tag;  // env threads
};

/// A lowered expression, or a bare literal whose dtype is not decided yet.
struct Value {
  enum Kind { kExpr, kInt, kFloat, kBool } kind = kExpr;
  Expr expr;
  bool negative = false;
  uint64_t magnitude = 0;
  double number = 0;
  bool flag = false;
  Loc loc;
};

/// Positional/keyword argument binding of a T.xxx call against a parameter list.
struct Slots {
  std::vector<const Ast*> args;  // one per parameter name; null when absent
  const Ast* operator[](size_t i) const { return args[i]; }
};

class Lowerer {
 public:
  explicit Lowerer(const Source& src) : src_(src) {}

  IRModule lower(const FileAst& file) {
    std::vector<std::pair<GlobalVar, PrimFunc>> functions;
    if (file.is_module) {
      module_decorator(file);
      class_name_ = file.class_name;
      for (const FuncAst& f : file.funcs) {
        if (functions_.count(f.name) != 0) {
          src_.fail(f.name_loc, "the module defines function '" + f.name + "' twice");
        }
        DataType ret = f.ret ? return_type(*f.ret) : DataType::Void();
        functions_.emplace(f.name, std::make_pair(GlobalVar::make(f.name), ret));
      }
    }
    for (const FuncAst& f : file.funcs) {
      PrimFunc func = function(f);
      GlobalVar gvar = file.is_module ? functions_.at(f.name).first : GlobalVar::make(f.name);
      functions.emplace_back(gvar, func);
    }
    return guard(file.class_loc, [&] { return IRModule::make(std::move(functions)); });
  }

 private:
  // --- errors ---------------------------------------------------------------------------------
  [[noreturn]] void fail(Loc loc, const std::string& message) const { src_.fail(loc, message); }

  /// Runs an IR constructor, turning its primjit::Error into a ParseError at `loc`.
  template <typename F>
  auto guard(Loc loc, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const ParseError&) {
      throw;
    } catch (const Error& e) {
      fail(loc, e.what());
    }
  }

  // --- names ----------------------------------------------------------------------------------
  // Names follow the blocks of the text, like the IR's scopes, with one difference: a name whose
  // block has ended still resolves (to its latest definition), as in Python. Using it there
  // builds IR with a variable out of scope, which the verifier reports; the parser's job is only
  // that every name refers to something defined earlier in the function.

  /// The innermost open definition of `name`, else its latest definition in a closed block.
  const Entity* lookup(const std::string& name) const {
    const Entity* found = nullptr;
    scopes_.for_each([&](const std::unordered_map<std::string, Entity>& frame) {
      auto it = frame.find(name);
      if (it != frame.end()) found = &it->second;
    });
    if (found != nullptr) return found;
    auto it = closed_.find(name);
    return it != closed_.end() ? &it->second : nullptr;
  }

  /// Runs `body` in a new block scope; its definitions stay resolvable after it ends.
  template <typename F>
  auto scoped(F&& body) -> decltype(body()) {
    return scopes_.with_new_scope([&]() -> decltype(body()) {
      struct Close {
        Lowerer* self;
        ~Close() {
          for (const auto& [name, entity] : self->scopes_.current()) self->closed_[name] = entity;
        }
      } close{this};
      return body();
    });
  }

  /// A Bind to a name that already denotes a variable of the very same type binds that
  /// variable again (the verifier rejects the second definition); otherwise `fresh`. Printed
  /// text never does this for well-formed IR: its names are unique per function.
  Var rebound_or(const std::string& name, const Var& fresh) const {
    const Entity* e = lookup(name);
    if (e == nullptr || e->kind != Entity::kVar) return fresh;
    const VarNode* old = e->var.get();
    bool same = old->dtype == fresh->dtype && old->pointee == fresh->pointee &&
                old->storage_scope == fresh->storage_scope &&
                old->is_size_var == fresh->is_size_var;
    return same ? e->var : fresh;
  }
  void define(const std::string& name, Loc loc, Entity entity) {
    if (name == "T" || name == "I") fail(loc, "'" + name + "' cannot be used as a name");
    scopes_.current()[name] = std::move(entity);
  }
  void define_var(const std::string& name, Loc loc, const Var& var) {
    Entity e;
    e.var = var;
    define(name, loc, std::move(e));
  }
  void define_buffer(const std::string& name, Loc loc, const Buffer& buffer) {
    Entity e;
    e.kind = Entity::kBuffer;
    e.buffer = buffer;
    define(name, loc, std::move(e));
  }

  // --- small syntax-tree queries --------------------------------------------------------------
  /// `T.name` (or `I.name`): the attribute name, else nullopt.
  static std::optional<std::string> ns_attr(const Ast& a, const char* ns) {
    if (a.kind != AK::kAttr || a.items[0]->kind != AK::kName || a.items[0]->text != ns) {
      return std::nullopt;
    }
    return a.text;
  }
  /// For a call `T.name(...)`: "name", else nullopt.
  static std::optional<std::string> t_call(const Ast& a) {
    if (a.kind != AK::kCall) return std::nullopt;
    return ns_attr(*a.items[0], "T");
  }
  static size_t num_args(const Ast& call) { return call.items.size() - 1; }
  static const Ast& arg(const Ast& call, size_t i) { return *call.items[i + 1]; }

  static std::string plural(size_t n, const char* word) {
    std::string w = word;
    if (n != 1) w = w == "index" ? "indices" : w + "s";
    return std::to_string(n) + " " + w;
  }

  /// Binds the arguments of `call` to `params` (positional in order, or by keyword). The first
  /// `positional` parameters may be given positionally, the rest only by keyword; the first
  /// `required` ones must be present.
  Slots bind(const Ast& call, const std::string& fname, std::initializer_list<const char*> params,
             size_t required, size_t positional = SIZE_MAX) {
    std::vector<const char*> names(params);
    positional = std::min(positional, names.size());
    Slots slots;
    slots.args.assign(names.size(), nullptr);
    size_t n = num_args(call);
    if (n > positional) {
      fail(call.loc,
           fname + " takes " + (positional == required ? "" : "at most ") +
               plural(positional, positional < names.size() ? "positional argument" : "argument") +
               ", got " + std::to_string(n));
    }
    for (size_t i = 0; i < n; ++i) slots.args[i] = &arg(call, i);
    for (const Keyword& kw : call.keywords) {
      auto it =
          std::find_if(names.begin(), names.end(), [&](const char* p) { return kw.name == p; });
      if (it == names.end()) {
        fail(kw.loc, fname + " got an unexpected keyword argument '" + kw.name + "'");
      }
      size_t index = static_cast<size_t>(it - names.begin());
      if (slots.args[index] != nullptr) {
        fail(kw.loc, fname + " got multiple values for argument '" + kw.name + "'");
      }
      slots.args[index] = kw.value.get();
    }
    for (size_t i = 0; i < required; ++i) {
      if (slots.args[i] == nullptr) {
        fail(call.loc, fname + " is missing argument '" + names[i] + "'");
      }
    }
    return slots;
  }

  void no_keywords(const Ast& call, const std::string& fname) {
    if (!call.keywords.empty()) {
      fail(call.keywords.front().loc, fname + " takes no keyword arguments");
    }
  }

  const std::string& string_arg(const Ast* a, const char* what) {
    if (a->kind != AK::kString) fail(a->loc, std::string("expected a string for ") + what);
    return a->text;
  }
  DataType dtype_arg(const Ast* a) {
    const std::string& text = string_arg(a, "the dtype");
    return guard(a->loc, [&] { return DataType::parse(text); });
  }
  bool bool_arg(const Ast* a, const char* what) {
    if (a->kind != AK::kBool) fail(a->loc, std::string("expected True or False for ") + what);
    return a->bool_value;
  }
  /// An integer literal, possibly negative.
  std::optional<int64_t> int_literal(const Ast& a) {
    if (a.kind == AK::kInt && a.int_value <= static_cast<uint64_t>(INT64_MAX)) {
      return static_cast<int64_t>(a.int_value);
    }
    if (a.kind == AK::kUnary && a.text == "-" && a.items[0]->kind == AK::kInt &&
        a.items[0]->int_value <= (uint64_t{1} << 63)) {
      return static_cast<int64_t>(0 - a.items[0]->int_value);
    }
    return std::nullopt;
  }
  int int_arg(const Ast* a, const char* what) {
    std::optional<int64_t> v = int_literal(*a);
    if (!v || *v < INT32_MIN || *v > INT32_MAX) {
      fail(a->loc, std::string("expected an integer literal for ") + what);
    }
    return static_cast<int>(*v);
  }

  // --- literals and expressions ---------------------------------------------------------------
  Value value(const Ast& a) {
    Value v;
    v.loc = a.loc;
    switch (a.kind) {
      case AK::kInt:
        v.kind = Value::kInt;
        v.magnitude = a.int_value;
        return v;
      case AK::kFloat:
        v.kind = Value::kFloat;
        v.number = a.float_value;
        return v;
      case AK::kBool:
        v.kind = Value::kBool;
        v.flag = a.bool_value;
        return v;
      case AK::kUnary:
        if (a.text == "-" || a.text == "+") {
          Value inner = value(*a.items[0]);
          if (inner.kind == Value::kInt || inner.kind == Value::kFloat) {
            if (a.text == "-") {
              inner.negative = !inner.negative;
              inner.number = -inner.number;
            }
            inner.loc = a.loc;
            return inner;
          }
          if (inner.kind == Value::kBool) fail(a.loc, "unary '" + a.text + "' on a bool");
          if (a.text == "+") return inner;
          Expr x = inner.expr;
          v.expr = guard(a.op_loc, [&] {
            PRIMJIT_USER_CHECK(x.dtype().is_scalar())
                << "unary '-' needs a scalar operand, got " << x.dtype();
            return Sub::make(make_const(x.dtype(), 0), x);
          });
          return v;
        }
        break;
      default:
        break;
    }
    v.expr = lower_expr(a);
    return v;
  }

  Expr materialize(const Value& v, std::optional<DataType> hint) {
    if (v.kind == Value::kExpr) return v.expr;
    if (hint && hint->is_vector()) hint = hint->element_of();
    if (v.kind == Value::kBool) return IntImm::make(DataType::Bool(), v.flag ? 1 : 0);
    if (v.kind == Value::kFloat) {
      DataType t = hint ? *hint : DataType::Float(32);
      if (!t.is_floating()) {
        if (!hint)
          t = DataType::Float(32);
        else
          fail(v.loc, "floating literal where " + t.str() + " is expected");
      }
      return guard(v.loc, [&] { return FloatImm::make(t, v.number); });
    }
    DataType t =
        hint && (hint->is_int_or_bool() || hint->is_floating()) ? *hint : DataType::Int(32);
    if (t.is_floating()) {
      double d = static_cast<double>(v.magnitude);
      return guard(v.loc, [&] { return FloatImm::make(t, v.negative ? -d : d); });
    }
    int64_t x = 0;
    if (v.negative) {
      if (v.magnitude > (uint64_t{1} << 63)) fail(v.loc, "integer literal is too large");
      x = static_cast<int64_t>(0 - v.magnitude);
    } else if (v.magnitude > static_cast<uint64_t>(INT64_MAX) && !(t.is_uint() && t.bits() == 64)) {
      fail(v.loc, "integer literal does not fit in " + t.str());
    } else {
      x = static_cast<int64_t>(v.magnitude);
    }
    return guard(v.loc, [&] { return IntImm::make(t, x); });
  }

  Expr expr(const Ast& a, std::optional<DataType> hint = std::nullopt) {
    return materialize(value(a), hint);
  }

  /// Lowers two operands; a bare literal takes the other operand's dtype.
  std::pair<Expr, Expr> unify(const Ast& a, const Ast& b) {
    Value x = value(a);
    Value y = value(b);
    if (x.kind == Value::kExpr && y.kind != Value::kExpr) {
      return {x.expr, materialize(y, x.expr.dtype())};
    }
    if (y.kind == Value::kExpr && x.kind != Value::kExpr) {
      return {materialize(x, y.expr.dtype()), y.expr};
    }
    if (x.kind == Value::kExpr) return {x.expr, y.expr};
    std::optional<DataType> t;
    if (x.kind == Value::kFloat || y.kind == Value::kFloat) t = DataType::Float(32);
    return {materialize(x, t), materialize(y, t)};
  }

  Expr lower_expr(const Ast& a) {
    switch (a.kind) {
      case AK::kInt:
      case AK::kFloat:
      case AK::kBool:
        return materialize(value(a), std::nullopt);
      case AK::kString:
        return StringImm::make(a.text);
      case AK::kNone:
        fail(a.loc, "None is not a value here");
      case AK::kName:
        return name_expr(a);
      case AK::kAttr:
        return attr_expr(a);
      case AK::kSubscript:
        return load_expr(a);
      case AK::kBinary:
        return binary_expr(a);
      case AK::kUnary:
        if (a.text == "not") {
          Expr x = expr(*a.items[0], DataType::Bool());
          return guard(a.op_loc, [&] { return Not::make(x); });
        }
        if (a.text == "~") fail(a.op_loc, "operator '~' is not supported; use T.bitwise_not(x)");
        return materialize(value(a), std::nullopt);
      case AK::kBoolOp: {
        Expr x = expr(*a.items[0], DataType::Bool());
        Expr y = expr(*a.items[1], DataType::Bool());
        return guard(a.op_loc, [&] { return a.text == "and" ? And::make(x, y) : Or::make(x, y); });
      }
      case AK::kCompare: {
        if (a.ops.size() > 1) {
          fail(a.op_locs[1], "chained comparisons are not supported; add parentheses");
        }
        auto [x, y] = unify(*a.items[0], *a.items[1]);
        const std::string& op = a.ops[0];
        return guard(a.op_loc, [&, x = x, y = y] {
          if (op == "==") return EQ::make(x, y);
          if (op == "!=") return NE::make(x, y);
          if (op == "<") return LT::make(x, y);
          if (op == "<=") return LE::make(x, y);
          if (op == ">") return GT::make(x, y);
          return GE::make(x, y);
        });
      }
      case AK::kCall:
        return call_expr(a);
      case AK::kTuple:
        fail(a.loc, "a tuple is not a value here");
      case AK::kList:
        fail(a.loc, "a list is not a value here");
      case AK::kDict:
        fail(a.loc, "a dict is not a value here");
    }
    fail(a.loc, "unsupported expression");
  }

  Expr name_expr(const Ast& a) {
    if (a.text == "T" || a.text == "I") fail(a.loc, "'" + a.text + "' is a namespace, not a value");
    const Entity* e = lookup(a.text);
    if (e == nullptr) {
      if (!class_name_.empty() && a.text == class_name_) {
        fail(a.loc, "'" + a.text + "' must be followed by a function call: " + a.text + ".f(...)");
      }
      fail(a.loc, "undefined name '" + a.text + "'");
    }
    if (e->kind == Entity::kBuffer) {
      fail(a.loc, "buffer '" + a.text + "' is not a value; index it (" + a.text + "[i]) or use " +
                      a.text + ".data");
    }
    return e->var;
  }

  Expr attr_expr(const Ast& a) {
    const Ast& object = *a.items[0];
    if (object.kind == AK::kName && object.text == "T") {
      fail(a.loc, "T." + a.text + " must be called: T." + a.text + "(...)");
    }
    if (object.kind == AK::kName) {
      const Entity* e = lookup(object.text);
      if (e != nullptr && e->kind == Entity::kBuffer) {
        if (a.text == "data") return e->buffer->data;
        fail(a.op_loc, "unknown buffer attribute '" + a.text + "'; only .data is supported");
      }
      if (e == nullptr && !class_name_.empty() && object.text == class_name_) {
        fail(a.loc, "a module function must be called: " + object.text + "." + a.text + "(...)");
      }
      if (e == nullptr && object.text != "I")
        fail(object.loc, "undefined name '" + object.text + "'");
    }
    fail(a.op_loc, "unsupported attribute '" + a.text + "'");
  }

  Expr load_expr(const Ast& a) {
    Buffer buffer = buffer_name(*a.items[0]);
    std::vector<Expr> idx = indices(a);
    return guard(a.loc, [&] { return BufferLoad::make(buffer, idx); });
  }

  Buffer buffer_name(const Ast& a) {
    if (a.kind != AK::kName) fail(a.loc, "only buffers can be indexed");
    const Entity* e = lookup(a.text);
    if (e == nullptr) fail(a.loc, "undefined name '" + a.text + "'");
    if (e->kind != Entity::kBuffer) fail(a.loc, "'" + a.text + "' is not a buffer");
    return e->buffer;
  }

  std::vector<Expr> indices(const Ast& subscript) {
    std::vector<Expr> out;
    if (subscript.items.size() == 2 && subscript.items[1]->kind == AK::kTuple) {
      const Ast& tuple = *subscript.items[1];
      for (const AstPtr& item : tuple.items) out.push_back(expr(*item, DataType::Int(32)));
      return out;
    }
    for (size_t i = 1; i < subscript.items.size(); ++i) {
      out.push_back(expr(*subscript.items[i], DataType::Int(32)));
    }
    return out;
  }

  Expr binary_expr(const Ast& a) {
    const std::string& op = a.text;
    static const std::map<std::string, const char*> kBitwise = {
        {"&", "T.bitwise_and(a, b)"}, {"|", "T.bitwise_or(a, b)"},   {"^", "T.bitwise_xor(a, b)"},
        {"<<", "T.shift_left(a, b)"}, {">>", "T.shift_right(a, b)"}, {"**", "T.pow(a, b)"}};
    if (auto it = kBitwise.find(op); it != kBitwise.end()) {
      fail(a.op_loc, "operator '" + op + "' is not supported; use " + it->second);
    }
    if (op == "@") fail(a.op_loc, "operator '@' is not supported");
    auto [x, y] = unify(*a.items[0], *a.items[1]);
    if (op == "/" && !x.dtype().is_floating()) {
      fail(a.op_loc, "'/' is true division and needs floating operands, got " + x.dtype().str() +
                         "; use '//' (floor division) or T.truncdiv(a, b) for integers");
    }
    return guard(a.op_loc, [&, x = x, y = y] {
      if (op == "+") return Add::make(x, y);
      if (op == "-") return Sub::make(x, y);
      if (op == "*") return Mul::make(x, y);
      if (op == "/") return Div::make(x, y);
      if (op == "//") return FloorDiv::make(x, y);
      return FloorMod::make(x, y);
    });
  }

  // --- calls in expressions -------------------------------------------------------------------
  Expr call_expr(const Ast& a) {
    const Ast& func = *a.items[0];
    if (std::optional<std::string> name = ns_attr(func, "T")) return t_call_expr(a, *name);
    if (func.kind == AK::kAttr && func.items[0]->kind == AK::kName && !class_name_.empty() &&
        func.items[0]->text == class_name_ && lookup(class_name_) == nullptr) {
      return module_call(a, func.text);
    }
    if (func.kind == AK::kName) {
      if (func.text == "range") fail(a.loc, "range(...) is only allowed as a for-loop iterable");
      if (lookup(func.text) == nullptr && func.text != "T") {
        fail(a.loc, "unknown function '" + func.text + "'");
      }
      fail(a.loc, "'" + func.text + "' is not callable");
    }
    if (func.kind == AK::kAttr && func.items[0]->kind == AK::kName && func.items[0]->text == "I") {
      fail(a.loc, "unknown I. call 'I." + func.text + "'");
    }
    fail(a.loc, "unsupported call");
  }

  Expr module_call(const Ast& a, const std::string& fname) {
    auto it = functions_.find(fname);
    if (it == functions_.end()) {
      fail(a.loc, "the module has no function '" + fname + "'");
    }
    no_keywords(a, class_name_ + "." + fname);
    std::vector<Expr> args;
    for (size_t i = 0; i < num_args(a); ++i) args.push_back(expr(arg(a, i)));
    auto [gvar, ret] = it->second;
    return guard(a.loc, [&, gvar = gvar, ret = ret] { return Call::make(ret, gvar, args); });
  }

  std::vector<Expr> rest_args(const Ast& a, size_t from) {
    std::vector<Expr> out;
    for (size_t i = from; i < num_args(a); ++i) out.push_back(expr(arg(a, i)));
    return out;
  }

  Expr t_call_expr(const Ast& a, const std::string& name) {
    const std::string fname = "T." + name;
    static const char* kStatementOnly[] = {
        "evaluate",     "launch_thread",  "env_thread",  "attr",     "func_attr",
        "match_buffer", "alloc_buffer",   "decl_buffer", "Buffer",   "Bind",
        "target",       "grid",           "serial",      "parallel", "vectorized",
        "unroll",       "thread_binding", "prim_func",   "handle"};
    for (const char* s : kStatementOnly) {
      if (name == s) fail(a.loc, fname + "(...) cannot be used inside an expression");
    }
    DataType dtype;
    if (DataType::try_parse(name, &dtype) && !dtype.is_void()) return typed_literal(a, dtype);
    if (name == "Cast") {
      Slots s = bind(a, fname, {"dtype", "value"}, 2);
      DataType t = dtype_arg(s[0]);
      Expr x = expr(*s[1]);
      return guard(a.loc, [&] { return Cast::make(t, x); });
    }
    if (name == "Select") {
      Slots s = bind(a, fname, {"condition", "true_value", "false_value"}, 3);
      Expr c = expr(*s[0], DataType::Bool());
      auto [x, y] = unify(*s[1], *s[2]);
      return guard(a.loc, [&, x = x, y = y] { return Select::make(c, x, y); });
    }
    if (name == "min" || name == "max" || name == "truncdiv" || name == "truncmod" ||
        name == "floordiv" || name == "floormod") {
      Slots s = bind(a, fname, {"a", "b"}, 2);
      auto [x, y] = unify(*s[0], *s[1]);
      return guard(a.loc, [&, x = x, y = y] {
        if (name == "min") return Min::make(x, y);
        if (name == "max") return Max::make(x, y);
        if (name == "truncdiv") return Div::make(x, y);
        if (name == "truncmod") return Mod::make(x, y);
        if (name == "floordiv") return FloorDiv::make(x, y);
        return FloorMod::make(x, y);
      });
    }
    if (name == "Ramp") {
      Slots s = bind(a, fname, {"base", "stride", "lanes"}, 3);
      auto [base, stride] = unify(*s[0], *s[1]);
      int lanes = int_arg(s[2], "the lane count");
      return guard(a.loc,
                   [&, base = base, stride = stride] { return Ramp::make(base, stride, lanes); });
    }
    if (name == "Broadcast") {
      Slots s = bind(a, fname, {"value", "lanes"}, 2);
      Expr x = expr(*s[0]);
      int lanes = int_arg(s[1], "the lane count");
      return guard(a.loc, [&] { return Broadcast::make(x, lanes); });
    }
    if (name == "Let") return let_expr(a);
    if (name == "StringImm") {
      Slots s = bind(a, fname, {"value"}, 1);
      return StringImm::make(string_arg(s[0], "T.StringImm"));
    }
    if (name == "reinterpret") {
      Slots s = bind(a, fname, {"dtype", "value"}, 2);
      DataType t = dtype_arg(s[0]);
      Expr x = expr(*s[1]);
      return guard(a.loc, [&] { return Call::make(t, Op::get("reinterpret"), {x}); });
    }
    if (name == "call_extern" || name == "call_pure_extern") {
      no_keywords(a, fname);
      if (num_args(a) < 1) fail(a.loc, fname + " needs the result dtype as its first argument");
      DataType t = dtype_arg(&arg(a, 0));
      std::vector<Expr> args = rest_args(a, 1);
      return guard(a.loc, [&] { return Call::make(t, Op::get(name), args); });
    }
    if (name == "tvm_struct_get") {
      // T.tvm_struct_get(pointer, index, field, "dtype"): the dtype comes last, as in TVMScript.
      no_keywords(a, fname);
      if (num_args(a) != 4) fail(a.loc, fname + " takes a pointer, an index, a field and a dtype");
      DataType t = dtype_arg(&arg(a, 3));
      std::vector<Expr> args = rest_args(a, 0);
      args.pop_back();
      return guard(a.loc, [&] { return Call::make(t, Op::get(name), args); });
    }
    if (name == "call_intrin") {
      no_keywords(a, fname);
      if (num_args(a) < 2) fail(a.loc, fname + " needs a dtype and an op name");
      DataType t = dtype_arg(&arg(a, 0));
      const std::string& op_name = string_arg(&arg(a, 1), "the op name");
      Op op = Op::find(op_name);
      if (!op.defined()) fail(arg(a, 1).loc, "unknown builtin op '" + op_name + "'");
      std::vector<Expr> args = rest_args(a, 2);
      return guard(a.loc, [&] { return Call::make(t, op, args); });
    }
    if (name == "call_global") {
      no_keywords(a, fname);
      if (num_args(a) < 2) fail(a.loc, fname + " needs a dtype and a function name");
      DataType t = dtype_arg(&arg(a, 0));
      const std::string& callee = string_arg(&arg(a, 1), "the function name");
      auto it = functions_.find(callee);
      GlobalVar gvar = it != functions_.end()
                           ? it->second.first
                           : guard(arg(a, 1).loc, [&] { return GlobalVar::make(callee); });
      std::vector<Expr> args = rest_args(a, 2);
      return guard(a.loc, [&] { return Call::make(t, gvar, args); });
    }
    Op op = Op::find(name);
    if (!op.defined()) fail(a.loc, "unknown T. call '" + fname + "'");
    return op_call(a, fname, op);
  }

  Expr op_call(const Ast& a, const std::string& fname, const Op& op) {
    no_keywords(a, fname);
    size_t n = num_args(a);
    if (op->num_args >= 0 && n != static_cast<size_t>(op->num_args)) {
      fail(a.loc, fname + " takes " + plural(static_cast<size_t>(op->num_args), "argument") +
                      ", got " + std::to_string(n));
    }
    OpTypeRule rule = op_rule(op->name);
    if (rule == OpTypeRule::kExplicit) {
      fail(a.loc, fname + " needs an explicit result dtype; write T.call_intrin(\"dtype\", \"" +
                      op->name + "\", ...)");
    }
    std::vector<Expr> args;
    if (text_internal::op_unifies_two_args(op->name)) {
      auto [x, y] = unify(arg(a, 0), arg(a, 1));
      args = {x, y};
    } else if (rule == OpTypeRule::kBranches) {
      args.push_back(expr(arg(a, 0), DataType::Bool()));
      auto [x, y] = unify(arg(a, 1), arg(a, 2));
      if (x.dtype() != y.dtype()) {
        fail(a.loc, fname + ": the branches have different dtypes " + x.dtype().str() + " and " +
                        y.dtype().str());
      }
      args.push_back(x);
      args.push_back(y);
    } else {
      args = rest_args(a, 0);
    }
    std::optional<DataType> t = builtin_result_dtype(op->name, args);
    if (!t) fail(a.loc, fname + ": cannot determine the result dtype");
    return guard(a.loc, [&] { return Call::make(*t, op, args); });
  }

  Expr typed_literal(const Ast& a, DataType t) {
    const std::string fname = "T." + t.str();
    if (num_args(a) == 0 && a.keywords.empty()) {
      fail(a.loc, fname + "() declares a variable and needs its own line: name = " + fname + "()");
    }
    Slots s = bind(a, fname, {"value"}, 1);
    const Ast& v = *s[0];
    if (v.kind == AK::kString) {
      if (!t.is_floating() || !t.is_scalar()) {
        fail(v.loc,
             "a string value is only allowed for floating types (\"inf\", \"-inf\", \"nan\")");
      }
      double d = 0;
      if (v.text == "inf") {
        d = std::numeric_limits<double>::infinity();
      } else if (v.text == "-inf") {
        d = -std::numeric_limits<double>::infinity();
      } else if (v.text == "nan") {
        d = std::numeric_limits<double>::quiet_NaN();
      } else if (v.text == "-nan") {
        d = -std::numeric_limits<double>::quiet_NaN();
      } else {
        fail(v.loc, "expected \"inf\", \"-inf\" or \"nan\"");
      }
      return guard(a.loc, [&] { return FloatImm::make(t, d); });
    }
    Value x = value(v);
    if (x.kind == Value::kExpr) {  // T.int32(expr) converts, as in TVMScript
      return guard(a.loc, [&] { return Cast::make(t, x.expr); });
    }
    if (!t.is_scalar()) fail(a.loc, fname + " is a vector type; use T.Broadcast for a constant");
    if (x.kind == Value::kBool) {
      if (!t.is_bool()) fail(v.loc, "True/False needs T.bool");
      return IntImm::make(t, x.flag ? 1 : 0);
    }
    if (t.is_bool()) {
      if (x.kind != Value::kInt || x.negative || x.magnitude > 1) {
        fail(v.loc, "T.bool takes True, False, 0 or 1");
      }
    }
    if (x.kind == Value::kFloat && !t.is_floating()) {
      fail(v.loc, "floating literal given to " + fname);
    }
    return materialize(x, t);
  }

  Expr let_expr(const Ast& a) {
    Slots s = bind(a, "T.Let", {"body", "where"}, 2);
    const Ast& where = *s[1];
    if (where.kind != AK::kDict || where.items.size() != 2 || where.items[0]->kind != AK::kName) {
      fail(where.loc, "T.Let needs where={name: value} with exactly one binding");
    }
    const Ast& name = *where.items[0];
    Expr bound = expr(*where.items[1]);
    Var var = inferred_var(name.text, bound, name.loc);
    Expr body = scoped([&] {
      define_var(name.text, name.loc, var);
      return expr(*s[0]);
    });
    return guard(a.loc, [&] { return Let::make(var, bound, body); });
  }

  /// A variable typed like `value` (a pointer variable keeps its element type and scope).
  Var inferred_var(const std::string& name, const Expr& value, Loc loc) {
    return guard(loc, [&] {
      if (const auto* v = value.as<VarNode>(); v != nullptr && v->is_pointer()) {
        return Var::make_pointer(name, v->pointee, v->storage_scope);
      }
      return Var::make(name, value.dtype());
    });
  }

  // --- types and declarations -----------------------------------------------------------------
  /// T.int32, T.handle, T.handle("float32", "shared"), T.int32(is_size_var=True), T.int32().
  Var typed_var(const std::string& name, const Ast& ann, Loc loc) {
    const Ast& head = ann.kind == AK::kCall ? *ann.items[0] : ann;
    std::optional<std::string> type = ns_attr(head, "T");
    if (!type) {
      fail(ann.loc,
           "expected a type such as T.int32, T.handle or T.handle(\"float32\", \"global\")");
    }
    if (*type == "handle") {
      if (ann.kind != AK::kCall) return Var::make_handle(name);
      Slots s = bind(ann, "T.handle", {"dtype", "scope"}, 0);
      if (s[0] == nullptr) {
        if (s[1] != nullptr) fail(ann.loc, "T.handle with a scope needs an element dtype");
        return Var::make_handle(name);
      }
      DataType element = dtype_arg(s[0]);
      std::string scope = s[1] != nullptr ? string_arg(s[1], "the storage scope") : "global";
      return guard(loc, [&] { return Var::make_pointer(name, element, scope); });
    }
    DataType t;
    if (!DataType::try_parse(*type, &t) || t.is_void() || t.is_handle()) {
      fail(head.loc, "unknown type 'T." + *type + "'");
    }
    bool size_var = false;
    if (ann.kind == AK::kCall) {
      Slots s = bind(ann, "T." + *type, {"is_size_var"}, 0, 0);
      if (s[0] != nullptr) size_var = bool_arg(s[0], "is_size_var");
    }
    return guard(loc, [&] { return Var::make(name, t, size_var); });
  }

  DataType return_type(const Ast& ann) {
    std::optional<std::string> type = ns_attr(ann, "T");
    DataType t;
    if (!type || !DataType::try_parse(*type, &t)) {
      fail(ann.loc, "expected a return type such as T.int32");
    }
    return t;
  }

  enum class BufferForm { kParam, kMatch, kAlloc, kDecl, kFree };

  std::vector<Expr> expr_tuple(const Ast& a) {
    std::vector<Expr> out;
    if (a.kind == AK::kTuple || a.kind == AK::kList) {
      for (const AstPtr& item : a.items) out.push_back(expr(*item, DataType::Int(32)));
    } else {
      out.push_back(expr(a, DataType::Int(32)));
    }
    return out;
  }

  /// T.Buffer / T.match_buffer / T.alloc_buffer / T.decl_buffer. `data_given` reports whether
  /// `data=` was present; `annotations` receives alloc annotations.
  Buffer buffer_call(const std::string& name, Loc name_loc, const Ast& call, BufferForm form,
                     const std::string& fname, bool* data_given = nullptr,
                     Annotations* annotations = nullptr) {
    size_t first = form == BufferForm::kMatch ? 1 : 0;
    Slots s = form == BufferForm::kMatch ? bind(call, fname,
                                                {"param", "shape", "dtype", "data", "strides",
                                                 "elem_offset", "scope", "align", "offset_factor"},
                                                2, 3)
              : form == BufferForm::kAlloc || form == BufferForm::kDecl
                  ? bind(call, fname,
                         {"shape", "dtype", "data", "strides", "elem_offset", "scope", "align",
                          "offset_factor", "annotations"},
                         1, 2)
                  : bind(call, fname,
                         {"shape", "dtype", "data", "strides", "elem_offset", "scope", "align",
                          "offset_factor"},
                         1, 2);
    std::vector<Expr> shape = expr_tuple(*s[first]);
    DataType dtype = s[first + 1] != nullptr ? dtype_arg(s[first + 1]) : DataType::Float(32);
    const Ast* data_ast = s[first + 2];
    std::vector<Expr> strides;
    if (s[first + 3] != nullptr) strides = expr_tuple(*s[first + 3]);
    Expr elem_offset;
    if (s[first + 4] != nullptr) elem_offset = expr(*s[first + 4], DataType::Int(32));
    std::optional<std::string> scope;
    if (s[first + 5] != nullptr) scope = string_arg(s[first + 5], "scope");
    int align = s[first + 6] != nullptr ? int_arg(s[first + 6], "align") : 64;
    int offset_factor = s[first + 7] != nullptr ? int_arg(s[first + 7], "offset_factor") : 1;
    if (form == BufferForm::kAlloc || form == BufferForm::kDecl) {
      if (const Ast* ann = s[first + 8]) {
        if (form == BufferForm::kDecl && data_ast != nullptr) {
          fail(ann->loc, "annotations= is only allowed when T.decl_buffer allocates (no data=)");
        }
        *annotations = attr_dict(*ann);
      }
    }
    Var data;
    if (data_ast != nullptr) {
      Expr d = expr(*data_ast);
      const auto* v = d.as<VarNode>();
      if (v == nullptr || !v->is_pointer()) {
        fail(data_ast->loc,
             "data= must be a pointer variable (T.handle(\"dtype\", \"scope\") or "
             "another buffer's .data)");
      }
      if (scope && *scope != v->storage_scope) {
        fail(s[first + 5]->loc, "scope \"" + *scope +
                                    "\" differs from the data pointer's scope \"" +
                                    v->storage_scope + "\"");
      }
      data = Var(v);
    } else {
      data =
          guard(name_loc, [&] { return Var::make_pointer(name, dtype, scope.value_or("global")); });
    }
    if (data_given != nullptr) *data_given = data_ast != nullptr;
    return guard(call.loc, [&] {
      return Buffer::make(data, dtype, shape, strides, elem_offset, name, align, offset_factor);
    });
  }

  // --- attribute values -----------------------------------------------------------------------
  Attrs attr_dict(const Ast& a) {
    if (a.kind != AK::kDict) fail(a.loc, "expected a dict {\"key\": value, ...}");
    Attrs out;
    for (size_t i = 0; i < a.items.size(); i += 2) {
      const Ast& key = *a.items[i];
      if (key.kind != AK::kString) fail(key.loc, "attribute keys must be strings");
      if (out.count(key.text) != 0) fail(key.loc, "attribute \"" + key.text + "\" given twice");
      out.emplace(key.text, attr_value(*a.items[i + 1]));
    }
    return out;
  }

  AttrValue attr_value(const Ast& a) {
    switch (a.kind) {
      case AK::kBool:
        return AttrValue(a.bool_value);
      case AK::kString:
        return AttrValue(a.text);
      case AK::kNone:
        return AttrValue(Expr());
      case AK::kList: {
        AttrValue::Array items;
        for (const AstPtr& item : a.items) items.push_back(attr_value(*item));
        return AttrValue(std::move(items));
      }
      case AK::kCall:
        if (t_call(a) == "target") return AttrValue(target(a));
        if (a.items[0]->kind == AK::kName && a.items[0]->text == "float") {
          Slots s = bind(a, "float", {"value"}, 1);
          const std::string& text = string_arg(s[0], "float()");
          if (text == "inf") return AttrValue(std::numeric_limits<double>::infinity());
          if (text == "-inf") return AttrValue(-std::numeric_limits<double>::infinity());
          if (text == "nan") return AttrValue(std::numeric_limits<double>::quiet_NaN());
          fail(s[0]->loc, "expected float(\"inf\"), float(\"-inf\") or float(\"nan\")");
        }
        break;
      default:
        break;
    }
    Value v = value(a);
    if (v.kind == Value::kInt) {
      if (v.negative ? v.magnitude > (uint64_t{1} << 63)
                     : v.magnitude > static_cast<uint64_t>(INT64_MAX)) {
        fail(a.loc, "integer attribute is out of range");
      }
      return AttrValue(v.negative ? static_cast<int64_t>(0 - v.magnitude)
                                  : static_cast<int64_t>(v.magnitude));
    }
    if (v.kind == Value::kFloat) return AttrValue(v.number);
    if (v.kind == Value::kBool) return AttrValue(v.flag);
    return AttrValue(v.expr);
  }

  Target target(const Ast& a) {
    Slots s = bind(a, "T.target", {"kind", "arch", "host"}, 1);
    if (s[0]->kind == AK::kDict) {
      fail(s[0]->loc,
           "the target dict form is not supported; write T.target(\"cuda\", "
           "arch=\"sm_90\", host=\"llvm\")");
    }
    std::string kind = string_arg(s[0], "the target kind");
    std::string arch = s[1] != nullptr ? string_arg(s[1], "arch") : "";
    Target host;
    if (const Ast* h = s[2]) {
      if (h->kind == AK::kString) {
        host = guard(h->loc, [&] { return Target::make(h->text); });
      } else if (t_call(*h) == "target") {
        host = target(*h);
      } else {
        fail(h->loc, "host= expects a target kind string such as \"llvm\"");
      }
    }
    return guard(a.loc, [&] { return Target::make(kind, arch, host); });
  }

  // --- statements -----------------------------------------------------------------------------
  struct FunctionState {
    std::vector<Var> params;
    std::vector<std::pair<Var, Buffer>> buffer_map;
    Attrs attrs;
    bool has_func_attr = false;
  };

  /// Lowers stmts[begin:] of one block. `top` is true in the function's top-level block (and in
  /// the rest of it after a concise launch), where header statements are allowed.
  Stmt block(const std::vector<StmtPtr>& stmts, size_t begin, bool top) {
    std::vector<Stmt> out;
    for (size_t i = begin; i < stmts.size(); ++i) {
      const StmtAst& s = *stmts[i];
      try {
        if (std::optional<Stmt> concise = concise_attr(stmts, i, top)) {
          out.push_back(*concise);
          break;
        }
        statement(s, top, &out);
      } catch (const ParseError&) {
        throw;
      } catch (const Error& e) {
        fail(s.loc, e.what());
      }
    }
    return guard(begin < stmts.size() ? stmts[begin]->loc : Loc{},
                 [&] { return SeqStmt::make(std::move(out)); });
  }

  Stmt scoped_block(const std::vector<StmtPtr>& stmts) {
    return scoped([&] { return block(stmts, 0, false); });
  }

  /// `x = T.launch_thread("tag", n)`, `T.launch_thread(t, n)` and `T.attr(node, key, value)` on
  /// their own line: the rest of the block is the body.
  std::optional<Stmt> concise_attr(const std::vector<StmtPtr>& stmts, size_t i, bool top) {
    const StmtAst& s = *stmts[i];
    const Ast* call = nullptr;
    const Ast* target = nullptr;
    if (s.kind == SK::kExpr) {
      call = s.value.get();
    } else if (s.kind == SK::kAssign) {
      call = s.value.get();
      target = s.target.get();
    } else {
      return std::nullopt;
    }
    std::optional<std::string> name = t_call(*call);
    if (!name || (*name != "launch_thread" && *name != "attr")) return std::nullopt;
    if (*name == "attr" && target != nullptr) {
      fail(target->loc, "T.attr(...) does not define a name; write it on its own line");
    }
    if (target != nullptr && target->kind != AK::kName) {
      fail(target->loc, "expected a name for the thread variable");
    }
    return scoped([&] {
      auto [node, key, value] = *name == "launch_thread" ? launch(*call, target) : attr_head(*call);
      Stmt body = block(stmts, i + 1, top);
      return guard(s.loc, [&, node = node, key = key, value = value] {
        return AttrStmt::make(node, key, value, body);
      });
    });
  }

  /// T.launch_thread("tag", extent) with a new variable named by `name_ast`, or
  /// T.launch_thread(env_thread_var, extent). Defines the new variable in the current scope.
  std::tuple<Ref<Object>, std::string, Expr> launch(const Ast& call, const Ast* name_ast) {
    Slots s = bind(call, "T.launch_thread", {"thread", "extent"}, 2);
    Expr extent = expr(*s[1], DataType::Int(32));
    const Ast& thread = *s[0];
    if (thread.kind == AK::kString) {
      if (name_ast == nullptr) {
        fail(call.loc, "name the thread variable: x = T.launch_thread(\"" + thread.text +
                           "\", ...) or 'with T.launch_thread(...) as x:'");
      }
      Var var = guard(name_ast->loc, [&] { return Var::make(name_ast->text, extent.dtype()); });
      IterVar iv = guard(thread.loc, [&] { return IterVar::make(var, thread.text); });
      define_var(name_ast->text, name_ast->loc, var);
      return {Ref<Object>(iv.get()), attr::kThreadExtent, extent};
    }
    if (thread.kind != AK::kName) {
      fail(thread.loc, "T.launch_thread needs a thread tag string or a T.env_thread variable");
    }
    const Entity* e = lookup(thread.text);
    if (e == nullptr) fail(thread.loc, "undefined name '" + thread.text + "'");
    if (e->kind != Entity::kEnvThread) {
      fail(thread.loc, "'" + thread.text + "' is not a T.env_thread variable");
    }
    if (name_ast != nullptr) {
      fail(name_ast->loc, "T.launch_thread(" + thread.text + ", ...) reuses '" + thread.text +
                              "'; write it without assigning a name");
    }
    IterVar iv = guard(thread.loc, [&] { return IterVar::make(e->var, e->tag); });
    return {Ref<Object>(iv.get()), attr::kThreadExtent, extent};
  }

  std::tuple<Ref<Object>, std::string, Expr> attr_head(const Ast& call) {
    Slots s = bind(call, "T.attr", {"node", "attr_key", "value"}, 3);
    const Ast& node_ast = *s[0];
    Ref<Object> node;
    if (node_ast.kind == AK::kNone) {
      node = Ref<Object>();
    } else if (node_ast.kind == AK::kName && lookup(node_ast.text) != nullptr &&
               lookup(node_ast.text)->kind != Entity::kVar) {
      const Entity* e = lookup(node_ast.text);
      if (e->kind == Entity::kBuffer) {
        node = Ref<Object>(e->buffer.get());
      } else {
        IterVar iv = guard(node_ast.loc, [&] { return IterVar::make(e->var, e->tag); });
        node = Ref<Object>(iv.get());
      }
    } else if (t_call(node_ast) == "target") {
      node = Ref<Object>(target(node_ast).get());
    } else {
      node = Ref<Object>(expr(node_ast).get());
    }
    std::string key = string_arg(s[1], "the attribute key");
    Expr value = expr(*s[2]);
    return {node, key, value};
  }

  void statement(const StmtAst& s, bool top, std::vector<Stmt>* out) {
    switch (s.kind) {
      case SK::kPass:
        return;
      case SK::kExpr:
        expr_statement(s, top, out);
        return;
      case SK::kAssign:
        assignment(s, top, out);
        return;
      case SK::kAnnAssign: {
        if (s.target->kind != AK::kName) {
          fail(s.target->loc, "only a plain name can be annotated");
        }
        const std::string& name = s.target->text;
        Var var = rebound_or(name, typed_var(name, *s.annotation, s.target->loc));
        Expr value = expr(*s.value, var.dtype());
        out->push_back(guard(s.loc, [&] { return Bind::make(var, value); }));
        define_var(name, s.target->loc, var);
        return;
      }
      case SK::kFor:
        out->push_back(for_loop(s));
        return;
      case SK::kWhile: {
        Expr cond = expr(*s.value, DataType::Bool());
        Stmt body = scoped_block(s.body);
        out->push_back(guard(s.loc, [&] { return While::make(cond, body); }));
        return;
      }
      case SK::kIf: {
        Expr cond = expr(*s.value, DataType::Bool());
        Stmt then_case = scoped_block(s.body);
        Stmt else_case;
        if (s.has_else) else_case = scoped_block(s.orelse);
        out->push_back(guard(s.loc, [&] { return IfThenElse::make(cond, then_case, else_case); }));
        return;
      }
      case SK::kWith:
        out->push_back(with_stmt(s));
        return;
      case SK::kAssert: {
        Expr cond = expr(*s.value, DataType::Bool());
        Expr message = StringImm::make("");
        if (s.message && s.message->kind == AK::kString) {
          message = StringImm::make(s.message->text);
        } else if (s.message) {
          message = expr(*s.message);
          const auto* call = message.as<Call>();
          if (call == nullptr || !call->is_op("format")) {
            fail(s.message->loc, "the assert message must be a string literal or T.format(...)");
          }
        }
        out->push_back(guard(s.loc, [&] { return AssertStmt::make(cond, message); }));
        return;
      }
      case SK::kReturn: {
        Expr v = expr(*s.value);
        out->push_back(guard(
            s.loc, [&] { return Evaluate::make(Call::make(v.dtype(), Op::get("ret"), {v})); }));
        return;
      }
    }
  }

  void expr_statement(const StmtAst& s, bool top, std::vector<Stmt>* out) {
    const Ast& v = *s.value;
    if (v.kind == AK::kString && s.loc.line == docstring_line_) return;  // docstring
    std::optional<std::string> name = t_call(v);
    if (name == "func_attr") {
      if (!top) fail(v.loc, "T.func_attr is only allowed at the top level of the function body");
      if (state_->has_func_attr) fail(v.loc, "T.func_attr given twice");
      state_->has_func_attr = true;
      Slots slots = bind(v, "T.func_attr", {"attrs"}, 1);
      for (auto& [key, value] : attr_dict(*slots[0])) state_->attrs[key] = value;
      return;
    }
    if (name == "evaluate") {
      Slots slots = bind(v, "T.evaluate", {"value"}, 1);
      Expr e = expr(*slots[0]);
      out->push_back(guard(s.loc, [&] { return Evaluate::make(e); }));
      return;
    }
    if (name == "match_buffer" || name == "alloc_buffer" || name == "decl_buffer" ||
        name == "Buffer" || name == "env_thread" || name == "Bind") {
      fail(v.loc, "T." + *name + "(...) must be assigned to a name: x = T." + *name + "(...)");
    }
    if (v.kind != AK::kCall) {
      fail(v.loc,
           "an expression statement must be a call; write T.evaluate(...) to evaluate "
           "an expression");
    }
    Expr e = expr(v);
    out->push_back(guard(s.loc, [&] { return Evaluate::make(e); }));
  }

  void assignment(const StmtAst& s, bool top, std::vector<Stmt>* out) {
    const Ast& target = *s.target;
    const Ast& v = *s.value;
    if (target.kind == AK::kSubscript) {
      Buffer buffer = buffer_name(*target.items[0]);
      std::vector<Expr> idx = indices(target);
      if (idx.size() != buffer->ndim()) {
        fail(s.loc, "store to '" + buffer->name + "' needs " + plural(buffer->ndim(), "index") +
                        " (one per dimension), got " + std::to_string(idx.size()));
      }
      int lanes = 1;
      for (const Expr& i : idx) lanes = std::max(lanes, i.dtype().lanes());
      Expr value = expr(v, buffer->dtype.with_lanes(buffer->dtype.lanes() * lanes));
      out->push_back(guard(s.loc, [&] { return BufferStore::make(buffer, value, idx); }));
      return;
    }
    if (target.kind != AK::kName) {
      fail(target.loc, "can only assign to a name or a buffer element");
    }
    const std::string& name = target.text;
    std::optional<std::string> fn = t_call(v);
    if (!fn) fail(v.loc, bind_hint(name));
    if (*fn == "match_buffer") {
      if (!top) fail(v.loc, "T.match_buffer is only allowed at the top level of the function body");
      Slots slots = bind(v, "T.match_buffer",
                         {"param", "shape", "dtype", "data", "strides", "elem_offset", "scope",
                          "align", "offset_factor"},
                         2, 3);
      const Ast& param = *slots[0];
      if (param.kind != AK::kName) fail(param.loc, "T.match_buffer needs a handle parameter name");
      const Entity* e = lookup(param.text);
      if (e == nullptr) fail(param.loc, "undefined name '" + param.text + "'");
      auto is_param = [&](const Var& p) { return e->kind == Entity::kVar && p.same_as(e->var); };
      if (std::none_of(state_->params.begin(), state_->params.end(), is_param)) {
        fail(param.loc, "'" + param.text + "' is not a parameter of this function");
      }
      for (const auto& [p, b] : state_->buffer_map) {
        if (p.same_as(e->var))
          fail(param.loc, "parameter '" + param.text + "' already has a buffer");
      }
      Var handle = e->var;
      Buffer buffer = buffer_call(name, target.loc, v, BufferForm::kMatch, "T.match_buffer");
      state_->buffer_map.emplace_back(handle, buffer);
      define_buffer(name, target.loc, buffer);
      return;
    }
    if (*fn == "alloc_buffer" || *fn == "decl_buffer") {
      bool data_given = false;
      Annotations annotations;
      BufferForm form = *fn == "alloc_buffer" ? BufferForm::kAlloc : BufferForm::kDecl;
      Buffer buffer = buffer_call(name, target.loc, v, form, "T." + *fn, &data_given, &annotations);
      if (form == BufferForm::kDecl && data_given) {
        out->push_back(guard(s.loc, [&] { return DeclBuffer::make(buffer); }));
      } else {
        out->push_back(guard(s.loc, [&] { return AllocBuffer::make(buffer, annotations); }));
      }
      define_buffer(name, target.loc, buffer);
      return;
    }
    if (*fn == "Buffer") {
      Buffer buffer = buffer_call(name, target.loc, v, BufferForm::kFree, "T.Buffer");
      define_buffer(name, target.loc, buffer);
      return;
    }
    if (*fn == "env_thread") {
      Slots slots = bind(v, "T.env_thread", {"thread", "dtype"}, 1);
      std::string tag = string_arg(slots[0], "the thread tag");
      DataType t = slots[1] != nullptr ? dtype_arg(slots[1]) : DataType::Int(32);
      Var var = guard(target.loc, [&] { return Var::make(name, t); });
      guard(slots[0]->loc, [&] { return IterVar::make(var, tag); });
      Entity e;
      e.kind = Entity::kEnvThread;
      e.var = var;
      e.tag = tag;
      define(name, target.loc, std::move(e));
      return;
    }
    if (*fn == "Bind") {
      Slots slots = bind(v, "T.Bind", {"value"}, 1);
      Expr value = expr(*slots[0]);
      Var var = rebound_or(name, inferred_var(name, value, target.loc));
      out->push_back(guard(s.loc, [&] { return Bind::make(var, value); }));
      define_var(name, target.loc, var);
      return;
    }
    DataType t;
    if (*fn == "handle" || (DataType::try_parse(*fn, &t) && !t.is_void())) {
      // A free variable: T.int32(), T.int64(is_size_var=True), T.handle("float32", "global").
      if (*fn != "handle" && num_args(v) != 0) {
        fail(v.loc, "a variable declaration takes no value; to bind one write " + name + ": T." +
                        *fn + " = value");
      }
      Var var = typed_var(name, v, target.loc);
      define_var(name, target.loc, var);
      return;
    }
    fail(v.loc, bind_hint(name));
  }

  static std::string bind_hint(const std::string& name) {
    return "unsupported assignment; bind a value with '" + name + ": T.int32 = value' or '" + name +
           " = T.Bind(value)'";
  }

  Stmt with_stmt(const StmtAst& s) {
    std::optional<std::string> name = t_call(*s.value);
    if (name != "launch_thread" && name != "attr") {
      fail(s.value->loc, "'with' supports T.launch_thread(...) and T.attr(...)");
    }
    if (name == "attr" && s.target) fail(s.target->loc, "'with T.attr(...)' takes no 'as' name");
    return scoped([&] {
      auto [node, key, value] =
          *name == "launch_thread" ? launch(*s.value, s.target.get()) : attr_head(*s.value);
      Stmt body = block(s.body, 0, false);
      return guard(s.loc, [&, node = node, key = key, value = value] {
        return AttrStmt::make(node, key, value, body);
      });
    });
  }

  /// min and extent of `range(stop)` / `range(start, stop)` and the T.serial(...) family.
  std::pair<Expr, Expr> loop_bounds(const Ast* start, const Ast* stop) {
    if (stop == nullptr) {
      Expr extent = expr(*start, DataType::Int(32));
      Expr zero = guard(start->loc, [&] {
        PRIMJIT_USER_CHECK(extent.dtype().is_integer() && extent.dtype().is_scalar())
            << "loop extent must be a scalar integer, got " << extent.dtype();
        return make_const(extent.dtype(), 0);
      });
      return {zero, extent};
    }
    auto [lo, hi] = unify(*start, *stop);
    if (const auto* add = hi.as<Add>(); add != nullptr && same_expr(add->a, lo)) {
      return {lo, add->b};
    }
    const auto* a = lo.as<IntImm>();
    const auto* b = hi.as<IntImm>();
    if (a != nullptr && b != nullptr && a->dtype == b->dtype) {
      int64_t extent = 0;
      if (__builtin_sub_overflow(b->value, a->value, &extent)) {
        fail(stop->loc, "loop extent overflows");
      }
      return {lo, guard(stop->loc, [&] { return IntImm::make(a->dtype, extent); })};
    }
    return {lo, guard(stop->loc, [&, lo = lo, hi = hi] { return Sub::make(hi, lo); })};
  }

  Stmt for_loop(const StmtAst& s) {
    const Ast& iter = *s.value;
    const Ast& targets = *s.target;
    if (iter.kind != AK::kCall) fail(iter.loc, "expected range(...) or a T. loop kind");
    const Ast& func = *iter.items[0];
    std::optional<std::string> kind_name = ns_attr(func, "T");
    bool is_range = func.kind == AK::kName && func.text == "range" && lookup("range") == nullptr;
    if (!is_range && !kind_name) fail(iter.loc, "expected range(...) or a T. loop kind");

    if (kind_name == "grid") {
      no_keywords(iter, "T.grid");
      size_t n = num_args(iter);
      if (n == 0) fail(iter.loc, "T.grid needs at least one extent");
      if (n != targets.items.size()) {
        fail(targets.loc, "T.grid has " + plural(n, "extent") + " but " +
                              plural(targets.items.size(), "loop variable"));
      }
      std::vector<std::pair<Expr, Expr>> bounds;
      for (size_t i = 0; i < n; ++i) bounds.push_back(loop_bounds(&arg(iter, i), nullptr));
      return scoped([&] {
        std::vector<Var> vars;
        for (size_t i = 0; i < n; ++i) {
          const Ast& t = *targets.items[i];
          Expr ext = bounds[i].second;
          vars.push_back(guard(t.loc, [&] { return Var::make(t.text, ext.dtype()); }));
          define_var(t.text, t.loc, vars.back());
        }
        Stmt body = block(s.body, 0, false);
        for (size_t i = n; i-- > 0;) {
          body = guard(s.loc, [&] {
            return For::make(vars[i], bounds[i].first, bounds[i].second, ForKind::kSerial, body);
          });
        }
        return body;
      });
    }

    ForKind kind = ForKind::kSerial;
    std::string thread_tag;
    Annotations annotations;
    const Ast* start = nullptr;
    const Ast* stop = nullptr;
    if (is_range) {
      no_keywords(iter, "range");
      size_t n = num_args(iter);
      if (n == 0 || n > 2) {
        fail(iter.loc, n == 3 ? "range with a step is not supported"
                              : "range takes 1 or 2 arguments, got " + std::to_string(n));
      }
      start = &arg(iter, 0);
      stop = n == 2 ? &arg(iter, 1) : nullptr;
    } else {
      const std::string fname = "T." + *kind_name;
      if (*kind_name == "serial") {
        kind = ForKind::kSerial;
      } else if (*kind_name == "parallel") {
        kind = ForKind::kParallel;
      } else if (*kind_name == "vectorized") {
        kind = ForKind::kVectorized;
      } else if (*kind_name == "unroll") {
        kind = ForKind::kUnrolled;
      } else if (*kind_name == "thread_binding") {
        kind = ForKind::kThreadBinding;
      } else {
        fail(iter.loc, "unknown loop kind '" + fname +
                           "'; expected range, T.serial, T.parallel, "
                           "T.vectorized, T.unroll, "
                           "T.thread_binding or T.grid");
      }
      Slots slots = kind == ForKind::kThreadBinding
                        ? bind(iter, fname, {"start", "stop", "thread", "annotations"}, 1, 2)
                        : bind(iter, fname, {"start", "stop", "annotations"}, 1, 2);
      start = slots[0];
      stop = slots[1];
      const Ast* ann = slots[kind == ForKind::kThreadBinding ? 3 : 2];
      if (ann != nullptr) annotations = attr_dict(*ann);
      if (kind == ForKind::kThreadBinding) {
        if (slots[2] == nullptr) fail(iter.loc, "T.thread_binding needs thread=\"threadIdx.x\"");
        thread_tag = string_arg(slots[2], "thread");
      }
    }
    if (targets.items.size() != 1) {
      fail(targets.loc, "this loop defines one variable; use T.grid for several");
    }
    auto [min, extent] = loop_bounds(start, stop);
    const Ast& t = *targets.items[0];
    return scoped([&, min = min, extent = extent] {
      Var var = guard(t.loc, [&] { return Var::make(t.text, extent.dtype()); });
      define_var(t.text, t.loc, var);
      Stmt body = block(s.body, 0, false);
      return guard(
          s.loc, [&] { return For::make(var, min, extent, kind, body, thread_tag, annotations); });
    });
  }

  // --- functions and modules ------------------------------------------------------------------
  void module_decorator(const FileAst& file) {
    if (file.class_decorators.size() != 1) {
      fail(file.class_loc, "the module class needs exactly one decorator, @I.ir_module");
    }
    const Ast& d = *file.class_decorators[0];
    if (ns_attr(d, "I") == "ir_module") return;
    if (d.kind == AK::kCall && ns_attr(*d.items[0], "I") == "ir_module") {
      Slots s = bind(d, "I.ir_module", {"check_well_formed"}, 0, 0);
      if (s[0] != nullptr) bool_arg(s[0], "check_well_formed");
      return;
    }
    fail(d.loc, "unknown decorator; expected @I.ir_module");
  }

  /// Returns whether the function is private.
  bool function_decorator(const FuncAst& f) {
    if (f.decorators.size() != 1) {
      fail(f.loc, "a function needs exactly one decorator, @T.prim_func");
    }
    const Ast& d = *f.decorators[0];
    if (ns_attr(d, "T") == "prim_func") return false;
    if (d.kind == AK::kCall && ns_attr(*d.items[0], "T") == "prim_func") {
      Slots s = bind(d, "T.prim_func", {"private", "check_well_formed"}, 0, 0);
      if (s[1] != nullptr) bool_arg(s[1], "check_well_formed");
      return s[0] != nullptr && bool_arg(s[0], "private");
    }
    fail(d.loc, "unknown decorator; expected @T.prim_func or @T.prim_func(private=True)");
  }

  PrimFunc function(const FuncAst& f) {
    bool is_private = function_decorator(f);
    FunctionState state;
    state_ = &state;
    scopes_ = ScopeStack<std::unordered_map<std::string, Entity>>();
    closed_.clear();
    std::unordered_map<std::string, Loc> seen;
    for (const Param& p : f.params) {
      if (!seen.emplace(p.name, p.loc).second) fail(p.loc, "duplicate parameter '" + p.name + "'");
      if (t_call(*p.annotation) == "Buffer") {
        Var handle = Var::make_handle(p.name);
        Buffer buffer = buffer_call(p.name, p.loc, *p.annotation, BufferForm::kParam, "T.Buffer");
        state.params.push_back(handle);
        state.buffer_map.emplace_back(handle, buffer);
        define_buffer(p.name, p.loc, buffer);
      } else {
        Var var = typed_var(p.name, *p.annotation, p.loc);
        state.params.push_back(var);
        define_var(p.name, p.loc, var);
      }
    }
    DataType ret = f.ret ? return_type(*f.ret) : DataType::Void();
    if (!is_private) state.attrs[attr::kGlobalSymbol] = AttrValue(f.name);
    docstring_line_ = -1;
    if (!f.body.empty() && f.body[0]->kind == SK::kExpr && f.body[0]->value->kind == AK::kString) {
      docstring_line_ = f.body[0]->loc.line;
    }
    Stmt body = scoped([&] { return block(f.body, 0, true); });
    // buffer_map follows parameter order.
    auto position = [&](const Var& v) {
      return std::find_if(state.params.begin(), state.params.end(),
                          [&](const Var& p) { return p.same_as(v); }) -
             state.params.begin();
    };
    std::stable_sort(
        state.buffer_map.begin(), state.buffer_map.end(),
        [&](const auto& a, const auto& b) { return position(a.first) < position(b.first); });
    state_ = nullptr;
    return guard(f.loc, [&] {
      return PrimFunc::make(state.params, state.buffer_map, body, ret, state.attrs);
    });
  }

  const Source& src_;
  std::string class_name_;
  std::map<std::string, std::pair<GlobalVar, DataType>> functions_;
  ScopeStack<std::unordered_map<std::string, Entity>> scopes_;
  std::unordered_map<std::string, Entity> closed_;  // definitions of blocks that have ended
  FunctionState* state_ = nullptr;
  int docstring_line_ = -1;
};

}  // namespace

IRModule parse(std::string_view text, std::string_view file_name) {
  Source source(text, std::string(file_name));
  try {
    std::vector<Token> tokens = Tokenizer(source).run();
    FileAst file = SyntaxParser(source, std::move(tokens)).file();
    return Lowerer(source).lower(file);
  } catch (const ParseError&) {
    throw;
  } catch (const std::exception& e) {
    // Never let anything else escape; this is a bug in the parser if it happens.
    source.fail(Loc{1, 1}, std::string("internal error while parsing: ") + e.what());
  }
}

}  // namespace primjit
