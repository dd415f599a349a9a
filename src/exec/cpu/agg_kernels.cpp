#include "agg_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "exec/cpu/expr/kernels.hpp"
#include "exec/float_text.hpp"
#include "exec/moments.hpp"
#include "tug/exec/key_index.hpp"
#include "tug/runtime/thread_pool.hpp"

namespace tug::cpu {

namespace {

// Calls f(row, group) for every row.
template <typename F>
inline void for_rows(const group_map& g, F&& f) {
  if (g.ids) {
    for (int64_t i = 0; i < g.num_rows; ++i) f(i, g.ids[i]);
  } else {
    for (int64_t i = 0; i < g.num_rows; ++i) f(i, int64_t{0});
  }
}

// Calls f(row, group) for every row where `v` is valid.
template <typename F>
inline void for_valid_rows(const group_map& g, const column_view& v, F&& f) {
  if (!v.validity) {
    for_rows(g, f);
    return;
  }
  for_rows(g, [&](int64_t i, int64_t gid) {
    if (v.is_valid(i)) f(i, gid);
  });
}

inline size_t sz(int64_t n) { return static_cast<size_t>(n); }

// acc[group] += get(row) over the valid rows of `v`. With few groups and no nulls the rows go round
// four accumulator lanes, so consecutive rows of one group do not wait on each other's addition
// (the lanes are added at the end: floating-point sums are then in another, fixed, order).
template <typename Acc, typename Get>
void accumulate(const group_map& g, const column_view& v, std::vector<Acc>& acc, Get&& get) {
  constexpr int64_t lanes = 4;
  if (!g.ids || v.validity || g.num_groups > 64) {
    for_valid_rows(g, v, [&](int64_t i, int64_t gid) { acc[sz(gid)] += get(i); });
    return;
  }
  std::vector<Acc> lane(sz(lanes * g.num_groups), Acc{0});
  int64_t i = 0;
  for (; i + lanes <= g.num_rows; i += lanes)
    for (int64_t l = 0; l < lanes; ++l) lane[sz(g.ids[i + l] * lanes + l)] += get(i + l);
  for (; i < g.num_rows; ++i) lane[sz(g.ids[i] * lanes)] += get(i);
  for (int64_t k = 0; k < g.num_groups; ++k)
    acc[sz(k)] += (lane[sz(k * lanes)] + lane[sz(k * lanes + 1)]) + (lane[sz(k * lanes + 2)] + lane[sz(k * lanes + 3)]);
}

template <type_id Id>
constexpr bool is_summable = Id != type_id::string && Id != type_id::date32 && Id != type_id::timestamp;

// Numbers and booleans: what mean, std, var, median and quantile accept.
template <type_id Id>
constexpr bool is_number = is_summable<Id> && Id != type_id::duration;

template <type_id Id>
constexpr bool is_unsigned_id =
    Id == type_id::uint8 || Id == type_id::uint16 || Id == type_id::uint32 || Id == type_id::uint64;

// Accumulator of sums: wrapping 64-bit for integers (as Polars), double for floats, exact 192 bits for
// decimals (a sum past the result's precision raises).
template <type_id Id>
using sum_acc_t = std::conditional_t<Id == type_id::float32 || Id == type_id::float64, double,
                                     std::conditional_t<Id == type_id::decimal128, decimal_sum, uint64_t>>;

// Output storage of sums: i64 for signed integers, booleans and durations.
template <type_id Id>
using sum_out_t = std::conditional_t<
    Id == type_id::float32 || Id == type_id::float64, double,
    std::conditional_t<Id == type_id::decimal128, __int128,
                       std::conditional_t<is_unsigned_id<Id>, uint64_t, int64_t>>>;

// The values of `v` as float64, as mean, std, var, median and quantile read numbers: decimals
// correctly rounded, by the conversion the cast uses (float_text::decimal_to_float).
template <type_id Id>
struct as_double {
  const storage_t<Id>* x;
  int scale;
  explicit as_double(const column_view& v) : x(v.values<storage_t<Id>>()), scale(v.type.scale) {}
  double operator()(int64_t i) const {
    if constexpr (Id == type_id::decimal128)
      return float_text::decimal_to_float<double>(x[i], scale);
    else
      return static_cast<double>(x[i]);
  }
};

column int64_column(const std::vector<int64_t>& v, memory_resource* mr) {
  fixed_width_builder<int64_t> b(type_id::int64, static_cast<int64_t>(v.size()), mr);
  if (!v.empty()) std::memcpy(b.data(), v.data(), v.size() * sizeof(int64_t));
  return b.finish();
}

// A float64 column of `v`, null where `valid` is 0 (all valid when `valid` is empty).
column float64_column(const std::vector<double>& v, const std::vector<uint8_t>& valid, memory_resource* mr) {
  fixed_width_builder<double> b(type_id::float64, static_cast<int64_t>(v.size()), mr);
  for (size_t i = 0; i < v.size(); ++i) {
    if (!valid.empty() && !valid[i]) b.set_null(static_cast<int64_t>(i));
    else b.set(static_cast<int64_t>(i), v[i]);
  }
  return b.finish();
}

// A column of type `t` from per-group values, null where `valid` is 0.
template <type_id Id>
column build_column(const data_type& t, const std::vector<storage_t<Id>>& vals, const std::vector<uint8_t>& valid,
                    memory_resource* mr) {
  auto n = static_cast<int64_t>(vals.size());
  if constexpr (Id == type_id::string) {
    int64_t bytes = 0;
    for (auto& s : vals) bytes += static_cast<int64_t>(s.size());
    string_builder b(n, bytes, mr);
    for (int64_t i = 0; i < n; ++i) {
      if (valid[sz(i)]) b.append(vals[sz(i)]);
      else b.append_null();
    }
    return b.finish(t);
  } else {
    fixed_width_builder<storage_t<Id>> b(t, n, mr);
    for (int64_t i = 0; i < n; ++i) {
      if (valid[sz(i)]) b.set(i, vals[sz(i)]);
      else b.set_null(i);
    }
    return b.finish();
  }
}

template <type_id Id>
column sum_kernel(const agg_spec& s, const column_view& v, const group_map& g, memory_resource* mr) {
  using T = storage_t<Id>;
  using Acc = sum_acc_t<Id>;
  using Out = sum_out_t<Id>;
  std::vector<Acc> acc(sz(g.num_groups), Acc{0});
  const T* x = v.values<T>();
  accumulate(g, v, acc, [x](int64_t i) { return static_cast<Acc>(x[i]); });
  fixed_width_builder<Out> b(s.output_type, g.num_groups, mr);
  for (int64_t k = 0; k < g.num_groups; ++k) {
    if constexpr (Id == type_id::decimal128) {
      if (!acc[sz(k)].fits(s.output_type.precision)) raise_sum_overflow(s, acc[sz(k)]);
      b.set(k, static_cast<Out>(acc[sz(k)].lo));
    } else {
      b.set(k, static_cast<Out>(acc[sz(k)]));
    }
  }
  return b.finish();
}

template <type_id Id, bool Max>
column minmax_kernel(const agg_spec& s, const column_view& v, const group_map& g, memory_resource* mr) {
  using T = storage_t<Id>;
  constexpr bool floating = Id == type_id::float32 || Id == type_id::float64;
  std::vector<T> best(sz(g.num_groups));
  std::vector<uint8_t> has(sz(g.num_groups), 0);
  std::vector<uint8_t> nan(floating ? sz(g.num_groups) : 0, 0);
  for_valid_rows(g, v, [&](int64_t i, int64_t gid) {
    T x = v.value<T>(i);
    auto k = sz(gid);
    if constexpr (floating) {
      if (x != x) {
        nan[k] = 1;
        return;
      }
    }
    if (!has[k] || (Max ? best[k] < x : x < best[k])) {
      best[k] = x;
      has[k] = 1;
    }
  });
  if constexpr (floating) {
    for (size_t k = 0; k < has.size(); ++k) {
      if (!has[k] && nan[k]) {
        best[k] = std::numeric_limits<T>::quiet_NaN();
        has[k] = 1;
      }
    }
  }
  return build_column<Id>(s.output_type, best, has, mr);
}

template <type_id Id>
column any_all_kernel(bool all, const column_view& v, const group_map& g, memory_resource* mr) {
  std::vector<uint8_t> r(sz(g.num_groups), all ? 1 : 0);
  const bool* x = v.values<bool>();
  if (all) for_valid_rows(g, v, [&](int64_t i, int64_t gid) { r[sz(gid)] &= static_cast<uint8_t>(x[i]); });
  else for_valid_rows(g, v, [&](int64_t i, int64_t gid) { r[sz(gid)] |= static_cast<uint8_t>(x[i]); });
  fixed_width_builder<bool> b(type_id::boolean, g.num_groups, mr);
  for (int64_t k = 0; k < g.num_groups; ++k) b.set(k, r[sz(k)] != 0);
  return b.finish();
}

// Per group: the number of valid values and their sum; with `with_m2` also their mean and sum of
// squared deviations from it, by the two passes of exec/moments.hpp (which the CUDA backend runs too).
struct group_moments {
  std::vector<int64_t> n;
  std::vector<double> sum;
  std::vector<double> mean;
  std::vector<double> m2;
};

// Pass 1 of var / std per group: the count, the sum and the smallest and largest value (NaN ignored),
// for moments::center.
template <typename Get>
void first_pass(const group_map& g, const column_view& v, Get&& get, group_moments& m, std::vector<double>& lo,
                std::vector<double>& hi) {
  lo.assign(sz(g.num_groups), std::numeric_limits<double>::infinity());
  hi.assign(sz(g.num_groups), -std::numeric_limits<double>::infinity());
  for_valid_rows(g, v, [&](int64_t i, int64_t gid) {
    double x = get(i);
    auto k = sz(gid);
    m.n[k]++;
    m.sum[k] += x;
    if (x < lo[k]) lo[k] = x;
    if (x > hi[k]) hi[k] = x;
  });
}

// Pass 2 and the results from pass 1's count, sum and range (moments.hpp).
template <typename Get>
void second_pass(const group_map& g, const column_view& v, Get&& get, const std::vector<double>& lo,
                 const std::vector<double>& hi, group_moments& m) {
  auto ng = sz(g.num_groups);
  std::vector<double> c(ng), d1(ng, 0.0), d2(ng, 0.0);
  for (size_t k = 0; k < ng; ++k)
    c[k] = moments::center(m.sum[k], static_cast<double>(m.n[k]), lo[k], hi[k]);
  for_valid_rows(g, v, [&](int64_t i, int64_t gid) {
    double x = get(i);
    auto k = sz(gid);
    d1[k] += moments::deviation(1.0, x, c[k]);
    d2[k] += moments::squared_deviation(1.0, x, 0.0, c[k]);
  });
  m.mean.assign(ng, 0.0);
  m.m2.assign(ng, 0.0);
  for (size_t k = 0; k < ng; ++k) {
    if (m.n[k] == 0) continue;
    auto w = static_cast<double>(m.n[k]);
    m.mean[k] = moments::mean(c[k], d1[k], w);
    m.m2[k] = moments::m2(d1[k], d2[k], w);
  }
}

template <type_id Id>
group_moments moments_kernel(const column_view& v, const group_map& g, bool with_m2) {
  group_moments m;
  m.n.assign(sz(g.num_groups), 0);
  m.sum.assign(sz(g.num_groups), 0.0);
  if (!with_m2) {  // mean: count and sum
    accumulate(g, v, m.n, [](int64_t) { return int64_t{1}; });
    accumulate(g, v, m.sum, as_double<Id>(v));
    return m;
  }
  auto run = [&](auto get) {
    std::vector<double> lo, hi;
    first_pass(g, v, get, m, lo, hi);
    second_pass(g, v, get, lo, hi, m);
  };
  if constexpr (Id == type_id::decimal128) {  // two passes over the values: convert them once
    std::vector<double> x(sz(g.num_rows));
    as_double<Id> conv(v);
    for_valid_rows(g, v, [&](int64_t i, int64_t) { x[sz(i)] = conv(i); });
    run([p = x.data()](int64_t i) { return p[i]; });
  } else {
    run(as_double<Id>(v));
  }
  return m;
}

group_moments compute_moments(const agg_spec& s, const column_view& v, const group_map& g, bool with_m2) {
  return type_dispatch(v.type.id, [&]<type_id Id>() -> group_moments {
    if constexpr (is_number<Id>) return moments_kernel<Id>(v, g, with_m2);
    throw type_error(std::string("cannot compute ") + to_string(s.op) + " of a " + to_string(v.type) + " column");
  });
}

column mean_result(const std::vector<int64_t>& n, const std::vector<double>& sum, memory_resource* mr) {
  std::vector<double> out(n.size());
  std::vector<uint8_t> valid(n.size());
  for (size_t k = 0; k < n.size(); ++k) {
    valid[k] = n[k] > 0;
    out[k] = n[k] > 0 ? sum[k] / static_cast<double>(n[k]) : 0.0;
  }
  return float64_column(out, valid, mr);
}

column var_result(const agg_spec& s, const std::vector<int64_t>& n, const std::vector<double>& m2,
                  memory_resource* mr) {
  std::vector<double> out(n.size());
  std::vector<uint8_t> valid(n.size());
  for (size_t k = 0; k < n.size(); ++k) {
    valid[k] = moments::has_variance(n[k], s.ddof);
    if (valid[k]) out[k] = moments::variance(m2[k], n[k], s.ddof, s.op == agg_op::std);
  }
  return float64_column(out, valid, mr);
}

// Quantile of the n values at `p` (reordered), as Polars computes it. Values are selected in IEEE
// 754's total order (-0.0 below 0.0, NaN above every number), so the sign of a zero result does not
// depend on the selection's order (the CUDA backend sorts the same way).
double quantile_of(double* p, int64_t n, double q, const std::string& method) {
  auto lt = [](double a, double b) {
    return a < b || (std::isnan(b) && !std::isnan(a)) || (a == b && std::signbit(a) && !std::signbit(b));
  };
  auto select = [&](int64_t k) {
    std::nth_element(p, p + k, p + n, lt);
    return p[k];
  };
  double fidx = static_cast<double>(n - 1) * q;
  if (method == "nearest") return select(std::min(n - 1, static_cast<int64_t>(std::round(fidx))));
  if (method == "higher") return select(std::min(n - 1, static_cast<int64_t>(std::ceil(fidx))));
  auto base = std::min(n - 1, static_cast<int64_t>(fidx));
  double lower = select(base);
  if (method == "lower") return lower;
  auto top = std::min(n - 1, static_cast<int64_t>(std::ceil(fidx)));
  if (top == base) return lower;
  double upper = *std::min_element(p + base + 1, p + n, lt);
  if (method == "midpoint") return (lower + upper) / 2;
  if (lower == upper) return lower;
  return (fidx - static_cast<double>(base)) * (upper - lower) + lower;  // linear
}

template <type_id Id>
column quantile_kernel(const agg_spec& s, const column_view& v, const group_map& g, memory_resource* mr) {
  // bucket the valid values by group (counting sort), then select within each bucket
  std::vector<int64_t> off(sz(g.num_groups) + 1, 0);
  for_valid_rows(g, v, [&](int64_t, int64_t gid) { off[sz(gid) + 1]++; });
  for (size_t k = 1; k < off.size(); ++k) off[k] += off[k - 1];
  std::vector<double> vals(sz(off.back()));
  std::vector<int64_t> pos(off.begin(), off.end() - 1);
  as_double<Id> get(v);
  for_valid_rows(g, v, [&](int64_t i, int64_t gid) { vals[sz(pos[sz(gid)]++)] = get(i); });
  std::vector<double> out(sz(g.num_groups));
  std::vector<uint8_t> valid(sz(g.num_groups));
  for (size_t k = 0; k < out.size(); ++k) {
    int64_t n = off[k + 1] - off[k];
    valid[k] = n > 0;
    if (n > 0) out[k] = quantile_of(vals.data() + off[k], n, s.q, s.interpolation);
  }
  return float64_column(out, valid, mr);
}

column count_kernel(const column* in, const group_map& g, memory_resource* mr) {
  std::vector<int64_t> c(sz(g.num_groups), 0);
  if (in) for_valid_rows(g, in->view(), [&](int64_t, int64_t gid) { c[sz(gid)]++; });
  else for_rows(g, [&](int64_t, int64_t gid) { c[sz(gid)]++; });
  return int64_column(c, mr);
}

column first_last_kernel(bool last, const column& in, const group_map& g, memory_resource* mr) {
  std::vector<int64_t> rows(sz(g.num_groups), -1);
  if (last) {
    for_rows(g, [&](int64_t i, int64_t gid) { rows[sz(gid)] = i; });
  } else if (!g.ids) {
    if (g.num_rows > 0 && g.num_groups > 0) rows[0] = 0;
  } else {
    for (int64_t i = g.num_rows - 1; i >= 0; --i) rows[sz(g.ids[i])] = i;
  }
  return gather(in, rows, mr);
}

column n_unique_kernel(const column& in, const group_map& g, memory_resource* mr) {
  std::vector<int64_t> c(sz(g.num_groups), 0);
  if (g.num_rows > 0) {
    if (!g.ids) {
      c[0] = key_index({in}).num_groups();
    } else {
      // distinct (group, value) pairs, counted per group
      key_index pairs({int64_column(std::vector<int64_t>(g.ids, g.ids + g.num_rows), mr), in});
      for (int64_t r : pairs.first_rows()) c[sz(g.ids[r])]++;
    }
  }
  return int64_column(c, mr);
}

[[noreturn]] void bad_type(const agg_spec& s, const data_type& t) {
  throw type_error(std::string("cannot compute ") + to_string(s.op) + " of a " + to_string(t) + " column");
}

}  // namespace

void raise_sum_overflow(const agg_spec& s, const decimal_sum& sum) {
  __int128 v;
  std::string what = sum.to_int128(v) ? detail::decimal_text(v, s.output_type.scale) + " has more than " +
                                            std::to_string(s.output_type.precision) + " digits"
                                      : "does not fit in 128 bits";
  // by the operation and the input's type: the input's position differs between the engines' layouts
  throw compute_error(std::string("decimal overflow in ") + to_string(s.op) + " of a " + to_string(s.input_type) +
                      " column: a group's sum " + what + " (result type " + to_string(s.output_type) + ")");
}

std::string describe(const agg_spec& s) {
  std::string out = to_string(s.op);
  out += '(';
  if (s.input < 0) {
    out += '*';
  } else {
    out += '#';
    out += std::to_string(s.input);
  }
  out += ')';
  return out;
}

std::string describe_columns(const std::vector<size_t>& columns) {
  std::string out = "[";
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i) out += ", ";
    out += '#';
    out += std::to_string(columns[i]);
  }
  out += ']';
  return out;
}

