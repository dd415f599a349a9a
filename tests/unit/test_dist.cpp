// Multi-rank execution (src/dist): the wire format, the single-rank communicator, and the placement of
// exchanges, checked by running each query on 2 to 4 ranks in one process (threads, with an in-process
// test communicator) against the one-rank answer. The MPI communicator runs in the ctests dist.* under
// mpirun (CMakeLists.txt, bench/ranks_check.sh).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <thread>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "dist/device_split.hpp"
#include "tug/dist/communicator.hpp"
#include "dist/wire.hpp"
#include "test_util.hpp"
#include "tug/api/io.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/api/user_kernel.hpp"
#include "tug/dist/distribute.hpp"
#include "tug/exec/key_index.hpp"
#include "tug/memory/device.hpp"
#include "tug/plan/optimizer.hpp"

using namespace tug;

namespace {

// ---------------------------------------------------------------------------------------------
// The wire format

table all_types(int64_t n) {
  std::vector<std::optional<int64_t>> i;
  std::vector<std::optional<double>> d;
  std::vector<std::optional<std::string>> s;
  std::vector<std::optional<bool>> b;
  std::vector<std::optional<int32_t>> i32v;
  for (int64_t k = 0; k < n; ++k) {
    const bool null = k % 7 == 3;
    i.push_back(null ? std::nullopt : std::optional<int64_t>(k * 1000003 - 77));
    d.push_back(k % 5 == 1 ? std::nullopt : std::optional<double>(k * 0.25 - 3));
    s.push_back(k % 6 == 2 ? std::nullopt : std::optional<std::string>(std::string(static_cast<size_t>(k % 13), 'a' + k % 26)));
    b.push_back(k % 4 == 0 ? std::nullopt : std::optional<bool>(k % 3 == 0));
    i32v.push_back(null ? std::nullopt : std::optional<int32_t>(static_cast<int32_t>(k - 500)));
  }
  std::vector<std::optional<__int128>> dec;
  for (int64_t k = 0; k < n; ++k) dec.push_back(k % 9 == 0 ? std::nullopt : std::optional<__int128>(static_cast<__int128>(k) * 1000000007));
  return table({i64(i), f64(d), str(s), boolean(b), i32(i32v), make_column<int32_t>(type_id::date32, i32v),
                make_column<int64_t>(timestamp(time_unit::ms, "Europe/Paris"), i), make_column<__int128>(decimal(30, 4), dec),
                make_column<int64_t>(type_id::uint64, i)});
}

TEST(DistWire, RoundTripsEveryTypeSliceAndSize) {
  for (int64_t n : {0, 1, 31, 32, 33, 1024}) {
    table t = all_types(n + 40);
    for (int64_t off : {0, 1, 3, 31, 32, 33}) {
      table s = t.slice(off, n);
      table back = dist::deserialize(dist::serialize(s), default_host_resource());
      ASSERT_EQ(back.num_rows(), n);
      ASSERT_EQ(back.num_columns(), s.num_columns());
      for (size_t c = 0; c < s.num_columns(); ++c)
        expect_columns_equal(back[c], s[c], "column " + std::to_string(c) + " n=" + std::to_string(n) + " offset=" + std::to_string(off));
    }
  }
  table rows_only = table::empty_with_rows(17);
  EXPECT_EQ(dist::deserialize(dist::serialize(rows_only), default_host_resource()).num_rows(), 17);
}

TEST(DistWire, RowsSerializedStraightFromATableEqualTheGatheredRows) {
  for (int64_t n : {0, 1, 31, 32, 33, 1024}) {
    table t = all_types(n + 40);
    for (int64_t off : {0, 3, 33}) {
      table s = t.slice(off, n);
      // every other row backwards, then the first row again (rows may repeat and come in any order)
      std::vector<int64_t> rows;
      for (int64_t r = n - 1; r >= 0; r -= 2) rows.push_back(r);
      if (n > 0) rows.push_back(0);
      const auto m = static_cast<int64_t>(rows.size());
      table want = gather(s, rows.data(), m, default_host_resource());
      table back = dist::deserialize(dist::serialize_rows(s, rows.data(), m), default_host_resource());
      ASSERT_EQ(back.num_rows(), m);
      for (size_t c = 0; c < s.num_columns(); ++c) {
        const std::string what = "column " + std::to_string(c) + " n=" + std::to_string(n) + " offset=" + std::to_string(off);
        expect_columns_equal(back[c], want[c], what);
        EXPECT_EQ(back[c].null_count(), want[c].null_count()) << what;
      }
    }
  }
}

// The layout a device table travels as (its buffers over NCCL): here host tables, their spans copied
// with memcpy as NCCL copies them between devices, and the string offsets rebased as the receiver does.
table through_layout(const table& s) {
  std::vector<dist::span> spans;
  const dist::message m = dist::serialize_layout(s, spans, [](void* d, const void* p, size_t n) { std::memcpy(d, p, n); });
  EXPECT_TRUE(dist::is_layout(m));
  EXPECT_FALSE(dist::is_layout(dist::serialize(s)));
  std::vector<dist::landing> land;
  std::vector<dist::rebase> rebases;
  table back = dist::deserialize_layout(m, default_host_resource(), land, rebases);
  EXPECT_EQ(land.size(), spans.size());
  for (size_t k = 0; k < std::min(land.size(), spans.size()); ++k) {
    EXPECT_EQ(land[k].bytes, spans[k].bytes) << "span " << k;
    if (land[k].bytes == spans[k].bytes && spans[k].bytes > 0) std::memcpy(land[k].p, spans[k].p, spans[k].bytes);
  }
  for (const dist::rebase& b : rebases)
    for (int64_t k = 0; k < b.n; ++k) b.p[k] -= b.base;
  return back;
}

TEST(DistWire, LayoutAndBuffersApartRebuildEveryTypeSliceAndSize) {
  for (int64_t n : {0, 1, 31, 32, 33, 1024}) {
    table t = all_types(n + 40);
    for (int64_t off : {0, 1, 3, 31, 32, 33}) {
      table s = t.slice(off, n);
      table back = through_layout(s);
      ASSERT_EQ(back.num_rows(), n);
      ASSERT_EQ(back.num_columns(), s.num_columns());
      for (size_t c = 0; c < s.num_columns(); ++c) {
        const std::string what = "column " + std::to_string(c) + " n=" + std::to_string(n) + " offset=" + std::to_string(off);
        expect_columns_equal(back[c], s[c], what);
        EXPECT_EQ(back[c].null_count(), s[c].null_count()) << what;
      }
    }
  }
  EXPECT_EQ(through_layout(table::empty_with_rows(17)).num_rows(), 17);
  // a table message is not a layout, and a layout cut short is an error
  std::vector<dist::span> spans;
  dist::message m = dist::serialize_layout(all_types(50), spans, [](void* d, const void* p, size_t n) { std::memcpy(d, p, n); });
  dist::message cut(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(m.size() / 2));
  std::vector<dist::landing> land;
  std::vector<dist::rebase> rebases;
  EXPECT_THROW(dist::deserialize_layout(cut, default_host_resource(), land, rebases), internal_error);
  EXPECT_THROW(dist::deserialize_layout(dist::serialize(all_types(5)), default_host_resource(), land, rebases), internal_error);
}

TEST(DistWire, TruncatedOrForeignMessagesAreErrors) {
  dist::message m = dist::serialize(all_types(50));
  dist::message cut(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(m.size() / 2));
  EXPECT_THROW(dist::deserialize(cut, default_host_resource()), internal_error);
  dist::message foreign(64, 7);
  EXPECT_THROW(dist::deserialize(foreign, default_host_resource()), internal_error);
}

TEST(DistCommunicator, SingleRankDeliversToItselfInOrder) {
  auto c = dist::single_rank();
  EXPECT_EQ(c->size(), 1);
  auto ex = c->open(0, 3, 1.0);
  ex->send(0, {1});
  ex->send(0, {2, 2});
  EXPECT_THROW(ex->send(1, {3}), internal_error);
  ex->finish();
  auto a = ex->receive();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->second, dist::message({1}));
  auto b = ex->receive();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->second.size(), 2u);
  EXPECT_FALSE(ex->receive());
}

