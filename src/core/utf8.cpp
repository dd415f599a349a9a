#include "tug/core/utf8.hpp"

#include <cstdint>
#include <cstring>

namespace tug {
namespace {

/// The length of the well-formed UTF-8 sequence at `p` (`ok` set), or of its maximal ill-formed
/// subpart (`ok` clear; at least 1). `avail` >= 1 bytes may be read.
size_t sequence(const uint8_t* p, size_t avail, bool& ok) {
  const uint8_t c = p[0];
  ok = false;
  if (c < 0x80) {
    ok = true;
    return 1;
  }
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;  // the range of the second byte (Unicode Table 3-7)
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 1;  // a continuation byte, C0/C1 or F5..FF
  }
  for (size_t i = 1; i <= need; ++i) {
    if (i >= avail) return i;
    const uint8_t b = p[i];
    if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return i;
  }
  ok = true;
  return need + 1;
}

constexpr uint64_t high_bits = 0x8080808080808080ULL;

}  // namespace

size_t find_invalid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    if (n - i >= 32) {  // ASCII fast path: four words at once
      uint64_t w[4];
      std::memcpy(w, p + i, 32);
      if (((w[0] | w[1] | w[2] | w[3]) & high_bits) == 0) {
        i += 32;
        continue;
      }
    }
    // byte by byte through the next 32 bytes (a sequence may end past them)
    const size_t stop = n - i >= 32 ? i + 32 : n;
    while (i < stop) {
      if (p[i] < 0x80) {
        ++i;
        continue;
      }
      bool ok;
      const size_t len = sequence(p + i, n - i, ok);
      if (!ok) return i;
      i += len;
    }
  }
  return n;
}

size_t append_utf8_lossy(std::string_view s, std::string& out) {
  size_t replaced = 0;
  while (!s.empty()) {
    const size_t bad = find_invalid_utf8(s);
    out.append(s.data(), bad);
    if (bad == s.size()) break;
    bool ok;
    const size_t len = sequence(reinterpret_cast<const uint8_t*>(s.data()) + bad, s.size() - bad, ok);
    out.append("\xEF\xBF\xBD");
    ++replaced;
    s.remove_prefix(bad + len);
  }
  return replaced;
}

int64_t first_invalid_utf8_row(const column_view& v) {
  if (v.size == 0) return -1;
  const int64_t* o = v.offsets + v.offset;
  const auto* chars = static_cast<const char*>(v.data);
  bool fast = is_valid_utf8(std::string_view(chars + o[0], static_cast<size_t>(o[v.size] - o[0])));
  for (int64_t i = 0; fast && i < v.size; ++i)
    fast = o[i + 1] == o[i] || (static_cast<uint8_t>(chars[o[i]]) & 0xC0) != 0x80;
  if (fast) return -1;
  for (int64_t i = 0; i < v.size; ++i)
    if (v.is_valid(i) && !is_valid_utf8(v.string(i))) return i;
  return -1;
}

}  // namespace tug
