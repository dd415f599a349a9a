#include "tug/exec/key_index.hpp"
#include "tug/memory/scratch.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/hash.hpp"
#include "tug/runtime/query_control.hpp"
#include "short_string.hpp"

namespace tug {

namespace {

using hashing::hash_bytes;
using hashing::mix;

using hashing::null_hash;

template <typename T>
inline uint64_t value_hash(T v) {
  if constexpr (std::is_same_v<T, std::string_view>) {
    return hash_bytes(v.data(), v.size());
  } else if constexpr (std::is_floating_point_v<T>) {
    return hashing::hash_double(static_cast<double>(v));
  } else if constexpr (std::is_same_v<T, __int128>) {
    return hashing::hash_int128(v);
  } else {
    return hashing::hash_integral(v);
  }
}

template <typename T>
inline bool value_eq(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return a == b || (a != a && b != b);
  else return a == b;
}

struct col_ops {
  column_view v;
  explicit col_ops(column_view cv) : v(std::move(cv)) {}
  virtual ~col_ops() = default;
  virtual void hash(uint64_t* h, bool first) const = 0;
  /// Row i of this column equals row j of `o` (same type). Nulls equal nulls.
  virtual bool eq(int64_t i, const col_ops& o, int64_t j) const = 0;
};

template <type_id Id>
struct typed_ops final : col_ops {
  using T = storage_t<Id>;
  using col_ops::col_ops;
  void hash(uint64_t* h, bool first) const override {
    for (int64_t i = 0; i < v.size; ++i) {
      uint64_t x = v.is_valid(i) ? value_hash<T>(v.value<T>(i)) : null_hash;
      h[i] = first ? x : hashing::combine(h[i], x);
    }
  }
  bool eq(int64_t i, const col_ops& o, int64_t j) const override {
    bool a = v.is_valid(i), b = o.v.is_valid(j);
    if (!a || !b) return a == b;
    return value_eq<T>(v.value<T>(i), o.v.value<T>(j));
  }
};

std::unique_ptr<col_ops> make_ops(const column& c) {
  return type_dispatch(c.type().id, [&]<type_id Id>() -> std::unique_ptr<col_ops> {
    return std::make_unique<typed_ops<Id>>(c.view());
  });
}

std::vector<std::unique_ptr<col_ops>> make_all(const std::vector<column>& keys) {
  std::vector<std::unique_ptr<col_ops>> ops;
  for (auto& k : keys) ops.push_back(make_ops(k));
  return ops;
}

void hash_into(const std::vector<std::unique_ptr<col_ops>>& ops, uint64_t* h) {
  for (size_t c = 0; c < ops.size(); ++c) ops[c]->hash(h, c == 0);
}
void hash_into(const std::vector<std::unique_ptr<col_ops>>& ops, std::vector<uint64_t>& h) { hash_into(ops, h.data()); }

/// Fixed-width key types of the single-column fast path.
template <typename T>
constexpr bool fast_key = (std::is_integral_v<T> || std::is_floating_point_v<T>) && sizeof(T) <= 8;

/// Bits equal exactly when two keys are equal under value_eq (-0.0 == 0.0, all NaNs equal).
template <typename T>
inline uint64_t key_bits(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    double d = static_cast<double>(v);
    if (d == 0) d = 0;
    if (std::isnan(d)) return 0x7ff8000000000000ULL;
    uint64_t b;
    std::memcpy(&b, &d, 8);
    return b;
  } else {
    return static_cast<uint64_t>(v);
  }
}

/// Integral key types that the packed codec can encode (and strings of at most 7 bytes: their
/// short_string_code).
template <typename T>
constexpr bool packable = std::is_integral_v<T> && sizeof(T) <= 8;

/// One key column of the packed codec: code += (null ? 0 : value - min + nulls) * mult.
struct packed_part {
  type_id id;
  uint64_t min = 0;  // storage value (cast to uint64), or the short_string_code of strings
  uint64_t max = 0;
  uint64_t mult = 1;
  bool nulls = false;  // whether code 0 is reserved for null
};

/// Adds the digits of part `p` (column `v`, rows [from, from + len)) to `out`; `get(j)` is the value
/// of row from + j, as a V (the storage type; uint64 short codes for strings). See key_codec::encode.
template <typename V, typename Get>
void encode_digits(const packed_part& p, const column_view& v, int64_t from, int64_t len, bool first, uint64_t* out,
                   uint8_t* miss, Get get) {
  const uint64_t base = p.min - (p.nulls ? 1 : 0), mult = p.mult;
  auto put = [&](int64_t j, uint64_t digit) { out[j] = first ? digit * mult : out[j] + digit * mult; };
  if (miss) {
    const V lo = static_cast<V>(p.min), hi = static_cast<V>(p.max);
    for (int64_t j = 0; j < len; ++j) {
      bool valid = v.null_count == 0 || v.is_valid(from + j);
      V x = get(j);
      bool in = valid ? (x >= lo && x <= hi) : p.nulls;
      miss[j] |= !in;
      put(j, valid && in ? static_cast<uint64_t>(x) - base : 0);
    }
  } else if (v.null_count == 0) {
    for (int64_t j = 0; j < len; ++j) put(j, static_cast<uint64_t>(get(j)) - base);
  } else {
    for (int64_t j = 0; j < len; ++j) put(j, v.is_valid(from + j) ? static_cast<uint64_t>(get(j)) - base : 0);
  }
}

/// Smallest and largest value of the valid rows of `v` (`get(i)` = the value of row i). No valid row
/// gives 0, 0.
template <typename V, typename Get>
void value_range(const column_view& v, Get get, V& lo, V& hi) {
  lo = std::numeric_limits<V>::max();
  hi = std::numeric_limits<V>::lowest();
  if (v.null_count == 0) {
    for (int64_t i = 0; i < v.size; ++i) {
      lo = std::min(lo, get(i));
      hi = std::max(hi, get(i));
    }
  } else {
    for (int64_t i = 0; i < v.size; ++i) {
      if (!v.is_valid(i)) continue;
      lo = std::min(lo, get(i));
      hi = std::max(hi, get(i));
    }
  }
  if (lo > hi) lo = hi = V{};
}

/// Encodes each key tuple as one uint64 "code", equal exactly when the tuples are equal: either the
/// bits of a single fixed-width key without nulls, or integral (and short string) keys packed in
/// mixed radix over their value ranges (null gets its own digit).
struct key_codec {
  enum class kind { none, bits, packed } how = kind::none;
  type_id bits_id = type_id::int64;
  std::vector<packed_part> parts;
  uint64_t range = 0;  // packed: number of possible codes