// ---------------------------------------------------------------------------------------------
// Ranks as threads of this process: a test communicator over shared mailboxes

struct hub {
  int size;
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::tuple<int64_t, int, int>, std::deque<std::pair<int, dist::message>>> box;  // (query, tag, to)
  std::vector<std::tuple<int, uint8_t, std::string>> aborts;
};

class thread_comm final : public dist::communicator {
 public:
  thread_comm(std::shared_ptr<hub> h, int rank) : _h(std::move(h)), _rank(rank) {}
  int rank() const override { return _rank; }
  int size() const override { return _h->size; }
  std::string describe() const override { return "test threads"; }
  class ex final : public exchange {
   public:
    ex(thread_comm& c, int64_t q, int tag, double timeout) : _c(c), _q(q), _tag(tag), _timeout(timeout) {}
    void send(int to, dist::message m) override {
      EXPECT_FALSE(m.empty());
      put(to, std::move(m));
    }
    void finish() override {
      for (int r = 0; r < _c._h->size; ++r) put(r, {});
    }
    std::optional<std::pair<int, dist::message>> receive() override {
      hub& h = *_c._h;
      std::unique_lock<std::mutex> g(h.mu);
      for (;;) {
        if (!h.aborts.empty())
          dist::throw_error(std::get<1>(h.aborts[0]),
                            "rank " + std::to_string(std::get<0>(h.aborts[0])) + " failed: " + std::get<2>(h.aborts[0]));
        if (_finished == h.size) return std::nullopt;
        auto& q = h.box[{_q, _tag, _c._rank}];
        if (!q.empty()) {
          auto m = std::move(q.front());
          q.pop_front();
          if (m.second.empty()) {
            ++_finished;
            continue;
          }
          return m;
        }
        if (h.cv.wait_for(g, std::chrono::duration<double>(_timeout)) == std::cv_status::timeout)
          throw distributed_error("test exchange timed out");
      }
    }

   private:
    void put(int to, dist::message m) {
      std::lock_guard<std::mutex> g(_c._h->mu);
      _c._h->box[{_q, _tag, to}].emplace_back(_c._rank, std::move(m));
      _c._h->cv.notify_all();
    }
    thread_comm& _c;
    int64_t _q;
    int _tag;
    double _timeout;
    int _finished = 0;
  };
  std::unique_ptr<exchange> open(int64_t q, int tag, double timeout) override {
    return std::make_unique<ex>(*this, q, tag, timeout);
  }
  void abort(int64_t, const std::exception& e) noexcept override {
    std::lock_guard<std::mutex> g(_h->mu);
    _h->aborts.emplace_back(_rank, dist::error_code(e), e.what());
    _h->cv.notify_all();
  }

 private:
  std::shared_ptr<hub> _h;
  int _rank;
};

/// What each rank outputs when `lf` runs on `ranks` ranks (threads), and the plan of rank 0.
struct ranked {
  std::vector<data_frame> frames;
  std::string plan;
  std::vector<std::string> statistics_json;  ///< per rank
};