row_groups group_rows(const std::vector<column>& keys, thread_pool* pool) {
  TUG_EXPECTS(!keys.empty(), "group_rows needs at least one key column");
  int64_t n = keys[0].size();
  int64_t nc = pool && n >= (int64_t{1} << 16) ? pool->size() : 1;
  if (nc <= 1) {
    row_groups r;
    key_index ki(keys);
    r.first_row = ki.first_rows();
    r.ids = ki.take_group_ids();
    r.count();
    return r;
  }
  std::vector<std::vector<column>> chunks(sz(nc));
  for (int64_t c = 0; c < nc; ++c) {
    int64_t lo = n * c / nc, hi = n * (c + 1) / nc;
    for (auto& k : keys) chunks[sz(c)].push_back(k.slice(lo, hi - lo));
  }
  return group_chunks(chunks, *pool);
}

row_groups group_in_parts(const std::vector<column>& keys, thread_pool& pool) {
  TUG_EXPECTS(!keys.empty(), "group_in_parts needs at least one key column");
  const int64_t n = keys[0].size();
  const auto parts = static_cast<size_t>(std::max(pool.size(), 1));
  const auto slices = static_cast<int64_t>(parts);
  // the part of each row from its key hash (equal keys, as key_index compares them, hash alike); high bits,
  // so that each part's keys still spread over key_index's table
  std::vector<uint64_t> hash(sz(n));
  auto part_of = [parts](uint64_t h) { return static_cast<size_t>((h >> 32) % parts); };
  std::vector<std::vector<size_t>> count(parts, std::vector<size_t>(parts, 0));  // [slice][part]
  pool.parallel_for(slices, [&](int64_t t) {
    const int64_t lo = n * t / slices, hi = n * (t + 1) / slices;
    std::vector<column> slice;
    for (const column& k : keys) slice.push_back(k.slice(lo, hi - lo));
    hash_rows(slice, hash.data() + lo);
    for (int64_t i = lo; i < hi; ++i) count[sz(t)][part_of(hash[sz(i)])]++;
  });
  // each part's rows in row order: slice t's rows of part p go after slices 0..t-1's
  std::vector<std::vector<int64_t>> rows(parts);
  std::vector<std::vector<size_t>> at(parts, std::vector<size_t>(parts, 0));  // [slice][part]
  for (size_t p = 0; p < parts; ++p) {
    size_t total = 0;
    for (size_t t = 0; t < parts; ++t) {
      at[t][p] = total;
      total += count[t][p];
    }
    rows[p].resize(total);
  }
  pool.parallel_for(slices, [&](int64_t t) {
    const int64_t lo = n * t / slices, hi = n * (t + 1) / slices;
    std::vector<size_t>& next = at[sz(t)];
    for (int64_t i = lo; i < hi; ++i) {
      const size_t p = part_of(hash[sz(i)]);
      rows[p][next[p]++] = i;
    }
  });
  // each part indexed on its own: local ids in the part's row order, first rows as rows of `keys`
  std::vector<std::vector<int64_t>> local(parts), firsts(parts);
  pool.parallel_for(slices, [&](int64_t q) {
    const auto p = sz(q);
    if (rows[p].empty()) return;
    std::vector<column> part_keys;
    for (const column& k : keys) part_keys.push_back(gather(k, rows[p]));
    local[p].resize(rows[p].size());
    key_index ki(std::move(part_keys), local[p].data());
    for (int64_t f : ki.first_rows()) firsts[p].push_back(rows[p][sz(f)]);
  });
  // the groups numbered by their first row (first-seen order over all rows, as one key_index numbers them)
  std::vector<int64_t> owner(sz(n), -1);  // at a group's first row: its local id * parts + its part
  pool.parallel_for(slices, [&](int64_t q) {
    const auto p = sz(q);
    for (size_t g = 0; g < firsts[p].size(); ++g)
      owner[sz(firsts[p][g])] = static_cast<int64_t>(g * parts + p);
  });
  std::vector<std::vector<int64_t>> global(parts);
  for (size_t p = 0; p < parts; ++p) global[p].resize(firsts[p].size());
  row_groups r;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t o = owner[sz(i)];
    if (o < 0) continue;
    global[sz(o) % parts][sz(o) / parts] = static_cast<int64_t>(r.first_row.size());
    r.first_row.push_back(i);
  }
  r.ids.resize(sz(n));
  r.count();
  pool.parallel_for(slices, [&](int64_t q) {
    const auto p = sz(q);
    for (size_t j = 0; j < rows[p].size(); ++j)
      r.ids[sz(rows[p][j])] = global[p][sz(local[p][j])];
  });
  return r;
}

