// String kernels (fn::str_*), called directly through the evaluator's internal interface.
#include <gtest/gtest.h>

#include "../../src/exec/cpu/expr/functions.hpp"
#include "test_util.hpp"
#include "tug/expr/resolve.hpp"

using namespace tug;
using tug::cpu::detail::eval_string_function;

namespace {

using opt_str = std::optional<std::string>;
using strs = std::vector<opt_str>;

const schema& string_schema() {
  static const schema s({{"s", type_id::string}, {"p", type_id::string}, {"q", type_id::string}});
  return s;
}

/// Evaluates the string function at the root of `e` over `args` (already evaluated columns).
column eval(const expr& e, std::vector<column> args) {
  expr r = resolve(e, string_schema());
  return eval_string_function(r.node(), args, default_host_resource());
}

/// A literal pattern broadcast to `n` rows, as the evaluator passes it.
column broadcast(const std::string& v, int64_t n) { return scalar(type_id::string, v).to_column(n); }

column i64s(const std::vector<std::optional<int64_t>>& v) { return i64(v); }

const strs kSample = {"abc", "", std::nullopt, "h\xC3\xA9llo", "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", "\xF0\x9F\x98\x80x"};
// abc | "" | null | héllo | 日本語 | 😀x

}  // namespace

TEST(Strings, Lengths) {
  column s = str(kSample);
  expect_columns_equal(eval(col("s").str_len_chars(), {s}), i64s({3, 0, std::nullopt, 5, 3, 2}));
  expect_columns_equal(eval(col("s").str_len_bytes(), {s}), i64s({3, 0, std::nullopt, 6, 9, 5}));
  column all_null = make_null_column(type_id::string, 4);
  expect_columns_equal(eval(col("s").str_len_chars(), {all_null}), i64s({std::nullopt, std::nullopt, std::nullopt, std::nullopt}));
  expect_columns_equal(eval(col("s").str_len_bytes(), {str({})}), i64s({}));
}

TEST(Strings, StartsEndsContainsLiteral) {
  column s = str({"hello", "", std::nullopt, "say hello", "h\xC3\xA9llo", "hell"});
  const int64_t n = s.size();
  expect_columns_equal(eval(col("s").str_starts_with("hel"), {s, broadcast("hel", n)}),
                       boolean({true, false, std::nullopt, false, false, true}));
  expect_columns_equal(eval(col("s").str_ends_with("llo"), {s, broadcast("llo", n)}),
                       boolean({true, false, std::nullopt, true, true, false}));
  expect_columns_equal(eval(col("s").str_contains("ll", true), {s, broadcast("ll", n)}),
                       boolean({true, false, std::nullopt, true, true, true}));
  expect_columns_equal(eval(col("s").str_contains("\xC3\xA9", true), {s, broadcast("\xC3\xA9", n)}),
                       boolean({false, false, std::nullopt, false, true, false}));
  // the empty pattern matches everything; a literal pattern is not a regex
  expect_columns_equal(eval(col("s").str_contains("", true), {s, broadcast("", n)}),
                       boolean({true, true, std::nullopt, true, true, true}));
  expect_columns_equal(eval(col("s").str_contains("h.ll", true), {s, broadcast("h.ll", n)}),
                       boolean({false, false, std::nullopt, false, false, false}));
  // per-row patterns, with nulls in the pattern column
  column p = str({"he", "x", "a", std::nullopt, "o", ""});
  expect_columns_equal(eval(col("s").str_starts_with(col("p")), {s, p}),
                       boolean({true, false, std::nullopt, std::nullopt, false, true}));
  expect_columns_equal(eval(col("s").str_ends_with(col("p")), {s, p}),
                       boolean({false, false, std::nullopt, std::nullopt, true, true}));
  expect_columns_equal(eval(col("s").str_contains(col("p"), true), {s, p}),
                       boolean({true, false, std::nullopt, std::nullopt, true, true}));
}