ranked run_on_ranks(const lazy_frame& lf, int ranks, engine_options o, bool leave_split = false) {
  plan_ptr p = optimize(lf.plan(), dist::flags_for_ranks(o.optimizer, ranks), true);
  auto h = std::make_shared<hub>();
  h->size = ranks;
  std::vector<query_result> out(static_cast<size_t>(ranks));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      auto comm = std::make_shared<thread_comm>(h, r);
      auto q = std::make_shared<dist::query_ranks>();
      q->comm = comm;
      q->query = 7;
      q->timeout = 60;
      try {
        out[static_cast<size_t>(r)] = run_plan_as_rank(p, o, nullptr, q, leave_split);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = std::current_exception();
        comm->abort(q->query, e);
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  ranked res;
  res.plan = out[0].physical_plan;
  for (auto& r : out) {
    res.frames.push_back(std::move(r.frame));
    res.statistics_json.push_back(r.statistics_json);
  }
  return res;
}

engine_options small_parts() {
  engine_options o = cpu_engine();
  o.target_partition_rows = 37;
  o.num_threads = 2;
  return o;
}

/// `lf` on 2, 3 and 4 ranks equals the one-rank answer (`ordered`: row for row; else as sorted rows),
/// on rank 0, and the other ranks output nothing.
void expect_same_on_ranks(const lazy_frame& lf, bool ordered, engine_options o = small_parts(), const std::string& what = "") {
  data_frame want = lf.collect(o);
  for (int ranks : {2, 3, 4}) {
    ranked got = run_on_ranks(lf, ranks, o);
    const std::string where = what + " on " + std::to_string(ranks) + " ranks; plan:\n" + got.plan;
    if (ordered) EXPECT_EQ(rows_of(got.frames[0]), rows_of(want)) << where;
    else EXPECT_EQ(sorted_rows(got.frames[0]), sorted_rows(want)) << where;
    for (int r = 1; r < ranks; ++r) EXPECT_EQ(got.frames[static_cast<size_t>(r)].num_rows(), 0) << where << " rank " << r;
  }
}

data_frame facts(int64_t n) {
  std::vector<std::optional<int64_t>> k, i;
  std::vector<std::optional<std::string>> g;
  std::vector<std::optional<double>> v;
  for (int64_t r = 0; r < n; ++r) {
    k.push_back(r % 11 == 5 ? std::nullopt : std::optional<int64_t>((r * 7919) % 97));
    g.push_back(r % 13 == 4 ? std::nullopt : std::optional<std::string>("g" + std::to_string(r % 9)));
    v.push_back(r % 17 == 8 ? std::nullopt : std::optional<double>(static_cast<double>((r * 31) % 1000) / 8));
    i.push_back(r);
  }
  return data_frame::from_columns({{"k", i64(k)}, {"g", str(g)}, {"v", f64(v)}, {"i", i64(i)}});
}

data_frame dims(int64_t n) {
  std::vector<std::optional<int64_t>> k;
  std::vector<std::optional<std::string>> w;
  for (int64_t r = 0; r < n; ++r) {
    k.push_back(r % 10 == 9 ? std::nullopt : std::optional<int64_t>(r * 3 % 120));
    w.push_back("w" + std::to_string(r));
  }
  return data_frame::from_columns({{"k", i64(k)}, {"w", str(w)}});
}

}  // namespace

TEST(DistRanks, PerPartitionWorkKeepsOrder) {
  for (int64_t n : {0, 1, 31, 33, 1024}) {
    auto lf = facts(n).lazy().filter(col("v") > lit(20.0)).select({col("i"), (col("v") * lit(2.0)).alias("w")});
    expect_same_on_ranks(lf, true, small_parts(), "n=" + std::to_string(n));
  }
}

TEST(DistRanks, GroupBysShuffleByKeyOrGatherPartialStates) {
  for (int64_t n : {0, 1, 33, 1024}) {
    auto lf = facts(n).lazy();
    const std::string w = "n=" + std::to_string(n);
    expect_same_on_ranks(lf.group_by({"k"}).agg({col("v").sum().alias("s"), col("v").mean().alias("m"),
                                                 col("i").count().alias("c"), col("v").max().alias("x")}),
                         false, small_parts(), "decomposable " + w);
    expect_same_on_ranks(lf.group_by({"g", "k"}).agg({col("v").median().alias("med"), col("i").n_unique().alias("u")}),
                         false, small_parts(), "holistic " + w);
    expect_same_on_ranks(lf.group_by({"g"}, true).agg({col("v").sum().alias("s")}), true, small_parts(),
                         "maintain_order " + w);
    expect_same_on_ranks(lf.select({col("v").sum().alias("s"), col("i").count().alias("c")}), true, small_parts(),
                         "global " + w);
    expect_same_on_ranks(lf.select({col("v").median().alias("med")}), true, small_parts(), "global median " + w);
  }
}

TEST(DistRanks, JoinsShuffleOrBroadcastEveryType) {
  for (int64_t n : {0, 1, 33, 1024}) {
    for (int64_t limit : {int64_t{0}, int64_t{1} << 22}) {
      engine_options o = small_parts();
      o.broadcast_limit = limit;  // 0: the build side is shuffled; else broadcast
      for (join_type how : {join_type::inner, join_type::left, join_type::semi, join_type::anti, join_type::full,
                            join_type::right}) {
        auto lf = facts(n).lazy().join(dims(40).lazy(), {"k"}, how);
        expect_same_on_ranks(lf, false, o,
                             "n=" + std::to_string(n) + " limit=" + std::to_string(limit) + " " + to_string(how));
      }
      auto cross = facts(n).lazy().head(20).cross_join(dims(7).lazy());
      expect_same_on_ranks(cross, false, o, "cross n=" + std::to_string(n));
    }
  }
}

TEST(DistRanks, CollectOnEveryRankGivesEveryRankTheAnswer) {
  // engine_options::collect_on_every_rank: each rank's collect() holds the whole answer (else rank 0 only)
  for (int64_t n : {0, 1, 33, 1024}) {
    auto lf = facts(n).lazy();
    const std::string w = "n=" + std::to_string(n);
    const std::vector<std::pair<lazy_frame, bool>> queries = {
        {lf.filter(col("v") > lit(20.0)).select({col("i"), col("v")}), true},
        {lf.group_by({"k"}).agg({col("v").sum().alias("s"), col("i").count().alias("c")}), false},
        {lf.join(dims(40).lazy(), {"k"}, join_type::inner), false},
        {lf.sort({col("v"), col("i")}, {{true, false}, {true}}), true},
        {lf.select({col("v").sum().alias("s")}), true}};
    for (const auto& [q, ordered] : queries) {
      engine_options o = small_parts();
      const data_frame want = q.collect(o);
      o.collect_on_every_rank = true;
      for (int ranks : {2, 3}) {
        const ranked got = run_on_ranks(q, ranks, o);
        for (int r = 0; r < ranks; ++r) {
          const data_frame& f = got.frames[static_cast<size_t>(r)];
          const std::string where = w + " on " + std::to_string(ranks) + " ranks, rank " + std::to_string(r) +
                                    "; plan:\n" + got.plan;
          if (ordered) EXPECT_EQ(rows_of(f), rows_of(want)) << where;
          else EXPECT_EQ(sorted_rows(f), sorted_rows(want)) << where;
        }
      }
    }
  }
}