row_groups group_chunks(const std::vector<std::vector<column>>& chunks, thread_pool& pool) {
  TUG_EXPECTS(!chunks.empty() && !chunks[0].empty(), "group_chunks needs at least one chunk and key column");
  // index the chunks in parallel, then index the chunks' first rows (in chunk order, so the merged
  // ids are in first-seen order over all rows) and renumber each chunk's ids
  size_t nc = chunks.size();
  std::vector<int64_t> lo(nc + 1, 0);
  for (size_t c = 0; c < nc; ++c) lo[c + 1] = lo[c] + chunks[c][0].size();
  row_groups r;
  r.ids.resize(sz(lo[nc]));
  r.count();
  std::vector<std::vector<int64_t>> firsts(nc);
  pool.parallel_for(static_cast<int64_t>(nc), [&](int64_t c) {
    key_index ki(chunks[sz(c)], r.ids.data() + lo[sz(c)]);
    firsts[sz(c)] = ki.first_rows();
  });
  // key rows of the chunks' groups, concatenated
  std::vector<int64_t> base(nc + 1, 0);
  for (size_t c = 0; c < nc; ++c) base[c + 1] = base[c] + static_cast<int64_t>(firsts[c].size());
  std::vector<column> first_keys;
  for (size_t k = 0; k < chunks[0].size(); ++k) {
    std::vector<column> pieces;
    for (size_t c = 0; c < nc; ++c) pieces.push_back(gather(chunks[c][k], firsts[c]));
    first_keys.push_back(concatenate(pieces));
  }
  // the chunks' groups merged; where they are many (keys of many distinct values: every chunk holds most
  // of them) and threads enough to repay the parts' extra passes, by parts in parallel, the same ids as one
  // index gives
  row_groups merged;
  if (first_keys[0].size() >= kPartedMergeRows && pool.size() >= kPartedMergeThreads) {
    merged = group_in_parts(first_keys, pool);
  } else {
    key_index ki(std::move(first_keys));
    merged.first_row = ki.first_rows();
    merged.ids = ki.take_group_ids();
  }
  const std::vector<int64_t>& global = merged.ids;
  for (int64_t f : merged.first_row) {
    size_t c = static_cast<size_t>(std::upper_bound(base.begin(), base.end(), f) - base.begin()) - 1;
    r.first_row.push_back(lo[c] + firsts[c][sz(f - base[c])]);
  }
  pool.parallel_for(static_cast<int64_t>(nc), [&](int64_t c) {
    const int64_t* map = global.data() + base[sz(c)];
    int64_t* ids = r.ids.data() + lo[sz(c)];
    for (int64_t i = 0, m = lo[sz(c) + 1] - lo[sz(c)]; i < m; ++i) ids[i] = map[ids[i]];
  });
  r.count();
  return r;
}

