#include "tug/exec/key_index.hpp"

#include <cmath>
#include <cstring>

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

/// Fast path slot: the key bits stored next to the group id, so a probe touches one cache line.
struct fast_slot {
  uint64_t key;
  int64_t group;  // -1 for an empty slot
};

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
  std::vector<int64_t> slots;  // group id or -1
  std::vector<uint64_t> group_hash;
  uint64_t mask = 0;
  /// Single fixed-width key column without nulls: `slots` with the keys inline (else empty).
  std::vector<fast_slot> fast;
};

key_index::key_index(std::vector<column> keys) : _impl(std::make_unique<impl>()) {
  TUG_EXPECTS(!keys.empty(), "key_index needs at least one key column");
  auto& s = *_impl;
  s.keys = std::move(keys);
  s.ops = make_all(s.keys);
  int64_t n = s.keys[0].size();
  uint64_t cap = 16;
  while (cap < static_cast<uint64_t>(n) * 2) cap <<= 1;
  s.mask = cap - 1;
  _group_of_row.resize(static_cast<size_t>(n));
  // single fixed-width key column without nulls: keys inline in the slots
  auto build_fast = [&]<type_id Id>() {
    using T = storage_t<Id>;
    if constexpr (!fast_key<T>) {
      return false;
    } else {
      const T* v = s.keys[0].values<T>();
      s.fast.assign(cap, fast_slot{0, -1});
      fast_slot* slots = s.fast.data();
      for (int64_t i = 0; i < n; ++i) {
        uint64_t k = key_bits(v[i]);
        uint64_t slot = value_hash<T>(v[i]) & s.mask;
        while (slots[slot].group >= 0 && slots[slot].key != k) slot = (slot + 1) & s.mask;
        if (slots[slot].group < 0) {
          slots[slot] = {k, static_cast<int64_t>(_first_row.size())};
          _first_row.push_back(i);
        }
        _group_of_row[static_cast<size_t>(i)] = slots[slot].group;
      }
      return true;
    }
  };
  if (s.keys.size() == 1 && !s.keys[0].has_nulls() && type_dispatch(s.keys[0].type().id, build_fast)) return;
  std::vector<uint64_t> h(static_cast<size_t>(n));
  hash_into(s.ops, h);
  s.slots.assign(cap, -1);
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
        _group_of_row[static_cast<size_t>(i)] = g;
        break;
      }
      if (s.group_hash[static_cast<size_t>(g)] == hv) {
        int64_t r = _first_row[static_cast<size_t>(g)];
        bool same = true;
        for (size_t c = 0; c < nk && same; ++c) same = s.ops[c]->eq(i, *s.ops[c], r);
        if (same) {
          _group_of_row[static_cast<size_t>(i)] = g;
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
  if (!s.fast.empty()) {
    // single fixed-width key, no null key indexed: null probe rows find nothing
    std::vector<int64_t> out(static_cast<size_t>(n), -1);
    type_dispatch(probe[0].type().id, [&]<type_id Id>() {
      using T = storage_t<Id>;
      if constexpr (fast_key<T>) {
        column_view pv = probe[0].view();
        const T* v = pv.values<T>();
        const fast_slot* slots = s.fast.data();
        for (int64_t i = 0; i < n; ++i) {
          if (!pv.is_valid(i)) continue;
          uint64_t key = key_bits(v[i]);
          uint64_t slot = value_hash<T>(v[i]) & s.mask;
          for (; slots[slot].group >= 0; slot = (slot + 1) & s.mask) {
            if (slots[slot].key == key) {
              out[static_cast<size_t>(i)] = slots[slot].group;
              break;
            }
          }
        }
      }
    });
    return out;
  }
  auto pops = make_all(probe);
  std::vector<uint64_t> h(static_cast<size_t>(n));
  hash_into(pops, h);
  std::vector<int64_t> out(static_cast<size_t>(n), -1);
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
