#pragma once
// Regular expressions on the GPU: `str.contains` with a constant pattern. regex_compile.cpp compiles an
// ECMAScript pattern (the subset std::regex and the CPU evaluator agree on) on the host into a
// position automaton of at most 64 byte-consuming positions, as a table of 64-bit masks; search() runs
// it over a string's bytes with a bitset of live positions. `contains` needs only whether a match
// exists, so greedy / lazy and capture semantics do not matter. Plain C++: the device interpreter
// (evaluate.cu) and the host tests call the same search().
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#ifndef TUG_HOST_DEVICE
#ifdef __CUDACC__
#define TUG_HOST_DEVICE __host__ __device__
#else
#define TUG_HOST_DEVICE
#endif
#endif

namespace tug::cuda::regex {

/// Word layout of a compiled table. Bit p of a mask is position p (a byte class of the pattern).
/// The automaton's state is the set of positions that consumed the previous byte.
enum word : int {
  w_mask = 0,           ///< [0, 256): the positions whose class holds byte b, at w_mask + b
  w_first_begin = 256,  ///< positions that can consume the first byte (`^` holds there)
  w_first_mid = 257,    ///< positions that can consume a later byte: a match may start anywhere
  w_last_mid = 258,     ///< positions after which the match may end before the string's end
  w_last_end = 259,     ///< positions after which the match may end at the string's end (`$` holds)
  w_linear = 260,       ///< positions p < 63 whose only follower is p + 1 (a shift replaces the lookup)
  w_flags = 261,        ///< empty matches (f_*)
  w_follow = 262,       ///< [262, 262 + positions): the positions that may consume the byte after p
};

/// Where the empty string matches (bits of the w_flags word), by whether the match is at the string's
/// start and whether it is at its end.
constexpr uint64_t f_begin_mid = 1;  ///< at the start of a non-empty string
constexpr uint64_t f_begin_end = 2;  ///< in the empty string
constexpr uint64_t f_mid_mid = 4;    ///< strictly inside a string
constexpr uint64_t f_mid_end = 8;    ///< at the end of a non-empty string

/// Positions an automaton may have.
constexpr int max_positions = 64;

/// A pattern compiled for search(), or why the device cannot run it.
struct automaton {
  std::string why;              ///< "" when `table` is usable
  std::vector<uint64_t> table;  ///< w_follow + positions words
};

/// Compiles `pattern` (ECMAScript, as std::regex with char: bytes, the "C" locale). Refused with a
/// reason in `why`: patterns std::regex rejects (the CPU raises their error), backreferences,
/// lookaheads, word boundaries, POSIX bracket classes, \c \u \0 escapes, nested quantifiers, more than
/// max_positions positions. Cached per thread.
automaton compile(std::string_view pattern);

namespace detail {
TUG_HOST_DEVICE inline int lowest_bit(uint64_t x) {
#ifdef __CUDA_ARCH__
  return __ffsll(static_cast<long long>(x)) - 1;
#else
  return __builtin_ctzll(x);
#endif
}
}  // namespace detail

/// Whether the automaton `t` (compile()'s table) matches somewhere in the `n` bytes at `s`, as
/// std::regex_search does.
TUG_HOST_DEVICE inline bool search(const uint64_t* t, const unsigned char* s, int64_t n) {
  const uint64_t flags = t[w_flags];
  if (n == 0) return (flags & f_begin_end) != 0;
  if ((flags & (f_begin_mid | f_mid_end)) != 0 || ((flags & f_mid_mid) != 0 && n >= 2)) return true;
  const uint64_t first_mid = t[w_first_mid], linear = t[w_linear], last_mid = t[w_last_mid];
  uint64_t live = t[w_first_begin] & t[w_mask + s[0]];
  for (int64_t i = 1; i < n; ++i) {
    if ((live & last_mid) != 0) return true;
    uint64_t next = first_mid | ((live & linear) << 1);
    for (uint64_t r = live & ~linear; r != 0; r &= r - 1)
      next |= t[w_follow + detail::lowest_bit(r)];
    live = next & t[w_mask + s[i]];
    if (live == 0 && first_mid == 0) return false;  // anchored at the start, and dead
  }
  return (live & t[w_last_end]) != 0;
}

}  // namespace tug::cuda::regex