TEST(DistRanks, OrderedOperatorsGatherToRankZero) {
  for (int64_t n : {0, 1, 33, 1024}) {
    auto lf = facts(n).lazy();
    const std::string w = "n=" + std::to_string(n);
    expect_same_on_ranks(lf.sort({col("v"), col("i")}, {{true, false}, {true}}), true, small_parts(), "sort " + w);
    expect_same_on_ranks(lf.sort("i", true).head(10), true, small_parts(), "top-k " + w);
    expect_same_on_ranks(lf.slice(5, 20), true, small_parts(), "slice " + w);
    expect_same_on_ranks(lf.with_row_index("r", 3), true, small_parts(), "row index " + w);
    expect_same_on_ranks(lf.with_columns({col("v").sum().over({"g"}).alias("gs")}), true, small_parts(), "over " + w);
    expect_same_on_ranks(lf.with_columns({col("v").mean().alias("m")}).filter(col("v") > col("m")), true, small_parts(),
                         "filter on a global mean " + w);
    expect_same_on_ranks(lf.unique({"k"}), false, small_parts(), "unique " + w);
    expect_same_on_ranks(lf.unique({"g"}, unique_keep::first, true), true, small_parts(), "unique keep order " + w);
    expect_same_on_ranks(concat({lf.head(50), lf.tail(20)}), true, small_parts(), "concat " + w);
  }
}

TEST(DistRanks, WindowsOfOneKeySetShuffleByTheKeysAndKeepInputOrder) {
  // `over` of one key set: rows shuffled by the keys, windowed where they land, put back in input order
  // by a range exchange on their positions; first/last see each group's rows in input order
  for (int64_t n : {0, 1, 31, 32, 33, 1024}) {
    auto lf = facts(n).lazy();
    const std::string w = "n=" + std::to_string(n);
    const std::vector<std::pair<lazy_frame, std::string>> shuffled = {
        {lf.with_columns({col("v").sum().over({"g"}).alias("gs")}), "sum over g"},
        {lf.with_columns({col("v").first().over({"k"}).alias("f"), col("i").last().over({"k"}).alias("l"),
                          col("v").mean().over({"k"}).alias("m"), col("i").count().over({"k"}).alias("c")}),
         "first, last, mean, count over k"},
        {lf.with_columns({col("v").max().over({"k", "g"}).alias("x")}), "max over k, g"},
        {lf.filter(col("v") > lit(10.0)).with_columns({col("i").min().over({"g"}).alias("mi")}).select(
             {col("i"), col("mi")}),
         "filter, min over g, select"},
    };
    for (const auto& [q, what] : shuffled) {
      expect_same_on_ranks(q, true, small_parts(), what + " " + w);
      const ranked got = run_on_ranks(q, 2, small_parts());
      EXPECT_NE(got.plan.find("exchange[shuffle]"), std::string::npos) << what << "\n" << got.plan;
      EXPECT_NE(got.plan.find("exchange[range]"), std::string::npos) << what << "\n" << got.plan;
    }
    // two key sets: every row gathered to rank 0 below the window
    const auto two = lf.with_columns({col("v").sum().over({"g"}).alias("a"), col("v").sum().over({"k"}).alias("b")});
    expect_same_on_ranks(two, true, small_parts(), "two key sets " + w);
    const ranked got = run_on_ranks(two, 2, small_parts());
    EXPECT_EQ(got.plan.find("exchange[shuffle]"), std::string::npos) << got.plan;
  }
}

TEST(DistRanks, StatisticsJsonSaysWhatEachRankSent) {
  auto q = facts(1024).lazy().join(dims(40).lazy(), {"k"}).group_by({"w"}).agg({col("v").sum().alias("s")});
  engine_options o = small_parts();
  o.broadcast_limit = 0;  // both sides shuffled
  for (int ranks : {2, 3}) {
    const ranked got = run_on_ranks(q, ranks, o);
    for (int r = 0; r < ranks; ++r) {
      const auto j = nlohmann::json::parse(got.statistics_json[static_cast<size_t>(r)]);
      ASSERT_TRUE(j.contains("exchanges")) << j.dump();
      const auto& x = j["exchanges"];
      EXPECT_EQ(x["rank"], r);
      EXPECT_EQ(x["ranks"], ranks);
      int64_t sum = 0;
      for (const auto& e : x["sent"]) {
        EXPECT_EQ(e["name"].get<std::string>().rfind("exchange[", 0), 0u) << e.dump();
        sum += e["bytes"].get<int64_t>();
      }
      EXPECT_EQ(x["sent_bytes"].get<int64_t>(), sum);
      EXPECT_GT(sum, 0) << "rank " << r << " of " << ranks << " sent rows in the shuffles";
      EXPECT_TRUE(j.contains("operators")) << "the rest of the statistics is still there";
    }
  }
}

// What an exchange sends and receives counts on the query's memory budget while it is in messages: under
// a limit smaller than that, a rank raises memory_error naming the exchange's rows (serialized on the
// sending rank, received on rank 0; the other ranks stop with it); under a limit that holds it, the
// answer is the one-rank answer.
TEST(DistRanks, RowsInExchangeMessagesCountAgainstTheMemoryLimit) {
  const lazy_frame q = facts(20000).lazy().select({col("i"), col("g"), col("v")});
  engine_options o = small_parts();
  o.target_partition_rows = 1000;
  o.memory_limit = 64 * 1024;  // rank 0 receives about 200 KiB from each other rank
  try {
    run_on_ranks(q, 2, o);
    FAIL() << "expected a memory_error";
  } catch (const memory_error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.find("exchange: rows serialized for other ranks") != std::string::npos ||
                what.find("exchange: rows received from other ranks") != std::string::npos)
        << what;
  }
  o.memory_limit = 64 << 20;
  for (int ranks : {2, 3}) {
    const ranked got = run_on_ranks(q, ranks, o);
    EXPECT_EQ(rows_of(got.frames[0]), rows_of(q.collect(small_parts()))) << ranks << " ranks";
  }
}

