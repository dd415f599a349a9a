// The host tables of the case mappings (src/exec/case_mapping.hpp) and their blob for the CUDA evaluator.
#include "exec/case_mapping.hpp"

#include <iterator>

#include "exec/case_mapping_data.hpp"

namespace tug::unicode {

namespace {

static_assert(data::multi_flag == case_multi_flag);
static_assert(std::size(data::upper_from) == std::size(data::upper_to));
static_assert(std::size(data::lower_from) == std::size(data::lower_to));
static_assert(std::size(data::title_from) == std::size(data::title_to));

case_table make_table(case_kind kind) {
  const bool upper = kind == case_kind::upper;
  case_table t;
  t.kind = kind;
  t.from = upper ? data::upper_from : data::lower_from;
  t.to = upper ? data::upper_to : data::lower_to;
  t.multi = upper ? data::upper_multi : data::lower_multi;
  t.size = static_cast<uint32_t>(upper ? std::size(data::upper_from) : std::size(data::lower_from));
  t.ignorable = data::case_ignorable;
  t.n_ignorable = static_cast<uint32_t>(std::size(data::case_ignorable) / 2);
  t.cased = data::cased;
  t.n_cased = static_cast<uint32_t>(std::size(data::cased) / 2);
  if (kind == case_kind::title) {
    t.title_from = data::title_from;
    t.title_to = data::title_to;
    t.title_multi = data::title_multi;
    t.title_size = static_cast<uint32_t>(std::size(data::title_from));
    t.word = data::word;
    t.n_word = static_cast<uint32_t>(std::size(data::word) / 2);
  }
  return t;
}

}  // namespace

const case_table& host_case_table(case_kind kind) {
  static const case_table up = make_table(case_kind::upper), low = make_table(case_kind::lower),
                          title = make_table(case_kind::title);
  return kind == case_kind::upper ? up : kind == case_kind::lower ? low : title;
}

std::vector<uint32_t> case_table_blob(case_kind kind) {
  const case_table& t = host_case_table(kind);
  const uint32_t n_multi = static_cast<uint32_t>(kind == case_kind::upper ? std::size(data::upper_multi)
                                                                           : std::size(data::lower_multi));
  const uint32_t n_title_multi = kind == case_kind::title ? static_cast<uint32_t>(std::size(data::title_multi)) : 0;
  std::vector<uint32_t> b = {static_cast<uint32_t>(kind), t.size,       n_multi, t.n_ignorable,
                             t.n_cased,                   t.title_size, n_title_multi, t.n_word};
  b.insert(b.end(), t.from, t.from + t.size);
  b.insert(b.end(), t.to, t.to + t.size);
  b.insert(b.end(), t.multi, t.multi + n_multi);
  b.insert(b.end(), t.ignorable, t.ignorable + 2 * t.n_ignorable);
  b.insert(b.end(), t.cased, t.cased + 2 * t.n_cased);
  if (kind == case_kind::title) {
    b.insert(b.end(), t.title_from, t.title_from + t.title_size);
    b.insert(b.end(), t.title_to, t.title_to + t.title_size);
    b.insert(b.end(), t.title_multi, t.title_multi + n_title_multi);
    b.insert(b.end(), t.word, t.word + 2 * t.n_word);
  }
  return b;
}

}  // namespace tug::unicode
