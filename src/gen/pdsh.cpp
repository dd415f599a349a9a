#include "tug/gen/pdsh.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "pdsh_text.hpp"
#include "tug/core/error.hpp"
#include "tug/core/temporal.hpp"
#include "tug/gen/random.hpp"

namespace tug::gen::pdsh {

namespace {

// Dates of clause 4.2.3: STARTDATE, CURRENTDATE and ENDDATE.
constexpr int32_t start_date = static_cast<int32_t>(temporal::days_from_civil(1992, 1, 1));
constexpr int32_t current_date = static_cast<int32_t>(temporal::days_from_civil(1995, 6, 17));
constexpr int32_t end_date = static_cast<int32_t>(temporal::days_from_civil(1998, 12, 31));

using column_list = std::vector<std::pair<std::string, data_type>>;

tug::schema make_schema(const column_list& cols) {
  std::vector<field> f;
  for (const auto& [name, type] : cols)
    f.push_back({name, type});
  return tug::schema(std::move(f));
}

const data_type i64 = type_id::int64, f64 = type_id::float64, str = type_id::string, date = type_id::date32;

tug::schema region_schema() { return make_schema({{"r_regionkey", i64}, {"r_name", str}, {"r_comment", str}}); }
tug::schema nation_schema() {
  return make_schema({{"n_nationkey", i64}, {"n_name", str}, {"n_regionkey", i64}, {"n_comment", str}});
}
tug::schema supplier_schema() {
  return make_schema({{"s_suppkey", i64},
                      {"s_name", str},
                      {"s_address", str},
                      {"s_nationkey", i64},
                      {"s_phone", str},
                      {"s_acctbal", f64},
                      {"s_comment", str}});
}
tug::schema customer_schema() {
  return make_schema({{"c_custkey", i64},
                      {"c_name", str},
                      {"c_address", str},
                      {"c_nationkey", i64},
                      {"c_phone", str},
                      {"c_acctbal", f64},
                      {"c_mktsegment", str},
                      {"c_comment", str}});
}
tug::schema part_schema() {
  return make_schema({{"p_partkey", i64},
                      {"p_name", str},
                      {"p_mfgr", str},
                      {"p_brand", str},
                      {"p_type", str},
                      {"p_size", i64},
                      {"p_container", str},
                      {"p_retailprice", f64},
                      {"p_comment", str}});
}
tug::schema partsupp_schema() {
  return make_schema(
      {{"ps_partkey", i64}, {"ps_suppkey", i64}, {"ps_availqty", i64}, {"ps_supplycost", f64}, {"ps_comment", str}});
}
tug::schema orders_schema() {
  return make_schema({{"o_orderkey", i64},
                      {"o_custkey", i64},
                      {"o_orderstatus", str},
                      {"o_totalprice", f64},
                      {"o_orderdate", date},
                      {"o_orderpriority", str},
                      {"o_clerk", str},
                      {"o_shippriority", i64},
                      {"o_comment", str}});
}
tug::schema lineitem_schema() {
  return make_schema({{"l_orderkey", i64},
                      {"l_partkey", i64},
                      {"l_suppkey", i64},
                      {"l_linenumber", i64},
                      {"l_quantity", f64},
                      {"l_extendedprice", f64},
                      {"l_discount", f64},
                      {"l_tax", f64},
                      {"l_returnflag", str},
                      {"l_linestatus", str},
                      {"l_shipdate", date},
                      {"l_commitdate", date},
                      {"l_receiptdate", date},
                      {"l_shipinstruct", str},
                      {"l_shipmode", str},
                      {"l_comment", str}});
}

double money(int64_t cents) { return static_cast<double>(cents) / 100.0; }

/// "Supplier#000000042" and the like: a prefix and a 9-digit zero-padded number.
std::string_view numbered(char (&buf)[64], const char* prefix, int64_t n) {
  int len = std::snprintf(buf, sizeof buf, "%s%09lld", prefix, static_cast<long long>(n));
  return {buf, static_cast<size_t>(len)};
}

/// Random characters from a 64-character alphabet, length uniform in [10, 40] (addresses).
void append_address(string_builder& out, rng& r) {
  static constexpr char alphabet[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ,";
  char buf[40];
  int64_t len = r.range(10, 40);
  uint64_t bits = 0;
  for (int64_t i = 0; i < len; ++i) {
    if (i % 10 == 0) bits = r.next();
    buf[i] = alphabet[bits & 63];
    bits >>= 6;
  }
  out.append(std::string_view(buf, static_cast<size_t>(len)));
}

/// Phone number of a nation: country code (nationkey + 10), then random local digits.
void append_phone(string_builder& out, rng& r, int64_t nation) {
  char buf[32];
  int len = std::snprintf(buf, sizeof buf, "%02lld-%03lld-%03lld-%04lld", static_cast<long long>(nation + 10),
                          static_cast<long long>(r.range(100, 999)), static_cast<long long>(r.range(100, 999)),
                          static_cast<long long>(r.range(1000, 9999)));
  out.append(std::string_view(buf, static_cast<size_t>(len)));
}

struct nation_row {
  const char* name;
  int64_t region;
};
constexpr nation_row nations[25] = {
    {"ALGERIA", 0},      {"ARGENTINA", 1},  {"BRAZIL", 1},  {"CANADA", 1},         {"EGYPT", 4},
    {"ETHIOPIA", 0},     {"FRANCE", 3},     {"GERMANY", 3}, {"INDIA", 2},          {"INDONESIA", 2},
    {"IRAN", 4},         {"IRAQ", 4},       {"JAPAN", 2},   {"JORDAN", 4},         {"KENYA", 0},
    {"MOROCCO", 0},      {"MOZAMBIQUE", 0}, {"PERU", 1},    {"CHINA", 2},          {"ROMANIA", 3},
    {"SAUDI ARABIA", 4}, {"VIETNAM", 2},    {"RUSSIA", 3},  {"UNITED KINGDOM", 3}, {"UNITED STATES", 1}};
constexpr const char* regions[5] = {"AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"};

table region_table(rng& r) {
  fixed_width_builder<int64_t> key(i64, 5);
  string_builder name, comment;
  for (int64_t i = 0; i < 5; ++i) {
    key.set(i, i);
    name.append(regions[i]);
    comment.append(random_text(r, 31, 115));
  }
  return table({key.finish(), name.finish(), comment.finish()});
}

table nation_table(rng& r) {
  fixed_width_builder<int64_t> key(i64, 25), region(i64, 25);
  string_builder name, comment;
  for (int64_t i = 0; i < 25; ++i) {
    key.set(i, i);
    name.append(nations[i].name);
    region.set(i, nations[i].region);
    comment.append(random_text(r, 31, 114));
  }
  return table({key.finish(), name.finish(), region.finish(), comment.finish()});
}

/// Suppliers [b, e) (0-based). About 5 in 10,000 comments hold "Customer ... Complaints" and as many
/// "Customer ... Recommends" (clause 4.2.3), as Q16 expects.
table supplier_table(rng& r, int64_t b, int64_t e) {
  int64_t n = e - b;
  fixed_width_builder<int64_t> key(i64, n), nation(i64, n);
  fixed_width_builder<double> bal(f64, n);
  string_builder name(n, n * 18), address(n, n * 25), phone(n, n * 15), comment(n, n * 63);
  char buf[64];
  std::string text;
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = b + i + 1;
    key.set(i, k);
    name.append(numbered(buf, "Supplier#", k));
    append_address(address, r);
    int64_t nk = r.range(0, 24);
    nation.set(i, nk);
    append_phone(phone, r, nk);
    bal.set(i, money(r.range(-99999, 999999)));
    text.assign(random_text(r, 25, 100));
    int64_t press = r.range(1, 10000);
    if (press <= 10) {
      std::string_view mark = press <= 5 ? "Customer Complaints" : "Customer Recommends";
      int64_t pos = r.range(0, static_cast<int64_t>(text.size() - mark.size()));
      text.replace(static_cast<size_t>(pos), mark.size(), mark);
    }
    comment.append(text);
  }
  return table(
      {key.finish(), name.finish(), address.finish(), nation.finish(), phone.finish(), bal.finish(), comment.finish()});
}

table customer_table(rng& r, int64_t b, int64_t e) {
  int64_t n = e - b;
  fixed_width_builder<int64_t> key(i64, n), nation(i64, n);
  fixed_width_builder<double> bal(f64, n);
  string_builder name(n, n * 18), address(n, n * 25), phone(n, n * 15), segment(n, n * 10), comment(n, n * 73);
  char buf[64];
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = b + i + 1;
    key.set(i, k);
    name.append(numbered(buf, "Customer#", k));
    append_address(address, r);
    int64_t nk = r.range(0, 24);
    nation.set(i, nk);
    append_phone(phone, r, nk);
    bal.set(i, money(r.range(-99999, 999999)));
    segment.append(segments().pick(r));
    comment.append(random_text(r, 29, 116));
  }
  return table({key.finish(), name.finish(), address.finish(), nation.finish(), phone.finish(), bal.finish(),
                segment.finish(), comment.finish()});
}

table part_table(rng& r, int64_t b, int64_t e) {
  int64_t n = e - b;
  fixed_width_builder<int64_t> key(i64, n), size(i64, n);
  fixed_width_builder<double> price(f64, n);
  string_builder name(n, n * 34), mfgr(n, n * 14), brand(n, n * 8), type(n, n * 21), container(n, n * 8),
      comment(n, n * 14);
  std::string s;
  const word_list& c = colors();
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = b + i + 1;
    key.set(i, k);
    // five distinct colors
    size_t picked[5];
    s.clear();
    for (int w = 0; w < 5; ++w) {
      size_t x;
      do
        x = static_cast<size_t>(r.range(0, static_cast<int64_t>(c.size()) - 1));
      while (std::find(picked, picked + w, x) != picked + w);
      picked[w] = x;
      if (w) s.push_back(' ');
      s.append(c[x]);
    }
    name.append(s);
    int64_t m = r.range(1, 5);
    s.assign("Manufacturer#").append(std::to_string(m));
    mfgr.append(s);
    s.assign("Brand#").append(std::to_string(m)).append(std::to_string(r.range(1, 5)));
    brand.append(s);
    s.assign(type_syllable1().pick(r)).append(" ").append(type_syllable2().pick(r)).append(" ");
    s.append(type_syllable3().pick(r));
    type.append(s);
    size.set(i, r.range(1, 50));
    s.assign(container_syllable1().pick(r)).append(" ").append(container_syllable2().pick(r));
    container.append(s);
    price.set(i, money(retail_price_cents(k)));
    comment.append(random_text(r, 5, 22));
  }
  return table({key.finish(), name.finish(), mfgr.finish(), brand.finish(), type.finish(), size.finish(),
                container.finish(), price.finish(), comment.finish()});
}

