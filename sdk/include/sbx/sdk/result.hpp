// Result<T> and Status: errors as values. Core and plugins never throw across module edges.
//
// An Error has a kind (what sort of failure, the same set at every boundary: C API, CLI exit
// code and --json, Node, Python) and a message for a person ("what went wrong; what to do").
//
// Layout is ABI: Result<ExecPlan> and Result<ExitStatus> are returned by plugins (backend.hpp),
// including plugins built against older SDKs (tests/fixtures/sdk-abi-*), so Status and Result
// keep the members they had before kinds existed (one std::string for the error). The kind
// travels inside that string as a two-byte tag in front of the message (kKindTag, then '0' +
// kind); error() returns the message without it. A string without the tag (a plugin built
// before kinds) reads as kDefaultErrorKind; core labels every error a plugin returns
// backend_failure where it receives it anyway.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace sbx {

// Kept in step with sbx_error_kind in core/include/sbx/sbx.h (same order, same values), the CLI's
// exit codes (README), and the bindings' SbxError subclasses.
enum class ErrorKind : unsigned char {
  invalid_input = 0,    // the caller's input is wrong: a malformed policy/settings/argument
  refused = 1,          // a lock, setting or policy rule forbids it (e.g. never unsandboxed)
  unavailable = 2,      // no backend on this host can enforce what was asked
  backend_failure = 3,  // a backend plugin failed to plan or run the sandbox
  host_failure = 4,     // the host failed: a file, a syscall, a missing library
  timed_out = 5,        // a deadline passed
  cancelled = 6,        // the caller cancelled
};
inline constexpr int kErrorKindCount = 7;

// The kind of an Error built without one (`Error{"message"}`). host_failure because an
// unclassified error is most often an I/O or syscall failure on the host, and because it keeps
// such errors where they were before kinds: CLI exit 125, never blamed on the caller's input
// (exit 2) nor reported as a policy refusal. Sites that know better say so.
inline constexpr ErrorKind kDefaultErrorKind = ErrorKind::host_failure;

// "invalid_input", "refused", ... : the kind's name at every boundary (--json "kind", bindings).
constexpr std::string_view error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid_input:
      return "invalid_input";
    case ErrorKind::refused:
      return "refused";
    case ErrorKind::unavailable:
      return "unavailable";
    case ErrorKind::backend_failure:
      return "backend_failure";
    case ErrorKind::host_failure:
      return "host_failure";
    case ErrorKind::timed_out:
      return "timed_out";
    case ErrorKind::cancelled:
      return "cancelled";
  }
  return "host_failure";
}

// What went wrong and, where possible, what to do; plus its kind.
struct Error {
  std::string message;
  ErrorKind kind = kDefaultErrorKind;

  // The same error with `context` in front of its message: for propagation that says where.
  Error prefixed(std::string_view context) const& {
    return Error{std::string(context) + message, kind};
  }
  Error prefixed(std::string_view context) && {
    message.insert(0, context);
    return std::move(*this);
  }
  // The same message with another kind: where a caller knows better what the failure means.
  Error as(ErrorKind other) && {
    kind = other;
    return std::move(*this);
  }
  Error as(ErrorKind other) const& { return Error{message, other}; }
};

namespace detail {
// ASCII record separator: no message starts with it.
inline constexpr char kKindTag = '\x1e';

inline std::string encode_error(Error&& error) {
  std::string text;
  text.reserve(error.message.size() + 2);
  text += kKindTag;
  text += static_cast<char>('0' + static_cast<int>(error.kind));
  text += error.message;
  return text;
}
inline bool tagged(const std::string& text) {
  return text.size() >= 2 && text[0] == kKindTag && text[1] >= '0' &&
         text[1] < '0' + kErrorKindCount;
}
inline ErrorKind kind_of(const std::string& text) {
  return tagged(text) ? static_cast<ErrorKind>(text[1] - '0') : kDefaultErrorKind;
}
inline std::string message_of(const std::string& text) {
  return tagged(text) ? text.substr(2) : text;
}
}  // namespace detail

// Success, or an Error. Default-constructed Status is success.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(detail::encode_error(std::move(error))) {}  // NOLINT: implicit

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  // Preconditions: !ok() for error(), kind() and failure().
  std::string error() const { return detail::message_of(*error_); }
  ErrorKind kind() const { return detail::kind_of(*error_); }
  // The Error itself, kind kept: `if (!s) return s.failure();`, or
  // `return s.failure().prefixed("what: ");` to say where.
  Error failure() const { return Error{error(), kind()}; }

 private:
  std::optional<std::string> error_;
};

// A value of type T, or an Error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}                            // NOLINT: implicit
  Result(Error error) : error_(detail::encode_error(std::move(error))) {}  // NOLINT: implicit

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  // Preconditions: ok() for value access, !ok() for error(), kind() and failure().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  std::string error() const { return detail::message_of(error_); }
  ErrorKind kind() const { return detail::kind_of(error_); }
  Error failure() const { return Error{error(), kind()}; }
  Status status() const { return ok() ? Status() : Status(failure()); }

 private:
  std::optional<T> value_;
  std::string error_;
};

}  // namespace sbx