  static constexpr int64_t block = 1024;
  static_assert(cancel_check_interval % block == 0, "check_cancelled_at(from) must fire on block starts");

  /// Codes of rows [from, from + len) of `cols` into `out`; with `miss`, rows whose values the
  /// indexed keys cannot contain (out of range, or null where no null was indexed) get miss = 1.
  void encode(const std::vector<column_view>& cols, int64_t from, int64_t len, uint64_t* out, uint8_t* miss) const {
    if (how == kind::bits) {
      type_dispatch(bits_id, [&]<type_id Id>() {
        using T = storage_t<Id>;
        if constexpr (fast_key<T>) {
          const column_view& v = cols[0];
          const T* x = v.values<T>() + from;
          for (int64_t j = 0; j < len; ++j) out[j] = key_bits(x[j]);
          if (miss && v.null_count > 0)
            for (int64_t j = 0; j < len; ++j) miss[j] |= !v.is_valid(from + j);
        }
      });
      return;
    }
    for (size_t c = 0; c < parts.size(); ++c) {
      const packed_part& p = parts[c];
      const column_view& v = cols[c];
      if (p.id == type_id::string) {
        encode_digits<uint64_t>(p, v, from, len, c == 0, out, miss,
                                [&](int64_t j) { return short_string_code(v.string(from + j)); });
        continue;
      }
      type_dispatch(p.id, [&]<type_id Id>() {
        using T = storage_t<Id>;
        if constexpr (packable<T>) {
          const T* x = v.values<T>() + from;
          encode_digits<T>(p, v, from, len, c == 0, out, miss, [x](int64_t j) { return x[j]; });
        }
      });
    }
  }
};

/// The packed codec of `keys` when every key is integral or a string of at most 7 bytes and the
/// product of the value ranges fits in 64 bits; kind::none otherwise.
key_codec plan_packed(const std::vector<column>& keys) {
  key_codec k;
  uint64_t range = 1;
  for (auto& col : keys) {
    column_view v = col.view();
    packed_part p{v.type.id};
    bool ok = false;
    if (v.type.id == type_id::string) {
      value_range<uint64_t>(v, [&](int64_t i) { return short_string_code(v.string(i)); }, p.min, p.max);
      ok = p.max != std::numeric_limits<uint64_t>::max();  // no string longer than 7 bytes
    } else {
      ok = type_dispatch(v.type.id, [&]<type_id Id>() {
        using T = storage_t<Id>;
        if constexpr (!packable<T>) {
          return false;
        } else {
          const T* x = v.values<T>();
          T lo, hi;
          value_range<T>(v, [x](int64_t i) { return x[i]; }, lo, hi);
          p.min = static_cast<uint64_t>(lo);
          p.max = static_cast<uint64_t>(hi);
          return true;
        }
      });
    }
    if (!ok) return {};
    p.nulls = v.null_count > 0;
    uint64_t span = p.max - p.min;  // exact: max >= min
    uint64_t digits = 0;
    if (__builtin_add_overflow(span, uint64_t{1} + (p.nulls ? 1 : 0), &digits)) return {};
    p.mult = range;
    if (__builtin_mul_overflow(range, digits, &range)) return {};
    k.parts.push_back(p);
  }
  k.how = key_codec::kind::packed;
  k.range = range;
  return k;
}

/// Hash slot of the code paths: the code stored next to the group id, so a probe touches one line.
struct code_slot {
  uint64_t code;
  int64_t group;  // -1 for an empty slot
};

/// Open-addressing table of codes: linear probing from a Fibonacci hash of the code (its high bits).
/// At most half full.
class code_table {
 public:
  /// An empty table of `capacity` slots (a power of two, at least 2).
  void reset(uint64_t capacity) {
    _slots.assign(capacity, code_slot{0, -1});
    _mask = capacity - 1;
    _shift = 64 - std::countr_zero(capacity);
  }
  uint64_t capacity() const { return _slots.size(); }
  int64_t bytes() const { return capacity_bytes(_slots); }
  /// Grows (rehashing) until `groups` groups fit.
  void reserve(uint64_t groups) {
    if (groups * 2 <= capacity()) return;
    std::vector<code_slot> old;
    old.swap(_slots);
    reset(std::bit_ceil(groups * 2));
    for (auto& e : old)
      if (e.group >= 0) _slots[free_slot(e.code)] = e;
  }
  /// Home slot of each of `codes[0, len)` into `home`, and a prefetch of those slots when the
  /// table is too big for the caches.
  void homes(const uint64_t* codes, int64_t len, uint64_t* home) const {
    for (int64_t j = 0; j < len; ++j) home[j] = (codes[j] * 0x9e3779b97f4a7c15ULL) >> _shift;
    if (_slots.size() * sizeof(code_slot) > (size_t{1} << 18))
      for (int64_t j = 0; j < len; ++j) __builtin_prefetch(&_slots[home[j]]);
  }
  /// Group of `code` (looked up from its home slot), or -1.
  int64_t find(uint64_t code, uint64_t slot) const {
    const code_slot* s = _slots.data();
    while (true) {
      const code_slot& e = s[slot];
      if (e.group < 0) return -1;
      if (e.code == code) return e.group;
      slot = (slot + 1) & _mask;
    }
  }
  /// Group of `code`, inserted as group `next` when absent (the caller reserved room for it).
  int64_t insert(uint64_t code, uint64_t slot, int64_t next) {
    code_slot* s = _slots.data();
    while (true) {
      code_slot& e = s[slot];
      if (e.group < 0) {
        e = {code, next};
        return next;
      }
      if (e.code == code) return e.group;
      slot = (slot + 1) & _mask;
    }
  }