table partsupp_table(rng& r, int64_t b, int64_t e, int64_t suppliers) {
  int64_t n = (e - b) * 4;
  fixed_width_builder<int64_t> part(i64, n), supp(i64, n), qty(i64, n);
  fixed_width_builder<double> cost(f64, n);
  string_builder comment(n, n * 124);
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = b + i / 4 + 1;
    part.set(i, k);
    supp.set(i, part_supplier(k, i % 4, suppliers));
    qty.set(i, r.range(1, 9999));
    cost.set(i, money(r.range(100, 100000)));
    comment.append(random_text(r, 49, 198));
  }
  return table({part.finish(), supp.finish(), qty.finish(), cost.finish(), comment.finish()});
}

/// Orders [b, e) (0-based order numbers) and their 1..7 lineitems each.
std::vector<table> orders_and_lineitems(rng& r, int64_t b, int64_t e, const row_counts& counts, int64_t clerks) {
  int64_t n = e - b;
  fixed_width_builder<int64_t> okey(i64, n), cust(i64, n), shipprio(i64, n);
  fixed_width_builder<double> total(f64, n);
  fixed_width_builder<int32_t> odate(date, n);
  string_builder status(n, n), prio(n, n * 9), clerk(n, n * 15), ocomment(n, n * 49);
  std::vector<int64_t> l_okey, l_part, l_supp, l_line;
  std::vector<double> l_qty, l_price, l_disc, l_tax;
  std::vector<int32_t> l_ship, l_commit, l_receipt;
  int64_t expect = n * 4 + 16;
  for (auto* v : {&l_okey, &l_part, &l_supp, &l_line})
    v->reserve(static_cast<size_t>(expect));
  for (auto* v : {&l_qty, &l_price, &l_disc, &l_tax})
    v->reserve(static_cast<size_t>(expect));
  for (auto* v : {&l_ship, &l_commit, &l_receipt})
    v->reserve(static_cast<size_t>(expect));
  string_builder l_rflag(expect, expect), l_status(expect, expect), l_instr(expect, expect * 12),
      l_mode(expect, expect * 5), l_comment(expect, expect * 27);
  char buf[64];
  for (int64_t i = 0; i < n; ++i) {
    int64_t key = order_key(b + i + 1);
    okey.set(i, key);
    int64_t c;
    do
      c = r.range(1, counts.customer);
    while (c % 3 == 0);  // a third of the customers never order (clause 4.2.3)
    cust.set(i, c);
    int32_t od = start_date + static_cast<int32_t>(r.range(0, end_date - 151 - start_date));
    odate.set(i, od);
    int64_t lines = r.range(1, 7), cents = 0, shipped = 0;
    for (int64_t l = 1; l <= lines; ++l) {
      int64_t pk = r.range(1, counts.part);
      int64_t qty = r.range(1, 50), disc = r.range(0, 10), tax = r.range(0, 8);
      int64_t ext = qty * retail_price_cents(pk);
      l_okey.push_back(key);
      l_part.push_back(pk);
      l_supp.push_back(part_supplier(pk, r.range(0, 3), counts.supplier));
      l_line.push_back(l);
      l_qty.push_back(static_cast<double>(qty));
      l_price.push_back(money(ext));
      l_disc.push_back(static_cast<double>(disc) / 100.0);
      l_tax.push_back(static_cast<double>(tax) / 100.0);
      int32_t ship = od + static_cast<int32_t>(r.range(1, 121));
      int32_t receipt = ship + static_cast<int32_t>(r.range(1, 30));
      l_ship.push_back(ship);
      l_commit.push_back(od + static_cast<int32_t>(r.range(30, 90)));
      l_receipt.push_back(receipt);
      l_rflag.append(receipt <= current_date ? (r.range(0, 1) ? "R" : "A") : "N");
      bool open = ship > current_date;
      l_status.append(open ? "O" : "F");
      shipped += open ? 0 : 1;
      l_instr.append(instructions().pick(r));
      l_mode.append(modes().pick(r));
      l_comment.append(random_text(r, 10, 43));
      // O_TOTALPRICE = sum(L_EXTENDEDPRICE * (1 + L_TAX) * (1 - L_DISCOUNT)), in cents, rounded per line
      cents += (ext * (100 - disc) * (100 + tax) + 5000) / 10000;
    }
    status.append(shipped == lines ? "F" : shipped == 0 ? "O" : "P");
    total.set(i, money(cents));
    prio.append(priorities().pick(r));
    clerk.append(numbered(buf, "Clerk#", r.range(1, clerks)));
    shipprio.set(i, 0);
    ocomment.append(random_text(r, 19, 78));
  }
  table orders({okey.finish(), cust.finish(), status.finish(), total.finish(), odate.finish(), prio.finish(),
                clerk.finish(), shipprio.finish(), ocomment.finish()});
  table lineitem({make_column(i64, l_okey), make_column(i64, l_part), make_column(i64, l_supp),
                  make_column(i64, l_line), make_column(f64, l_qty), make_column(f64, l_price),
                  make_column(f64, l_disc), make_column(f64, l_tax), l_rflag.finish(), l_status.finish(),
                  make_column(date, l_ship), make_column(date, l_commit), make_column(date, l_receipt),
                  l_instr.finish(), l_mode.finish(), l_comment.finish()});
  return {std::move(orders), std::move(lineitem)};
}

}  // namespace