TEST(Strings, ContainsRegex) {
  column s = str({"hello", "", std::nullopt, "abc123", "h\xC3\xA9llo", "HELLO"});
  const int64_t n = s.size();
  auto re = [&](const std::string& pat) { return eval(col("s").str_contains(pat, false), {s, broadcast(pat, n)}); };
  expect_columns_equal(re("h.llo"), boolean({true, false, std::nullopt, false, false, false}));
  expect_columns_equal(re("^[a-z]+[0-9]+$"), boolean({false, false, std::nullopt, true, false, false}));
  expect_columns_equal(re("(?:LL|ll)"), boolean({true, false, std::nullopt, false, true, true}));
  expect_columns_equal(re(""), boolean({true, true, std::nullopt, true, true, true}));
  // per-row patterns recompile only when they change
  column p = str({"l+", "^$", "x", "\\d{3}", std::nullopt, "l+"});
  expect_columns_equal(eval(col("s").str_contains(col("p"), false), {s, p}),
                       boolean({true, true, std::nullopt, true, std::nullopt, false}));
  // an invalid pattern names itself, even with no rows to match
  for (int64_t rows : {int64_t{0}, n}) {
    try {
      eval(col("s").str_contains("a(b", false), {s.slice(0, rows), broadcast("a(b", rows)});
      FAIL() << "expected compute_error";
    } catch (const compute_error& e) {
      EXPECT_NE(std::string(e.what()).find("\"a(b\""), std::string::npos) << e.what();
    }
  }
  // as a literal the same pattern is fine
  expect_columns_equal(eval(col("s").str_contains("a(b", true), {s, broadcast("a(b", n)}),
                       boolean({false, false, std::nullopt, false, false, false}));
}

// Patterns of literal text joined by ".*" are matched without the regex engine where the subject has no
// line terminator; the answers must be the regex's, in particular across line breaks (`.` stops there).
TEST(Strings, ContainsRegexLiteralPieces) {
  column s = str({"special requests", "requests special", "specialrequests", "a special, pending requests", "",
                  std::nullopt, "special\nrequests", "special\r\nrequests x special requests", "special\nx",
                  "d\xC3\xA9j\xC3\xA0 special requests", "special\xE2\x80\xA8requests"});
  const int64_t n = s.size();
  auto re = [&](const std::string& pat) { return eval(col("s").str_contains(pat, false), {s, broadcast(pat, n)}); };
  const auto N = std::nullopt;
  expect_columns_equal(re("special.*requests"),
                       boolean({true, false, true, true, false, N, false, true, false, true, true}));
  expect_columns_equal(re(".*special.*.*requests.*"),
                       boolean({true, false, true, true, false, N, false, true, false, true, true}));
  expect_columns_equal(re("requests.*special"),
                       boolean({false, true, false, false, false, N, false, true, false, false, false}));
  expect_columns_equal(re("special"), boolean({true, true, true, true, false, N, true, true, true, true, true}));
  expect_columns_equal(re(".*"), boolean({true, true, true, true, true, N, true, true, true, true, true}));
  // pieces may not overlap: "ss" then "s" needs three s's
  column t = str({"ss", "sss", "s s s"});
  expect_columns_equal(eval(col("s").str_contains("ss.*s", false), {t, broadcast("ss.*s", 3)}),
                       boolean({false, true, false}));
}

TEST(Strings, Slice) {
  column s = str({"hello", "", std::nullopt, "h\xC3\xA9llo", "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", "\xF0\x9F\x98\x80x"});
  auto sl = [&](int64_t off, int64_t len) { return eval(col("s").str_slice(off, len), {s}); };
  expect_columns_equal(sl(1, 2), str({"el", "", std::nullopt, "\xC3\xA9l", "\xE6\x9C\xAC\xE8\xAA\x9E", "x"}));
  expect_columns_equal(sl(0, 1), str({"h", "", std::nullopt, "h", "\xE6\x97\xA5", "\xF0\x9F\x98\x80"}));
  expect_columns_equal(sl(2, -1), str({"llo", "", std::nullopt, "llo", "\xE8\xAA\x9E", ""}));
  expect_columns_equal(sl(-3, -1), str({"llo", "", std::nullopt, "llo", "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", "\xF0\x9F\x98\x80x"}));
  expect_columns_equal(sl(-3, 2), str({"ll", "", std::nullopt, "ll", "\xE6\x97\xA5\xE6\x9C\xAC", "\xF0\x9F\x98\x80"}));
  expect_columns_equal(sl(-1, 1), str({"o", "", std::nullopt, "o", "\xE8\xAA\x9E", "x"}));
  expect_columns_equal(sl(10, 3), str({"", "", std::nullopt, "", "", ""}));
  expect_columns_equal(sl(1, 0), str({"", "", std::nullopt, "", "", ""}));
  // a window starting before the string keeps its part inside (Polars): [-2, 1) of "hello" is "h"
  expect_columns_equal(sl(-7, 3), str({"h", "", std::nullopt, "h", "", ""}));
  expect_columns_equal(sl(-10, -1), str({"hello", "", std::nullopt, "h\xC3\xA9llo", "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", "\xF0\x9F\x98\x80x"}));
}