 private:
  uint64_t free_slot(uint64_t code) const {
    uint64_t slot = (code * 0x9e3779b97f4a7c15ULL) >> _shift;
    while (_slots[slot].group >= 0) slot = (slot + 1) & _mask;
    return slot;
  }
  std::vector<code_slot> _slots;
  uint64_t _mask = 0;
  int _shift = 64;
};

/// The codes present among [0, range): a bitmap with the count of the set bits before each word, so
/// a present code's rank (its index among the present codes, in code order) takes one cache line;
/// and the group of each rank. A compact direct table for codes too sparse for one int32 per code.
class ranked_table {
 public:
  /// No code present yet.
  void reset(uint64_t range) { _words.assign(range / 64 + 1, word{0, 0}); }
  void add(uint64_t code) { _words[code >> 6].bits |= uint64_t{1} << (code & 63); }
  /// After the last add: ranks every present code, with no group yet.
  void rank() {
    uint64_t count = 0;
    for (auto& w : _words) {
      w.before = count;
      count += static_cast<uint64_t>(std::popcount(w.bits));
    }
    _group.assign(count + 1, -1);  // the last entry stays -1: what absent codes read
    _absent = count;
  }
  /// The group of a present code.
  int32_t& group(uint64_t code) { return _group[rank_of(code)]; }
  /// The group of `code`, or -1 when absent.
  int32_t find(uint64_t code) const { return _group[rank_of(code)]; }
  int64_t bytes() const { return capacity_bytes(_words) + capacity_bytes(_group); }

