#pragma once
/// CQL values to tug columns and back. Mapping (docs/cassandra.md): int -> i32, bigint/counter/varint ->
/// i64, smallint -> i16, tinyint -> i8, float -> f32, double -> f64, decimal -> decimal[38, decimal_scale],
/// boolean -> bool, text/varchar/ascii -> str, timestamp -> datetime[ms] (UTC), date -> date, time ->
/// duration[ns] (since midnight), uuid/timeuuid -> str (8-4-4-4-12 hex), inet -> str (address text),
/// blob -> str ("0x" and lowercase hex, as cqlsh prints it). Collections, tuples, UDTs and custom types
/// have no tug type.
#include <string>
#include <string_view>
#include <vector>

#include "tug/core/table.hpp"
#include "tug/io/cassandra/protocol.hpp"

namespace tug::io::cassandra {

/// Choices of the mapping.
struct type_options {
  /// Scale of the decimal128 columns that CQL decimals become (precision 38). A value with more
  /// fractional digits that are not zero is an error, never rounded.
  int decimal_scale = 10;
};

/// The tug type of a CQL type. @throws not_implemented_error naming `what` (e.g. "column 'c' of ks.t")
/// and the CQL type for collections, tuples, UDTs and custom types.
data_type to_tug_type(const cql_type& t, const std::string& what, const type_options& options);

/// Decodes the rows of a Rows result straight into columns of `types` (the result's columns, in order,
/// as to_tug_type maps them). @throws io_error naming the host and the column for a value that does not
/// fit (a varint over 64 bits, a decimal beyond the scale) or a malformed value.
table decode_rows(const rows_result& rows, const std::vector<data_type>& types, const type_options& options,
                  const std::string& host, memory_resource* mr = default_host_resource());

/// Whether a column of tug type `from` can be written to a CQL column of type `to` (exact types and
/// widening integers and floats; strings to text, ascii, uuid, timeuuid, inet and blob).
bool can_write(const data_type& from, const cql_type& to);

/// Appends the [value] of row `row` of `c` as CQL type `to` (can_write must hold). @throws
/// invalid_argument_error naming `column` and the row for a value the CQL type rejects (a string that
/// is no uuid, a time outside one day, ...).
void encode_value(byte_writer& w, const column& c, int64_t row, const cql_type& to, const std::string& column);

/// Text forms used by the mapping (exposed for tests).
std::string format_uuid(std::string_view bytes16);
std::string format_inet(std::string_view bytes);
std::string format_blob(std::string_view bytes);
/// Minimal two's complement big-endian bytes of v (the varint encoding).
std::string encode_varint(__int128 v);

}  // namespace tug::io::cassandra