TEST(Strings, Case) {
  column s = str({"Hello World 42", "", std::nullopt, "stra\xC3\x9F" "e", "\xC3\xA9\xC3\xA0\xC3\xBC\xC3\xBF",
                  "\xCE\x91\xCE\xB2\xCE\xB3\xCF\x82", "\xD0\xBF\xD1\x80\xD0\x98\xD0\xB2\xD0\xB5\xD1\x82", "\xE6\x97\xA5\xF0\x9F\x98\x80" "a"});
  // Hello World 42 | "" | null | straße | éàüÿ | Αβγς | прИвет | 日😀a
  expect_columns_equal(eval(col("s").str_to_upper(), {s}),
                       str({"HELLO WORLD 42", "", std::nullopt, "STRASSE", "\xC3\x89\xC3\x80\xC3\x9C\xC5\xB8",
                            "\xCE\x91\xCE\x92\xCE\x93\xCE\xA3", "\xD0\x9F\xD0\xA0\xD0\x98\xD0\x92\xD0\x95\xD0\xA2",
                            "\xE6\x97\xA5\xF0\x9F\x98\x80" "A"}));
  expect_columns_equal(eval(col("s").str_to_lower(), {s}),
                       str({"hello world 42", "", std::nullopt, "stra\xC3\x9F" "e", "\xC3\xA9\xC3\xA0\xC3\xBC\xC3\xBF",
                            "\xCE\xB1\xCE\xB2\xCE\xB3\xCF\x82", "\xD0\xBF\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82",
                            "\xE6\x97\xA5\xF0\x9F\x98\x80" "a"}));
  // the multiplication and division signs have no case
  column signs = str({"\xC3\x97\xC3\xB7"});
  expect_columns_equal(eval(col("s").str_to_upper(), {signs}), signs);
  expect_columns_equal(eval(col("s").str_to_lower(), {signs}), signs);
}

TEST(Strings, FullCaseMapping) {
  // Polars' (Rust's) full mappings: one character may become several, and a string grows
  auto up = [](const char* s) { return std::string(eval(col("s").str_to_upper(), {str({s})}).view().string(0)); };
  auto low = [](const char* s) { return std::string(eval(col("s").str_to_lower(), {str({s})}).view().string(0)); };
  EXPECT_EQ(up("\u00DF"), "SS");
  EXPECT_EQ(up("\u0149"), "\u02BCN");                   // ŉ -> ʼN
  EXPECT_EQ(up("\u0390"), "\u0399\u0308\u0301");           // ΐ -> 3 code points: 2 bytes -> 6
  EXPECT_EQ(up("\uFB03x"), "FFIX");                      // the ligature ﬃ
  EXPECT_EQ(up("\u1FB3"), "\u0391\u0399");                 // ᾳ -> ΑΙ
  EXPECT_EQ(up("\U00010428"), "\U00010400");              // Deseret: 4-byte sequences map too
  EXPECT_EQ(up("\u0250"), "\u2C6F");                      // 2 bytes -> 3
  EXPECT_EQ(low("\u0130"), "i\u0307");                     // İ -> i + combining dot
  EXPECT_EQ(low("\u1E9E"), "\u00DF");                      // capital sharp s
  EXPECT_EQ(low("\u2126"), "\u03C9");                      // Ohm sign, 3 bytes -> 2
  EXPECT_EQ(low("\U00010400"), "\U00010428");
  // Final_Sigma: Σ lowercases to ς after a cased letter (skipping case-ignorable ones) when no cased
  // letter follows (skipping case-ignorable ones), else to σ
  EXPECT_EQ(low("\u039F\u0394\u039F\u03A3"), "\u03BF\u03B4\u03BF\u03C2");          // ΟΔΟΣ -> οδος
  EXPECT_EQ(low("\u0391\u03A3 \u03A3"), "\u03B1\u03C2 \u03C3");                     // ΑΣ Σ
  EXPECT_EQ(low("\u0391\u03A3\u0391"), "\u03B1\u03C3\u03B1");                       // ΑΣΑ
  EXPECT_EQ(low("\u0391\u03A3'\u0392"), "\u03B1\u03C3'\u03B2");                     // ' is case-ignorable
  EXPECT_EQ(low("\u0391\u0301\u03A3"), "\u03B1\u0301\u03C2");                      // so is a combining accent
  EXPECT_EQ(low("\u0391\u03A3\u0301"), "\u03B1\u03C2\u0301");
  EXPECT_EQ(low("1\u03A3"), "1\u03C3");
  EXPECT_EQ(low("\u03A3"), "\u03C3");
  EXPECT_EQ(up("\u03C2"), "\u03A3");
  // bytes that start no well-formed sequence are copied; the rest is still mapped
  EXPECT_EQ(up("\xC3x\xFF\xC3\xA9\xE6\x97"), "\xC3X\xFF\xC3\x89\xE6\x97");
  EXPECT_EQ(low("\xCE\x91\xCE\xA3\xA3"), "\xCE\xB1\xCF\x82\xA3");  // a stray byte ends a word
  // many rows that grow, sliced (offsets that do not start at 0), nulls
  std::vector<std::optional<std::string>> rows, want;
  for (int i = 0; i < 1024; ++i) {
    rows.push_back(i % 7 == 3 ? std::nullopt : std::optional<std::string>(std::string(i % 5, 'a') + "\u00DF"));
    want.push_back(i % 7 == 3 ? std::nullopt : std::optional<std::string>(std::string(i % 5, 'A') + "SS"));
  }
  column c = str(rows).slice(33, 900);
  expect_columns_equal(eval(col("s").str_to_upper(), {c}), str(want).slice(33, 900));
}

