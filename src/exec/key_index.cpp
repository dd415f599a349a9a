#include "tug/exec/key_index.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace tug {

namespace {

inline uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

inline uint64_t hash_bytes(const char* p, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = mix(h ^ w) * 0x9e3779b97f4a7c15ULL;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p + i, n - i);
  return mix(h ^ tail);
}

constexpr uint64_t null_hash = 0x5bd1e9955bd1e995ULL;

template <typename T>
inline uint64_t value_hash(T v) {
  if constexpr (std::is_same_v<T, std::string_view>) {
    return hash_bytes(v.data(), v.size());
  } else if constexpr (std::is_floating_point_v<T>) {
    double d = static_cast<double>(v);
    if (d == 0) d = 0;  // -0.0 == 0.0
    if (std::isnan(d)) return 0x7ff8000000000000ULL * 31;
    uint64_t b;
    std::memcpy(&b, &d, 8);
    return mix(b);
  } else if constexpr (std::is_same_v<T, __int128>) {
    return mix(static_cast<uint64_t>(v) ^ mix(static_cast<uint64_t>(v >> 64)));
  } else {
    return mix(static_cast<uint64_t>(v));
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
      h[i] = first ? x : mix(h[i] * 0x9e3779b97f4a7c15ULL + x);
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

void hash_into(const std::vector<std::unique_ptr<col_ops>>& ops, std::vector<uint64_t>& h) {
  for (size_t c = 0; c < ops.size(); ++c) ops[c]->hash(h.data(), c == 0);
}

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

/// Integral key types that the packed codec can encode.
template <typename T>
constexpr bool packable = std::is_integral_v<T> && sizeof(T) <= 8;

/// One key column of the packed codec: code += (null ? 0 : value - min + nulls) * mult.
struct packed_part {
  type_id id;
  uint64_t min = 0;  // storage value (cast to uint64)
  uint64_t max = 0;
  uint64_t mult = 1;
  bool nulls = false;  // whether code 0 is reserved for null
};

/// Encodes each key tuple as one uint64 "code", equal exactly when the tuples are equal: either the
/// bits of a single fixed-width key without nulls, or integral keys packed in mixed radix over their
/// value ranges (null gets its own digit).
struct key_codec {
  enum class kind { none, bits, packed } how = kind::none;
  type_id bits_id = type_id::int64;
  std::vector<packed_part> parts;
  uint64_t range = 0;  // packed: number of possible codes

  static constexpr int64_t block = 1024;

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
      type_dispatch(p.id, [&]<type_id Id>() {
        using T = storage_t<Id>;
        if constexpr (packable<T>) {
          const T* x = v.values<T>() + from;
          const uint64_t base = p.min - (p.nulls ? 1 : 0), mult = p.mult;
          const bool first = c == 0;
          auto put = [&](int64_t j, uint64_t digit) { out[j] = first ? digit * mult : out[j] + digit * mult; };
          if (miss) {
            const T lo = static_cast<T>(p.min), hi = static_cast<T>(p.max);
            for (int64_t j = 0; j < len; ++j) {
              bool valid = v.null_count == 0 || v.is_valid(from + j);
              bool in = valid ? (x[j] >= lo && x[j] <= hi) : p.nulls;
              miss[j] |= !in;
              put(j, valid && in ? static_cast<uint64_t>(x[j]) - base : 0);
            }
          } else if (v.null_count == 0) {
            for (int64_t j = 0; j < len; ++j) put(j, static_cast<uint64_t>(x[j]) - base);
          } else {
            for (int64_t j = 0; j < len; ++j) put(j, v.is_valid(from + j) ? static_cast<uint64_t>(x[j]) - base : 0);
          }
        }
      });
    }
  }
};