 private:
  struct word {
    uint64_t bits;
    uint64_t before;
  };
  uint64_t rank_of(uint64_t code) const {
    const word& w = _words[code >> 6];
    uint64_t bit = code & 63;
    bool present = (w.bits >> bit) & 1;
    uint64_t r = w.before + static_cast<uint64_t>(std::popcount(w.bits & ((uint64_t{1} << bit) - 1)));
    return present ? r : _absent;
  }
  std::vector<word> _words;
  std::vector<int32_t> _group;
  uint64_t _absent = 0;
};

/// Most codes a direct table (one int32 per possible code) may cover for `n` rows: at most 32 bytes
/// a row, what a half-full code table would take.
inline uint64_t direct_limit(int64_t n) { return static_cast<uint64_t>(n) * 8 + 4096; }
/// Most codes a ranked table (2 bits per possible code) may cover for `n` rows.
inline uint64_t ranked_limit(int64_t n) { return static_cast<uint64_t>(n) * 128 + (uint64_t{1} << 20); }

}  // namespace

std::vector<uint64_t> hash_rows(const std::vector<column>& keys) {
  TUG_EXPECTS(!keys.empty(), "hash_rows needs at least one column");
  std::vector<uint64_t> h(static_cast<size_t>(keys[0].size()));
  hash_into(make_all(keys), h);
  return h;
}

void hash_rows(const std::vector<column>& keys, uint64_t* out) {
  TUG_EXPECTS(!keys.empty(), "hash_rows needs at least one column");
  hash_into(make_all(keys), out);
}

struct key_index::impl {
  std::vector<column> keys;
  std::vector<std::unique_ptr<col_ops>> ops;
  key_codec codec;
  /// Codec paths: a direct table (group of each code, or -1) when the codes' range is small ...
  std::vector<int32_t> direct;
  /// ... a ranked table when it is sparser ...
  ranked_table ranked;
  bool use_ranked = false;
  /// ... else an open-addressing table of codes.
  code_table coded;
  /// Generic path: group id or -1 per slot, and each group's hash.
  std::vector<int64_t> slots;
  std::vector<uint64_t> group_hash;
  uint64_t mask = 0;
  /// The index's memory, counted against the query's memory_limit (memory/scratch.hpp).
  scratch_reservation charge;

  int64_t table_bytes() const {
    return capacity_bytes(direct) + ranked.bytes() + coded.bytes() + capacity_bytes(slots) + capacity_bytes(group_hash);
  }

  std::vector<column_view> views(const std::vector<column>& cols) const {
    std::vector<column_view> v;
    for (auto& c : cols) v.push_back(c.view());
    return v;
  }

  /// Doubles the generic table.
  void grow_slots() {
    slots.assign(slots.size() * 2, -1);
    mask = slots.size() - 1;
    for (size_t g = 0; g < group_hash.size(); ++g) {
      uint64_t slot = group_hash[g] & mask;
      while (slots[slot] >= 0) slot = (slot + 1) & mask;
      slots[slot] = static_cast<int64_t>(g);
    }
  }
};

key_index::key_index(std::vector<column> keys) : _impl(std::make_unique<impl>()) {
  TUG_EXPECTS(!keys.empty(), "key_index needs at least one key column");
  _group_of_row.resize(static_cast<size_t>(keys[0].size()));
  build(std::move(keys), _group_of_row.data());
}

key_index::key_index(std::vector<column> keys, int64_t* group_ids_out) : _impl(std::make_unique<impl>()) {
  TUG_EXPECTS(!keys.empty(), "key_index needs at least one key column");
  build(std::move(keys), group_ids_out);
}

void key_index::build(std::vector<column> keys, int64_t* ids) {
  // counted against the query's memory: the group ids it owns before it is built, then what its vectors
  // and tables hold, once their size is known (they grow with the distinct keys: one key's rows need
  // one first row and a small table)
  _impl->charge.resize(capacity_bytes(_group_of_row), "key index");
  build_tables(std::move(keys), ids);
  count_memory();
}

