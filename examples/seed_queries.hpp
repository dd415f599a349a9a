#pragma once
// The seed-002 queries written with tug's lazy API; shared by the examples and the tests.
#include "tug/api/lazy_frame.hpp"

namespace tug::seed {

/// Vessels travelling more than 10x their cohort's (VesselType, Status) mean speed, with `over`.
inline lazy_frame speed_anomaly(const lazy_frame& ais) {
  return ais.filter(col("VesselType").is_not_null() & col("Status").is_not_null())
      .with_columns({col("SOG").mean().over({"VesselType", "Status"}).alias("cohort_avg_speed")})
      .with_columns({(col("SOG") > col("cohort_avg_speed") * 10).alias("is_speed_anomaly")})
      .filter(col("is_speed_anomaly"));
}

/// The same query as an explicit group_by joined back (two sync points instead of one).
inline lazy_frame speed_anomaly_join(const lazy_frame& ais) {
  lazy_frame df = ais.filter(col("VesselType").is_not_null() & col("Status").is_not_null());
  lazy_frame cohort = df.group_by({"VesselType", "Status"}).agg({col("SOG").mean().alias("cohort_avg_speed")});
  return df.join(cohort, {"VesselType", "Status"}, join_type::left)
      .filter(col("SOG") > col("cohort_avg_speed") * 10)
      .with_columns({lit(true).alias("is_speed_anomaly")});
}

/// Anomalies per vessel type, top 5 (the seed's follow-up query).
inline lazy_frame anomalies_by_type(const lazy_frame& anomalies) {
  return anomalies.group_by({"VesselType"})
      .agg({len().alias("anomaly_count")})
      .sort({col("anomaly_count"), col("VesselType")}, sort_options{{true, false}, {}, false})
      .limit(5);
}

/// The 4-way join of lineitem x orders x customer x supplier with three derived columns.
inline lazy_frame four_way_join(const lazy_frame& lineitem, const lazy_frame& orders, const lazy_frame& customer,
                                const lazy_frame& supplier) {
  return lineitem.join(orders, {col("l_orderkey")}, {col("o_orderkey")})
      .join(customer, {col("o_custkey")}, {col("c_custkey")})
      .join(supplier, {col("l_suppkey")}, {col("s_suppkey")})
      .with_columns({
          (col("l_extendedprice") * (1.0 - col("l_discount").cast(type_id::float64))).alias("revenue"),
          (col("l_shipdate") - col("o_orderdate")).dt_total_days().alias("ship_delay_days"),
          (col("c_nationkey") == col("s_nationkey")).alias("domestic"),
      });
}

}  // namespace tug::seed