TEST(DistRanks, SortsRouteRowsByRangeAndTopKsCutEachRankFirst) {
  // many ties (k has 97 values and nulls, g 9 and nulls), so stability and the routing of keys equal to a
  // boundary decide the order; "i" (input order) is never a key here except where named
  for (int64_t n : {0, 1, 31, 32, 33, 1024}) {
    auto lf = facts(n).lazy();
    const std::string w = "n=" + std::to_string(n);
    expect_same_on_ranks(lf.sort("k"), true, small_parts(), "sort k " + w);
    expect_same_on_ranks(lf.sort("k", true), true, small_parts(), "sort k desc " + w);
    expect_same_on_ranks(lf.sort({col("g"), col("k")}, {{true, false}, {false, true}, true}), true, small_parts(),
                         "sort g desc, k nulls_last " + w);
    expect_same_on_ranks(lf.sort({col("v")}, {{false}, {true}}), true, small_parts(), "sort v nulls_last " + w);
    expect_same_on_ranks(lf.sort({col("g")}, {{false}, {false}, true}).select({col("i"), col("g")}), true,
                         small_parts(), "sort g then project " + w);
    for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{10}, int64_t{33}, n + 5}) {
      const std::string wk = w + " k=" + std::to_string(k);
      expect_same_on_ranks(lf.sort("k").head(k), true, small_parts(), "top-k k " + wk);
      expect_same_on_ranks(lf.sort({col("g"), col("v")}, {{true, false}, {false, true}}).head(k), true, small_parts(),
                           "top-k g desc, v nulls_last " + wk);
    }
  }
  // every key equal: one rank gets every row, in input order
  expect_same_on_ranks(facts(300).lazy().with_columns({lit(int64_t{4}).alias("c")}).sort("c"), true, small_parts(),
                       "one key value");
  // the plan: a full sort's rows move by range and stay split; a top-k cuts each rank's rows first
  ranked sorted = run_on_ranks(facts(100).lazy().sort("k"), 3, small_parts());
  EXPECT_NE(sorted.plan.find("exchange[range]"), std::string::npos) << sorted.plan;
  ranked top = run_on_ranks(facts(100).lazy().sort("k").head(5), 3, small_parts());
  const size_t first = top.plan.find("top_k"), gather = top.plan.find("exchange[gather]");
  EXPECT_NE(first, std::string::npos) << top.plan;
  EXPECT_NE(top.plan.find("top_k", first + 1), std::string::npos) << top.plan;
  EXPECT_NE(gather, std::string::npos) << top.plan;
}

TEST(DistRanks, SlicesCutEachRankFirst) {
  for (int64_t n : {0, 1, 31, 32, 33, 1024}) {
    auto lf = facts(n).lazy();
    const std::string w = "n=" + std::to_string(n);
    for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{10}, int64_t{33}, n + 5}) {
      const std::string wk = w + " k=" + std::to_string(k);
      expect_same_on_ranks(lf.head(k), true, small_parts(), "head " + wk);
      expect_same_on_ranks(lf.tail(k), true, small_parts(), "tail " + wk);
      expect_same_on_ranks(lf.slice(k, 7), true, small_parts(), "slice(k, 7) " + wk);
      expect_same_on_ranks(lf.slice(-k, 5), true, small_parts(), "slice(-k, 5) " + wk);
      expect_same_on_ranks(lf.slice(k), true, small_parts(), "slice(k) " + wk);
      expect_same_on_ranks(lf.filter(col("v") > lit(0.0)).head(k), true, small_parts(), "filter then head " + wk);
    }
    expect_same_on_ranks(lf.slice(3, std::numeric_limits<int64_t>::max()), true, small_parts(), "slice(3, max) " + w);
  }
  // the plan: each rank's rows are cut before they are gathered (a slice below the gather and one above)
  for (const lazy_frame& q : {facts(100).lazy().head(5), facts(100).lazy().tail(5), facts(100).lazy().slice(-9, 3)}) {
    ranked r = run_on_ranks(q, 3, small_parts());
    const size_t gather = r.plan.find("exchange[gather] from split");
    ASSERT_NE(gather, std::string::npos) << r.plan;
    EXPECT_NE(r.plan.find("slice", gather), std::string::npos) << "no slice below the gather:\n" << r.plan;
    EXPECT_NE(r.plan.rfind("slice", gather), std::string::npos) << "no slice above the gather:\n" << r.plan;
  }
  // every row after an offset: nothing to cut, one slice after the gather
  ranked all = run_on_ranks(facts(100).lazy().slice(5), 3, small_parts());
  const size_t gather = all.plan.find("exchange[gather] from split");
  ASSERT_NE(gather, std::string::npos) << all.plan;
  EXPECT_EQ(all.plan.find("slice", gather), std::string::npos) << all.plan;
}

TEST(DistRanks, ALargeResultGatheredOnRankZeroWarns) {
  // 100000 rows of about 30 bytes: rank 1's half is over a quarter of a 4 MiB memory_limit
  const lazy_frame lf = facts(100000).lazy();
  engine_options o = small_parts();
  o.target_partition_rows = 1 << 14;
  o.memory_limit = 4 << 20;
  testing::internal::CaptureStderr();
  const ranked big = run_on_ranks(lf, 2, o);
  const std::string warned = testing::internal::GetCapturedStderr();
  EXPECT_EQ(big.frames[0].num_rows(), 100000);
  EXPECT_NE(warned.find("tug warning: the result gathered on rank 0"), std::string::npos) << warned;
  EXPECT_NE(warned.find("memory_limit"), std::string::npos) << warned;
  // no warning for a small result, nor where every rank gets the result (nothing is gathered to one)
  testing::internal::CaptureStderr();
  run_on_ranks(lf.head(100), 2, o);
  o.collect_on_every_rank = true;
  run_on_ranks(lf, 2, o);
  o.collect_on_every_rank = false;
  o.memory_limit = 0;  // then the bound is 1 GiB
  run_on_ranks(lf, 2, o);
  const std::string quiet = testing::internal::GetCapturedStderr();
  EXPECT_EQ(quiet.find("tug warning: the result gathered"), std::string::npos) << quiet;
}

TEST(DistRanks, ASplitResultCanStayWhereItIs) {
  // what a directory sink writes on several ranks: each rank its share, in rank order the answer
  for (int64_t n : {0, 1, 33, 1024}) {
    auto lf = facts(n).lazy();
    const std::string w = "n=" + std::to_string(n);
    struct q {
      lazy_frame lf;
      bool split;  // the result stays split (else it is on rank 0 alone)
      std::string what;
    };
    for (const q& c : {q{lf.filter(col("v") > lit(20.0)), true, "filter"}, q{lf.sort({col("g"), col("k")}), true, "sort"},
                       q{lf.slice(5, 20), false, "slice"}, q{lf.select({col("v").sum().alias("s")}), false, "global sum"},
                       q{lf.group_by({"k"}).agg({col("v").sum().alias("s")}), true, "group_by"}}) {
      data_frame want = c.lf.collect(small_parts());
      for (int ranks : {2, 3}) {
        ranked got = run_on_ranks(c.lf, ranks, small_parts(), true);
        const std::string where = c.what + " " + w + " on " + std::to_string(ranks) + " ranks; plan:\n" + got.plan;
        std::vector<table> all;
        for (auto& f : got.frames)
          for (auto& t : f.partitions()) all.push_back(t);
        data_frame joined(want.schema(), all);
        if (c.what == "group_by") EXPECT_EQ(sorted_rows(joined), sorted_rows(want)) << where;
        else EXPECT_EQ(rows_of(joined), rows_of(want)) << where;
        if (!c.split)
          for (int r = 1; r < ranks; ++r) EXPECT_EQ(got.frames[static_cast<size_t>(r)].num_rows(), 0) << where;
        if (c.split && n == 1024) EXPECT_GT(got.frames[1].num_rows(), 0) << where;
      }
    }
  }
}