void key_index::count_memory() {
  if (!_impl) return;
  _impl->charge.resize(capacity_bytes(_group_of_row) + capacity_bytes(_first_row) + _impl->table_bytes(), "key index");
}

void key_index::build_tables(std::vector<column> keys, int64_t* ids) {
  auto& s = *_impl;
  s.keys = std::move(keys);
  s.ops = make_all(s.keys);
  int64_t n = s.keys[0].size();
  s.codec = plan_packed(s.keys);
  if (s.codec.how == key_codec::kind::none && s.keys.size() == 1 && !s.keys[0].has_nulls() &&
      type_dispatch(s.keys[0].type().id, []<type_id Id>() { return fast_key<storage_t<Id>>; })) {
    s.codec.how = key_codec::kind::bits;
    s.codec.bits_id = s.keys[0].type().id;
  }
  if (s.codec.how != key_codec::kind::none) {
    std::vector<column_view> views = s.views(s.keys);
    uint64_t codes[key_codec::block];
    bool packed = s.codec.how == key_codec::kind::packed && n < std::numeric_limits<int32_t>::max();
    bool direct = packed && s.codec.range <= direct_limit(n);
    s.use_ranked = packed && !direct && s.codec.range <= ranked_limit(n);
    if (direct) {
      s.direct.assign(s.codec.range, -1);
    } else if (s.use_ranked) {
      s.ranked.reset(s.codec.range);
      for (int64_t from = 0; from < n; from += key_codec::block) {
        check_cancelled_at(from);
        int64_t len = std::min(key_codec::block, n - from);
        s.codec.encode(views, from, len, codes, nullptr);
        for (int64_t j = 0; j < len; ++j) s.ranked.add(codes[j]);
      }
      s.ranked.rank();
    } else {
      s.coded.reset(std::bit_ceil(static_cast<uint64_t>(std::min<int64_t>(n, key_codec::block)) * 2 + 2));
    }
    uint64_t home[key_codec::block];
    for (int64_t from = 0; from < n; from += key_codec::block) {
      check_cancelled_at(from);  // a query cancelled while one large partition is indexed stops here
      int64_t len = std::min(key_codec::block, n - from);
      s.codec.encode(views, from, len, codes, nullptr);
      if (s.use_ranked) {
        for (int64_t j = 0; j < len; ++j) {
          int32_t& g = s.ranked.group(codes[j]);
          if (g < 0) {
            g = static_cast<int32_t>(_first_row.size());
            _first_row.push_back(from + j);
          }
          ids[from + j] = g;
        }
        continue;
      }
      if (direct) {
        int32_t* table = s.direct.data();
        for (int64_t j = 0; j < len; ++j) {
          int32_t& g = table[codes[j]];
          if (g < 0) {
            g = static_cast<int32_t>(_first_row.size());
            _first_row.push_back(from + j);
          }
          ids[from + j] = g;
        }
        continue;
      }
      if (from == key_codec::block && _first_row.size() * 4 >= static_cast<size_t>(from)) {
        // many distinct keys in the first block: size the table for as many over all rows
        s.coded.reserve(static_cast<uint64_t>(static_cast<double>(n) * static_cast<double>(_first_row.size()) /
                                              static_cast<double>(from)));
      }
      s.coded.reserve(_first_row.size() + static_cast<uint64_t>(len));
      s.coded.homes(codes, len, home);
      auto next = static_cast<int64_t>(_first_row.size());
      for (int64_t j = 0; j < len; ++j) {
        int64_t g = s.coded.insert(codes[j], home[j], next);
        ids[from + j] = g;
        if (g == next) {
          _first_row.push_back(from + j);
          ++next;
        }
      }
    }
    return;
  }
  std::vector<uint64_t> h(static_cast<size_t>(n));
  hash_into(s.ops, h);
  s.slots.assign(1024, -1);
  s.mask = 1023;
  size_t nk = s.ops.size();
  for (int64_t i = 0; i < n; ++i) {
    check_cancelled_at(i);
    uint64_t hv = h[static_cast<size_t>(i)];
    uint64_t slot = hv & s.mask;
    while (true) {
      int64_t g = s.slots[slot];
      if (g < 0) {
        g = static_cast<int64_t>(_first_row.size());
        s.slots[slot] = g;
        _first_row.push_back(i);
        s.group_hash.push_back(hv);
        ids[i] = g;
        if (_first_row.size() * 2 > s.slots.size()) s.grow_slots();
        break;
      }
      if (s.group_hash[static_cast<size_t>(g)] == hv) {
        int64_t r = _first_row[static_cast<size_t>(g)];
        bool same = true;
        for (size_t c = 0; c < nk && same; ++c) same = s.ops[c]->eq(i, *s.ops[c], r);
        if (same) {
          ids[i] = g;
          break;
        }
      }
      slot = (slot + 1) & s.mask;
    }
  }
}

