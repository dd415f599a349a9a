#pragma once
// Deterministic, multi-threaded generators of the seed-002 data sets, in memory: AIS-like vessel
// positions and the wholesale tables of the 4-way join. Same seed and size -> same data.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tug/api/data_frame.hpp"
#include "tug/core/temporal.hpp"
#include "tug/runtime/thread_pool.hpp"

namespace tug::seed {

/// splitmix64: small, fast, good enough for test data.
struct rng {
  uint64_t s;
  // the seed is hashed, so consecutive seeds give unrelated streams (a plain splitmix64 state would
  // make seed+1's stream seed's stream shifted by one)
  explicit rng(uint64_t seed) : s(0) {
    s = seed;
    s = next() ^ 0x632be59bd9b4e5ULL;
  }
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1)); }
  bool chance(double p) { return uniform() < p; }
};

/// Generates `rows` rows in `parts` partitions in parallel; `fill(part, begin, end, out)` builds one.
template <typename Fill>
std::vector<table> generate_parts(int64_t rows, int64_t part_rows, Fill fill) {
  int64_t parts = std::max<int64_t>(1, (rows + part_rows - 1) / part_rows);
  std::vector<table> out(static_cast<size_t>(parts));
  global_thread_pool().parallel_for(parts, [&](int64_t p) {
    int64_t b = p * part_rows, e = std::min(rows, b + part_rows);
    out[static_cast<size_t>(p)] = fill(p, b, e);
  });
  if (rows == 0) out.clear();
  return out;
}

/// AIS vessel codes: a few types dominate (Zipf-like), as in the U.S. Coast Guard data.
inline const std::vector<int64_t>& vessel_types() {
  static const std::vector<int64_t> v = {30, 52, 70, 60, 37, 31, 80, 90, 51, 35, 50, 55, 58, 69, 79, 89, 99, 0};
  return v;
}

