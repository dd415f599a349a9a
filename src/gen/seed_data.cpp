#include "tug/gen/seed_data.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "tug/core/error.hpp"
#include "tug/core/temporal.hpp"
#include "tug/gen/random.hpp"

namespace tug::gen {

namespace {

void check_rows(const char* what, int64_t rows, int64_t chunk_rows) {
  if (rows < 0)
    throw invalid_argument_error(std::string(what) + ": row count must not be negative, got " + std::to_string(rows));
  if (chunk_rows < 1)
    throw invalid_argument_error(std::string(what) + ": chunk rows must be positive, got " +
                                 std::to_string(chunk_rows));
}

/// Rows [b, e) of chunk `c` of `rows` rows in chunks of `chunk_rows`.
std::pair<int64_t, int64_t> chunk_range(int64_t c, int64_t chunk_rows, int64_t rows) {
  return {c * chunk_rows, std::min(rows, (c + 1) * chunk_rows)};
}

/// A one-table generator of `rows` rows: `fill(r, b, e)` builds rows [b, e) from the chunk's rng.
template <typename Fill>
chunked_generator single_table(std::string name, tug::schema s, int64_t rows, uint64_t seed, int64_t chunk_rows,
                               Fill fill) {
  chunked_generator g;
  g.tables = {{name, std::move(s)}};
  // zero rows: one empty chunk, so the table still has a file with its schema
  g.chunks = chunk_count(rows, chunk_rows);
  g.generate = [=](int64_t c) {
    rng r(chunk_seed(seed, name, c));
    auto [b, e] = chunk_range(c, chunk_rows, rows);
    return std::vector<table>{fill(r, b, e)};
  };
  return g;
}

void append_number(string_builder& out, const char* prefix, int64_t n) {
  char buf[48];
  int len = std::snprintf(buf, sizeof buf, "%s%lld", prefix, static_cast<long long>(n));
  out.append(std::string_view(buf, static_cast<size_t>(len)));
}

}  // namespace

const std::vector<int64_t>& vessel_types() {
  static const std::vector<int64_t> v = {30, 52, 70, 60, 37, 31, 80, 90, 51, 35, 50, 55, 58, 69, 79, 89, 99, 0};
  return v;
}

dataset ais_dataset(int64_t rows, uint64_t seed, int64_t chunk_rows) {
  check_rows("AIS generator", rows, chunk_rows);
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
  auto fill = [seed](rng& r, int64_t b, int64_t e) {
    const auto& types = vessel_types();
    const int64_t t0 = temporal::days_from_civil(2025, 1, 1) * 86400LL * 1000000LL;
    int64_t n = e - b;
    fixed_width_builder<int64_t> mmsi(type_id::int64, n), vtype(type_id::int64, n), status(type_id::int64, n),
        cargo(type_id::int64, n);
    fixed_width_builder<int64_t> ts(timestamp(time_unit::us), n);
    fixed_width_builder<double> lat(type_id::float64, n), lon(type_id::float64, n), sog(type_id::float64, n),
        cog(type_id::float64, n), heading(type_id::float64, n), length(type_id::float64, n), width(type_id::float64, n),
        draft(type_id::float64, n);
    string_builder name(n, n * 12), imo(n, n * 10), call(n, n * 6), cls(n, n);
    for (int64_t i = 0; i < n; ++i) {
      int64_t vessel = r.range(0, 49999);                   // 50k vessels
      rng vr(mix64(static_cast<uint64_t>(vessel)) ^ seed);  // per-vessel attributes
      // Zipf-like type by vessel
      double u = vr.uniform();
      size_t ti = std::min(types.size() - 1, static_cast<size_t>(std::pow(u, 2.5) * static_cast<double>(types.size())));
      int64_t vt = types[ti];
      bool class_b = vessel % 5 == 0;
      mmsi.set(i, 200000000 + vessel);
      ts.set(i, t0 + r.range(0, 59LL * 86400 * 1000000));
      if (r.chance(0.0005)) {  // "not available" position
        lat.set(i, 91);
        lon.set(i, 181);
      } else {
        lat.set(i, 20 + r.uniform() * 30);
        lon.set(i, -130 + r.uniform() * 65);
      }
      double typical = 2 + static_cast<double>(ti % 7) * 2.5;
      double speed = typical * (-std::log(1 - r.uniform() * 0.999));
      if (r.chance(0.005)) speed = typical * (10 + r.uniform() * 30);
      sog.set(i, std::round(speed * 10) / 10);
      cog.set(i, std::round(r.uniform() * 3600) / 10);
      heading.set(i, class_b && r.chance(0.3) ? 511.0 : static_cast<double>(r.range(0, 359)));
      if (vr.chance(0.02) || r.chance(0.005))
        vtype.set_null(i);
      else
        vtype.set(i, vt);
      if (r.chance(0.03))
        status.set_null(i);
      else
        status.set(i, r.chance(0.7) ? 0 : r.range(1, 15));
      length.set(i, 10 + static_cast<double>(vessel % 300));
      width.set(i, 3 + static_cast<double>(vessel % 40));
      if (r.chance(0.2))
        draft.set_null(i);
      else
        draft.set(i, static_cast<double>(vessel % 150) / 10);
      cargo.set(i, vt);
      append_number(name, "VESSEL ", vessel);
      if (vessel % 3 == 0)
        imo.append_null();
      else
        append_number(imo, "IMO", 9000000 + vessel);
      append_number(call, "C", vessel % 99991);
      cls.append(class_b ? "B" : "A");
    }
    return table({mmsi.finish(), ts.finish(), lat.finish(), lon.finish(), sog.finish(), cog.finish(), heading.finish(),
                  name.finish(), imo.finish(), call.finish(), vtype.finish(), status.finish(), length.finish(),
                  width.finish(), draft.finish(), cargo.finish(), cls.finish()});
  };
  return dataset{"ais", {single_table("ais", std::move(s), rows, seed, chunk_rows, fill)}};
}

data_frame ais(int64_t rows, uint64_t seed, int64_t chunk_rows) {
  return generate_dataset(ais_dataset(rows, seed, chunk_rows)).at("ais");
}

dataset wholesale_dataset(int64_t lineitem_rows, uint64_t seed, int64_t chunk_rows) {
  check_rows("wholesale generator", lineitem_rows, chunk_rows);
  const int64_t n_orders = std::max<int64_t>(1, lineitem_rows / 4);
  const int64_t n_cust = std::max<int64_t>(1, lineitem_rows / 40);
  const int64_t n_supp = std::max<int64_t>(10, lineitem_rows / 475);
  const data_type money = decimal(15, 2);
  const int32_t base = static_cast<int32_t>(temporal::days_from_civil(1992, 1, 1));
  dataset d{"wholesale", {}};
  d.generators.push_back(single_table("lineitem",
                                      schema({{"l_orderkey", type_id::int64},
                                              {"l_suppkey", type_id::int64},
                                              {"l_quantity", type_id::int32},
                                              {"l_extendedprice", money},
                                              {"l_discount", money},
                                              {"l_tax", money},
                                              {"l_shipdate", type_id::date32}}),
                                      lineitem_rows, seed, chunk_rows, [=](rng& r, int64_t b, int64_t e) {
                                        int64_t n = e - b;
                                        fixed_width_builder<int64_t> ok(type_id::int64, n), sk(type_id::int64, n);
                                        fixed_width_builder<int32_t> q(type_id::int32, n), ship(type_id::date32, n);
                                        fixed_width_builder<__int128> price(money, n), disc(money, n), tax(money, n);
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
                                        return table({ok.finish(), sk.finish(), q.finish(), price.finish(),
                                                      disc.finish(), tax.finish(), ship.finish()});
                                      }));
  d.generators.push_back(
      single_table("orders",
                   schema({{"o_orderkey", type_id::int64},
                           {"o_custkey", type_id::int64},
                           {"o_orderdate", type_id::date32},
                           {"o_orderpriority", type_id::string}}),
                   n_orders, seed, chunk_rows, [=](rng& r, int64_t b, int64_t e) {
                     static const char* prio[] = {"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"};
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
                   }));
  // customer and supplier: key, "<Name>#<key>", nation (and the customer's balance)
  d.generators.push_back(single_table("customer",
                                      schema({{"c_custkey", type_id::int64},
                                              {"c_name", type_id::string},
                                              {"c_nationkey", type_id::int32},
                                              {"c_acctbal", money}}),
                                      n_cust, seed, chunk_rows, [=](rng& r, int64_t b, int64_t e) {
                                        int64_t n = e - b;
                                        fixed_width_builder<int64_t> ck(type_id::int64, n);
                                        fixed_width_builder<int32_t> nk(type_id::int32, n);
                                        fixed_width_builder<__int128> bal(money, n);
                                        string_builder nm(n, n * 18);
                                        for (int64_t i = 0; i < n; ++i) {
                                          ck.set(i, b + i + 1);
                                          append_number(nm, "Customer#", b + i + 1);
                                          nk.set(i, static_cast<int32_t>(r.range(0, 24)));
                                          bal.set(i, r.range(-99999, 999999));
                                        }
                                        return table({ck.finish(), nm.finish(), nk.finish(), bal.finish()});
                                      }));
  d.generators.push_back(single_table(
      "supplier", schema({{"s_suppkey", type_id::int64}, {"s_name", type_id::string}, {"s_nationkey", type_id::int32}}),
      n_supp, seed, chunk_rows, [=](rng& r, int64_t b, int64_t e) {
        int64_t n = e - b;
        fixed_width_builder<int64_t> sk(type_id::int64, n);
        fixed_width_builder<int32_t> nk(type_id::int32, n);
        string_builder nm(n, n * 18);
        for (int64_t i = 0; i < n; ++i) {
          sk.set(i, b + i + 1);
          append_number(nm, "Supplier#", b + i + 1);
          nk.set(i, static_cast<int32_t>(r.range(0, 24)));
        }
        return table({sk.finish(), nm.finish(), nk.finish()});
      }));
  return d;
}

wholesale wholesale_tables(int64_t lineitem_rows, uint64_t seed, int64_t chunk_rows) {
  auto t = generate_dataset(wholesale_dataset(lineitem_rows, seed, chunk_rows));
  return {t.at("lineitem"), t.at("orders"), t.at("customer"), t.at("supplier")};
}

}  // namespace tug::gen