TEST(Strings, Titlecase) {
  // Polars' str.to_titlecase (expected values from Polars 2.1): a word is a run of alphabetic characters;
  // its first character takes the titlecase mapping, the others the lowercase one (with Final_Sigma)
  auto title = [](const char* s) { return std::string(eval(col("s").str_to_title(), {str({s})}).view().string(0)); };
  EXPECT_EQ(title("hello world"), "Hello World");
  EXPECT_EQ(title("HELLO wORLD"), "Hello World");
  EXPECT_EQ(title("o'neil x-ray 3d a1b"), "O'Neil X-Ray 3D A1B");  // digits and punctuation end words
  EXPECT_EQ(title("  ab"), "  Ab");
  EXPECT_EQ(title("\u01C6emal \u01C4"), "\u01C5emal \u01C5");    // ǆ, Ǆ -> ǅ: titlecase, not uppercase
  EXPECT_EQ(title("\u00DFa stra\u00DFe"), "Ssa Stra\u00DFe");     // ß -> Ss at the start only
  EXPECT_EQ(title("\uFB01re"), "Fire");                            // the ligature ﬁ
  EXPECT_EQ(title("\u0149a"), "\u02BCNa");                         // ŉ -> ʼN
  // ΣΑΣ ΑΣ. -> Σας Ας.
  EXPECT_EQ(title("\u03A3\u0391\u03A3 \u0391\u03A3."), "\u03A3\u03B1\u03C2 \u0391\u03C2.");
  EXPECT_EQ(title("\u0130stanbul"), "\u0130stanbul");               // İ stays İ
  EXPECT_EQ(title("a\u0301bc d\u00E9"), "A\u0301Bc D\u00E9");       // a combining accent is no letter
  EXPECT_EQ(title("\u65E5\u672Cabc"), "\u65E5\u672Cabc");           // Han letters are alphabetic
  EXPECT_EQ(title("\u2167a b"), "\u2167a B");                       // so is Ⅷ
  EXPECT_EQ(title("\U00010428x y"), "\U00010400x Y");              // 4-byte sequences
  EXPECT_EQ(title("\xC3x\xFF" "ab"), "\xC3X\xFF" "Ab");                // a stray byte is copied and ends a word
  // nulls, empty strings, a sliced column, an empty column
  column s = str({"zz top", "aa", "Bb", "\u00DFx", std::nullopt, "", "x y", "q"});
  expect_columns_equal(eval(col("s").str_to_title(), {s.slice(1, 6)}),
                       str({"Aa", "Bb", "Ssx", std::nullopt, "", "X Y"}));
  column empty = str({});
  expect_columns_equal(eval(col("s").str_to_title(), {empty}), empty);
  expect_columns_equal(eval(col("s").str_to_title(), {make_null_column(type_id::string, 3)}), str(strs(3)));
}

