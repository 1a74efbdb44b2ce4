// NamedType gives an id its own type (Redpanda's named_type), so a RunId cannot be passed
// where a ScheduleName is meant.
#pragma once

#include <compare>
#include <functional>
#include <ostream>
#include <utility>

namespace trigd {

template <class T, class Tag>
class NamedType {
 public:
  using type = T;
  NamedType() = default;
  explicit NamedType(T value) : value_(std::move(value)) {}
  const T& value() const { return value_; }
  T& value() { return value_; }
  auto operator<=>(const NamedType&) const = default;
  friend std::ostream& operator<<(std::ostream& os, const NamedType& n) { return os << n.value_; }

 private:
  T value_{};
};

}  // namespace trigd

template <class T, class Tag>
struct std::hash<trigd::NamedType<T, Tag>> {
  size_t operator()(const trigd::NamedType<T, Tag>& n) const { return std::hash<T>()(n.value()); }
};