TEST(DistRanks, ParquetScansSplitRowGroupsAmongRanks) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("tug_dist_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  io::parquet::write_options w;
  w.row_group_rows = 300;  // 1000 rows: row groups of 300, 300, 300 and 100, cut among the ranks
  io::parquet::write_parquet((dir / "f.parquet").string(), facts(1000).schema(), facts(1000).partitions(), w);
  auto lf = scan_parquet((dir / "f.parquet").string());
  expect_same_on_ranks(lf, true, small_parts(), "scan");
  expect_same_on_ranks(lf.filter(col("i") > lit(int64_t{250})).group_by({"g"}).agg({col("v").sum().alias("s")}), false,
                       small_parts(), "filtered group_by");
  expect_same_on_ranks(lf.join(dims(40).lazy(), {"k"}).group_by({"w"}).agg({col("i").count().alias("c")}).sort("w"),
                       true, small_parts(), "join, group_by, sort");
  ranked got = run_on_ranks(lf, 3, small_parts());
  EXPECT_NE(got.plan.find("rank 0's share of 3"), std::string::npos) << got.plan;
  fs::remove_all(dir);
}

// A CSV scan of several files gives each rank a contiguous range of them (ranks 2 to 4 over 5 files,
// some empty); a single file (fewer files than ranks) is read whole by every rank.
TEST(DistRanks, CsvScansSplitFilesAmongRanks) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("tug_dist_csv_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "many");
  const std::vector<int64_t> sizes{300, 0, 1, 33, 666};  // rows per file
  int64_t i = 0;
  for (size_t f = 0; f < sizes.size(); ++f) {
    std::ofstream out(dir / "many" / ("part-" + std::to_string(f) + ".csv"));
    out << "i,k,g,v\n";
    for (int64_t r = 0; r < sizes[f]; ++r, ++i)
      out << i << "," << (i * 7919) % 97 << ",g" << i % 9 << "," << static_cast<double>((i * 31) % 1000) / 8 << "\n";
  }
  {
    std::ofstream out(dir / "one.csv");
    out << "i,k\n";
    for (int64_t r = 0; r < 500; ++r) out << r << "," << r % 13 << "\n";
  }
  const lazy_frame many = scan_csv((dir / "many").string());
  expect_same_on_ranks(many, true, small_parts(), "scan");
  expect_same_on_ranks(many.group_by({"g"}).agg({col("v").sum().alias("s"), col("i").count().alias("c")}), false,
                       small_parts(), "group_by");
  expect_same_on_ranks(many.join(dims(40).lazy(), {"k"}).sort({col("i"), col("w")}), true, small_parts(), "join, sort");
  EXPECT_NE(run_on_ranks(many, 3, small_parts()).plan.find("rank 0's share of 3"), std::string::npos);
  const lazy_frame one = scan_csv((dir / "one.csv").string());
  expect_same_on_ranks(one.group_by({"k"}).agg({col("i").sum().alias("s")}), false, small_parts(), "one file");
  EXPECT_EQ(run_on_ranks(one, 2, small_parts()).plan.find("share of"), std::string::npos);
  fs::remove_all(dir);
}

TEST(DistRanks, AnErrorOnOneRankStopsTheOthersWithIt) {
  // a key type the rank's kernel rejects would fail everywhere; instead one rank's share holds a value
  // that fails a strict cast, so only that rank raises and the others stop in their next exchange
  std::vector<std::optional<std::string>> s(100, std::string("1"));
  s[90] = "x";
  auto lf = data_frame::from_columns({{"s", str(s)}}).lazy().select({col("s").cast(type_id::int64).alias("n")})
                .group_by({"n"}).agg({col("n").count().alias("c")});
  // rank 0 either fails itself or stops with rank 1's error: a compute_error either way
  try {
    run_on_ranks(lf, 2, small_parts());
    FAIL() << "expected an error";
  } catch (const compute_error& e) {
    EXPECT_NE(std::string(e.what()).find("\"x\""), std::string::npos) << e.what();
  }
}

TEST(DistRanksDeathTest, AskingForAGpuDoesNotStartCuda) {
  // in a fresh process (this one may have started CUDA in an earlier test): a program that asks
  // gpu_available() first can still fork ranks with the gpus option
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (cuda_started()) std::_Exit(2);
        const bool any = gpu_available();
        std::_Exit(cuda_started() ? 3 : any ? 0 : 1);
      },
      ::testing::ExitedWithCode(gpu_available() ? 0 : 1), "");
}

