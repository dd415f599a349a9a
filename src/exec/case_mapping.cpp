// The host tables of the case mappings (src/exec/case_mapping.hpp) and their blob for the CUDA evaluator.
#include "exec/case_mapping.hpp"

#include <iterator>

#include "exec/case_mapping_data.hpp"

namespace tug::unicode {

namespace {

static_assert(data::multi_flag == case_multi_flag);
static_assert(std::size(data::upper_from) == std::size(data::upper_to));
static_assert(std::size(data::lower_from) == std::size(data::lower_to));

case_table make_table(bool upper) {
  case_table t;
  t.lower = !upper;
  t.from = upper ? data::upper_from : data::lower_from;
  t.to = upper ? data::upper_to : data::lower_to;
  t.multi = upper ? data::upper_multi : data::lower_multi;
  t.size = static_cast<uint32_t>(upper ? std::size(data::upper_from) : std::size(data::lower_from));
  t.ignorable = data::case_ignorable;
  t.n_ignorable = static_cast<uint32_t>(std::size(data::case_ignorable) / 2);
  t.cased = data::cased;
  t.n_cased = static_cast<uint32_t>(std::size(data::cased) / 2);
  return t;
}

}  // namespace

const case_table& host_case_table(bool upper) {
  static const case_table up = make_table(true), low = make_table(false);
  return upper ? up : low;
}

std::vector<uint32_t> case_table_blob(bool upper) {
  const case_table& t = host_case_table(upper);
  const uint32_t n_multi =
      static_cast<uint32_t>(upper ? std::size(data::upper_multi) : std::size(data::lower_multi));
  std::vector<uint32_t> b = {t.lower ? 1u : 0u, t.size, n_multi, t.n_ignorable, t.n_cased};
  b.insert(b.end(), t.from, t.from + t.size);
  b.insert(b.end(), t.to, t.to + t.size);
  b.insert(b.end(), t.multi, t.multi + n_multi);
  b.insert(b.end(), t.ignorable, t.ignorable + 2 * t.n_ignorable);
  b.insert(b.end(), t.cased, t.cased + 2 * t.n_cased);
  return b;
}

}  // namespace tug::unicode