row_counts counts_for(double sf) {
  if (!(sf >= 0.001 && sf <= 100000))
    throw invalid_argument_error("PDS-H scale factor " + std::to_string(sf) + " is out of range [0.001, 100000]");
  auto rows = [&](double base) { return std::max<int64_t>(1, std::llround(base * sf)); };
  int64_t part = rows(200'000);
  return {rows(10'000), rows(150'000), part, part * 4, rows(1'500'000)};
}

dataset make_dataset(double sf, uint64_t seed, int64_t chunk_rows) {
  const row_counts counts = counts_for(sf);
  if (chunk_rows < 3)
    throw invalid_argument_error("PDS-H chunk rows must be at least 3, got " + std::to_string(chunk_rows));
  // Rows per chunk (per file), fixed so that the output does not depend on the thread count. Orders
  // chunks also hold about 4x as many lineitem rows, part chunks 4x as many partsupp rows.
  const int64_t order_chunk = chunk_rows, part_chunk = chunk_rows * 2 / 3, supplier_chunk = chunk_rows * 2 / 3,
                customer_chunk = chunk_rows * 4 / 3;
  const int64_t clerks = std::max<int64_t>(1, std::llround(sf * 1000));
  dataset d;
  d.name = "pdsh";
  auto between = [](int64_t chunk, int64_t chunk_rows, int64_t rows) {
    return std::pair<int64_t, int64_t>{chunk * chunk_rows, std::min(rows, (chunk + 1) * chunk_rows)};
  };
  d.generators.push_back({{{"orders", orders_schema()}, {"lineitem", lineitem_schema()}},
                          chunk_count(counts.orders, order_chunk),
                          [=](int64_t c) {
                            rng r(chunk_seed(seed, "orders", c));
                            auto [b, e] = between(c, order_chunk, counts.orders);
                            return orders_and_lineitems(r, b, e, counts, clerks);
                          }});
  d.generators.push_back({{{"part", part_schema()}, {"partsupp", partsupp_schema()}},
                          chunk_count(counts.part, part_chunk),
                          [=](int64_t c) {
                            rng r(chunk_seed(seed, "part", c)), rs(chunk_seed(seed, "partsupp", c));
                            auto [b, e] = between(c, part_chunk, counts.part);
                            return std::vector<table>{part_table(r, b, e), partsupp_table(rs, b, e, counts.supplier)};
                          }});
  d.generators.push_back(
      {{{"customer", customer_schema()}}, chunk_count(counts.customer, customer_chunk), [=](int64_t c) {
         rng r(chunk_seed(seed, "customer", c));
         auto [b, e] = between(c, customer_chunk, counts.customer);
         return std::vector<table>{customer_table(r, b, e)};
       }});
  d.generators.push_back(
      {{{"supplier", supplier_schema()}}, chunk_count(counts.supplier, supplier_chunk), [=](int64_t c) {
         rng r(chunk_seed(seed, "supplier", c));
         auto [b, e] = between(c, supplier_chunk, counts.supplier);
         return std::vector<table>{supplier_table(r, b, e)};
       }});
  d.generators.push_back({{{"nation", nation_schema()}}, 1, [=](int64_t c) {
                            rng r(chunk_seed(seed, "nation", c));
                            return std::vector<table>{nation_table(r)};
                          }});
  d.generators.push_back({{{"region", region_schema()}}, 1, [=](int64_t c) {
                            rng r(chunk_seed(seed, "region", c));
                            return std::vector<table>{region_table(r)};
                          }});
  return d;
}

}  // namespace tug::gen::pdsh
