// Regular expressions on the GPU (str.contains with a constant pattern, regex.hpp): lazy filters and
// projections on engine=gpu (fallback=raise) against the CPU engine, with nulls, sliced inputs and
// sizes around warp boundaries; and, on the host, which patterns stay on the CPU and why.
#include "exec/cuda/regex.hpp"
#include "test_util.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/expr/resolve.hpp"
#include "tug/memory/device.hpp"
#ifdef TUG_WITH_CUDA
#include "exec/cuda/ops.hpp"
#endif

namespace tug {
namespace {

uint64_t mix(uint64_t x) {
  x = x * 0x9E3779B97F4A7C15ull + 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 29);
}

/// Comments like PDS-H's (o_comment, s_comment) with line breaks, UTF-8, digits and punctuation; a null
/// every 7th row. Column "c" of `n` rows, a slice from row `off` of a longer column.
data_frame comments(int64_t n, int64_t off = 0) {
  static const char* words[] = {"special",   "requests",  "Customer",  "Complaints",  "pending", "deposits",
                                "the",       "carefully", "x.y",       "42",          "\n",      "d\xC3\xA9j\xC3\xA0",
                                "Customer,", "ironic",    "requests.", "special\r\n", "foo",     "bar",
                                "",          "A1b2"};
  std::vector<std::optional<std::string>> v;
  for (int64_t i = 0; i < n + off; ++i) {
    if (i % 7 == 3) {
      v.push_back(std::nullopt);
      continue;
    }
    uint64_t h = mix(static_cast<uint64_t>(i));
    std::string s;
    for (uint64_t k = h % 7; k > 0; --k) {
      h = mix(h);
      if (!s.empty()) s += h % 5 == 0 ? "" : " ";
      s += words[h % 20];
    }
    v.push_back(std::move(s));
  }
  column c = make_string_column(v);
  if (off) c = c.slice(off, n);
  return data_frame::from_columns({{"c", c}});
}

const std::vector<std::string>& patterns() {
  static const std::vector<std::string> p = {
      "special.*requests",
      "Customer.*Complaints",
      "^special",
      "requests$",
      "^$",
      "(foo|bar)+ ",
      "\\d{2,}",
      "[A-Z][a-z]+ [A-Z]",
      "x.y",
      "x\\.y",
      "\xC3\xA9",
      "special.*requests|^the",
      "\\s\\S*\\.",
      "[^a-z ]",
      "a.*c.*e.*f",
      "(?:pending|ironic) (deposits|requests)",
      "^(\\w+ ){2,3}\\w+$",
      ".",
      "\\n",
      "Customer,?",
  };
  return p;
}

std::vector<expr> regex_columns() {
  std::vector<expr> out;
  for (size_t k = 0; k < patterns().size(); ++k)
    out.push_back(col("c").str_contains(patterns()[k], false).alias("r" + std::to_string(k)));
  out.push_back(col("c").str_contains(lit_null(type_id::string), false).alias("null_pattern"));
  out.push_back((!col("c").str_contains("special.*requests", false)).alias("not_q13"));
  return out;
}

// Without a GPU: the automata the device runs (the same table and search()), row by row against the CPU
// engine over the test data; and every pattern both matches and misses there, so the GPU tests mean something.
TEST(CudaRegex, HostAutomataMatchCpuOnTheTestData) {
  data_frame df = comments(1024);
  table out = df.lazy().with_columns(regex_columns()).collect(cpu_engine()).to_table();
  const column_view c = out[0].view();
  for (size_t k = 0; k < patterns().size(); ++k) {
    SCOPED_TRACE(patterns()[k]);
    cuda::regex::automaton a = cuda::regex::compile(patterns()[k]);
    ASSERT_EQ(a.why, "");
    const column& r = out[k + 1];
    int64_t hits = 0, misses = 0;
    for (int64_t i = 0; i < c.size; ++i) {
      ASSERT_EQ(r.is_valid(i), c.is_valid(i)) << "row " << i;
      if (!c.is_valid(i)) continue;
      std::string_view s = c.string(i);
      const bool m = cuda::regex::search(a.table.data(), reinterpret_cast<const unsigned char*>(s.data()),
                                         static_cast<int64_t>(s.size()));
      ASSERT_EQ(m, r.value<bool>(i)) << "row " << i << " \"" << s << "\"";
      (m ? hits : misses) += 1;
    }
    EXPECT_GT(hits, 0);
    EXPECT_GT(misses, 0);
  }
}

TEST(CudaRegex, ProjectionsMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int64_t n : {0, 1, 31, 32, 33, 1024, 100000}) {
    SCOPED_TRACE("rows " + std::to_string(n));
    expect_gpu_matches_cpu(comments(n).lazy().with_columns(regex_columns()));
  }
}

