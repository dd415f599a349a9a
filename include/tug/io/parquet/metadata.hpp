#pragma once
/// The Parquet footer and page headers as tug reads them: the subset of parquet.thrift that the
/// reader and writer use, decoded from (and encoded to) the Thrift compact protocol in-house.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tug::io::parquet {

/// Physical types (parquet.thrift `Type`).
enum class physical_type : int32_t {
  boolean = 0,
  int32 = 1,
  int64 = 2,
  int96 = 3,
  float_ = 4,
  double_ = 5,
  byte_array = 6,
  fixed_len_byte_array = 7
};
/// Legacy annotations (parquet.thrift `ConvertedType`).
enum class converted_type : int32_t {
  utf8 = 0,
  map = 1,
  map_key_value = 2,
  list = 3,
  enum_ = 4,
  decimal = 5,
  date = 6,
  time_millis = 7,
  time_micros = 8,
  timestamp_millis = 9,
  timestamp_micros = 10,
  uint_8 = 11,
  uint_16 = 12,
  uint_32 = 13,
  uint_64 = 14,
  int_8 = 15,
  int_16 = 16,
  int_32 = 17,
  int_64 = 18,
  json = 19,
  bson = 20,
  interval = 21
};
enum class repetition : int32_t { required = 0, optional = 1, repeated = 2 };
enum class encoding : int32_t {
  plain = 0,
  plain_dictionary = 2,
  rle = 3,
  bit_packed = 4,
  delta_binary_packed = 5,
  delta_length_byte_array = 6,
  delta_byte_array = 7,
  rle_dictionary = 8,
  byte_stream_split = 9
};
enum class codec : int32_t {
  uncompressed = 0,
  snappy = 1,
  gzip = 2,
  lzo = 3,
  brotli = 4,
  lz4 = 5,
  zstd = 6,
  lz4_raw = 7
};
enum class page_type : int32_t { data_page = 0, index_page = 1, dictionary_page = 2, data_page_v2 = 3 };

/// Which member of the `LogicalType` union is set.
enum class logical_kind : uint8_t {
  none,
  string,
  map,
  list,
  enum_,
  decimal,
  date,
  time,
  timestamp,
  integer,
  unknown,
  json,
  bson,
  uuid,
  float16
};
/// Unit of TIME and TIMESTAMP logical types.
enum class logical_unit : uint8_t { millis, micros, nanos };

/// The `LogicalType` union, flattened.
struct logical_type {
  logical_kind kind = logical_kind::none;
  int32_t scale = 0, precision = 0;  ///< decimal
  bool adjusted_to_utc = false;      ///< time, timestamp
  logical_unit unit = logical_unit::millis;
  int8_t bit_width = 0;  ///< integer
  bool is_signed = true;
};

struct schema_element {
  std::optional<physical_type> type;  ///< absent on groups
  int32_t type_length = 0;
  std::optional<repetition> repetition_type;
  std::string name;
  int32_t num_children = 0;
  std::optional<converted_type> converted;
  int32_t scale = 0, precision = 0;
  logical_type logical;
};

struct statistics {
  std::optional<std::string> max, min;  ///< deprecated fields (signed order only)
  std::optional<int64_t> null_count, distinct_count;
  std::optional<std::string> max_value, min_value;
};

struct column_metadata {
  physical_type type = physical_type::int32;
  std::vector<encoding> encodings;
  std::vector<std::string> path_in_schema;
  codec compression = codec::uncompressed;
  int64_t num_values = 0;
  int64_t total_uncompressed_size = 0;
  int64_t total_compressed_size = 0;
  int64_t data_page_offset = 0;
  std::optional<int64_t> dictionary_page_offset;
  std::optional<statistics> stats;
};

struct column_chunk {
  std::string file_path;
  int64_t file_offset = 0;
  std::optional<column_metadata> meta;
  /// Where the page index of this chunk is (pyarrow `write_page_index=True`, DuckDB, Spark).
  std::optional<int64_t> offset_index_offset, column_index_offset;
  std::optional<int32_t> offset_index_length, column_index_length;
};

/// PageLocation of an OffsetIndex: where a data page starts and the first row it holds.
struct page_location {
  int64_t offset = 0;
  int32_t compressed_page_size = 0;  ///< including the page header
  int64_t first_row_index = 0;
};

/// ColumnIndex: per data page min/max (PLAIN-encoded, like chunk statistics) and null information.
struct column_index {
  std::vector<bool> null_pages;
  std::vector<std::string> min_values, max_values;
  std::vector<int64_t> null_counts;  ///< empty when absent
};

struct row_group {
  std::vector<column_chunk> columns;
  int64_t total_byte_size = 0;
  int64_t num_rows = 0;
};

struct key_value {
  std::string key;
  std::optional<std::string> value;
};

struct file_metadata {
  int32_t version = 0;
  std::vector<schema_element> schema;
  int64_t num_rows = 0;
  std::vector<row_group> row_groups;
  std::vector<key_value> key_value_metadata;
  std::string created_by;
};

struct data_page_header {
  int32_t num_values = 0;
  encoding enc = encoding::plain;
  encoding definition_level_encoding = encoding::rle;
  encoding repetition_level_encoding = encoding::rle;
};
struct dictionary_page_header {
  int32_t num_values = 0;
  encoding enc = encoding::plain;
};
struct data_page_header_v2 {
  int32_t num_values = 0, num_nulls = 0, num_rows = 0;
  encoding enc = encoding::plain;
  int32_t definition_levels_byte_length = 0, repetition_levels_byte_length = 0;
  bool is_compressed = true;
};
struct page_header {
  page_type type = page_type::data_page;
  int32_t uncompressed_page_size = 0, compressed_page_size = 0;
  std::optional<int32_t> crc;  ///< CRC-32 (zlib's) of the page's bytes after the header, as stored
  std::optional<data_page_header> v1;
  std::optional<dictionary_page_header> dict;
  std::optional<data_page_header_v2> v2;
};

/// Decodes a FileMetaData. @throws io_error (without the file name) on malformed input.
file_metadata decode_file_metadata(const uint8_t* data, size_t size);
/// Decodes a PageHeader from the front of [data, data+size); `consumed` receives its length.
/// @throws io_error (without the file name) on malformed input.
page_header decode_page_header(const uint8_t* data, size_t size, size_t& consumed);

/// Decodes an OffsetIndex (its page locations). @throws io_error on malformed input.
std::vector<page_location> decode_offset_index(const uint8_t* data, size_t size);
/// Decodes a ColumnIndex. @throws io_error on malformed input.
column_index decode_column_index(const uint8_t* data, size_t size);

/// Encodes a FileMetaData (compact protocol), appending to `out`.
void encode_file_metadata(const file_metadata& m, std::string& out);
/// Encodes a PageHeader (compact protocol), appending to `out`.
void encode_page_header(const page_header& h, std::string& out);

}  // namespace tug::io::parquet
