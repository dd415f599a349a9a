// Host side of the GPU regular expressions (regex.hpp): parses the ECMAScript subset, builds a
// Thompson automaton whose epsilon edges may be `^` / `$` assertions, and folds its epsilon closures
// into per-position tables (a Glushkov automaton with assertion-dependent first and last sets). Plain
// C++ (built with and without CUDA), so the host tests check it against std::regex.
#include <bitset>
#include <regex>
#include <unordered_map>
#include <utility>

#include "exec/cuda/regex.hpp"

namespace tug::cuda::regex {

namespace {

using byteset = std::bitset<256>;

/// Why a pattern stays on the CPU; caught by compile().
struct refused {
  std::string why;
};

[[noreturn]] void refuse(std::string why) { throw refused{std::move(why)}; }

/// Counted repetitions, nesting and automaton nodes the compiler accepts.
constexpr int max_count = 1000;
constexpr int max_depth = 200;
constexpr size_t max_nodes = 1 << 14;

/// A parsed pattern: a tree of byte sets, concatenations, alternations, repetitions and assertions.
struct ast {
  enum class kind { bytes, cat, alt, rep, bol, eol } k = kind::cat;
  byteset set;
  std::vector<int> kids;
  int min = 0, max = 0;  ///< repetition bounds; max < 0: unbounded
};

byteset range(int lo, int hi) {
  byteset s;
  for (int c = lo; c <= hi; ++c)
    s.set(static_cast<size_t>(c));
  return s;
}
byteset one(int c) { return range(c, c); }

/// \d \w \s and their complements, as std::regex_traits<char> in the "C" locale.
byteset class_escape(char c) {
  byteset s;
  switch (c | 0x20) {
    case 'd':
      s = range('0', '9');
      break;
    case 'w':
      s = range('0', '9') | range('A', 'Z') | range('a', 'z') | one('_');
      break;
    default:  // 's'
      s = range('\t', '\r') | one(' ');
      break;
  }
  return (c & 0x20) ? s : ~s;  // upper case: the complement
}
bool is_class_escape(char c) { return c == 'd' || c == 'D' || c == 'w' || c == 'W' || c == 's' || c == 'S'; }
bool is_alnum(unsigned char c) { return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') return (c | 0x20) - 'a' + 10;
  return -1;
}

class parser {
 public:
  explicit parser(std::string_view p) : _p(p) {}

  /// The pattern's tree; nodes() holds it, the root is returned.
  int run() {
    int root = disjunction(0);
    if (_i != _p.size()) refuse("unbalanced ')'");
    return root;
  }
  std::vector<ast>& nodes() { return _nodes; }

 private:
  std::string_view _p;
  size_t _i = 0;
  std::vector<ast> _nodes;

  bool at_end() const { return _i >= _p.size(); }
  char peek(size_t k = 0) const { return _i + k < _p.size() ? _p[_i + k] : '\0'; }
  bool has(size_t k) const { return _i + k < _p.size(); }

  int add(ast a) {
    if (_nodes.size() >= max_nodes) refuse("pattern too long");
    _nodes.push_back(std::move(a));
    return static_cast<int>(_nodes.size()) - 1;
  }
  int bytes(byteset s) {
    ast a;
    a.k = ast::kind::bytes;
    a.set = s;
    return add(std::move(a));
  }

  int disjunction(int depth) {
    if (depth > max_depth) refuse("groups nested too deeply");
    ast a;
    a.k = ast::kind::alt;
    a.kids.push_back(alternative(depth));
    while (peek() == '|' && has(0)) {
      ++_i;
      a.kids.push_back(alternative(depth));
    }
    return a.kids.size() == 1 ? a.kids[0] : add(std::move(a));
  }

  int alternative(int depth) {
    ast a;
    a.k = ast::kind::cat;
    while (!at_end() && peek() != '|' && peek() != ')')
      a.kids.push_back(term(depth));
    return a.kids.size() == 1 ? a.kids[0] : add(std::move(a));
  }