TEST(Strings, Strip) {
  column s = str({"  a b \t\n", "", std::nullopt, "   ", "\xC2\xA0x\xE3\x80\x80", "xxhixy", "\xC3\xA9\xC3\xA9" "a\xC3\xA9", "..a.."});
  expect_columns_equal(eval(col("s").str_strip(), {s}),
                       str({"a b", "", std::nullopt, "", "x", "xxhixy", "\xC3\xA9\xC3\xA9" "a\xC3\xA9", "..a.."}));
  expect_columns_equal(eval(col("s").str_strip("xy."), {s}),
                       str({"  a b \t\n", "", std::nullopt, "   ", "\xC2\xA0x\xE3\x80\x80", "hi", "\xC3\xA9\xC3\xA9" "a\xC3\xA9", "a"}));
  // a multi-byte character in the set strips whole characters only
  expect_columns_equal(eval(col("s").str_strip("\xC3\xA9"), {s}),
                       str({"  a b \t\n", "", std::nullopt, "   ", "\xC2\xA0x\xE3\x80\x80", "xxhixy", "a", "..a.."}));
  // "\xC3\xA0" (à) shares its lead byte with é: no partial match
  expect_columns_equal(eval(col("s").str_strip("\xC3\xA0"), {s.slice(6, 1)}), str({"\xC3\xA9\xC3\xA9" "a\xC3\xA9"}));
}

TEST(Strings, Concat) {
  column a = str({"a", "", std::nullopt, "x", "\xC3\xA9"});
  column b = str({"b", "", "z", std::nullopt, "\xF0\x9F\x98\x80"});
  column c = str({"c", "", "z", "y", ""});
  expect_columns_equal(eval(concat_str({col("s"), col("p"), col("q")}, "-"), {a, b, c}),
                       str({"a-b-c", "--", std::nullopt, std::nullopt, "\xC3\xA9-\xF0\x9F\x98\x80-"}));
  expect_columns_equal(eval(concat_str({col("s"), col("p")}), {a, b}),
                       str({"ab", "", std::nullopt, std::nullopt, "\xC3\xA9\xF0\x9F\x98\x80"}));
  expect_columns_equal(eval(concat_str({col("s")}, ", "), {a}), a);
  expect_columns_equal(eval(concat_str({col("s"), col("p")}, "::"), {a.slice(1, 3), b.slice(2, 3)}),
                       str({"::z", std::nullopt, "x::\xF0\x9F\x98\x80"}));
  expect_columns_equal(eval(concat_str({col("s"), col("p")}, "::"), {str({}), str({})}), str({}));
}

// Every function over generated columns of warp/word boundary sizes, plain and sliced (offset 3:
// neither the validity bits nor the offsets start at 0).
class StringSizes : public ::testing::TestWithParam<int64_t> {};

