// Result<T> and Status: errors as values. Core and plugins never throw across module edges.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace sbx {

// An error message meant for a person: says what went wrong and, where possible, what to do.
struct Error {
  std::string message;
};

// Success, or an Error. Default-constructed Status is success.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error.message)) {}  // NOLINT: implicit by design

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  // Precondition: !ok().
  const std::string& error() const { return *error_; }

 private:
  std::optional<std::string> error_;
};

// A value of type T, or an Error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}                   // NOLINT: implicit by design
  Result(Error error) : error_(std::move(error.message)) {}       // NOLINT: implicit by design

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  // Preconditions: ok() for value access, !ok() for error().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  const std::string& error() const { return error_; }
  Status status() const { return ok() ? Status() : Status(Error{error_}); }

 private:
  std::optional<T> value_;
  std::string error_;
};

}  // namespace sbx
