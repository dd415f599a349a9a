// The CUDA join against the CPU join: every join type, key type, duplicates, null keys, empty sides,
// sizes around a warp and several partitions. Runs only where a GPU is visible.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "test_util.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/memory/device.hpp"

using namespace tug;

namespace {

constexpr auto nul = std::nullopt;

enum class key_kind { i64, i32, u8, f64, f32, str, dec, date, ts, boolean };

const std::vector<key_kind> all_kinds = {key_kind::i64, key_kind::i32,    key_kind::u8,  key_kind::f64,
                                         key_kind::f32, key_kind::str,    key_kind::dec, key_kind::date,
                                         key_kind::ts,  key_kind::boolean};

template <typename T>
std::vector<std::optional<T>> mapped(const std::vector<std::optional<int64_t>>& codes, T (*f)(int64_t)) {
  std::vector<std::optional<T>> v;
  for (auto& c : codes)
    v.push_back(c ? std::optional<T>(f(*c)) : std::nullopt);
  return v;
}

/// Floats: some codes give NaN, -0.0 and 0.0 (equal keys on the CPU).
template <typename T>
T float_of(int64_t c) {
  if (c % 5 == 0) return std::numeric_limits<T>::quiet_NaN();
  if (c % 5 == 1) return T(-0.0);
  if (c % 5 == 2) return T(0.0);
  return static_cast<T>(c) * T(0.25);
}

column key_column(key_kind kind, const std::vector<std::optional<int64_t>>& codes) {
  switch (kind) {
    case key_kind::i64:
      return i64(codes);
    case key_kind::i32:
      return i32(mapped<int32_t>(codes, [](int64_t c) { return static_cast<int32_t>(c * 7 - 50); }));
    case key_kind::u8:
      return make_column<uint8_t>(type_id::uint8,
                                  mapped<uint8_t>(codes, [](int64_t c) { return static_cast<uint8_t>(c); }));
    case key_kind::f64:
      return f64(mapped<double>(codes, float_of<double>));
    case key_kind::f32:
      return make_column<float>(type_id::float32, mapped<float>(codes, float_of<float>));
    case key_kind::str:
      return str(
          mapped<std::string>(codes, [](int64_t c) { return c % 4 == 0 ? std::string() : "key" + std::to_string(c); }));
    case key_kind::dec:
      return make_column<__int128>(decimal(30, 3), mapped<__int128>(codes, [](int64_t c) {
                                     return (static_cast<__int128>(c) << 70) + c * 1000000007 - 5;
                                   }));
    case key_kind::date:
      return make_column<int32_t>(
          type_id::date32, mapped<int32_t>(codes, [](int64_t c) { return static_cast<int32_t>(c * 37 - 1000); }));
    case key_kind::ts:
      return make_column<int64_t>(timestamp(time_unit::ms),
                                  mapped<int64_t>(codes, [](int64_t c) { return c * 86400123 - 7; }));
    case key_kind::boolean:
      return boolean(mapped<bool>(codes, [](int64_t c) { return c % 2 == 0; }));
  }
  return {};
}

struct lcg {
  uint64_t s;
  int64_t next(int64_t n) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((s >> 33) % static_cast<uint64_t>(n));
  }
};

std::vector<std::optional<int64_t>> codes(lcg& r, int64_t n, int64_t domain, bool nulls) {
  std::vector<std::optional<int64_t>> v;
  for (int64_t i = 0; i < n; ++i) {
    if (nulls && r.next(8) == 0)
      v.push_back(nul);
    else
      v.push_back(r.next(domain));
  }
  return v;
}

/// Left (k, v, k2, s) and right (k2, w, k, v, t) frames; keys with duplicates (domain ~ rows / 3).
std::pair<data_frame, data_frame> make_pair(key_kind kind, int64_t nl, int64_t nr, uint64_t seed, bool nulls = true) {
  lcg r{seed};
  int64_t domain = std::max<int64_t>(2, (nl + nr) / 6);
  std::vector<std::optional<int64_t>> lv, rv, rw;
  std::vector<std::optional<std::string>> ls, rt;
  for (int64_t i = 0; i < nl; ++i) {
    lv.push_back(i);
    ls.push_back(i % 5 == 0 ? std::optional<std::string>() : "l" + std::to_string(i));
  }
  for (int64_t i = 0; i < nr; ++i) {
    rv.push_back(1000 + i);
    rw.push_back(i % 3 == 0 ? std::optional<int64_t>() : std::optional<int64_t>(i));
    rt.push_back(i % 4 == 0 ? std::optional<std::string>() : std::string(static_cast<size_t>(i % 7), 'x'));
  }
  auto l = data_frame::from_columns({{"k", key_column(kind, codes(r, nl, domain, nulls))},
                                     {"v", i64(lv)},
                                     {"k2", i64(codes(r, nl, 3, nulls))},
                                     {"s", str(ls)}});
  auto rr = data_frame::from_columns({{"k2", i64(codes(r, nr, 3, nulls))},
                                      {"w", i64(rw)},
                                      {"k", key_column(kind, codes(r, nr, domain, nulls))},
                                      {"v", i64(rv)},
                                      {"t", str(rt)}});
  return {l, rr};
}

