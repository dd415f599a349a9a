#pragma once
/// The CQL native protocol, versions 4 and 5 (doc/native_protocol_v4.spec and v5.spec of Apache Cassandra):
/// frame (envelope) headers, v5's framing into checksummed, optionally lz4-compressed segments, the
/// notations of section 3, type options, RESULT and ERROR bodies. No I/O here: the connection
/// (client.hpp) moves the bytes.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tug/io/cassandra/error.hpp"

namespace tug::io::cassandra {

/// The version spoken before negotiation, and the default of every function that takes one.
inline constexpr uint8_t protocol_version = 4;
/// Largest payload of one v5 segment (2^17 - 1 bytes).
inline constexpr size_t max_segment_payload = (size_t(1) << 17) - 1;
inline constexpr size_t header_size = 9;
/// Largest body the protocol allows (256 MB).
inline constexpr int32_t max_body_size = 256 * 1024 * 1024;

enum class opcode : uint8_t {
  error = 0x00,
  startup = 0x01,
  ready = 0x02,
  authenticate = 0x03,
  options = 0x05,
  supported = 0x06,
  query = 0x07,
  result = 0x08,
  prepare = 0x09,
  execute = 0x0A,
  register_ = 0x0B,
  event = 0x0C,
  batch = 0x0D,
  auth_challenge = 0x0E,
  auth_response = 0x0F,
  auth_success = 0x10,
};
const char* to_string(opcode op);

/// Consistency levels ([consistency]).
enum class consistency : uint16_t {
  any = 0x0000,
  one = 0x0001,
  two = 0x0002,
  three = 0x0003,
  quorum = 0x0004,
  all = 0x0005,
  local_quorum = 0x0006,
  each_quorum = 0x0007,
  serial = 0x0008,
  local_serial = 0x0009,
  local_one = 0x000A,
};
/// Parses "LOCAL_ONE", "quorum", ... @throws invalid_argument_error naming the value and the valid ones.
consistency parse_consistency(std::string_view name);
std::string to_string(consistency c);

/// Frame header flags.
inline constexpr uint8_t flag_compression = 0x01, flag_tracing = 0x02, flag_custom_payload = 0x04,
                         flag_warning = 0x08;

/// A decoded 9-byte header.
struct frame_header {
  uint8_t version = 0;  ///< with the direction bit (0x80 = response)
  uint8_t flags = 0;
  int16_t stream = 0;
  uint8_t op = 0;
  int32_t length = 0;
};
/// Decodes a response header of protocol `version`. @throws connection_error naming `host` for a request
/// frame, another protocol version, an unknown opcode, or a length outside [0, 256 MB].
frame_header decode_header(const uint8_t* p, const std::string& host, uint8_t version = protocol_version);
/// A whole request frame (a v5 envelope): header then body.
std::string encode_frame(opcode op, int16_t stream, std::string_view body, uint8_t flags = 0,
                         uint8_t version = protocol_version);

/// v5 framing (section 2 of v5.spec): little-endian headers protected by a CRC24, payloads of at most
/// max_segment_payload bytes followed by their CRC32, optionally lz4-compressed.
/// The CRC24 of a header's first `length` bytes (little-endian in `bytes`).
uint32_t crc24(uint64_t bytes, int length);
/// The CRC32 of a payload, as Cassandra computes it (seeded with the bytes FA 2D 55 CA).
uint32_t segment_crc32(std::string_view payload);
/// `envelopes` (whole envelopes, back to back) as segments: one self-contained segment when they fit,
/// else pieces of max_segment_payload bytes; with `lz4`, each payload compressed (or sent as it is, with
/// uncompressed length 0, when that is not smaller).
std::string encode_segments(std::string_view envelopes, bool lz4);
/// A decoded segment header.
struct segment_header {
  uint32_t payload_length = 0;       ///< bytes on the wire after the header, before the CRC32
  uint32_t uncompressed_length = 0;  ///< lz4 only; 0: the payload is not compressed
  bool self_contained = false;
};
/// Header bytes of a segment: 6, or 8 with lz4.
inline size_t segment_header_size(bool lz4) { return lz4 ? 8 : 6; }
/// @throws connection_error naming `host` when the header's CRC24 does not match.
segment_header decode_segment_header(const uint8_t* p, bool lz4, const std::string& host);
/// The payload of a segment from its bytes and the 4-byte CRC32 after them, decompressed.
/// @throws connection_error naming `host` for a CRC32 mismatch or a payload lz4 cannot decompress.
std::string decode_segment_payload(std::string_view payload_and_crc, const segment_header& h, bool lz4,
                                   const std::string& host);
/// v4 frame body compression (flag_compression): the uncompressed length ([int]), then an lz4 block.
std::string lz4_compress_body(std::string_view body);
/// @throws connection_error naming `host` for a body that does not decompress to its stated length.
std::string lz4_decompress_body(std::string_view body, const std::string& host);

/// Appends the notations of section 3, big-endian.
class byte_writer {
 public:
  void u8(uint8_t v) { _out.push_back(static_cast<char>(v)); }
  void i16(int16_t v) { u16(static_cast<uint16_t>(v)); }
  void u16(uint16_t v);
  void i32(int32_t v);
  void i64(int64_t v);
  void raw(std::string_view b) { _out.append(b); }
  /// [string]. @throws invalid_argument_error over 65535 bytes.
  void string(std::string_view s);
  void long_string(std::string_view s);
  /// [bytes]; std::nullopt is null.
  void bytes(std::optional<std::string_view> b);
  void short_bytes(std::string_view b);
  void string_map(const std::vector<std::pair<std::string, std::string>>& m);
  std::string& out() { return _out; }
  size_t size() const { return _out.size(); }

