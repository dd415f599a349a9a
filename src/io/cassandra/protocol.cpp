#include "tug/io/cassandra/protocol.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <exception>

#include <lz4.h>
#include <zlib.h>

#include "tug/io/cassandra/types.hpp"

namespace tug::io::cassandra {

const char* to_string(opcode op) {
  switch (op) {
    case opcode::error: return "ERROR";
    case opcode::startup: return "STARTUP";
    case opcode::ready: return "READY";
    case opcode::authenticate: return "AUTHENTICATE";
    case opcode::options: return "OPTIONS";
    case opcode::supported: return "SUPPORTED";
    case opcode::query: return "QUERY";
    case opcode::result: return "RESULT";
    case opcode::prepare: return "PREPARE";
    case opcode::execute: return "EXECUTE";
    case opcode::register_: return "REGISTER";
    case opcode::event: return "EVENT";
    case opcode::batch: return "BATCH";
    case opcode::auth_challenge: return "AUTH_CHALLENGE";
    case opcode::auth_response: return "AUTH_RESPONSE";
    case opcode::auth_success: return "AUTH_SUCCESS";
  }
  return "?";
}

namespace {
constexpr std::pair<const char*, consistency> consistency_names[] = {
    {"ANY", consistency::any},
    {"ONE", consistency::one},
    {"TWO", consistency::two},
    {"THREE", consistency::three},
    {"QUORUM", consistency::quorum},
    {"ALL", consistency::all},
    {"LOCAL_QUORUM", consistency::local_quorum},
    {"EACH_QUORUM", consistency::each_quorum},
    {"SERIAL", consistency::serial},
    {"LOCAL_SERIAL", consistency::local_serial},
    {"LOCAL_ONE", consistency::local_one},
};
}  // namespace

consistency parse_consistency(std::string_view name) {
  std::string up(name);
  for (auto& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string all;
  for (auto& [n, c] : consistency_names) {
    if (up == n) return c;
    all += all.empty() ? n : std::string(", ") + n;
  }
  throw invalid_argument_error("cassandra: unknown consistency level '" + std::string(name) + "' (valid: " + all + ")");
}

std::string to_string(consistency c) {
  for (auto& [n, v] : consistency_names)
    if (v == c) return n;
  return "consistency " + std::to_string(static_cast<int>(c));
}

frame_header decode_header(const uint8_t* p, const std::string& host, uint8_t version) {
  frame_header h;
  h.version = p[0];
  h.flags = p[1];
  h.stream = static_cast<int16_t>((p[2] << 8) | p[3]);
  h.op = p[4];
  h.length = static_cast<int32_t>((uint32_t(p[5]) << 24) | (uint32_t(p[6]) << 16) | (uint32_t(p[7]) << 8) | p[8]);
  if (h.version != (0x80 | version))
    throw connection_error(host, "cassandra " + host + ": frame of protocol version byte 0x" +
                                     [](int v) {
                                       char b[8];
                                       std::snprintf(b, sizeof b, "%02x", v);
                                       return std::string(b);
                                     }(h.version) +
                                     ", expected a v" + std::to_string(version) + " response (0x8" +
                                     std::to_string(version) + ")");
  if (h.op > static_cast<uint8_t>(opcode::auth_success) || h.op == 0x04)
    throw connection_error(host, "cassandra " + host + ": frame with unknown opcode " + std::to_string(h.op));
  if (h.length < 0 || h.length > max_body_size)
    throw connection_error(host, "cassandra " + host + ": frame body length " + std::to_string(h.length) +
                                     " outside [0, 256 MB]");
  return h;
}

std::string encode_frame(opcode op, int16_t stream, std::string_view body, uint8_t flags, uint8_t version) {
  std::string f(header_size, '\0');
  f[0] = static_cast<char>(version);
  f[1] = static_cast<char>(flags);
  f[2] = static_cast<char>((static_cast<uint16_t>(stream) >> 8) & 0xff);
  f[3] = static_cast<char>(static_cast<uint16_t>(stream) & 0xff);
  f[4] = static_cast<char>(op);
  auto n = static_cast<uint32_t>(body.size());
  f[5] = static_cast<char>(n >> 24);
  f[6] = static_cast<char>(n >> 16);
  f[7] = static_cast<char>(n >> 8);
  f[8] = static_cast<char>(n);
  f.append(body);
  return f;
}

uint32_t crc24(uint64_t bytes, int length) {
  uint32_t crc = 0x875060;  // v5.spec 2.1: initial value 0x875060, polynomial 0x1974F0B
  for (int i = 0; i < length; ++i) {
    crc ^= static_cast<uint32_t>(bytes & 0xff) << 16;
    bytes >>= 8;
    for (int b = 0; b < 8; ++b) {
      crc <<= 1;
      if (crc & 0x1000000) crc ^= 0x1974F0B;
    }
  }
  return crc & 0xffffff;
}

uint32_t segment_crc32(std::string_view payload) {
  static const unsigned char seed[4] = {0xFA, 0x2D, 0x55, 0xCA};
  uLong c = ::crc32(0L, seed, 4);
  // zlib takes at most 4 GiB at once; a payload is at most 128 KiB
  c = ::crc32(c, reinterpret_cast<const Bytef*>(payload.data()), static_cast<uInt>(payload.size()));
  return static_cast<uint32_t>(c);
}

namespace {

void put_le(std::string& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

void append_segment(std::string& out, std::string_view payload, bool self_contained, bool lz4) {
  std::string compressed;
  std::string_view wire = payload;
  uint64_t header;
  int header_bytes;
  if (lz4) {
    compressed.resize(static_cast<size_t>(LZ4_compressBound(static_cast<int>(payload.size()))));
    int n = LZ4_compress_default(payload.data(), compressed.data(), static_cast<int>(payload.size()),
                                 static_cast<int>(compressed.size()));
    uint64_t uncompressed = 0;  // 0: sent as it is
    if (n > 0 && static_cast<size_t>(n) < payload.size()) {
      compressed.resize(static_cast<size_t>(n));
      wire = compressed;
      uncompressed = payload.size();
    }
    header = wire.size() | (uncompressed << 17) | (uint64_t(self_contained) << 34);
    header_bytes = 5;
  } else {
    header = payload.size() | (uint64_t(self_contained) << 17);
    header_bytes = 3;
  }
  put_le(out, header, header_bytes);
  put_le(out, crc24(header, header_bytes), 3);
  out.append(wire);
  put_le(out, segment_crc32(wire), 4);
}

}  // namespace

std::string encode_segments(std::string_view envelopes, bool lz4) {
  std::string out;
  if (envelopes.size() <= max_segment_payload) {
    append_segment(out, envelopes, true, lz4);
    return out;
  }
  for (size_t at = 0; at < envelopes.size(); at += max_segment_payload)
    append_segment(out, envelopes.substr(at, max_segment_payload), false, lz4);
  return out;
}

segment_header decode_segment_header(const uint8_t* p, bool lz4, const std::string& host) {
  const int n = lz4 ? 5 : 3;
  uint64_t header = get_le(p, n);
  auto crc = static_cast<uint32_t>(get_le(p + n, 3));
  if (crc != crc24(header, n))
    throw connection_error(host, "cassandra " + host + ": protocol v5 segment header fails its CRC24 (corrupt stream)");
  segment_header h;
  h.payload_length = static_cast<uint32_t>(header & 0x1ffff);
  if (lz4) {
    h.uncompressed_length = static_cast<uint32_t>((header >> 17) & 0x1ffff);
    h.self_contained = (header >> 34) & 1;
  } else {
    h.self_contained = (header >> 17) & 1;
  }
  return h;
}

std::string decode_segment_payload(std::string_view payload_and_crc, const segment_header& h, bool lz4,
                                   const std::string& host) {
  if (payload_and_crc.size() != h.payload_length + size_t(4))
    throw connection_error(host, "cassandra " + host + ": protocol v5 segment of the wrong size");
  std::string_view payload = payload_and_crc.substr(0, h.payload_length);
  auto crc = static_cast<uint32_t>(get_le(reinterpret_cast<const uint8_t*>(payload_and_crc.data()) + h.payload_length, 4));
  if (crc != segment_crc32(payload))
    throw connection_error(host, "cassandra " + host + ": protocol v5 segment payload fails its CRC32 (corrupt stream)");
  if (!lz4 || h.uncompressed_length == 0) return std::string(payload);
  std::string out(h.uncompressed_length, '\0');
  int n = LZ4_decompress_safe(payload.data(), out.data(), static_cast<int>(payload.size()), static_cast<int>(out.size()));
  if (n != static_cast<int>(out.size()))
    throw connection_error(host, "cassandra " + host + ": protocol v5 segment payload is no lz4 block of " +
                                     std::to_string(out.size()) + " bytes");
  return out;
}

std::string lz4_compress_body(std::string_view body) {
  std::string out(4 + static_cast<size_t>(LZ4_compressBound(static_cast<int>(body.size()))), '\0');
  auto n = static_cast<uint32_t>(body.size());
  for (int i = 0; i < 4; ++i) out[static_cast<size_t>(i)] = static_cast<char>(n >> (24 - 8 * i));
  int c = LZ4_compress_default(body.data(), out.data() + 4, static_cast<int>(body.size()), static_cast<int>(out.size() - 4));
  out.resize(4 + static_cast<size_t>(std::max(c, 0)));
  return out;
}

std::string lz4_decompress_body(std::string_view body, const std::string& host) {
  byte_reader r(body, host);
  int32_t n = r.i32();
  // lz4 expands at most 255 times: a bound before allocating
  if (n < 0 || n > max_body_size || static_cast<size_t>(n) > r.remaining() * 255 + 16)
    r.malformed("lz4 body of " + std::to_string(n) + " bytes from " + std::to_string(r.remaining()));
  std::string out(static_cast<size_t>(n), '\0');
  int got = LZ4_decompress_safe(r.position(), out.data(), static_cast<int>(r.remaining()), n);
  if (got != n) r.malformed("lz4 body that does not decompress to its " + std::to_string(n) + " bytes");
  return out;
}

void byte_writer::u16(uint16_t v) {
  _out.push_back(static_cast<char>(v >> 8));
  _out.push_back(static_cast<char>(v));
}
void byte_writer::i32(int32_t v) {
  auto u = static_cast<uint32_t>(v);
  char b[4] = {char(u >> 24), char(u >> 16), char(u >> 8), char(u)};
  _out.append(b, 4);
}
void byte_writer::i64(int64_t v) {
  auto u = static_cast<uint64_t>(v);
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(u >> (56 - 8 * i));
  _out.append(b, 8);
}
void byte_writer::string(std::string_view s) {
  if (s.size() > 0xffff)
    throw invalid_argument_error("cassandra: a [string] of " + std::to_string(s.size()) + " bytes exceeds 65535");
  u16(static_cast<uint16_t>(s.size()));
  _out.append(s);
}
void byte_writer::long_string(std::string_view s) {
  i32(static_cast<int32_t>(s.size()));
  _out.append(s);
}
void byte_writer::bytes(std::optional<std::string_view> b) {
  if (!b) {
    i32(-1);
    return;
  }
  i32(static_cast<int32_t>(b->size()));
  _out.append(*b);
}
void byte_writer::short_bytes(std::string_view b) {
  u16(static_cast<uint16_t>(b.size()));
  _out.append(b);
}
void byte_writer::string_map(const std::vector<std::pair<std::string, std::string>>& m) {
  u16(static_cast<uint16_t>(m.size()));
  for (auto& [k, v] : m) {
    string(k);
    string(v);
  }
}

void byte_reader::malformed(const std::string& what) const {
  throw connection_error(*_host, "cassandra " + *_host + ": malformed frame: " + what);
}
std::string_view byte_reader::raw(size_t n) {
  if (n > _p.size())
    malformed("needs " + std::to_string(n) + " more bytes, " + std::to_string(_p.size()) + " left in the body");
  auto s = _p.substr(0, n);
  _p.remove_prefix(n);
  return s;
}
uint8_t byte_reader::u8() { return static_cast<uint8_t>(raw(1)[0]); }
uint16_t byte_reader::u16() {
  auto s = raw(2);
  return static_cast<uint16_t>((uint8_t(s[0]) << 8) | uint8_t(s[1]));
}
int32_t byte_reader::i32() {
  auto s = raw(4);
  return static_cast<int32_t>((uint32_t(uint8_t(s[0])) << 24) | (uint32_t(uint8_t(s[1])) << 16) |
                              (uint32_t(uint8_t(s[2])) << 8) | uint8_t(s[3]));
}
int64_t byte_reader::i64() {
  auto s = raw(8);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | uint8_t(s[i]);
  return static_cast<int64_t>(v);
}
std::string byte_reader::string() { return std::string(raw(u16())); }
std::string byte_reader::long_string() {
  int32_t n = i32();
  if (n < 0) malformed("negative [long string] length " + std::to_string(n));
  return std::string(raw(static_cast<size_t>(n)));
}
std::optional<std::string_view> byte_reader::bytes() {
  int32_t n = i32();
  if (n < 0) return std::nullopt;
  return raw(static_cast<size_t>(n));
}
std::string_view byte_reader::short_bytes() { return raw(u16()); }
std::vector<std::string> byte_reader::string_list() {
  uint16_t n = u16();
  std::vector<std::string> out;
  for (uint16_t i = 0; i < n; ++i) out.push_back(string());
  return out;
}

std::string cql_type::to_string() const {
  switch (code) {
    case type_code::custom: return "'" + name + "'";
    case type_code::ascii: return "ascii";
    case type_code::bigint: return "bigint";
    case type_code::blob: return "blob";
    case type_code::boolean: return "boolean";
    case type_code::counter: return "counter";
    case type_code::decimal: return "decimal";
    case type_code::double_: return "double";
    case type_code::float_: return "float";
    case type_code::int_: return "int";
    case type_code::timestamp: return "timestamp";
    case type_code::uuid: return "uuid";
    case type_code::varchar: return "text";
    case type_code::varint: return "varint";
    case type_code::timeuuid: return "timeuuid";
    case type_code::inet: return "inet";
    case type_code::date: return "date";
    case type_code::time: return "time";
    case type_code::smallint: return "smallint";
    case type_code::tinyint: return "tinyint";
    case type_code::list: return "list<" + (args.empty() ? "?" : args[0].to_string()) + ">";
    case type_code::set: return "set<" + (args.empty() ? "?" : args[0].to_string()) + ">";
    case type_code::map:
      return "map<" + (args.size() < 2 ? "?, ?" : args[0].to_string() + ", " + args[1].to_string()) + ">";
    case type_code::udt: return name;
    case type_code::tuple: {
      std::string s = "tuple<";
      for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + args[i].to_string();
      return s + ">";
    }
  }
  return "?";
}

namespace {
cql_type read_type_depth(byte_reader& r, int depth) {
  if (depth > 32) r.malformed("type options nested deeper than 32");
  cql_type t;
  uint16_t id = r.u16();
  t.code = static_cast<type_code>(id);
  switch (t.code) {
    case type_code::custom: t.name = r.string(); break;
    case type_code::list:
    case type_code::set: t.args.push_back(read_type_depth(r, depth + 1)); break;
    case type_code::map:
      t.args.push_back(read_type_depth(r, depth + 1));
      t.args.push_back(read_type_depth(r, depth + 1));
      break;
    case type_code::udt: {
      std::string ks = r.string();
      t.name = ks + "." + r.string();
      uint16_t n = r.u16();
      for (uint16_t i = 0; i < n; ++i) {
        t.field_names.push_back(r.string());
        t.args.push_back(read_type_depth(r, depth + 1));
      }
      break;
    }
    case type_code::tuple: {
      uint16_t n = r.u16();
      for (uint16_t i = 0; i < n; ++i) t.args.push_back(read_type_depth(r, depth + 1));
      break;
    }
    default:
      if (id == 0x000A || (id > 0x0014 && id != 0x0020 && id != 0x0021 && id != 0x0022))
        r.malformed("unknown type option id 0x" + [&] {
          char b[8];
          std::snprintf(b, sizeof b, "%04x", id);
          return std::string(b);
        }());
  }
  return t;
}

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

/// Splits "a, map<b, c>" at top-level commas.
std::vector<std::string_view> split_args(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    if (s[i] == '>') --depth;
    if (s[i] == ',' && depth == 0) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(s.substr(start));
  return out;
}
}  // namespace

cql_type read_type(byte_reader& r) { return read_type_depth(r, 0); }

cql_type parse_type_name(std::string_view text) {
  std::string s = trim(text);
  cql_type t;
  auto lt = s.find('<');
  if (lt != std::string::npos && !s.empty() && s.back() == '>') {
    std::string outer = trim(std::string_view(s).substr(0, lt));
    std::string_view inner = std::string_view(s).substr(lt + 1, s.size() - lt - 2);
    if (outer == "frozen") return parse_type_name(inner);
    for (auto a : split_args(inner)) t.args.push_back(parse_type_name(a));
    if (outer == "list") t.code = type_code::list;
    else if (outer == "set") t.code = type_code::set;
    else if (outer == "map") t.code = type_code::map;
    else if (outer == "tuple") t.code = type_code::tuple;
    else {
      t.code = type_code::custom;  // vector<...> and other parameterized types
      t.name = s;
      t.args.clear();
    }
    return t;
  }
  static const std::pair<const char*, type_code> names[] = {
      {"ascii", type_code::ascii},       {"bigint", type_code::bigint},     {"blob", type_code::blob},
      {"boolean", type_code::boolean},   {"counter", type_code::counter},   {"decimal", type_code::decimal},
      {"double", type_code::double_},    {"float", type_code::float_},      {"int", type_code::int_},
      {"timestamp", type_code::timestamp}, {"uuid", type_code::uuid},     {"text", type_code::varchar},
      {"varchar", type_code::varchar},   {"varint", type_code::varint},     {"timeuuid", type_code::timeuuid},
      {"inet", type_code::inet},         {"date", type_code::date},         {"time", type_code::time},
      {"smallint", type_code::smallint}, {"tinyint", type_code::tinyint},
  };
  for (auto& [n, c] : names)
    if (s == n) {
      t.code = c;
      return t;
    }
  if (!s.empty() && s.front() == '\'') {
    t.code = type_code::custom;
    t.name = s.substr(1, s.size() >= 2 ? s.size() - 2 : 0);
    return t;
  }
  t.code = (s == "duration") ? type_code::custom : type_code::udt;
  t.name = s;
  return t;
}

/// `count` column specs, after the global table spec when `global` (the Global_tables_spec flag of
/// rows and prepared metadata). `what` names them in the error for a count the body cannot hold.
static std::vector<column_spec> read_column_specs(byte_reader& r, bool global, int32_t count, const char* what) {
  std::string ks, tb;
  if (global) {
    ks = r.string();
    tb = r.string();
  }
  // every column spec needs at least 4 bytes: a bound on the count before reserving
  if (static_cast<size_t>(count) > r.remaining() / 4)
    r.malformed(std::string(what) + " count " + std::to_string(count) + " larger than the body");
  std::vector<column_spec> out;
  out.reserve(static_cast<size_t>(count));
  for (int32_t i = 0; i < count; ++i) {
    column_spec c;
    if (global) {
      c.keyspace = ks;
      c.table = tb;
    } else {
      c.keyspace = r.string();
      c.table = r.string();
    }
    c.name = r.string();
    c.type = read_type(r);
    out.push_back(std::move(c));
  }
  return out;
}

result_metadata read_rows_metadata(byte_reader& r, uint8_t version) {
  result_metadata m;
  m.flags = r.i32();
  m.columns_count = r.i32();
  if (m.columns_count < 0) r.malformed("negative column count " + std::to_string(m.columns_count));
  if (m.flags & 0x0002) {
    auto ps = r.bytes();
    if (ps) m.paging_state = std::string(*ps);
  }
  if (version >= 5 && (m.flags & 0x0008)) m.new_metadata_id = std::string(r.short_bytes());  // Metadata_changed
  if (m.flags & 0x0004) return m;  // No_metadata
  m.columns = read_column_specs(r, m.flags & 0x0001, m.columns_count, "column");
  return m;
}

rows_result read_rows(byte_reader& r, uint8_t version) {
  auto kind = r.i32();
  if (kind != static_cast<int32_t>(result_kind::rows))
    r.malformed("expected a Rows result, got result kind " + std::to_string(kind));
  rows_result out;
  out.metadata = read_rows_metadata(r, version);
  out.rows_count = r.i32();
  if (out.rows_count < 0) r.malformed("negative row count " + std::to_string(out.rows_count));
  // every value takes at least its 4-byte length: bounds what decoders reserve by the body's size
  const auto cols = static_cast<size_t>(out.metadata.columns_count), rows = static_cast<size_t>(out.rows_count);
  if (rows > 0 && (cols == 0 || rows > r.remaining() / 4 / cols))
    r.malformed(std::to_string(rows) + " rows of " + std::to_string(cols) + " columns in " +
                std::to_string(r.remaining()) + " bytes");
  out.rows = std::string_view(r.position(), r.remaining());
  return out;
}

prepared_result read_prepared(byte_reader& r, uint8_t version) {
  auto kind = r.i32();
  if (kind != static_cast<int32_t>(result_kind::prepared))
    r.malformed("expected a Prepared result, got result kind " + std::to_string(kind));
  prepared_result p;
  p.id = std::string(r.short_bytes());
  if (version >= 5) p.result_metadata_id = std::string(r.short_bytes());
  // bind metadata: <flags><columns_count><pk_count>[<pk_index_i>...][<global_table_spec>?<col_spec_i>...]
  p.bind.flags = r.i32();
  p.bind.columns_count = r.i32();
  int32_t pk_count = r.i32();
  if (p.bind.columns_count < 0 || pk_count < 0 || static_cast<size_t>(pk_count) > r.remaining() / 2)
    r.malformed("bad bind marker or partition key count");
  for (int32_t i = 0; i < pk_count; ++i) p.bind.pk_indexes.push_back(r.u16());
  p.bind.columns = read_column_specs(r, p.bind.flags & 0x0001, p.bind.columns_count, "bind marker");
  p.result = read_rows_metadata(r, version);
  return p;
}

std::vector<std::string> skip_response_prefix(byte_reader& r, uint8_t flags) {
  std::vector<std::string> warnings;
  if (flags & flag_tracing) r.raw(16);
  if (flags & flag_warning) warnings = r.string_list();
  if (flags & flag_custom_payload) {
    uint16_t n = r.u16();
    for (uint16_t i = 0; i < n; ++i) {
      r.string();
      r.bytes();
    }
  }
  return warnings;
}

std::string to_string(error_code c) {
  switch (c) {
    case error_code::server_error: return "Server_error";
    case error_code::protocol_error: return "Protocol_error";
    case error_code::bad_credentials: return "Bad_credentials";
    case error_code::unavailable: return "Unavailable";
    case error_code::overloaded: return "Overloaded";
    case error_code::is_bootstrapping: return "Is_bootstrapping";
    case error_code::truncate_error: return "Truncate_error";
    case error_code::write_timeout: return "Write_timeout";
    case error_code::read_timeout: return "Read_timeout";
    case error_code::read_failure: return "Read_failure";
    case error_code::function_failure: return "Function_failure";
    case error_code::write_failure: return "Write_failure";
    case error_code::cdc_write_failure: return "CDC_write_failure";
    case error_code::cas_write_unknown: return "CAS_write_unknown";
    case error_code::syntax_error: return "Syntax_error";
    case error_code::unauthorized: return "Unauthorized";
    case error_code::invalid: return "Invalid";
    case error_code::config_error: return "Config_error";
    case error_code::already_exists: return "Already_exists";
    case error_code::unprepared: return "Unprepared";
  }
  char b[16];
  std::snprintf(b, sizeof b, "code 0x%04x", static_cast<unsigned>(c));
  return b;
}

bool server_error::retryable(bool idempotent) const {
  switch (_code) {
    case error_code::unavailable:
    case error_code::overloaded:
    case error_code::is_bootstrapping:
    case error_code::read_timeout: return true;
    case error_code::write_timeout: return idempotent;
    default: return false;
  }
}

std::exception_ptr decode_error(std::string_view body, uint8_t flags, const std::string& host,
                                const std::string& context, uint8_t version) {
  try {
    byte_reader r(body, host);
    skip_response_prefix(r, flags);
    auto code = static_cast<error_code>(r.i32());
    std::string text = r.string();
    std::string detail;
    switch (code) {
      case error_code::unavailable: {
        auto cl = static_cast<consistency>(r.u16());
        int32_t required = r.i32(), alive = r.i32();
        detail = " (consistency " + to_string(cl) + ": " + std::to_string(required) + " replicas required, " +
                 std::to_string(alive) + " alive)";
        break;
      }
      case error_code::write_timeout:
      case error_code::read_timeout:
      case error_code::read_failure:
      case error_code::write_failure:
      case error_code::cas_write_unknown: {
        auto cl = static_cast<consistency>(r.u16());
        int32_t received = r.i32(), blockfor = r.i32();
        detail = " (consistency " + to_string(cl) + ": " + std::to_string(received) + " of " +
                 std::to_string(blockfor) + " replicas answered";
        if (code == error_code::read_failure || code == error_code::write_failure) {
          int32_t failed = r.i32();  // v4: <numfailures>; v5: the <reasonmap>'s size, then its entries
          std::string reasons;
          if (version >= 5) {
            if (failed < 0 || static_cast<size_t>(failed) > r.remaining() / 3) r.malformed("bad failure reason map");
            for (int32_t i = 0; i < failed; ++i) {
              std::string_view addr = r.raw(r.u8());
              uint16_t reason = r.u16();
              reasons += std::string(i ? ", " : ": ") + format_inet(addr) + " reason " + std::to_string(reason);
            }
          }
          detail += ", " + std::to_string(failed) + " failed" + reasons;
        }
        if (code == error_code::write_timeout || code == error_code::write_failure) detail += ", write type " + r.string();
        detail += ")";
        break;
      }
      default: break;
    }
    std::string msg = "cassandra " + host + ": " + to_string(code) + ": " + text + detail;
    if (!context.empty()) msg += " [" + context + "]";
    switch (code) {
      case error_code::bad_credentials:
      case error_code::unauthorized: return std::make_exception_ptr(authentication_error(code, host, msg));
      case error_code::unavailable: return std::make_exception_ptr(unavailable_error(code, host, msg));
      case error_code::overloaded:
      case error_code::is_bootstrapping: return std::make_exception_ptr(overloaded_error(code, host, msg));
      case error_code::read_timeout:
      case error_code::write_timeout:
      case error_code::cas_write_unknown: return std::make_exception_ptr(timeout_error(code, host, msg));
      case error_code::read_failure:
      case error_code::write_failure:
      case error_code::function_failure:
      case error_code::cdc_write_failure: return std::make_exception_ptr(failure_error(code, host, msg));
      case error_code::syntax_error:
      case error_code::invalid:
      case error_code::config_error:
      case error_code::already_exists: return std::make_exception_ptr(query_error(code, host, msg));
      case error_code::unprepared: return std::make_exception_ptr(unprepared_error(code, host, msg));
      default: return std::make_exception_ptr(internal_server_error(code, host, msg));
    }
  } catch (...) {
    return std::current_exception();
  }
}

void write_query_parameters(byte_writer& w, const query_parameters& p, int16_t value_count, std::string_view values,
                            uint8_t version) {
  w.u16(static_cast<uint16_t>(p.level));
  uint8_t flags = 0;
  if (value_count > 0) flags |= 0x01;
  if (p.skip_metadata) flags |= 0x02;
  if (p.page_size > 0) flags |= 0x04;
  if (p.paging_state) flags |= 0x08;
  if (p.default_timestamp) flags |= 0x20;
  if (version >= 5) w.i32(flags);
  else w.u8(flags);
  if (value_count > 0) {
    w.i16(value_count);
    w.raw(values);
  }
  if (p.page_size > 0) w.i32(p.page_size);
  if (p.paging_state) w.bytes(*p.paging_state);
  if (p.default_timestamp) w.i64(*p.default_timestamp);
}

std::string quote_identifier(std::string_view name) {
  std::string s = "\"";
  for (char c : name) {
    if (c == '"') s += '"';
    s += c;
  }
  return s + "\"";
}

}  // namespace tug::io::cassandra