/// AIS-like positions: MMSI, BaseDateTime, LAT, LON, SOG, COG, Heading, VesselName, IMO, CallSign,
/// VesselType, Status, Length, Width, Draft, Cargo, TransceiverClass. About 2% of VesselType and 3% of
/// Status are null; 0.5% of speeds are outliers (10-40x the type's typical speed).
inline data_frame ais(int64_t rows, uint64_t seed = 42, int64_t part_rows = 1 << 20) {
  schema s({{"MMSI", type_id::int64},
            {"BaseDateTime", timestamp(time_unit::us)},
            {"LAT", type_id::float64},
            {"LON", type_id::float64},
            {"SOG", type_id::float64},
            {"COG", type_id::float64},
            {"Heading", type_id::float64},
            {"VesselName", type_id::string},
            {"IMO", type_id::string},
            {"CallSign", type_id::string},
            {"VesselType", type_id::int64},
            {"Status", type_id::int64},
            {"Length", type_id::float64},
            {"Width", type_id::float64},
            {"Draft", type_id::float64},
            {"Cargo", type_id::int64},
            {"TransceiverClass", type_id::string}});
  const auto& types = vessel_types();
  const int64_t t0 = temporal::days_from_civil(2025, 1, 1) * 86400LL * 1000000LL;
  auto parts = generate_parts(rows, part_rows, [&](int64_t p, int64_t b, int64_t e) {
    rng r(seed * 1000003 + static_cast<uint64_t>(p));
    int64_t n = e - b;
    fixed_width_builder<int64_t> mmsi(type_id::int64, n), vtype(type_id::int64, n), status(type_id::int64, n),
        cargo(type_id::int64, n);
    fixed_width_builder<int64_t> ts(timestamp(time_unit::us), n);
    fixed_width_builder<double> lat(type_id::float64, n), lon(type_id::float64, n), sog(type_id::float64, n),
        cog(type_id::float64, n), heading(type_id::float64, n), length(type_id::float64, n),
        width(type_id::float64, n), draft(type_id::float64, n);
    string_builder name(n, n * 12), imo(n, n * 10), call(n, n * 6), cls(n, n);
    for (int64_t i = 0; i < n; ++i) {
      int64_t vessel = r.range(0, 49999);  // 50k vessels
      rng vr(static_cast<uint64_t>(vessel) * 7919 + seed);
      // Zipf-like type by vessel
      double u = vr.uniform();
      size_t ti = std::min(types.size() - 1, static_cast<size_t>(std::pow(u, 2.5) * static_cast<double>(types.size())));
      int64_t vt = types[ti];
      mmsi.set(i, 200000000 + vessel);
      ts.set(i, t0 + r.range(0, 59LL * 86400 * 1000000));
      lat.set(i, 20 + r.uniform() * 30);
      lon.set(i, -130 + r.uniform() * 65);
      double typical = 2 + static_cast<double>(ti % 7) * 2.5;
      double speed = typical * (-std::log(1 - r.uniform() * 0.999));
      if (r.chance(0.005)) speed = typical * (10 + r.uniform() * 30);
      sog.set(i, std::round(speed * 10) / 10);
      cog.set(i, std::round(r.uniform() * 3600) / 10);
      heading.set(i, static_cast<double>(r.range(0, 359)));
      if (vr.chance(0.02) || r.chance(0.005)) vtype.set_null(i);
      else vtype.set(i, vt);
      if (r.chance(0.03)) status.set_null(i);
      else status.set(i, r.chance(0.7) ? 0 : r.range(1, 15));
      length.set(i, 10 + static_cast<double>(vessel % 300));
      width.set(i, 3 + static_cast<double>(vessel % 40));
      if (r.chance(0.2)) draft.set_null(i);
      else draft.set(i, static_cast<double>(vessel % 150) / 10);
      cargo.set(i, vt);
      name.append("VESSEL " + std::to_string(vessel));
      if (vessel % 3 == 0) imo.append_null();
      else imo.append("IMO" + std::to_string(9000000 + vessel));
      call.append("C" + std::to_string(vessel % 99991));
      cls.append(vessel % 5 == 0 ? "B" : "A");
    }
    return table({mmsi.finish(), ts.finish(), lat.finish(), lon.finish(), sog.finish(), cog.finish(),
                  heading.finish(), name.finish(), imo.finish(), call.finish(), vtype.finish(), status.finish(),
                  length.finish(), width.finish(), draft.finish(), cargo.finish(), cls.finish()});
  });
  return data_frame(std::move(s), std::move(parts));
}

/// The four wholesale tables of seed 002's join, scaled: lineitem `rows`, orders rows/4,
/// customer rows/40, supplier max(10, rows/475).
struct wholesale {
  data_frame lineitem, orders, customer, supplier;
};