const std::vector<join_type> all_types = {join_type::inner, join_type::left, join_type::right, join_type::full,
                                          join_type::semi,  join_type::anti, join_type::cross};

/// Runs `lf` on the GPU (the join must run there) and on the CPU; rows must be equal, in order.
void expect_gpu_matches_cpu(const lazy_frame& lf, int64_t partition_rows, const std::string& what) {
  engine_options gpu;
  gpu.engine = engine_kind::gpu;
  // other operators of the plan (the join's post-projection) may not have a CUDA version yet: they
  // fall back silently, but the join itself must not
  gpu.fallback = fallback_mode::silent;
  gpu.target_partition_rows = partition_rows;
  engine_options cpu = gpu;
  cpu.engine = engine_kind::cpu;
  query_result got = lf.profile(gpu);
  for (auto& f : got.fallbacks)
    EXPECT_EQ(f.find("operator join"), std::string::npos) << what << ": " << f;
  bool on_gpu = false;
  std::istringstream plan(got.physical_plan);
  for (std::string line; std::getline(plan, line);)
    if (line.find("hash_join") != std::string::npos) on_gpu = line.find("cuda") != std::string::npos;
  EXPECT_TRUE(on_gpu) << what << ": the join did not run on the GPU:\n" << got.physical_plan;
  data_frame want = lf.collect(cpu);
  EXPECT_EQ(got.frame.schema().to_string(), want.schema().to_string()) << what;
  EXPECT_EQ(rows_of(got.frame), rows_of(want)) << what;
}

void check_all_types(const data_frame& l, const data_frame& r, const std::vector<std::string>& keys,
                     int64_t partition_rows, const std::string& what) {
  for (join_type how : all_types) {
    if (how == join_type::cross && l.num_rows() * r.num_rows() > 40000) continue;
    auto lf = how == join_type::cross ? l.lazy().cross_join(r.lazy()) : l.lazy().join(r.lazy(), keys, how);
    expect_gpu_matches_cpu(lf, partition_rows, what + " " + to_string(how));
  }
}

#define REQUIRE_GPU()                                       \
  do {                                                      \
    if (!gpu_available()) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

}  // namespace

TEST(CudaJoin, EveryKeyTypeAndJoinType) {
  REQUIRE_GPU();
  for (key_kind kind : all_kinds) {
    auto [l, r] = make_pair(kind, 97, 61, 11 + static_cast<uint64_t>(kind));
    check_all_types(l, r, {"k"}, 1 << 20, "kind " + std::to_string(static_cast<int>(kind)));
  }
}

TEST(CudaJoin, MultiKey) {
  REQUIRE_GPU();
  for (key_kind kind : {key_kind::i64, key_kind::str, key_kind::f64}) {
    auto [l, r] = make_pair(kind, 150, 120, 5);
    check_all_types(l, r, {"k", "k2"}, 1 << 20, "multi-key " + std::to_string(static_cast<int>(kind)));
    check_all_types(l, r, {"k2", "k"}, 7, "multi-key, partitions of 7");
  }
}

TEST(CudaJoin, SizesAroundAWarp) {
  REQUIRE_GPU();
  for (int64_t nl : {1, 31, 32, 33, 1024})
    for (int64_t nr : {1, 31, 32, 33, 1024}) {
      auto [l, r] = make_pair(key_kind::i64, nl, nr, static_cast<uint64_t>(nl * 7 + nr));
      std::string what = std::to_string(nl) + "x" + std::to_string(nr);
      check_all_types(l, r, {"k"}, 1 << 20, what);
      if (nl == 1024 || nr == 1024) check_all_types(l, r, {"k"}, 7, what + " partitions of 7");
    }
}

TEST(CudaJoin, StringKeysManyPartitions) {
  REQUIRE_GPU();
  auto [l, r] = make_pair(key_kind::str, 500, 300, 3);
  check_all_types(l, r, {"k"}, 7, "strings, partitions of 7");
}

