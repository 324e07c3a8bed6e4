// The tokenizer (see lexer.h).
#include "ir/text/lexer.h"

#include <charconv>
#include <optional>
#include <string_view>
#include <utility>

namespace primjit::text_internal {
namespace {

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

}  // namespace

std::vector<Token> tokenize(const Source& source) { return Tokenizer(source).run(); }

}  // namespace primjit::text_internal
