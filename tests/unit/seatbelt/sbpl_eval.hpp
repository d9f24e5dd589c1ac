// A tiny evaluator for the file-operation subset of SBPL the generator emits, used to check the
// generated profile against the ResolvedPolicy semantics in types.hpp. Models: last matching
// rule wins, `(deny default)`, operation wildcards (`file-read*`), filters subpath, literal,
// regex (POSIX extended), require-all/any/not, param, and sysctl-name(-prefix) for sysctl-read
// (the "path" is then the sysctl name), and for network operations `(remote|local unix-socket
// [F])` and `(remote|local ip "HOST:PORT")` with `*` wildcards: the "path" is then
// "unix-socket:/PATH" or "ip:HOST:PORT", and a bare path filter on a unix-socket target applies
// to its path (the legacy `(literal "/private/var/run/syslog")` form). Anything else never
// matches a file path except vnode-type, which is taken as satisfied under /dev only.
#pragma once

#include <map>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "sbx/sdk/types.hpp"
#include "sexpr.hpp"

namespace sbx::seatbelt::testing {

class SbplEvaluator {
 public:
  SbplEvaluator(std::vector<Node> forms, std::map<std::string, std::string> params)
      : forms_(std::move(forms)), params_(std::move(params)) {}

  // True if `operation` (e.g. "file-read-data", "file-write-create", "file-write-unlink") on
  // `path` is allowed.
  bool allows(const std::string& operation, const std::string& path) {
    bool allowed = false;
    for (const Node& form : forms_) {
      if (form.kind != Node::Kind::kList || form.children.empty()) continue;
      const std::string& verb = form.children[0].text;
      if (verb != "allow" && verb != "deny") continue;
      std::size_t i = 1;
      bool op_hit = false;
      for (; i < form.children.size() && form.children[i].kind == Node::Kind::kAtom; ++i)
        op_hit = op_hit || covers(form.children[i].text, operation);
      if (!op_hit) continue;
      bool filter_hit = i == form.children.size();
      for (; i < form.children.size(); ++i) filter_hit = filter_hit || eval(form.children[i], path);
      if (filter_hit) allowed = verb == "allow";
    }
    return allowed;
  }

 private:
  static bool covers(const std::string& pattern, const std::string& op) {
    if (pattern == "default") return true;
    if (!pattern.empty() && pattern.back() == '*')
      return op.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0;
    return pattern == op;
  }

  std::string value(const Node& n) {
    if (n.kind == Node::Kind::kString) return n.text;
    if (n.is_call("param") && n.children.size() == 2) {
      auto it = params_.find(n.children[1].text);
      if (it == params_.end()) throw std::runtime_error("unbound param " + n.children[1].text);
      return it->second;
    }
    throw std::runtime_error("unexpected filter argument");
  }

  const std::regex& compiled(const std::string& r) {
    auto it = regexes_.find(r);
    if (it == regexes_.end()) it = regexes_.emplace(r, std::regex(r, std::regex::extended)).first;
    return it->second;
  }

  static constexpr std::string_view kUnixTarget = "unix-socket:";
  static constexpr std::string_view kIpTarget = "ip:";

  static bool starts_with(const std::string& s, std::string_view prefix) {
    return s.compare(0, prefix.size(), prefix) == 0;
  }

  // "HOST:PORT" against a pattern where either side may be `*`.
  static bool ip_matches(const std::string& pattern, const std::string& address) {
    const auto split = [](const std::string& a) {
      const std::size_t colon = a.rfind(':');
      return std::make_pair(a.substr(0, colon),
                            colon == std::string::npos ? "" : a.substr(colon + 1));
    };
    const auto [ph, pp] = split(pattern);
    const auto [ah, ap] = split(address);
    return (ph == "*" || ph == ah) && (pp == "*" || pp == ap);
  }

  bool eval_socket(const Node& f, const std::string& target) {
    const std::string& family = f.children.at(1).text;
    if (family == "unix-socket") {
      if (!starts_with(target, kUnixTarget)) return false;
      return f.children.size() == 2 || eval(f.children.at(2), target);
    }
    if (family == "ip") {
      if (!starts_with(target, kIpTarget)) return false;
      return f.children.size() == 2 ||
             ip_matches(value(f.children.at(2)), target.substr(kIpTarget.size()));
    }
    return false;
  }

  bool eval(const Node& f, const std::string& target) {
    if (f.is_call("remote") || f.is_call("local")) return eval_socket(f, target);
    const std::string path =
        starts_with(target, kUnixTarget) ? target.substr(kUnixTarget.size()) : target;
    if (f.is_call("subpath")) return path_is_within(path, value(f.children.at(1)));
    if (f.is_call("literal") || f.is_call("path-literal")) return path == value(f.children.at(1));
    if (f.is_call("regex")) return std::regex_search(path, compiled(f.children.at(1).text));
    if (f.is_call("require-not")) return !eval(f.children.at(1), target);
    if (f.is_call("require-all")) {
      for (std::size_t i = 1; i < f.children.size(); ++i)
        if (!eval(f.children[i], target)) return false;
      return true;
    }
    if (f.is_call("require-any")) {
      for (std::size_t i = 1; i < f.children.size(); ++i)
        if (eval(f.children[i], target)) return true;
      return false;
    }
    if (f.is_call("vnode-type")) return starts_with(path, "/dev/") && path == target;
    // For sysctl-read, `path` is the sysctl name.
    if (f.is_call("sysctl-name")) return path == value(f.children.at(1));
    if (f.is_call("sysctl-name-prefix")) return path.rfind(value(f.children.at(1)), 0) == 0;
    return false;
  }

  std::vector<Node> forms_;
  std::map<std::string, std::string> params_;
  std::map<std::string, std::regex> regexes_;
};

}  // namespace sbx::seatbelt::testing