TEST(CudaJoin, EmptySides) {
  REQUIRE_GPU();
  auto [l, r] = make_pair(key_kind::str, 40, 30, 9);
  auto none = [](const data_frame& f) { return f.lazy().filter(col("v") < -1); };
  for (join_type how : all_types) {
    auto join = [&](const lazy_frame& a, const lazy_frame& b) {
      return how == join_type::cross ? a.cross_join(b) : a.join(b, {"k"}, how);
    };
    expect_gpu_matches_cpu(join(none(l), r.lazy()), 7, "empty left " + std::string(to_string(how)));
    expect_gpu_matches_cpu(join(l.lazy(), none(r)), 7, "empty right " + std::string(to_string(how)));
    expect_gpu_matches_cpu(join(none(l), none(r)), 7, "both empty " + std::string(to_string(how)));
  }
}

TEST(CudaJoin, AllNullKeysAndNoMatches) {
  REQUIRE_GPU();
  std::vector<std::optional<int64_t>> nulls(40, nul), a, b;
  for (int64_t i = 0; i < 40; ++i) {
    a.push_back(i);
    b.push_back(i + 100);
  }
  auto l = data_frame::from_columns({{"k", i64(nulls)}, {"v", i64(a)}});
  auto r = data_frame::from_columns({{"k", i64(nulls)}, {"w", i64(b)}});
  check_all_types(l, r, {"k"}, 7, "null keys only");
  auto l2 = data_frame::from_columns({{"k", i64(a)}, {"v", i64(a)}});
  auto r2 = data_frame::from_columns({{"k", i64(b)}, {"w", i64(b)}});
  check_all_types(l2, r2, {"k"}, 7, "disjoint keys");
}

TEST(CudaJoin, HeavyDuplicates) {
  REQUIRE_GPU();
  std::vector<std::optional<int64_t>> lk, rk, v;
  for (int64_t i = 0; i < 300; ++i) {
    lk.push_back(i % 3);
    v.push_back(i);
  }
  for (int64_t i = 0; i < 200; ++i)
    rk.push_back(i % 2 == 0 ? std::optional<int64_t>(1) : std::optional<int64_t>(i % 5));
  auto l = data_frame::from_columns({{"k", i64(lk)}, {"v", i64(v)}});
  auto r = data_frame::from_columns(
      {{"k", i64(rk)}, {"w", i64(std::vector<std::optional<int64_t>>(v.begin(), v.begin() + 200))}});
  check_all_types(l, r, {"k"}, 1 << 20, "heavy duplicates");
  check_all_types(l, r, {"k"}, 7, "heavy duplicates, partitions of 7");
}

TEST(CudaJoin, SlicedInputs) {
  REQUIRE_GPU();
  auto [l, r] = make_pair(key_kind::str, 200, 150, 21);
  for (join_type how : all_types) {
    if (how == join_type::cross) continue;
    auto lf = l.lazy().slice(13, 150).join(r.lazy().slice(7, 120), {"k", "k2"}, how);
    expect_gpu_matches_cpu(lf, 33, "sliced " + std::string(to_string(how)));
  }
}

TEST(CudaJoin, NarrowedOutputs) {
  // consumers that read some of the join's columns: the join gathers only those (keys included only
  // when read), on the GPU as on the CPU
  REQUIRE_GPU();
  for (key_kind kind : {key_kind::i64, key_kind::str, key_kind::dec}) {
    auto [l, r] = make_pair(kind, 130, 70, 31 + static_cast<uint64_t>(kind));
    for (join_type how : all_types) {
      auto lf = how == join_type::cross ? l.lazy().cross_join(r.lazy()) : l.lazy().join(r.lazy(), {"k", "k2"}, how);
      std::vector<std::string> names = lf.schema().names();
      std::string what = "narrowed kind " + std::to_string(static_cast<int>(kind)) + " " + to_string(how);
      std::string plan = lf.select({col(names.back())}).explain(engine_options{});
      EXPECT_NE(plan.find("-> left"), std::string::npos) << what << ": the join was not narrowed\n" << plan;
      for (auto subset : {std::vector<std::string>{names.back()}, std::vector<std::string>{names.front()},
                          std::vector<std::string>{names[1], names.back()}}) {
        std::vector<expr> cols;
        for (auto& n : subset)
          cols.push_back(col(n));
        expect_gpu_matches_cpu(lf.select(cols), 7, what + " " + subset.back());
        expect_gpu_matches_cpu(lf.select(cols), 1 << 20, what + " one partition " + subset.back());
      }
      expect_gpu_matches_cpu(lf.select({col("v").sum(), col(names.back()).count().alias("n")}), 7, what + " sum");
    }
  }
  // an empty side
  auto [l, r] = make_pair(key_kind::i64, 40, 30, 9);
  auto none = r.lazy().filter(col("v") < -1);
  for (join_type how : {join_type::left, join_type::full, join_type::anti})
    expect_gpu_matches_cpu(l.lazy().join(none, {"k"}, how).select({col("s")}), 7,
                           std::string("narrowed, empty right ") + to_string(how));
}
