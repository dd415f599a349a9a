#pragma once
// Row-mapping helpers shared by the string and temporal kernels (strings.cpp, temporal.cpp).
#include <cstring>
#include <initializer_list>
#include <span>

#include "tug/core/column.hpp"

namespace tug::cpu::detail {

/// Validity bitmap (starting at bit 0) of the rows valid in every column of `cols`, each `n` rows
/// long and possibly sliced; empty when no column has nulls.
inline buffer_ptr and_validity(std::span<const column* const> cols, int64_t n, memory_resource* mr) {
  buffer_ptr out;
  for (const column* c : cols) {
    if (!c->has_nulls()) continue;
    if (!out) {
      out = make_buffer(static_cast<size_t>(bits::bytes_for(n)), mr);
      std::memset(out->data(), 0xff, out->size());
    }
    uint8_t* o = out->as<uint8_t>();
    const uint8_t* src = c->validity_buffer()->as<uint8_t>();
    const int64_t off = c->offset();
    const int64_t shift = off & 7, full = n / 8;
    const uint8_t* s = src + (off >> 3);
    if (shift == 0) {
      for (int64_t k = 0; k < full; ++k) o[k] &= s[k];
    } else {
      // each output byte straddles two source bytes; both exist for the full output bytes
      for (int64_t k = 0; k < full; ++k)
        o[k] &= static_cast<uint8_t>((s[k] >> shift) | (s[k + 1] << (8 - shift)));
    }
    for (int64_t i = full * 8; i < n; ++i)
      if (!bits::get(src, off + i)) bits::clear(o, i);
  }
  return out;
}
inline buffer_ptr and_validity(std::initializer_list<const column*> cols, int64_t n, memory_resource* mr) {
  return and_validity(std::span<const column* const>(cols.begin(), cols.size()), n, mr);
}

/// A fixed-width column of `n` rows whose row i is `f(i)`, null where any of `inputs` is null (`f`
/// also runs on null rows and must be safe on arbitrary values there).
template <typename Out, typename F>
column map_rows(const data_type& out_type, int64_t n, std::initializer_list<const column*> inputs,
                memory_resource* mr, F&& f) {
  auto data = make_buffer(sizeof(Out) * static_cast<size_t>(n), mr);
  Out* o = data->as<Out>();
  for (int64_t i = 0; i < n; ++i) o[i] = f(i);
  return column(out_type, n, std::move(data), and_validity(inputs, n, mr), -1);
}

}  // namespace tug::cpu::detail
