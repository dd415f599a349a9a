// The GPU's regular expressions on the host: the automaton regex_compile.cpp builds, run by the same
// search() the device interpreter calls, against std::regex_search (what the CPU evaluator runs) over
// fixed patterns and subjects and thousands of random ones. Runs without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "exec/cuda/regex.hpp"

namespace tug {
namespace {

bool gpu_search(const cuda::regex::automaton& a, const std::string& s) {
  return cuda::regex::search(a.table.data(), reinterpret_cast<const unsigned char*>(s.data()),
                             static_cast<int64_t>(s.size()));
}

bool cpu_search(const std::regex& re, const std::string& s) {
  return std::regex_search(s.data(), s.data() + s.size(), re);
}

/// Expects `pattern` to compile and to agree with std::regex on every subject.
void expect_agrees(const std::string& pattern, const std::vector<std::string>& subjects) {
  cuda::regex::automaton a = cuda::regex::compile(pattern);
  ASSERT_EQ(a.why, "") << "pattern \"" << pattern << "\"";
  std::regex re(pattern, std::regex::ECMAScript);
  for (const std::string& s : subjects)
    EXPECT_EQ(gpu_search(a, s), cpu_search(re, s)) << "pattern \"" << pattern << "\" subject \"" << s << "\"";
}

const std::vector<std::string>& subjects() {
  static const std::vector<std::string> v = {
      "",
      "a",
      "b",
      "ab",
      "ba",
      "aab",
      "abab",
      "abc",
      "xabcx",
      "special requests",
      "requests special",
      "specialrequests",
      "a special, pending requests",
      "special\nrequests",
      "special\r\nrequests x special requests",
      "special\nx",
      "d\xC3\xA9j\xC3\xA0 special requests",
      "Customer Complaints",
      "Customer foo Complaints bar",
      "customer complaints",
      "CustomerComplaints",
      "Complaints Customer",
      "x.y",
      "xzy",
      "a\\b",
      "\t\n\v\f\r ",
      "0123456789",
      "under_score",
      "a-b",
      "]",
      "}",
      "{",
      "\n",
      "\r",
      std::string("a\0b", 3),
      "\xE9",
      "\xC3\xA9",
      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab",
      "x\nb",
      "a\n",
      "\na",
  };
  return v;
}

TEST(RegexAutomaton, FixedPatternsAgreeWithStdRegex) {
  // clang-format off
  const std::vector<std::string> patterns = {
      // PDS-H Q13 and Q16
      "special.*requests", "Customer.*Complaints",
      // literals and the empty pattern
      "", "a", "ab", "abc", "special", ".*", ".", "..",
      // anchors
      "^", "$", "^$", "^a", "a$", "^ab$", "^a|b$", "(^a|b)c", "a^b", "a$b", "$a", "b^", "^(a|)",
      "(^)*a", "^a*$", "a|^", "x|$", "(^|a)b", "(a|$)", "^$|a",
      // classes
      "[abc]", "[a-c]", "[^a]", "[^a-z]", "[a-]", "[-a]", "[^-a]", "[\\]]", "[\\-]", "[\\\\]", "[.]", "[\\.]",
      "[\\d]", "[\\D]", "[^\\d]", "[^\\D]", "[\\w-]", "[\\s]", "[\\n]", "[\\b]", "[\\x41-\\x5a]", "[\xC3\xA9]",
      "[[]", "[a[b]", "[[-a]", "[0-9a-fA-F]+", "\\d", "\\D", "\\w+", "\\W", "\\s", "\\S", "[^\\n]", "[^\\w\\s]",
      // alternation and groups
      "a|b", "ab|ba", "a|", "|a", "(a|b)c", "(?:a|b)c", "()", "(?:)", "(a)(b)", "((a))", "(a|b|c|)x",
      // quantifiers
      "a*", "a+", "a?", "a*?", "a+?", "a??", "ab*c", "a(b|c)*d", "(ab)+", "(a*)*b", "(a|)*b", "(?:a|){3}c",
      "a{2}", "a{2,}", "a{1,3}", "a{0}b", "a{0,0}", "a{01}", "a{2,3}?", "(ab){2}", "(a|b){3,}", "x{0,2}y",
      "a{40}", "(?:ab){32}",
      // escapes
      "\\.", "\\\\", "\\t", "\\n", "\\r", "\\v", "\\f", "\\x41", "\\x0a", "\\$", "\\^", "\\-", "\\ ", "\\_",
      "\\/", "\\*", "\\+", "\\?", "\\(\\)", "\\[\\]", "\\{\\}", "\\|", "\\\xC3\xA9", "x\\.y",
      // literal ] and } outside brackets; '\n' in the pattern
      "]", "}", "a]", "a}", "\n", "a\nb", "a.b", "a..b", "\xC3\xA9", "j.",
  };
  // clang-format on
  for (const std::string& p : patterns)
    expect_agrees(p, subjects());
}

TEST(RegexAutomaton, RefusesWhatItCannotRun) {
  // clang-format off
  const std::vector<std::string> refused = {
      "(a)\\1", "(?=a)", "(?!a)b", "\\bfoo", "a\\B", "[[:alpha:]]", "\\cA", "\\u0041", "\\0", "a**", "a+*",
      "a{2}{3}", "a???", "^*", "[]", "[^]", "[a-z-0]", "[\\w-z]", "[[.a.]]", "[[=a=]]",
      std::string(65, 'a'), "a{65}", "(?:ab){33}", "[a-\xE9]", std::string("a\0b", 3),
      // invalid for std::regex: the CPU raises its error
      "(", ")", "a)", "[a", "a{2,1}", "{", "x{3", "*a", "a|*", "[z-a]", "\\",
  };
  // clang-format on
  for (const std::string& p : refused)
    EXPECT_NE(cuda::regex::compile(p).why, "") << "pattern \"" << p << "\"";
  EXPECT_NE(cuda::regex::compile("(").why.find("invalid"), std::string::npos);
  EXPECT_NE(cuda::regex::compile(std::string(65, 'a')).why.find("positions"), std::string::npos);
  // 64 positions still fit
  expect_agrees(std::string(64, 'a'), {std::string(63, 'a'), std::string(64, 'a'), "b" + std::string(64, 'a')});
}

// Random patterns over tokens that make many valid patterns, random subjects over a small alphabet;
// every pattern std::regex rejects must be refused, every compiled one must agree on every subject.
TEST(RegexAutomaton, RandomPatternsAgreeWithStdRegex) {
  const std::vector<std::string> tokens = {"a",     "b",    "c",      ".",    "|",   "(",   ")",   "(?:", "*",
                                           "+",     "?",    "*?",     "[",    "]",   "[^",  "^",   "$",   "-",
                                           "\\d",   "\\w",  "\\s",    "\\D",  "\\W", "\\n", "\\.", "\\-", "{1}",
                                           "{0,2}", "{2,}", "{1,2}?", "\\\\", "\n",  " ",   "a-c", "\xE9"};
  const std::string alphabet = std::string("abc\n\r-. _1\\\xE9") + '\0';
  std::mt19937_64 rng(20260512);
  int valid = 0, compiled = 0;
  for (int iter = 0; iter < 6000; ++iter) {
    std::string p;
    const int len = 1 + static_cast<int>(rng() % 7);
    for (int k = 0; k < len; ++k)
      p += tokens[rng() % tokens.size()];
    std::optional<std::regex> re;
    try {
      re.emplace(p, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
    }
    cuda::regex::automaton a = cuda::regex::compile(p);
    if (!re) {
      EXPECT_NE(a.why, "") << "pattern \"" << p << "\" is invalid for std::regex";
      continue;
    }
    ++valid;
    if (!a.why.empty()) continue;
    ++compiled;
    for (int k = 0; k < 40; ++k) {
      std::string s;
      const int n = static_cast<int>(rng() % 11);
      for (int j = 0; j < n; ++j)
        s += alphabet[rng() % alphabet.size()];
      ASSERT_EQ(gpu_search(a, s), cpu_search(*re, s)) << "pattern \"" << p << "\" subject \"" << s << "\"";
    }
  }
  std::printf("%d random patterns, %d valid, %d compiled\n", 6000, valid, compiled);
  // the sweep means something only when most valid patterns compile
  EXPECT_GT(valid, 1000);
  EXPECT_GT(compiled, valid * 3 / 4) << compiled << " of " << valid << " valid patterns compiled";
}

}  // namespace
}  // namespace tug
