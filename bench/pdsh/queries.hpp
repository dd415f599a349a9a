#pragma once
/// The 22 PDS-H queries (TPC-H semantics, the specification's validation parameters) written with
/// tug's lazy API. Used by the `tug_pdsh` runner, its tests and the benchmark harness.
///
/// Data layout (what `tug_gen pdsh` writes): DIR/<table>/part-NNNNN.parquet for the tables region,
/// nation, supplier, customer, part, partsupp, orders, lineitem. Column names as in the TPC-H
/// specification (lower case, e.g. l_orderkey). Types: keys and other integers int64; money,
/// quantities, discounts and taxes float64; dates date32; all text string.
#include <functional>
#include <string>

#include "tug/api/lazy_frame.hpp"

namespace tug::pdsh {

/// The eight tables, each a lazy scan.
struct tables {
  lazy_frame region, nation, supplier, customer, part, partsupp, orders, lineitem;
};

/// Scans DIR/<table> for every table. @throws io_error naming a missing table directory.
tables scan_tables(const std::string& dir);

using query_fn = std::function<lazy_frame(const tables&)>;

/// Registers query `number` (1..22); called by the static registrars in the query files.
bool register_query(int number, query_fn fn);
/// Query `number`. @throws invalid_argument_error when it is not 1..22 or not registered.
const query_fn& query(int number);
/// Registered query numbers, ascending.
std::vector<int> registered_queries();

}  // namespace tug::pdsh