inline wholesale wholesale_tables(int64_t lineitem_rows, uint64_t seed = 7, int64_t part_rows = 1 << 20) {
  int64_t n_orders = std::max<int64_t>(1, lineitem_rows / 4);
  int64_t n_cust = std::max<int64_t>(1, lineitem_rows / 40);
  int64_t n_supp = std::max<int64_t>(10, lineitem_rows / 475);
  wholesale w;
  auto money = decimal(15, 2);
  {
    schema s({{"l_orderkey", type_id::int64}, {"l_suppkey", type_id::int64}, {"l_quantity", type_id::int32},
              {"l_extendedprice", money}, {"l_discount", decimal(15, 2)}, {"l_tax", decimal(15, 2)},
              {"l_shipdate", type_id::date32}});
    int32_t base = static_cast<int32_t>(temporal::days_from_civil(1992, 1, 1));
    auto parts = generate_parts(lineitem_rows, part_rows, [&](int64_t p, int64_t b, int64_t e) {
      rng r(seed * 31 + static_cast<uint64_t>(p));
      int64_t n = e - b;
      fixed_width_builder<int64_t> ok(type_id::int64, n), sk(type_id::int64, n);
      fixed_width_builder<int32_t> q(type_id::int32, n), ship(type_id::date32, n);
      fixed_width_builder<__int128> price(money, n), disc(decimal(15, 2), n), tax(decimal(15, 2), n);
      for (int64_t i = 0; i < n; ++i) {
        ok.set(i, (b + i) / 4 + 1);
        sk.set(i, r.range(1, n_supp));
        int32_t qty = static_cast<int32_t>(r.range(1, 50));
        q.set(i, qty);
        price.set(i, static_cast<__int128>(qty) * r.range(90000, 200000));
        disc.set(i, r.range(0, 10));
        tax.set(i, r.range(0, 8));
        ship.set(i, base + static_cast<int32_t>(r.range(0, 2400)));
      }
      return table({ok.finish(), sk.finish(), q.finish(), price.finish(), disc.finish(), tax.finish(), ship.finish()});
    });
    w.lineitem = data_frame(std::move(s), std::move(parts));
  }
  {
    schema s({{"o_orderkey", type_id::int64}, {"o_custkey", type_id::int64}, {"o_orderdate", type_id::date32},
              {"o_orderpriority", type_id::string}});
    int32_t base = static_cast<int32_t>(temporal::days_from_civil(1992, 1, 1));
    static const char* prio[] = {"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"};
    auto parts = generate_parts(n_orders, part_rows, [&](int64_t p, int64_t b, int64_t e) {
      rng r(seed * 37 + static_cast<uint64_t>(p));
      int64_t n = e - b;
      fixed_width_builder<int64_t> ok(type_id::int64, n), ck(type_id::int64, n);
      fixed_width_builder<int32_t> od(type_id::date32, n);
      string_builder pr(n, n * 8);
      for (int64_t i = 0; i < n; ++i) {
        ok.set(i, b + i + 1);
        ck.set(i, r.range(1, n_cust));
        od.set(i, base + static_cast<int32_t>(r.range(0, 2400)));
        pr.append(prio[r.range(0, 4)]);
      }
      return table({ok.finish(), ck.finish(), od.finish(), pr.finish()});
    });
    w.orders = data_frame(std::move(s), std::move(parts));
  }
  {
    schema s({{"c_custkey", type_id::int64}, {"c_name", type_id::string}, {"c_nationkey", type_id::int32},
              {"c_acctbal", money}});
    auto parts = generate_parts(n_cust, part_rows, [&](int64_t p, int64_t b, int64_t e) {
      rng r(seed * 41 + static_cast<uint64_t>(p));
      int64_t n = e - b;
      fixed_width_builder<int64_t> ck(type_id::int64, n);
      fixed_width_builder<int32_t> nk(type_id::int32, n);
      fixed_width_builder<__int128> bal(money, n);
      string_builder nm(n, n * 18);
      for (int64_t i = 0; i < n; ++i) {
        ck.set(i, b + i + 1);
        nm.append("Customer#" + std::to_string(b + i + 1));
        nk.set(i, static_cast<int32_t>(r.range(0, 24)));
        bal.set(i, r.range(-99999, 999999));
      }
      return table({ck.finish(), nm.finish(), nk.finish(), bal.finish()});
    });
    w.customer = data_frame(std::move(s), std::move(parts));
  }
  {
    schema s({{"s_suppkey", type_id::int64}, {"s_name", type_id::string}, {"s_nationkey", type_id::int32}});
    auto parts = generate_parts(n_supp, part_rows, [&](int64_t p, int64_t b, int64_t e) {
      rng r(seed * 43 + static_cast<uint64_t>(p));
      int64_t n = e - b;
      fixed_width_builder<int64_t> sk(type_id::int64, n);
      fixed_width_builder<int32_t> nk(type_id::int32, n);
      string_builder nm(n, n * 18);
      for (int64_t i = 0; i < n; ++i) {
        sk.set(i, b + i + 1);
        nm.append("Supplier#" + std::to_string(b + i + 1));
        nk.set(i, static_cast<int32_t>(r.range(0, 24)));
      }
      return table({sk.finish(), nm.finish(), nk.finish()});
    });
    w.supplier = data_frame(std::move(s), std::move(parts));
  }
  return w;
}

}  // namespace tug::seed