void check_agg_spec(const agg_spec& s) {
  if (s.op != agg_op::quantile && s.op != agg_op::median) return;
  if (!(s.q >= 0.0 && s.q <= 1.0))
    throw invalid_argument_error("quantile: q must be in [0, 1], got " + std::to_string(s.q));
  const std::string& m = s.interpolation;
  if (m != "nearest" && m != "lower" && m != "higher" && m != "midpoint" && m != "linear")
    throw invalid_argument_error("quantile: unknown interpolation '" + m +
                                 "' (expected nearest, lower, higher, midpoint or linear)");
}

column aggregate_groups(const agg_spec& s, const column* in, const group_map& g, memory_resource* mr) {
  switch (s.op) {
    case agg_op::len: return count_kernel(nullptr, g, mr);
    case agg_op::count: return count_kernel(in, g, mr);
    default: break;
  }
  TUG_EXPECTS(in != nullptr, std::string("aggregation ") + to_string(s.op) + " needs an input column");
  const column_view v = in->view();
  switch (s.op) {
    case agg_op::first: return first_last_kernel(false, *in, g, mr);
    case agg_op::last: return first_last_kernel(true, *in, g, mr);
    case agg_op::n_unique: return n_unique_kernel(*in, g, mr);
    case agg_op::mean: {
      group_moments m = compute_moments(s, v, g, false);
      return mean_result(m.n, m.sum, mr);
    }
    case agg_op::var:
    case agg_op::std: {
      group_moments m = compute_moments(s, v, g, true);
      return var_result(s, m.n, m.m2, mr);
    }
    default: break;
  }
  return type_dispatch(v.type.id, [&]<type_id Id>() -> column {
    switch (s.op) {
      case agg_op::sum:
        if constexpr (is_summable<Id>) return sum_kernel<Id>(s, v, g, mr);
        break;
      case agg_op::min: return minmax_kernel<Id, false>(s, v, g, mr);
      case agg_op::max: return minmax_kernel<Id, true>(s, v, g, mr);
      case agg_op::median:
      case agg_op::quantile:
        if constexpr (is_number<Id>) return quantile_kernel<Id>(s, v, g, mr);
        break;
      case agg_op::any:
      case agg_op::all:
        if constexpr (Id == type_id::boolean) return any_all_kernel<Id>(s.op == agg_op::all, v, g, mr);
        break;
      default: break;
    }
    bad_type(s, v.type);
  });
}