key_index::~key_index() = default;

std::vector<int64_t> key_index::take_group_ids() {
  std::vector<int64_t> ids = std::move(_group_of_row);
  _group_of_row = {};
  count_memory();
  return ids;
}
key_index::key_index(key_index&&) noexcept = default;
key_index& key_index::operator=(key_index&&) noexcept = default;

std::vector<column> key_index::group_keys(memory_resource* mr) const {
  std::vector<column> out;
  for (auto& k : _impl->keys) out.push_back(gather(k, _first_row, mr));
  return out;
}

std::vector<int64_t> key_index::find(const std::vector<column>& probe) const {
  std::vector<int64_t> out(static_cast<size_t>(probe.empty() ? 0 : probe[0].size()));
  find(probe, out.data());
  return out;
}

void key_index::find(const std::vector<column>& probe, int64_t* out) const {
  auto& s = *_impl;
  TUG_EXPECTS(probe.size() == s.keys.size(), "key_index::find: key column count differs");
  for (size_t c = 0; c < probe.size(); ++c)
    TUG_EXPECTS(probe[c].type() == s.keys[c].type(), "key_index::find: key types differ: " +
                                                         to_string(probe[c].type()) + " vs " + to_string(s.keys[c].type()));
  int64_t n = probe[0].size();
  std::fill(out, out + n, int64_t{-1});
  if (s.codec.how != key_codec::kind::none) {
    std::vector<column_view> views = s.views(probe);
    uint64_t codes[key_codec::block];
    uint8_t miss[key_codec::block];
    uint64_t home[key_codec::block];
    for (int64_t from = 0; from < n; from += key_codec::block) {
      check_cancelled_at(from);
      int64_t len = std::min(key_codec::block, n - from);
      std::memset(miss, 0, static_cast<size_t>(len));
      s.codec.encode(views, from, len, codes, miss);
      int64_t* o = out + from;
      if (!s.direct.empty()) {
        // a missing code still encodes to a valid index
        const int32_t* table = s.direct.data();
        for (int64_t j = 0; j < len; ++j) {
          int32_t g = table[codes[j]];
          o[j] = miss[j] ? -1 : g;
        }
        continue;
      }
      if (s.use_ranked) {
        for (int64_t j = 0; j < len; ++j) {
          int32_t g = s.ranked.find(codes[j]);
          o[j] = miss[j] ? -1 : g;
        }
        continue;
      }
      s.coded.homes(codes, len, home);
      for (int64_t j = 0; j < len; ++j)
        if (!miss[j]) o[j] = s.coded.find(codes[j], home[j]);
    }
    return;
  }
  auto pops = make_all(probe);
  std::vector<uint64_t> h(static_cast<size_t>(n));
  hash_into(pops, h);
  size_t nk = pops.size();
  for (int64_t i = 0; i < n; ++i) {
    check_cancelled_at(i);
    uint64_t hv = h[static_cast<size_t>(i)];
    uint64_t slot = hv & s.mask;
    while (true) {
      int64_t g = s.slots[slot];
      if (g < 0) break;
      if (s.group_hash[static_cast<size_t>(g)] == hv) {
        int64_t r = _first_row[static_cast<size_t>(g)];
        bool same = true;
        for (size_t c = 0; c < nk && same; ++c) same = pops[c]->eq(i, *s.ops[c], r);
        if (same) {
          out[i] = g;
          break;
        }
      }
      slot = (slot + 1) & s.mask;
    }
  }
}

std::vector<uint8_t> any_null(const std::vector<column>& keys) {
  int64_t n = keys.empty() ? 0 : keys[0].size();
  std::vector<uint8_t> out(static_cast<size_t>(n), 0);
  for (auto& k : keys) {
    if (!k.has_nulls()) continue;
    for (int64_t i = 0; i < n; ++i)
      if (k.is_null(i)) out[static_cast<size_t>(i)] = 1;
  }
  return out;
}

}  // namespace tug