  bool at_quantifier() const { return has(0) && (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{'); }

  int term(int depth) {
    const char c = peek();
    if (c == '^' || c == '$') {
      ++_i;
      if (at_quantifier()) refuse("a quantified assertion");
      ast a;
      a.k = c == '^' ? ast::kind::bol : ast::kind::eol;
      return add(std::move(a));
    }
    const int x = atom(depth);
    if (!at_quantifier()) return x;
    ast a;
    a.k = ast::kind::rep;
    a.kids.push_back(x);
    const char q = peek();
    ++_i;
    if (q == '*') {
      a.min = 0, a.max = -1;
    } else if (q == '+') {
      a.min = 1, a.max = -1;
    } else if (q == '?') {
      a.min = 0, a.max = 1;
    } else {
      a.min = a.max = number();
      if (peek() == ',' && has(0)) {
        ++_i;
        a.max = peek() == '}' ? -1 : number();
      }
      if (peek() != '}' || !has(0)) refuse("a malformed {} quantifier");
      ++_i;
      if (a.max >= 0 && a.max < a.min) refuse("a {} quantifier with max < min");
    }
    if (peek() == '?' && has(0)) ++_i;  // lazy: the same language
    if (at_quantifier()) refuse("nested quantifiers");
    return add(std::move(a));
  }

  int number() {
    if (!(peek() >= '0' && peek() <= '9') || !has(0)) refuse("a malformed {} quantifier");
    int v = 0;
    while (has(0) && peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > max_count) refuse("a repetition count above " + std::to_string(max_count));
      ++_i;
    }
    return v;
  }

  int atom(int depth) {
    const char c = peek();
    ++_i;
    switch (c) {
      case '.':
        return bytes(~(one('\n') | one('\r')));
      case '(': {
        if (peek() == '?' && has(0)) {
          if (peek(1) != ':' || !has(1)) refuse("lookaround groups");
          _i += 2;
        }
        const int x = disjunction(depth + 1);
        if (peek() != ')' || !has(0)) refuse("unbalanced '('");
        ++_i;
        return x;
      }
      case '[':
        return bytes(bracket());
      case '\\':
        return bytes(escape(false));
      case '*':
      case '+':
      case '?':
      case '{':
        refuse("a quantifier without operand");
      case '\0':
        refuse("a NUL byte in the pattern");
      default:
        return bytes(one(static_cast<unsigned char>(c)));
    }
  }

  /// The bytes of an escape (the backslash consumed); in a bracket, \b is backspace.
  byteset escape(bool in_bracket) {
    if (at_end()) refuse("a trailing backslash");
    const char c = peek();
    ++_i;
    if (is_class_escape(c)) return class_escape(c);
    switch (c) {
      case 't':
        return one('\t');
      case 'n':
        return one('\n');
      case 'r':
        return one('\r');
      case 'v':
        return one('\v');
      case 'f':
        return one('\f');
      case 'x': {
        const int h = hex_value(peek()), l = hex_value(peek(1));
        if (!has(1) || h < 0 || l < 0) refuse("a malformed \\x escape");
        _i += 2;
        return one(h * 16 + l);
      }
      default:
        break;
    }
    if (c == 'b' && in_bracket) return one('\b');
    if (c == '\0') refuse("a NUL byte in the pattern");
    if (is_alnum(static_cast<unsigned char>(c)))
      refuse(std::string("the escape \\") + c + " (word boundaries, backreferences, \\c \\u \\0)");
    return one(static_cast<unsigned char>(c));  // identity escape
  }

  /// One bracket item: a byte (`single` >= 0) or a class escape (`single` < 0).
  byteset bracket_atom(int& single) {
    const char c = peek();
    ++_i;
    single = -1;
    if (c == '\\') {
      const bool cls = has(0) && is_class_escape(peek());
      byteset s = escape(true);
      if (!cls)
        while (!s.test(static_cast<size_t>(++single))) {
        }
      return s;
    }
    if (c == '[' && (peek() == ':' || peek() == '.' || peek() == '=') && has(0))
      refuse("POSIX classes in a bracket expression");
    if (c == '\0') refuse("a NUL byte in the pattern");
    single = static_cast<unsigned char>(c);
    return one(single);
  }

  byteset bracket() {
    bool negate = false;
    if (peek() == '^' && has(0)) {
      negate = true;
      ++_i;
    }
    if (peek() == ']' && has(0)) refuse("an empty bracket expression");
    byteset set;
    bool first = true;
    for (;;) {
      if (at_end()) refuse("unbalanced '['");
      if (peek() == ']') {
        ++_i;
        break;
      }
      // '-' is a literal first or last only
      if (peek() == '-' && !first && peek(1) != ']') refuse("an ambiguous '-' in a bracket expression");
      const bool dash = peek() == '-';
      int lo;
      byteset a = bracket_atom(lo);
      first = false;
      if (peek() == '-' && has(1) && peek(1) != ']') {
        ++_i;
        if (lo < 0 || dash || peek() == '-') refuse("an ambiguous range in a bracket expression");
        int hi;
        bracket_atom(hi);
        if (hi < 0 || lo >= 0x80 || hi >= 0x80 || lo > hi) refuse("a range of non-ASCII or reversed bounds");
        a = range(lo, hi);
      }
      set |= a;
    }
    return negate ? ~set : set;
  }
};

/// A Thompson automaton over the tree: position nodes consume a byte, the others have epsilon edges,
/// some of them `^` / `$` assertions.
class thompson {
 public:
  enum class edge : uint8_t { eps, bol, eol };

  explicit thompson(const std::vector<ast>& tree) : _tree(tree) {}

  /// Builds the pattern rooted at `root`; the automaton accepts at its out node.
  void build(int root) {
    frag f = go(root);
    _start = f.in;
    _final = f.out;
  }

  /// Folds the epsilon closures into compile()'s table.
  std::vector<uint64_t> table() const {
    const size_t npos = _positions.size();
    std::vector<uint64_t> t(w_follow + npos, 0);
    for (size_t p = 0; p < npos; ++p) {
      const byteset& s = _nodes[_positions[p]].set;
      for (size_t b = 0; b < 256; ++b)
        if (s.test(b)) t[w_mask + b] |= uint64_t{1} << p;
      const int after = _nodes[_positions[p]].next;
      bool accept_mid, accept_end;
      t[w_follow + p] = closure(after, false, false, accept_mid);
      closure(after, false, true, accept_end);
      if (accept_mid) t[w_last_mid] |= uint64_t{1} << p;
      if (accept_end) t[w_last_end] |= uint64_t{1} << p;
      if (p + 1 < static_cast<size_t>(max_positions) && t[w_follow + p] == uint64_t{1} << (p + 1))
        t[w_linear] |= uint64_t{1} << p;
    }
    bool begin_mid, begin_end, mid_mid, mid_end;
    t[w_first_begin] = closure(_start, true, false, begin_mid);
    t[w_first_mid] = closure(_start, false, false, mid_mid);
    closure(_start, true, true, begin_end);
    closure(_start, false, true, mid_end);
    t[w_flags] = (begin_mid ? f_begin_mid : 0) | (begin_end ? f_begin_end : 0) | (mid_mid ? f_mid_mid : 0) |
                 (mid_end ? f_mid_end : 0);
    return t;
  }

 private:
  struct node {
    int position = -1;  ///< index of a byte-consuming node, whose successor is `next`
    int next = -1;
    byteset set;
    std::vector<std::pair<int, edge>> edges;
  };
  struct frag {
    int in, out;
  };

  const std::vector<ast>& _tree;
  std::vector<node> _nodes;
  std::vector<int> _positions;
  int _start = 0, _final = 0;

  int add() {
    if (_nodes.size() >= max_nodes) refuse("the automaton is too large");
    _nodes.emplace_back();
    return static_cast<int>(_nodes.size()) - 1;
  }
  void link(int from, int to, edge e = edge::eps) { _nodes[from].edges.emplace_back(to, e); }
  frag empty() {
    int n = add();
    return {n, n};
  }
  frag cat(frag a, frag b) {
    link(a.out, b.in);
    return {a.in, b.out};
  }

  frag go(int i) {
    const ast& a = _tree[static_cast<size_t>(i)];
    switch (a.k) {
      case ast::kind::bytes: {
        if (_positions.size() >= static_cast<size_t>(max_positions))
          refuse("more than " + std::to_string(max_positions) + " positions");
        const int p = add(), out = add();
        _nodes[p].position = static_cast<int>(_positions.size());
        _nodes[p].next = out;
        _nodes[p].set = a.set;
        _positions.push_back(p);
        return {p, out};
      }
      case ast::kind::bol:
      case ast::kind::eol: {
        const int in = add(), out = add();
        link(in, out, a.k == ast::kind::bol ? edge::bol : edge::eol);
        return {in, out};
      }
      case ast::kind::cat: {
        frag f = empty();
        for (int k : a.kids)
          f = cat(f, go(k));
        return f;
      }
      case ast::kind::alt: {
        const int in = add(), out = add();
        for (int k : a.kids) {
          frag f = go(k);
          link(in, f.in);
          link(f.out, out);
        }
        return {in, out};
      }
      case ast::kind::rep: {
        frag f = empty();
        for (int k = 0; k < a.min; ++k)
          f = cat(f, go(a.kids[0]));
        if (a.max < 0) {  // a loop: in -> body -> in, in -> out
          const int in = add(), out = add();
          frag body = go(a.kids[0]);
          link(in, body.in);
          link(body.out, in);
          link(in, out);
          return cat(f, {in, out});
        }
        for (int k = a.min; k < a.max; ++k) {  // optional copies
          const int in = add(), out = add();
          frag body = go(a.kids[0]);
          link(in, body.in);
          link(body.out, out);
          link(in, out);
          f = cat(f, {in, out});
        }
        return f;
      }
    }
    refuse("an unexpected pattern node");
  }

  /// The positions reachable from `from` over epsilon edges, with `^` / `$` edges passable when
  /// `bol` / `eol`; `accept` tells whether the final node is reachable.
  uint64_t closure(int from, bool bol, bool eol, bool& accept) const {
    uint64_t set = 0;
    accept = false;
    std::vector<char> seen(_nodes.size(), 0);
    std::vector<int> stack{from};
    seen[static_cast<size_t>(from)] = 1;
    while (!stack.empty()) {
      const int x = stack.back();
      stack.pop_back();
      const node& n = _nodes[static_cast<size_t>(x)];
      if (n.position >= 0) {
        set |= uint64_t{1} << n.position;
        continue;
      }
      if (x == _final) accept = true;
      for (const auto& [to, e] : n.edges) {
        if ((e == edge::bol && !bol) || (e == edge::eol && !eol) || seen[static_cast<size_t>(to)]) continue;
        seen[static_cast<size_t>(to)] = 1;
        stack.push_back(to);
      }
    }
    return set;
  }
};

automaton compile_uncached(const std::string& pattern) {
  automaton out;
  try {
    // the CPU's own compilation decides validity (and raises the error for an invalid pattern)
    std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error&) {
    out.why = "an invalid regular expression";
    return out;
  }
  try {
    parser p(pattern);
    const int root = p.run();
    thompson t(p.nodes());
    t.build(root);
    out.table = t.table();
  } catch (const refused& r) {
    out.why = r.why;
    out.table.clear();
  }
  return out;
}

}  // namespace

automaton compile(std::string_view pattern) {
  thread_local std::unordered_map<std::string, automaton> cache;
  std::string key(pattern);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 64) cache.clear();
  return cache.emplace(key, compile_uncached(key)).first->second;
}

}  // namespace tug::cuda::regex