TEST_P(StringSizes, AllFunctionsPlainAndSliced) {
  const int64_t n = GetParam();
  const std::vector<std::string> pieces = {"a", "B", " ", "\xC3\xA9", "\xC3\x89", "\xE6\x97\xA5", "\xF0\x9F\x98\x80", "z"};
  strs raw;
  for (int64_t i = 0; i < n + 3; ++i) {
    if (i % 3 == 1) {
      raw.push_back(std::nullopt);
      continue;
    }
    std::string v;
    for (int64_t k = 0; k < i % 7; ++k) v += pieces[static_cast<size_t>((i + k) % 8)];
    raw.push_back(v);
  }
  column full = str(raw);
  for (int64_t off : {int64_t{0}, int64_t{3}}) {
    SCOPED_TRACE("offset " + std::to_string(off));
    column s = full.slice(off, n);
    strs rows(raw.begin() + off, raw.begin() + off + n);
    std::vector<std::optional<int64_t>> chars, bytes;
    strs upper, lower, slice, strip, twice;
    std::vector<std::optional<bool>> has_e, starts_a;
    for (const auto& r : rows) {
      if (!r) {
        chars.push_back(std::nullopt), bytes.push_back(std::nullopt), upper.push_back(std::nullopt);
        lower.push_back(std::nullopt), slice.push_back(std::nullopt), strip.push_back(std::nullopt);
        twice.push_back(std::nullopt), has_e.push_back(std::nullopt), starts_a.push_back(std::nullopt);
        continue;
      }
      // decompose into the generating pieces (each is one character)
      std::vector<std::string> cs;
      for (size_t p = 0; p < r->size();) {
        for (const auto& piece : pieces)
          if (r->compare(p, piece.size(), piece) == 0) {
            cs.push_back(piece);
            p += piece.size();
            break;
          }
      }
      chars.push_back(static_cast<int64_t>(cs.size()));
      bytes.push_back(static_cast<int64_t>(r->size()));
      std::string up, lo, sl;
      for (size_t k = 0; k < cs.size(); ++k) {
        const std::string& c = cs[k];
        up += c == "a" ? "A" : c == "z" ? "Z" : c == "\xC3\xA9" ? "\xC3\x89" : c;
        lo += c == "B" ? "b" : c == "\xC3\x89" ? "\xC3\xA9" : c;
        if (k >= 1 && k < 3) sl += c;
      }
      upper.push_back(up), lower.push_back(lo), slice.push_back(sl);
      size_t b = 0, e = cs.size();
      while (b < e && cs[b] == " ") ++b;
      while (e > b && cs[e - 1] == " ") --e;
      std::string st;
      for (size_t k = b; k < e; ++k) st += cs[k];
      strip.push_back(st);
      twice.push_back(*r + "|" + *r);
      has_e.push_back(r->find("\xC3\xA9") != std::string::npos);
      starts_a.push_back(r->starts_with("a"));
    }
    expect_columns_equal(eval(col("s").str_len_chars(), {s}), i64s(chars), "len_chars");
    expect_columns_equal(eval(col("s").str_len_bytes(), {s}), i64s(bytes), "len_bytes");
    expect_columns_equal(eval(col("s").str_to_upper(), {s}), str(upper), "upper");
    expect_columns_equal(eval(col("s").str_to_lower(), {s}), str(lower), "lower");
    expect_columns_equal(eval(col("s").str_slice(1, 2), {s}), str(slice), "slice");
    expect_columns_equal(eval(col("s").str_strip(), {s}), str(strip), "strip");
    expect_columns_equal(eval(concat_str({col("s"), col("p")}, "|"), {s, s}), str(twice), "concat");
    expect_columns_equal(eval(col("s").str_contains("\xC3\xA9", true), {s, broadcast("\xC3\xA9", n)}), boolean(has_e), "contains");
    expect_columns_equal(eval(col("s").str_contains("\xC3\xA9", false), {s, broadcast("\xC3\xA9", n)}), boolean(has_e), "regex");
    expect_columns_equal(eval(col("s").str_starts_with("a"), {s, broadcast("a", n)}), boolean(starts_a), "starts_with");
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, StringSizes, ::testing::Values(0, 1, 31, 32, 33, 1024));

TEST(Strings, AllNullEmptyAndSlicedPatterns) {
  column nulls = make_null_column(type_id::string, 5);
  const strs five_null(5);
  const std::vector<std::optional<bool>> five_null_b(5);
  expect_columns_equal(eval(col("s").str_to_upper(), {nulls}), str(five_null));
  expect_columns_equal(eval(col("s").str_slice(-2, 1), {nulls}), str(five_null));
  expect_columns_equal(eval(col("s").str_strip(), {nulls}), str(five_null));
  expect_columns_equal(eval(concat_str({col("s"), col("p")}), {nulls, str({"a", "b", "c", "d", "e"})}), str(five_null));
  expect_columns_equal(eval(col("s").str_contains(col("p"), false), {str({"(", "(", "(", "(", "("}), str(five_null)}), boolean(five_null_b));
  for (bool literal : {true, false})
    expect_columns_equal(eval(col("s").str_contains("x", literal), {nulls, broadcast("x", 5)}), boolean(five_null_b));
  column empty = str({});
  expect_columns_equal(eval(col("s").str_to_lower(), {empty}), empty);
  expect_columns_equal(eval(col("s").str_strip("ab"), {empty}), empty);
  expect_columns_equal(eval(col("s").str_slice(1), {empty}), empty);
  // sliced subject and pattern columns at different offsets
  column s = str({"zz", "abc", std::nullopt, "xbc", "abd", "q"});
  column p = str({"?", "?", "?", "?", "ab", "bc", std::nullopt, "bd", "b"});
  expect_columns_equal(eval(col("s").str_starts_with(col("p")), {s.slice(1, 4), p.slice(4, 4)}),
                       boolean({true, std::nullopt, std::nullopt, false}));
  expect_columns_equal(eval(col("s").str_ends_with(col("p")), {s.slice(1, 4), p.slice(4, 4)}),
                       boolean({false, std::nullopt, std::nullopt, true}));
  expect_columns_equal(eval(col("s").str_contains(col("p"), false), {s.slice(1, 4), p.slice(4, 4)}),
                       boolean({true, std::nullopt, std::nullopt, true}));
}