bool is_decomposable(agg_op op) {
  return op != agg_op::n_unique && op != agg_op::median && op != agg_op::quantile;
}

std::vector<data_type> state_types(const agg_spec& s) {
  switch (s.op) {
    case agg_op::mean: return {type_id::float64, type_id::int64};  // sum, count
    case agg_op::var:
    case agg_op::std: return {type_id::int64, type_id::float64, type_id::float64};  // count, mean, M2
    default: return {s.output_type};  // the aggregate itself
  }
}

schema partial_schema(const schema& in, const std::vector<size_t>& keys, const std::vector<agg_spec>& aggs) {
  schema out;
  for (size_t k : keys) out.push_back(in[k]);
  for (size_t i = 0; i < aggs.size(); ++i) {
    auto types = state_types(aggs[i]);
    for (size_t j = 0; j < types.size(); ++j)
      out.push_back({"__state" + std::to_string(i) + "_" + std::to_string(j), types[j]});
  }
  return out;
}

std::vector<column> concat_columns(const std::vector<table>& parts, const schema& in,
                                   const std::vector<size_t>& columns, memory_resource* mr) {
  std::vector<column> out;
  for (size_t c : columns) {
    if (parts.empty()) {
      out.push_back(make_empty_column(in[c].type));
    } else if (parts.size() == 1) {
      out.push_back(parts[0][c]);
    } else {
      std::vector<column> pieces;
      pieces.reserve(parts.size());
      for (auto& p : parts) pieces.push_back(p[c]);
      out.push_back(concatenate(pieces, mr));
    }
  }
  return out;
}

