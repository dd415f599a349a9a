#pragma once
/// PDS-H data: the TPC-H schema and value distributions (TPC-H specification v3, clause 4.2) for the
/// tables region, nation, supplier, customer, part, partsupp, orders and lineitem. The layout and the
/// column types are the contract of bench/pdsh/queries.hpp: keys and integers int64; money, quantity,
/// discount and tax float64; dates date32; text string. What is simplified: docs/generators.md.
#include <cstdint>

#include "tug/gen/dataset.hpp"

namespace tug::gen::pdsh {

/// Row counts of scale factor `sf` (clause 4.2.5); lineitem has 1..7 rows per order.
struct row_counts {
  int64_t supplier, customer, part, partsupp, orders;
};
/// @throws invalid_argument_error when sf < 0.001 or sf > 100000.
row_counts counts_for(double sf);

/// O_ORDERKEY of the i-th order (i >= 1): sparse keys, the first 8 of every 32 (1..7, 32..39, 64..71 ...).
inline int64_t order_key(int64_t i) { return ((i >> 3) << 5) | (i & 7); }
/// P_RETAILPRICE in cents of part `partkey`: (90000 + ((partkey/10) mod 20001) + 100 * (partkey mod 1000)).
inline int64_t retail_price_cents(int64_t partkey) { return 90000 + (partkey / 10) % 20001 + 100 * (partkey % 1000); }
/// PS_SUPPKEY of the i-th (0..3) supplier of part `partkey` among `suppliers` suppliers.
inline int64_t part_supplier(int64_t partkey, int64_t i, int64_t suppliers) {
  return (partkey + i * (suppliers / 4 + (partkey - 1) / suppliers)) % suppliers + 1;
}

/// Orders per chunk (one file per chunk and table) by default; 150,000 orders make about 600,000 lineitems.
constexpr int64_t default_chunk_rows = 150'000;

/// The eight tables at scale factor `sf` from `seed`. `chunk_rows` orders go to a chunk (parts and
/// suppliers 2/3, customers 4/3 as many); the data depends on it, never on the thread count.
/// @throws invalid_argument_error on a scale factor out of range (see counts_for) or chunk_rows < 3.
dataset make_dataset(double sf, uint64_t seed = 1, int64_t chunk_rows = default_chunk_rows);

}  // namespace tug::gen::pdsh
