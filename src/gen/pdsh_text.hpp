#pragma once
// The word lists and the comment grammar of the TPC-H specification (clause 4.2.2.13-14), with the
// weights of the reference generator's distributions, and the text pool comments are cut from.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tug/gen/random.hpp"

namespace tug::gen::pdsh {

/// Words with integer weights; `pick` is one random draw (a table lookup).
class word_list {
 public:
  /// Weighted words.
  explicit word_list(std::vector<std::pair<std::string_view, int>> words);
  /// Equally likely words.
  explicit word_list(std::vector<std::string_view> words);
  std::string_view pick(rng& r) const { return _words[_lookup[static_cast<size_t>(r.range(0, _last))]]; }
  size_t size() const { return _words.size(); }
  std::string_view operator[](size_t i) const { return _words[i]; }

 private:
  std::vector<std::string_view> _words;
  std::vector<uint16_t> _lookup;  // one entry per unit of weight
  int64_t _last = 0;
};

/// The lists the queries' predicates select on (clause 4.2.2.13): all uniform.
const word_list& colors();  ///< 92 colors of P_NAME
const word_list& type_syllable1();
const word_list& type_syllable2();
const word_list& type_syllable3();
const word_list& container_syllable1();
const word_list& container_syllable2();
const word_list& segments();
const word_list& priorities();
const word_list& instructions();
const word_list& modes();

/// The text pool (clause 4.2.2.14 grammar): sentences from the spec's word lists, generated once from
/// a fixed seed. Comments are substrings of it at random offsets, as in the reference generator.
std::string_view text_pool();

/// A random substring of the text pool with length uniform in [min_len, max_len].
inline std::string_view random_text(rng& r, int64_t min_len, int64_t max_len) {
  std::string_view pool = text_pool();
  int64_t len = r.range(min_len, max_len);
  int64_t off = r.range(0, static_cast<int64_t>(pool.size()) - len);
  return pool.substr(static_cast<size_t>(off), static_cast<size_t>(len));
}

}  // namespace tug::gen::pdsh