TEST(DistRanks, TheGpusOptionWritesSinksInTheCallingProcess) {
  if (cuda_started()) GTEST_SKIP() << "CUDA was used in this process: forked ranks could not use it";
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("tug_forked_sinks_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  engine_options o = small_parts();
  o.gpus = 2;
  for (int64_t n : {0, 1, 33, 1024}) {
    auto lf = facts(n).lazy();
    const std::string w = "n=" + std::to_string(n);
    // sorted (the files' rows in order) and grouped (any order): rank 0 gathers, this process writes
    const lazy_frame sorted = lf.join(dims(40).lazy(), {"k"}).select({col("i"), col("w"), col("v")}).sort({col("i")});
    const lazy_frame grouped = lf.group_by({"g"}).agg({col("v").sum().alias("s"), col("i").count().alias("c")});
    const std::string file = (dir / (w + ".parquet")).string(), csv = (dir / (w + ".csv")).string();
    const std::string folder = (dir / (w + "_parts")).string() + "/";
    sink_parquet(sorted, file, {}, o);
    EXPECT_EQ(rows_of(scan_parquet(file).collect()), rows_of(sorted.collect(small_parts()))) << w;
    sink_csv(sorted, csv, {}, o);
    EXPECT_EQ(rows_of(scan_csv(csv).collect()), rows_of(sorted.collect(small_parts()))) << w;
    sink_parquet(grouped, folder, {}, o);
    EXPECT_EQ(sorted_rows(scan_parquet(folder).collect()), sorted_rows(grouped.collect(small_parts()))) << w;
    for (auto& e : fs::directory_iterator(folder))  // written here, as one rank: no rank in the names
      EXPECT_EQ(e.path().filename().string().find("part-r"), std::string::npos) << e.path();
  }
  // a rank that fails: the error of that rank, and no CSV file left behind
  std::vector<std::optional<std::string>> s(100, std::string("1"));
  s[90] = "x";
  auto bad = data_frame::from_columns({{"s", str(s)}}).lazy().select({col("s").cast(type_id::int64).alias("n")})
                 .group_by({"n"}).agg({col("n").count().alias("c")});
  const std::string bad_csv = (dir / "bad.csv").string();
  EXPECT_THROW(sink_csv(bad, bad_csv, {}, o), compute_error);
  EXPECT_FALSE(fs::exists(bad_csv));
  // the writer fails here: its error comes back and the ranks are stopped (no hang)
  struct failing_writer final : partition_writer {
    size_t seen = 0;
    void write(table, size_t) override {
      if (++seen == 2) throw io_error("disk full (the test's writer)");
    }
    void finish(size_t) override {}
  };
  auto writer = std::make_shared<failing_writer>();
  const plan_ptr many = optimize(facts(1024).lazy().sort({col("i")}).plan(), dist::flags_for_ranks({}, 2));
  try {
    run_plan(many, o, writer);
    FAIL() << "expected the writer's error";
  } catch (const io_error& e) {
    EXPECT_NE(std::string(e.what()).find("disk full"), std::string::npos) << e.what();
  }
  EXPECT_EQ(writer->seen, 2u);
  fs::remove_all(dir);
}

TEST(DistRanks, GpuEngineGivesTheOneRankAnswers) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  engine_options o = small_parts();
  o.engine = engine_kind::gpu;
  o.fallback = fallback_mode::raise;
  o.target_partition_rows = 300;
  for (int64_t n : {0, 1, 33, 1024, 5000}) {
    auto lf = facts(n).lazy();
    const std::string w = "n=" + std::to_string(n);
    expect_same_on_ranks(lf.filter(col("v") > lit(20.0)).group_by({"k"}).agg({col("v").sum().alias("s"),
                                                                             col("i").count().alias("c")}),
                         false, o, "filtered group_by " + w);
    expect_same_on_ranks(lf.join(dims(40).lazy(), {"k"}).group_by({"w"}).agg({col("v").max().alias("x")}), false, o,
                         "join, group_by " + w);
    expect_same_on_ranks(lf.sort({col("k"), col("i")}), true, o, "sort " + w);
  }
  // a partial aggregate runs on each rank's own rows: only its states move (no gather below it)
  ranked got = run_on_ranks(facts(2000).lazy().filter(col("v") > lit(20.0)).group_by({"k"}).agg({col("v").sum().alias("s")}),
                            2, o);
  const size_t partial = got.plan.find("hash_aggregate[partial]");
  ASSERT_NE(partial, std::string::npos) << got.plan;
  EXPECT_EQ(got.plan.find("exchange", partial), std::string::npos) << got.plan;
  EXPECT_NE(got.plan.find("exchange[shuffle]"), std::string::npos) << got.plan;
}

TEST(DistRanks, DeviceSplitHashesRowsAsTheHostDoes) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  // every key type, nulls, sliced input: the device's row hash and rank equal the host's, so a join's
  // sides meet whichever side splits on the device
  auto mr = make_device_resource(nullptr);
  for (int64_t n : {1, 31, 33, 1024}) {
    const table host = all_types(n + 5).slice(3, n);
    const table dev = to_device(host, mr.get());
    for (size_t c = 0; c < host.num_columns(); ++c) {
      std::vector<size_t> keys{c};
      if (c + 1 < host.num_columns()) keys.push_back(c + 1);
      std::vector<column> cols;
      for (size_t k : keys) cols.push_back(host.col(k));
      EXPECT_EQ(dist::hash_rows_on_device(dev, keys), hash_rows(cols)) << "n=" << n << " column " << c;
    }
    for (int size : {2, 3, 4}) {
      const std::vector<size_t> keys{0, 2};
      const dist::rank_split split = dist::split_on_device(dev, keys, size, mr.get());
      std::vector<column> cols{host.col(0), host.col(2)};
      const std::vector<uint64_t> h = hash_rows(cols);
      // the host's rows of each rank, in order, equal the device's rank slice
      for (int r = 0; r < size; ++r) {
        std::vector<int64_t> want;
        for (int64_t i = 0; i < n; ++i)
          if (dist::rank_of_hash(h[static_cast<size_t>(i)], size) == static_cast<uint32_t>(r)) want.push_back(i);
        const int64_t first = split.start[static_cast<size_t>(r)];
        const auto len = static_cast<int64_t>(want.size());
        ASSERT_EQ(split.start[static_cast<size_t>(r) + 1] - first, len) << "rank " << r;
        const table got = to_host(split.rows.slice(first, len), default_host_resource()), exp = gather(host, want);
        for (size_t c = 0; c < host.num_columns(); ++c)
          expect_columns_equal(got[c], exp[c], "n=" + std::to_string(n) + " size " + std::to_string(size) + " rank " +
                                                   std::to_string(r) + " column " + std::to_string(c));
      }
    }
  }
}