std::vector<column> partial_states(const agg_spec& s, const column* in, const group_map& g, memory_resource* mr) {
  TUG_EXPECTS(is_decomposable(s.op), std::string("partial_states: ") + to_string(s.op) + " is not decomposable");
  switch (s.op) {
    case agg_op::mean: {
      group_moments m = compute_moments(s, in->view(), g, false);
      return {float64_column(m.sum, {}, mr), int64_column(m.n, mr)};
    }
    case agg_op::var:
    case agg_op::std: {
      group_moments m = compute_moments(s, in->view(), g, true);
      return {int64_column(m.n, mr), float64_column(m.mean, {}, mr), float64_column(m.m2, {}, mr)};
    }
    default: return {aggregate_groups(s, in, g, mr)};
  }
}

column merge_states(const agg_spec& s, const std::vector<column>& states, const group_map& g, memory_resource* mr) {
  TUG_EXPECTS(states.size() == state_types(s).size(), "merge_states: wrong number of state columns");
  agg_spec m = s;
  m.input_type = states[0].type();
  m.input = 0;
  switch (s.op) {
    case agg_op::count:
    case agg_op::len:
      m.op = agg_op::sum;  // sums of i64 counts
      return aggregate_groups(m, &states[0], g, mr);
    case agg_op::mean: {
      std::vector<int64_t> n(sz(g.num_groups), 0);
      std::vector<double> sum(sz(g.num_groups), 0.0);
      const double* ps = states[0].view().values<double>();
      const int64_t* pn = states[1].view().values<int64_t>();
      for_rows(g, [&](int64_t i, int64_t gid) {
        sum[sz(gid)] += ps[i];
        n[sz(gid)] += pn[i];
      });
      return mean_result(n, sum, mr);
    }
    case agg_op::var:
    case agg_op::std: {
      // Chan et al.'s merge of (count, mean, M2) over all states at once, in moments.hpp's two passes
      auto ng = sz(g.num_groups);
      std::vector<int64_t> n(ng, 0);
      std::vector<double> sum(ng, 0.0), lo(ng, std::numeric_limits<double>::infinity()),
          hi(ng, -std::numeric_limits<double>::infinity()), d1(ng, 0.0), d2(ng, 0.0), m2(ng, 0.0);
      const int64_t* pn = states[0].view().values<int64_t>();
      const double* pm = states[1].view().values<double>();
      const double* pm2 = states[2].view().values<double>();
      for_rows(g, [&](int64_t i, int64_t gid) {
        if (pn[i] == 0) return;
        auto k = sz(gid);
        n[k] += pn[i];
        sum[k] += static_cast<double>(pn[i]) * pm[i];
        if (pm[i] < lo[k]) lo[k] = pm[i];
        if (pm[i] > hi[k]) hi[k] = pm[i];
      });
      std::vector<double> c(ng);
      for (size_t k = 0; k < ng; ++k)
        c[k] = moments::center(sum[k], static_cast<double>(n[k]), lo[k], hi[k]);
      for_rows(g, [&](int64_t i, int64_t gid) {
        if (pn[i] == 0) return;
        auto k = sz(gid);
        auto w = static_cast<double>(pn[i]);
        d1[k] += moments::deviation(w, pm[i], c[k]);
        d2[k] += moments::squared_deviation(w, pm[i], pm2[i], c[k]);
      });
      for (size_t k = 0; k < ng; ++k)
        if (n[k] > 0) m2[k] = moments::m2(d1[k], d2[k], static_cast<double>(n[k]));
      return var_result(s, n, m2, mr);
    }
    default:
      // sum, min, max, first, last, any, all: the same aggregation over the partial results
      return aggregate_groups(m, &states[0], g, mr);
  }
}

}  // namespace tug::cpu
