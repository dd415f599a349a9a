#pragma once
/// The data sets of seed 002: AIS-like vessel positions and the wholesale tables of the 4-way join.
/// Chunked like every generated data set (tug/gen/dataset.hpp): deterministic from the seed and the
/// chunk size, whatever the thread count; written with `tug_gen ais|wholesale` or held in memory.
#include <cstdint>
#include <vector>

#include "tug/gen/dataset.hpp"

namespace tug::gen {

/// Rows per chunk of the seed data sets by default.
constexpr int64_t default_seed_chunk_rows = 1 << 20;

/// AIS vessel type codes, most frequent first: a few types dominate (Zipf-like), as in the U.S. Coast
/// Guard data.
const std::vector<int64_t>& vessel_types();

/// AIS-like positions, one table "ais": MMSI, BaseDateTime, LAT, LON, SOG, COG, Heading, VesselName,
/// IMO, CallSign, VesselType, Status, Length, Width, Draft, Cargo, TransceiverClass. 50,000 vessels;
/// about 2.5% of VesselType and 3% of Status are null, a third of IMO and 20% of Draft; 0.5% of speeds
/// are outliers (10-40x the type's typical speed), 0.05% of positions are the "not available" 91/181,
/// and 30% of class B headings are the "not available" 511.
dataset ais_dataset(int64_t rows, uint64_t seed = 42, int64_t chunk_rows = default_seed_chunk_rows);
/// `ais_dataset` generated in memory.
data_frame ais(int64_t rows, uint64_t seed = 42, int64_t chunk_rows = default_seed_chunk_rows);

/// Lineitem rows of the wholesale tables at scale 1.0.
constexpr int64_t wholesale_full_lineitem_rows = 95'000'000;

/// The four wholesale tables of seed 002's join with the columns it uses: lineitem (`lineitem_rows`,
/// four per order), orders (rows/4), customer (rows/40), supplier (max(10, rows/475)). At scale 1.0:
/// 95M, 23.75M, 2.375M and 200k rows.
dataset wholesale_dataset(int64_t lineitem_rows, uint64_t seed = 7, int64_t chunk_rows = default_seed_chunk_rows);

/// The wholesale tables in memory.
struct wholesale {
  data_frame lineitem, orders, customer, supplier;
};
/// `wholesale_dataset` generated in memory.
wholesale wholesale_tables(int64_t lineitem_rows, uint64_t seed = 7, int64_t chunk_rows = default_seed_chunk_rows);

}  // namespace tug::gen
