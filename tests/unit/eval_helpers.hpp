#pragma once
// Helpers of the CPU expression evaluator tests (test_eval_*.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/exec/cpu/evaluate.hpp"
#include "tug/expr/resolve.hpp"

namespace tug::eval_test {

/// Evaluates `e` through resolve + cpu::evaluate over named columns.
inline column eval(const expr& e, const std::vector<std::pair<std::string, column>>& cols) {
  std::vector<field> fs;
  std::vector<column> cs;
  for (auto& [n, c] : cols) {
    fs.push_back({n, c.type()});
    cs.push_back(c);
  }
  schema s(fs);
  table t = cs.empty() ? table::empty_with_rows(1) : table(cs);
  return cpu::evaluate(resolve(e, s), t, s);
}

/// The sizes every kernel is tested at.
inline const std::vector<int64_t>& sizes() {
  static const std::vector<int64_t> s{0, 1, 31, 32, 33, 1024};
  return s;
}

/// Deterministic pseudo-random 64-bit values.
inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// A column of `n` values of `T` (`type`), null every `null_every` rows (0 = no nulls), built with 3
/// extra leading rows and sliced away when `sliced`. Integers are small around zero (with zeros)
/// unless `wide`; floats include halves.
template <typename T>
column gen(const data_type& type, int64_t n, uint64_t seed, int null_every, bool sliced, bool wide = false) {
  const int64_t pad = sliced ? 3 : 0;
  std::vector<std::optional<T>> v;
  for (int64_t i = 0; i < n + pad; ++i) {
    uint64_t r = mix(seed * 1000003 + static_cast<uint64_t>(i));
    if (null_every && (i - pad) % null_every == 1) {
      v.push_back(std::nullopt);
      continue;
    }
    if constexpr (std::is_same_v<T, bool>) v.push_back(static_cast<bool>(r & 1));
    else if constexpr (std::is_floating_point_v<T>) v.push_back(static_cast<T>(static_cast<int64_t>(r % 41) - 20) / 2);
    else if (wide) v.push_back(static_cast<T>(r));
    else v.push_back(static_cast<T>(static_cast<int64_t>(r % 15) - (std::is_signed_v<T> ? 7 : 0)));
  }
  column c = make_column<T>(type, v);
  return sliced ? c.slice(pad, n) : c;
}

/// Expected column from a row-wise reference over optional inputs.
template <typename R>
column expected(const data_type& type, int64_t n, const std::function<std::optional<R>(int64_t)>& f) {
  std::vector<std::optional<R>> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(f(i));
  return make_column<R>(type, v);
}

template <typename T>
std::optional<T> opt(const column& c, int64_t i) {
  if (c.is_null(i)) return std::nullopt;
  return c.value<T>(i);
}

}  // namespace tug::eval_test