// On a host with two or more GPUs: GPU ranks forked by the gpus option move device tables over NCCL
// (the statistics say how much), with TUG_NCCL=0 through host memory, and both equal the CPU engine. Every
// column type goes through a shuffle (strings sliced, so that their offsets are rebased), a join and a
// gather. Run it alone (--gtest_filter): a process that used CUDA cannot fork GPU ranks.
TEST(DistRanks, ForkedGpuRanksMoveDeviceTablesOverNccl) {
  if (!gpu_available() || dist::host_gpus() < 2) GTEST_SKIP() << "needs two GPUs";
  if (cuda_started()) GTEST_SKIP() << "CUDA was used in this process: forked ranks could not use it";
  const table t = all_types(5000);
  std::vector<std::pair<std::string, column>> named;
  for (const char* name : {"i", "d", "s", "b", "i32", "day", "ts", "dec", "u"}) named.emplace_back(name, t[named.size()]);
  const data_frame every = data_frame::from_columns(std::move(named));
  const lazy_frame lf = every.lazy();
  const std::vector<std::pair<lazy_frame, bool>> queries{
      {lf.group_by({"s"}).agg({col("i").sum().alias("si"), col("d").mean().alias("md"), col("dec").max().alias("xd"),
                                col("day").min().alias("mday"), col("u").count().alias("cu")}), false},
      {lf.join(facts(3000).lazy().select({col("i"), col("g")}), {"i"}).select({col("i"), col("s"), col("g"), col("ts"), col("b")}), false},
      {lf.filter(col("i32") > lit(int64_t{0})).sort({col("i"), col("s")}), true}};
  for (const char* nccl : {"1", "0"}) {
    setenv("TUG_NCCL", nccl, 1);
    for (int ranks : {2, 3}) {
      if (ranks > dist::host_gpus()) continue;
      for (size_t k = 0; k < queries.size(); ++k) {
        const auto& [q, ordered] = queries[k];
        engine_options o;
        o.engine = engine_kind::gpu;
        o.gpus = ranks;
        o.target_partition_rows = 700;
        const data_frame want = q.collect(cpu_engine());
        const query_result got = q.profile(o);
        const std::string where = "query " + std::to_string(k) + ", TUG_NCCL=" + nccl + ", " + std::to_string(ranks) +
                                  " GPU ranks; statistics:\n" + got.statistics;
        if (ordered) EXPECT_EQ(rows_of(got.frame), rows_of(want)) << where;
        else EXPECT_EQ(sorted_rows(got.frame), sorted_rows(want)) << where;
        EXPECT_EQ(got.statistics.find("device to device over NCCL") != std::string::npos, std::string(nccl) == "1") << where;
      }
    }
  }
  unsetenv("TUG_NCCL");
}

// A forked rank that dies mid-query (SIGKILL from a user kernel, in whichever rank runs it first): the
// other rank's exchange fails when its socket closes, and the query raises distributed_error in the
// calling process, which then runs the next query normally.
TEST(DistRanks, AForkedRankThatDiesEndsTheQueryWithAnError) {
  if (cuda_started()) GTEST_SKIP() << "CUDA was used in this process: forked ranks could not use it";
  const std::string flag = (std::filesystem::temp_directory_path() / ("tug-dies-" + std::to_string(::getpid()))).string();
  std::filesystem::remove(flag);
  const user_kernel dies = user_kernel("dies").keep({"k", "v"}).host([flag](kernel_partition&) {
    const int fd = ::open(flag.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
    if (fd >= 0) ::raise(SIGKILL);  // the first call in any rank; the other calls go on
  });
  const lazy_frame q = facts(2000).lazy().map_partitions(dies).group_by({"k"}).agg({col("v").sum().alias("s")});
  engine_options o = small_parts();
  o.gpus = 2;
  o.collective_timeout = 60;
  try {
    q.collect(o);
    FAIL() << "expected an error";
  } catch (const distributed_error& e) {
    EXPECT_NE(std::string(e.what()).find(" of 2"), std::string::npos) << e.what();  // names the rank
  }
  EXPECT_TRUE(std::filesystem::exists(flag));
  std::filesystem::remove(flag);
  const lazy_frame ok = facts(2000).lazy().group_by({"k"}).agg({col("v").sum().alias("s")});
  EXPECT_EQ(sorted_rows(ok.collect(o)), sorted_rows(ok.collect(small_parts())));
}

TEST(DistRanks, TheGpusOptionForksRanksAndBringsTheResultBack) {
  if (cuda_started()) GTEST_SKIP() << "CUDA was used in this process: forked ranks could not use it";
  for (int64_t n : {0, 1, 33, 1024}) {
    auto lf = facts(n).lazy();
    const std::string w = "n=" + std::to_string(n);
    for (int ranks : {2, 3}) {
      engine_options o = small_parts();
      o.gpus = ranks;  // on the CPU engine: ranks that are processes, one "GPU" each
      for (const auto& [q, ordered] : std::vector<std::pair<lazy_frame, bool>>{
               {lf.join(dims(40).lazy(), {"k"}).group_by({"w"}).agg({col("v").sum().alias("s")}), false},
               {lf.sort({col("k"), col("i")}), true},
               {lf.filter(col("v") > lit(20.0)).select({col("i"), col("g")}), true}}) {
        const data_frame want = q.collect(small_parts());
        const query_result got = q.profile(o);
        const std::string where = w + " on " + std::to_string(ranks) + " forked ranks; plan:\n" + got.physical_plan;
        if (ordered) EXPECT_EQ(rows_of(got.frame), rows_of(want)) << where;
        else EXPECT_EQ(sorted_rows(got.frame), sorted_rows(want)) << where;
        EXPECT_NE(got.physical_plan.find("exchange"), std::string::npos) << where;
        EXPECT_NE(got.statistics.find("processes forked by engine_options::gpus"), std::string::npos) << got.statistics;
        EXPECT_NE(q.explain(o).find("exchange"), std::string::npos) << q.explain(o);  // the plan the ranks run
        if (n == 1024)  // what each rank other than 0 sent (every query here sends rows to rank 0)
          for (int r = 1; r < ranks; ++r)
            EXPECT_NE(got.statistics.find("exchanges (rank " + std::to_string(r) + " of " + std::to_string(ranks) + ")"),
                      std::string::npos)
                << got.statistics;
      }
    }
  }
  // an error on one rank comes back as its kind, naming the value
  std::vector<std::optional<std::string>> s(100, std::string("1"));
  s[90] = "x";
  auto bad = data_frame::from_columns({{"s", str(s)}}).lazy().select({col("s").cast(type_id::int64).alias("n")})
                 .group_by({"n"}).agg({col("n").count().alias("c")});
  engine_options o = small_parts();
  o.gpus = 2;
  try {
    bad.collect(o);
    FAIL() << "expected an error";
  } catch (const compute_error& e) {
    EXPECT_NE(std::string(e.what()).find("\"x\""), std::string::npos) << e.what();
  }
  // the option's range is checked
  engine_options neg = small_parts();
  neg.gpus = -2;
  EXPECT_THROW(facts(10).lazy().collect(neg), invalid_argument_error);
}