TEST(CudaRegex, SlicedInputsMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int64_t off : {1, 5, 37}) {
    SCOPED_TRACE("offset " + std::to_string(off));
    expect_gpu_matches_cpu(comments(1024, off).lazy().with_columns(regex_columns()));
  }
}

TEST(CudaRegex, PdshFiltersMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int64_t n : {1, 33, 1024, 100000}) {
    SCOPED_TRACE("rows " + std::to_string(n));
    auto lf = comments(n, n % 3).lazy();
    expect_gpu_matches_cpu(lf.filter(!col("c").str_contains("special.*requests", false)));    // Q13
    expect_gpu_matches_cpu(lf.filter(col("c").str_contains("Customer.*Complaints", false)));  // Q16
    expect_gpu_matches_cpu(lf.filter(col("c").str_contains("^(the|foo) ", false) | col("c").is_null()));
  }
}

TEST(CudaRegex, MultiplePartitionsMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  engine_options g = gpu_engine(), c = cpu_engine();
  g.target_partition_rows = c.target_partition_rows = 100;
  expect_gpu_matches_cpu(comments(1024).lazy().with_columns(regex_columns()), g, c);
}

TEST(CudaRegex, InvalidPatternRaisesTheCpuError) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  // an invalid pattern stays on the CPU, which raises its compute_error (the default fallback warns)
  engine_options o = gpu_engine();
  o.fallback = fallback_mode::silent;
  auto lf = comments(10).lazy().filter(col("c").str_contains("a(b", false));
  EXPECT_THROW(lf.collect(o), compute_error);
  EXPECT_THROW(lf.collect(cpu_engine()), compute_error);
}

#ifdef TUG_WITH_CUDA
// expr_unsupported is host code: it runs without a GPU.
std::string why(const expr& e, const schema& s) { return cuda::expr_unsupported(resolve(e, s), s); }

TEST(CudaRegex, WhatRunsOnTheGpu) {
  schema s = comments(1).schema();
  s.push_back({"p", data_type(type_id::string)});
  for (const expr& e : regex_columns())
    EXPECT_EQ(why(e, s), "") << to_string(e);
  EXPECT_EQ(why(col("c").str_contains(std::string(64, 'a'), false), s), "");
  auto refused = [&](const std::string& pattern, const std::string& reason) {
    std::string w = why(col("c").str_contains(pattern, false), s);
    EXPECT_NE(w.find("regular expression"), std::string::npos) << pattern << ": " << w;
    EXPECT_NE(w.find(reason), std::string::npos) << pattern << ": " << w;
  };
  refused("(a)\\1", "backreference");
  refused("\\bword", "word boundar");
  refused("(?=a)", "lookaround");
  refused("[[:alpha:]]", "POSIX");
  refused(std::string(65, 'a') + "|b", "positions");
  refused("a(b", "invalid");
  EXPECT_NE(why(col("c").str_contains(col("p"), false), s).find("constant pattern"), std::string::npos);
  EXPECT_EQ(why(col("c").str_contains(col("p"), true), s), "");  // literal matching of a column pattern
}
#endif

}  // namespace
}  // namespace tug