/// The packed codec of `keys` when every key is integral and the product of the value ranges fits
/// in 64 bits; kind::none otherwise.
key_codec plan_packed(const std::vector<column>& keys) {
  key_codec k;
  uint64_t range = 1;
  for (auto& col : keys) {
    column_view v = col.view();
    packed_part p{v.type.id};
    bool ok = type_dispatch(v.type.id, [&]<type_id Id>() {
      using T = storage_t<Id>;
      if constexpr (!packable<T>) {
        return false;
      } else {
        const T* x = v.values<T>();
        T lo = std::numeric_limits<T>::max(), hi = std::numeric_limits<T>::lowest();
        if (v.null_count == 0) {
          for (int64_t i = 0; i < v.size; ++i) {
            lo = std::min(lo, x[i]);
            hi = std::max(hi, x[i]);
          }
        } else {
          for (int64_t i = 0; i < v.size; ++i) {
            if (!v.is_valid(i)) continue;
            lo = std::min(lo, x[i]);
            hi = std::max(hi, x[i]);
          }
        }
        if (lo > hi) lo = hi = T{};  // no valid value
        p.min = static_cast<uint64_t>(lo);
        p.max = static_cast<uint64_t>(hi);
        return true;
      }
    });
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

/// Most codes a direct table (one int32 per possible code) may cover for `n` rows.
inline uint64_t direct_limit(int64_t n) { return static_cast<uint64_t>(n) * 2 + 1024; }

}  // namespace

std::vector<uint64_t> hash_rows(const std::vector<column>& keys) {
  TUG_EXPECTS(!keys.empty(), "hash_rows needs at least one column");
  std::vector<uint64_t> h(static_cast<size_t>(keys[0].size()));
  hash_into(make_all(keys), h);
  return h;
}

struct key_index::impl {
  std::vector<column> keys;
  std::vector<std::unique_ptr<col_ops>> ops;
  key_codec codec;
  /// Codec paths: a direct table (group of each code, or -1) when the codes' range is small ...
  std::vector<int32_t> direct;
  /// ... else an open-addressing table of codes.
  std::vector<code_slot> coded;
  /// Generic path: group id or -1 per slot, and each group's hash.
  std::vector<int64_t> slots;
  std::vector<uint64_t> group_hash;
  uint64_t mask = 0;

  std::vector<column_view> views(const std::vector<column>& cols) const {
    std::vector<column_view> v;
    for (auto& c : cols) v.push_back(c.view());
    return v;
  }

  /// Doubles the coded table.
  void grow_coded() {
    std::vector<code_slot> old(coded.size() * 2, code_slot{0, -1});
    old.swap(coded);
    mask = coded.size() - 1;
    for (auto& s : old) {
      if (s.group < 0) continue;
      uint64_t slot = mix(s.code) & mask;
      while (coded[slot].group >= 0) slot = (slot + 1) & mask;
      coded[slot] = s;
    }
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
    bool direct = s.codec.how == key_codec::kind::packed && s.codec.range <= direct_limit(n) &&
                  n < std::numeric_limits<int32_t>::max();
    if (direct) s.direct.assign(s.codec.range, -1);
    else {
      s.coded.assign(1024, code_slot{0, -1});
      s.mask = 1023;
    }
    for (int64_t from = 0; from < n; from += key_codec::block) {
      int64_t len = std::min(key_codec::block, n - from);
      s.codec.encode(views, from, len, codes, nullptr);
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
      for (int64_t j = 0; j < len; ++j) {
        uint64_t code = codes[j];
        uint64_t slot = mix(code) & s.mask;
        code_slot* slots = s.coded.data();
        while (slots[slot].group >= 0 && slots[slot].code != code) slot = (slot + 1) & s.mask;
        if (slots[slot].group < 0) {
          slots[slot] = {code, static_cast<int64_t>(_first_row.size())};
          ids[from + j] = slots[slot].group;
          _first_row.push_back(from + j);
          if (_first_row.size() * 2 > s.coded.size()) s.grow_coded();
        } else {
          ids[from + j] = slots[slot].group;
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
key_index::key_index(key_index&&) noexcept = default;
key_index& key_index::operator=(key_index&&) noexcept = default;

std::vector<column> key_index::group_keys(memory_resource* mr) const {
  std::vector<column> out;
  for (auto& k : _impl->keys) out.push_back(gather(k, _first_row, mr));
  return out;
}

std::vector<int64_t> key_index::find(const std::vector<column>& probe) const {
  auto& s = *_impl;
  TUG_EXPECTS(probe.size() == s.keys.size(), "key_index::find: key column count differs");
  for (size_t c = 0; c < probe.size(); ++c)
    TUG_EXPECTS(probe[c].type() == s.keys[c].type(), "key_index::find: key types differ: " +
                                                         to_string(probe[c].type()) + " vs " + to_string(s.keys[c].type()));
  int64_t n = probe[0].size();
  std::vector<int64_t> out(static_cast<size_t>(n), -1);
  if (s.codec.how != key_codec::kind::none) {
    std::vector<column_view> views = s.views(probe);
    uint64_t codes[key_codec::block];
    uint8_t miss[key_codec::block];
    for (int64_t from = 0; from < n; from += key_codec::block) {
      int64_t len = std::min(key_codec::block, n - from);
      std::memset(miss, 0, sizeof(miss));
      s.codec.encode(views, from, len, codes, miss);
      for (int64_t j = 0; j < len; ++j) {
        if (miss[j]) continue;
        if (!s.direct.empty()) {
          out[static_cast<size_t>(from + j)] = s.direct[codes[j]];
          continue;
        }
        for (uint64_t slot = mix(codes[j]) & s.mask; s.coded[slot].group >= 0; slot = (slot + 1) & s.mask) {
          if (s.coded[slot].code == codes[j]) {
            out[static_cast<size_t>(from + j)] = s.coded[slot].group;
            break;
          }
        }
      }
    }
    return out;
  }
  auto pops = make_all(probe);
  std::vector<uint64_t> h(static_cast<size_t>(n));
  hash_into(pops, h);
  size_t nk = pops.size();
  for (int64_t i = 0; i < n; ++i) {
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
          out[static_cast<size_t>(i)] = g;
          break;
        }
      }
      slot = (slot + 1) & s.mask;
    }
  }
  return out;
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