 private:
  std::string _out;
};

/// Reads the notations of section 3 from a body, checking every length against what is left.
/// @throws connection_error naming the host and what is malformed.
class byte_reader {
 public:
  byte_reader(std::string_view body, const std::string& host) : _p(body), _host(&host) {}
  uint8_t u8();
  uint16_t u16();
  int32_t i32();
  int64_t i64();
  std::string_view raw(size_t n);
  std::string string();
  std::string long_string();
  /// [bytes]; std::nullopt for a negative length (null).
  std::optional<std::string_view> bytes();
  std::string_view short_bytes();
  std::vector<std::string> string_list();
  size_t remaining() const { return _p.size(); }
  const char* position() const { return _p.data(); }
  [[noreturn]] void malformed(const std::string& what) const;
  const std::string& host() const { return *_host; }

 private:
  std::string_view _p;
  const std::string* _host;
};

/// Type option ids of section 4.2.5.2.
enum class type_code : uint16_t {
  custom = 0x0000,
  ascii = 0x0001,
  bigint = 0x0002,
  blob = 0x0003,
  boolean = 0x0004,
  counter = 0x0005,
  decimal = 0x0006,
  double_ = 0x0007,
  float_ = 0x0008,
  int_ = 0x0009,
  timestamp = 0x000B,
  uuid = 0x000C,
  varchar = 0x000D,
  varint = 0x000E,
  timeuuid = 0x000F,
  inet = 0x0010,
  date = 0x0011,
  time = 0x0012,
  smallint = 0x0013,
  tinyint = 0x0014,
  list = 0x0020,
  map = 0x0021,
  set = 0x0022,
  udt = 0x0030,
  tuple = 0x0031,
};

/// A CQL type: a native type, or a collection / UDT / tuple with its element types.
struct cql_type {
  type_code code = type_code::int_;
  std::string name;            ///< custom: the class name; udt: keyspace.name
  std::vector<cql_type> args;  ///< list/set: 1, map: 2, tuple and udt: the fields
  std::vector<std::string> field_names;  ///< udt only
  bool is_native() const { return code != type_code::custom && static_cast<uint16_t>(code) < 0x20; }
  /// CQL spelling: "int", "list<text>", "map<int, text>", ...
  std::string to_string() const;
  friend bool operator==(const cql_type&, const cql_type&) = default;
};
/// Reads an [option] type. @throws connection_error for an unknown id or a truncated option.
cql_type read_type(byte_reader& r);
/// Parses a type as system_schema.columns writes it ("int", "frozen<list<int>>", "'org.Foo'", a UDT
/// name). Unknown names become a UDT of that name.
cql_type parse_type_name(std::string_view s);

/// One column of a result or of a prepared statement's bind markers.
struct column_spec {
  std::string keyspace, table, name;
  cql_type type;
};

/// The metadata of a Rows result or of a Prepared result.
struct result_metadata {
  int32_t flags = 0;
  int32_t columns_count = 0;
  std::optional<std::string> paging_state;  ///< set when Has_more_pages
  std::vector<column_spec> columns;         ///< empty with No_metadata
  std::vector<uint16_t> pk_indexes;         ///< Prepared bind metadata only
  std::optional<std::string> new_metadata_id;  ///< v5 Metadata_changed
};

/// A RESULT body of kind Rows: the metadata and the undecoded rows (each value a [bytes]).
struct rows_result {
  result_metadata metadata;
  int32_t rows_count = 0;
  std::string_view rows;  ///< into the frame body, valid while it lives
};

/// A RESULT body of kind Prepared.
struct prepared_result {
  std::string id;
  std::string result_metadata_id;  ///< v5: sent with every EXECUTE
  result_metadata bind;
  result_metadata result;
};

enum class result_kind : int32_t { void_ = 1, rows = 2, set_keyspace = 3, prepared = 4, schema_change = 5 };

/// Reads a Rows result's metadata (the reader sits after the kind), of protocol `version`.
result_metadata read_rows_metadata(byte_reader& r, uint8_t version = protocol_version);
/// Reads a RESULT body (after the frame's tracing id, warnings and payload) of kind Rows.
/// @throws connection_error when the body is not a well-formed Rows result.
rows_result read_rows(byte_reader& r, uint8_t version = protocol_version);
/// Reads a RESULT body of kind Prepared.
prepared_result read_prepared(byte_reader& r, uint8_t version = protocol_version);

/// Skips what flags put in front of a response body: tracing id, warnings, custom payload. Returns the
/// warnings.
std::vector<std::string> skip_response_prefix(byte_reader& r, uint8_t flags);

/// Builds the typed error of an ERROR body; `context` (e.g. the statement) is appended to the message.
/// Never throws for a well-formed body; a malformed one gives a connection_error.
[[nodiscard]] std::exception_ptr decode_error(std::string_view body, uint8_t flags, const std::string& host,
                                              const std::string& context, uint8_t version = protocol_version);

/// Query parameters of QUERY and EXECUTE (section 4.1.4).
struct query_parameters {
  consistency level = consistency::local_one;
  int32_t page_size = 0;  ///< <= 0: no paging
  std::optional<std::string> paging_state;
  bool skip_metadata = false;
  std::optional<int64_t> default_timestamp;  ///< microseconds
  /// Ask the coordinator to trace the request (the frame's tracing flag); result::tracing_id names the
  /// session in system_traces. Not part of <query_parameters>: the client sets the flag.
  bool tracing = false;
};
/// Appends <query_parameters> (flags a [byte] in v4, an [int] in v5); `values` is the already encoded
/// <n><value_1>...<value_n> (or empty).
void write_query_parameters(byte_writer& w, const query_parameters& p, int16_t value_count, std::string_view values,
                            uint8_t version = protocol_version);

/// Quotes a CQL identifier: "name" with inner quotes doubled.
std::string quote_identifier(std::string_view name);

}  // namespace tug::io::cassandra
