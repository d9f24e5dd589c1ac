// A small, strict S-expression reader for generated SBPL, used only by the tests. Accepts
// lists, atoms, "strings" and #"regex" literals, and `;` comments. Strict where the generator
// must be: no escape sequences and no control characters inside literals, and nothing but
// space, tab and newline outside them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sbx::seatbelt::testing {

struct Node {
  enum class Kind { kList, kAtom, kString, kRegex };
  Kind kind = Kind::kList;
  std::string text;  // atom, string or regex contents
  std::vector<Node> children;

  bool is_call(std::string_view head) const {
    return kind == Kind::kList && !children.empty() && children[0].kind == Kind::kAtom &&
           children[0].text == head;
  }
};

class SexprReader {
 public:
  explicit SexprReader(std::string_view text) : text_(text) {}

  // Reads every top-level form; returns false and sets error() on the first problem.
  bool read_all(std::vector<Node>& out) {
    for (skip_space(); pos_ < text_.size(); skip_space()) {
      Node node;
      if (!read(node, 0)) return false;
      out.push_back(std::move(node));
    }
    return true;
  }
  const std::string& error() const { return error_; }

 private:
  bool fail(const std::string& what) {
    error_ = what + " at byte " + std::to_string(pos_);
    return false;
  }

  void skip_space() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == ';') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (c == ' ' || c == '\n' || c == '\t') {
        ++pos_;
      } else {
        return;
      }
    }
  }

  bool read_literal(Node& node, Node::Kind kind) {
    node.kind = kind;
    for (; pos_ < text_.size(); ++pos_) {
      const auto c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c == '\\' && kind == Node::Kind::kString) return fail("escape sequence in string");
      if (c < 0x20 || c == 0x7F) return fail("control character inside a literal");
      node.text.push_back(static_cast<char>(c));
    }
    return fail("unterminated literal");
  }

  bool read(Node& node, int depth) {
    if (depth > 64) return fail("nesting too deep");
    const char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      node.kind = Node::Kind::kList;
      for (skip_space(); pos_ < text_.size() && text_[pos_] != ')'; skip_space()) {
        Node child;
        if (!read(child, depth + 1)) return false;
        node.children.push_back(std::move(child));
      }
      if (pos_ >= text_.size()) return fail("unbalanced '('");
      ++pos_;
      return true;
    }
    if (c == ')') return fail("unbalanced ')'");
    if (c == '"') {
      ++pos_;
      return read_literal(node, Node::Kind::kString);
    }
    if (c == '#' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '"') {
      pos_ += 2;
      return read_literal(node, Node::Kind::kRegex);
    }
    node.kind = Node::Kind::kAtom;
    while (pos_ < text_.size()) {
      const auto a = static_cast<unsigned char>(text_[pos_]);
      if (a == '(' || a == ')' || a == ' ' || a == '\n' || a == '\t' || a == ';') break;
      if (a == '"' || a < 0x21 || a >= 0x7F) return fail("unexpected byte in atom");
      node.text.push_back(static_cast<char>(a));
      ++pos_;
    }
    return true;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::string error_;
};

}  // namespace sbx::seatbelt::testing
