// The Cassandra client without a server: framing, the notations, type decoding and encoding, error
// mapping, Murmur3 tokens, ring splits, and dead servers (refused, silent, garbage) under timeouts.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <set>
#include <random>
#include <thread>

#include "tug/io/cassandra/client.hpp"
#include "tug/io/cassandra/token.hpp"
#include "tug/io/cassandra/topology.hpp"
#include "tug/io/cassandra/types.hpp"
#include "tug/io/cassandra_source.hpp"

using namespace tug;
using namespace tug::io::cassandra;

namespace {
const std::string host = "test:9042";

std::string be32(int32_t v) {
  byte_writer w;
  w.i32(v);
  return w.out();
}

/// A Rows result body of one column of `type` holding `values` (nullopt = null).
std::string rows_body(type_code type, const std::vector<std::optional<std::string>>& values) {
  byte_writer w;
  w.i32(2);       // kind Rows
  w.i32(0x0001);  // global table spec
  w.i32(1);
  w.string("ks");
  w.string("t");
  w.string("c");
  w.u16(static_cast<uint16_t>(type));
  w.i32(static_cast<int32_t>(values.size()));
  for (auto& v : values) {
    if (v) w.bytes(*v);
    else w.bytes(std::nullopt);
  }
  return w.out();
}

table decode_one(type_code type, const std::vector<std::optional<std::string>>& values, type_options o = {}) {
  std::string body = rows_body(type, values);
  byte_reader r(body, host);
  rows_result rows = read_rows(r);
  cql_type t;
  t.code = type;
  return decode_rows(rows, {to_tug_type(t, "c", o)}, o, host);
}
}  // namespace

TEST(CassandraProtocol, FrameHeaderRoundTrip) {
  std::string f = encode_frame(opcode::query, 300, "abc");
  ASSERT_EQ(f.size(), header_size + 3);
  EXPECT_EQ(uint8_t(f[0]), 0x04);
  EXPECT_EQ(uint8_t(f[4]), 0x07);
  // the same bytes as a response
  f[0] = static_cast<char>(0x84);
  frame_header h = decode_header(reinterpret_cast<const uint8_t*>(f.data()), host);
  EXPECT_EQ(h.stream, 300);
  EXPECT_EQ(h.op, 0x07);
  EXPECT_EQ(h.length, 3);
  // a request frame, another version, a bad opcode, a negative length
  for (auto [byte, value] : {std::pair{0, 0x04}, {0, 0x85}, {4, 0x04}, {4, 0x30}, {5, 0x80}}) {
    std::string g = f;
    g[static_cast<size_t>(byte)] = static_cast<char>(value);
    EXPECT_THROW(decode_header(reinterpret_cast<const uint8_t*>(g.data()), host), connection_error) << byte << value;
  }
}

TEST(CassandraProtocol, V5EnvelopesCarryTheirVersion) {
  std::string f = encode_frame(opcode::execute, 7, "xy", flag_tracing, 5);
  EXPECT_EQ(uint8_t(f[0]), 0x05);
  f[0] = static_cast<char>(0x85);
  EXPECT_EQ(decode_header(reinterpret_cast<const uint8_t*>(f.data()), host, 5).stream, 7);
  EXPECT_THROW(decode_header(reinterpret_cast<const uint8_t*>(f.data()), host, 4), connection_error);
  // v5 flags of <query_parameters> are an [int]
  query_parameters p;
  p.page_size = 10;
  byte_writer w4, w5;
  write_query_parameters(w4, p, 0, {}, 4);
  write_query_parameters(w5, p, 0, {}, 5);
  EXPECT_EQ(w5.size(), w4.size() + 3);
  EXPECT_EQ(w5.out().substr(2, 4), std::string("\0\0\0\x04", 4));
}

TEST(CassandraProtocol, V5SegmentsRoundTripWithChecksums) {
  // CRC32 seeded with FA 2D 55 CA (zlib.crc32(data, zlib.crc32(bytes([0xFA, 0x2D, 0x55, 0xCA]))))
  EXPECT_EQ(segment_crc32("hello cassandra"), 0x5d5f79b5u);
  EXPECT_EQ(segment_crc32(""), 0x44777ed3u);
  std::mt19937_64 rng(21);
  auto random_bytes = [&](size_t n) {
    std::string s(n, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    return s;
  };
  // decodes a stream of segments back into its payloads, checking the self-contained flags
  auto decode_all = [&](const std::string& wire, bool lz4, size_t* segments, bool* compressed) {
    std::string out;
    size_t at = 0;
    *segments = 0;
    *compressed = false;
    while (at < wire.size()) {
      segment_header h = decode_segment_header(reinterpret_cast<const uint8_t*>(wire.data()) + at, lz4, host);
      at += segment_header_size(lz4);
      *compressed = *compressed || h.uncompressed_length != 0;
      out += decode_segment_payload(std::string_view(wire).substr(at, h.payload_length + 4), h, lz4, host);
      at += h.payload_length + 4;
      ++*segments;
      EXPECT_EQ(h.self_contained, wire.size() == at && *segments == 1);
    }
    return out;
  };
  for (bool lz4 : {false, true})
    for (size_t n : {size_t(0), size_t(1), size_t(9), max_segment_payload - 1, max_segment_payload,
                     max_segment_payload + 1, 3 * max_segment_payload + 17}) {
      for (bool text : {false, true}) {
        std::string payload = text ? std::string(n, 'a') : random_bytes(n);
        std::string wire = encode_segments(payload, lz4);
        size_t segments = 0;
        bool compressed = false;
        EXPECT_EQ(decode_all(wire, lz4, &segments, &compressed), payload) << n << " lz4 " << lz4;
        EXPECT_EQ(segments, std::max<size_t>(1, (n + max_segment_payload - 1) / max_segment_payload)) << n;
        // repetitive payloads compress; random ones go as they are
        if (lz4 && n > 100) EXPECT_EQ(compressed, text) << n;
        if (!lz4) EXPECT_EQ(wire.size(), n + segments * 10);
      }
    }
  // a flipped bit in a header or a payload is a clear error
  std::string wire = encode_segments("some envelope bytes", false);
  for (size_t byte : {size_t(0), size_t(4), size_t(10)}) {
    std::string bad = wire;
    bad[byte] = static_cast<char>(bad[byte] ^ 0x10);
    try {
      segment_header h = decode_segment_header(reinterpret_cast<const uint8_t*>(bad.data()), false, host);
      decode_segment_payload(std::string_view(bad).substr(6, h.payload_length + 4), h, false, host);
      ADD_FAILURE() << byte;
    } catch (const connection_error& e) {
      EXPECT_NE(std::string(e.what()).find(byte < 6 ? "CRC24" : "CRC32"), std::string::npos) << e.what();
    }
  }
  // v4 frame body compression
  std::string body(5000, 'z');
  std::string c = lz4_compress_body(body);
  EXPECT_LT(c.size(), body.size());
  EXPECT_EQ(lz4_decompress_body(c, host), body);
  EXPECT_THROW(lz4_decompress_body(c.substr(0, c.size() / 2), host), connection_error);
}

TEST(CassandraProtocol, ReaderChecksLengths) {
  byte_writer w;
  w.string("hello");
  w.i32(10);  // [bytes] of 10 with 2 left
  w.raw("xy");
  byte_reader r(w.out(), host);
  EXPECT_EQ(r.string(), "hello");
  try {
    r.bytes();
    FAIL();
  } catch (const connection_error& e) {
    EXPECT_NE(std::string(e.what()).find("test:9042"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("malformed"), std::string::npos);
  }
}

TEST(CassandraProtocol, VarintEncodingOfTheSpec) {
  // section 6.23's examples
  std::vector<std::pair<int, std::string>> cases = {{0, "\x00"}, {1, "\x01"},       {127, "\x7f"},     {128, std::string("\x00\x80", 2)},
                                                    {129, std::string("\x00\x81", 2)}, {-1, "\xff"}, {-128, "\x80"}, {-129, "\xff\x7f"}};
  for (auto& [v, enc] : cases) EXPECT_EQ(encode_varint(v), std::string(enc.data(), enc.empty() ? 1 : enc.size())) << v;
  EXPECT_EQ(encode_varint(0).size(), 1u);
}

TEST(CassandraProtocol, DecodesIntegersAndNulls) {
  auto t = decode_one(type_code::int_, {be32(-5), std::nullopt, be32(2147483647), std::string()});
  ASSERT_EQ(t.num_rows(), 4);
  EXPECT_EQ(t[0].type(), data_type(type_id::int32));
  EXPECT_EQ(t[0].value<int32_t>(0), -5);
  EXPECT_TRUE(t[0].is_null(1));
  EXPECT_EQ(t[0].value<int32_t>(2), 2147483647);
  EXPECT_TRUE(t[0].is_null(3));  // an empty legacy value reads as null
  auto b = decode_one(type_code::bigint, {std::string("\xff\xff\xff\xff\xff\xff\xff\xfe", 8)});
  EXPECT_EQ(b[0].value<int64_t>(0), -2);
  auto s = decode_one(type_code::smallint, {std::string("\x80\x00", 2)});
  EXPECT_EQ(s[0].value<int16_t>(0), -32768);
  auto ti = decode_one(type_code::tinyint, {std::string("\x7f", 1)});
  EXPECT_EQ(ti[0].value<int8_t>(0), 127);
  // a wrong width names the column
  EXPECT_THROW(decode_one(type_code::int_, {std::string("\x01\x02", 2)}), io_error);
}

TEST(CassandraProtocol, DecodesVarints) {
  auto t = decode_one(type_code::varint, {std::string("\x00\x80", 2), std::string("\xff\x7f", 2),
                                          std::string("\x7f\xff\xff\xff\xff\xff\xff\xff", 8)});
  EXPECT_EQ(t[0].value<int64_t>(0), 128);
  EXPECT_EQ(t[0].value<int64_t>(1), -129);
  EXPECT_EQ(t[0].value<int64_t>(2), std::numeric_limits<int64_t>::max());
  // 2^63 does not fit: an error naming the column
  try {
    decode_one(type_code::varint, {std::string("\x00\x80\x00\x00\x00\x00\x00\x00\x00", 9)});
    FAIL();
  } catch (const io_error& e) {
    EXPECT_NE(std::string(e.what()).find("'c'"), std::string::npos) << e.what();
  }
}

TEST(CassandraProtocol, DecodesFloatsBooleansAndTemporal) {
  byte_writer w;
  float f = 1.5f;
  uint32_t u;
  std::memcpy(&u, &f, 4);
  w.i32(static_cast<int32_t>(u));
  auto t = decode_one(type_code::float_, {w.out()});
  EXPECT_EQ(t[0].value<float>(0), 1.5f);
  byte_writer d;
  double dv = -0.25;
  uint64_t du;
  std::memcpy(&du, &dv, 8);
  d.i64(static_cast<int64_t>(du));
  EXPECT_EQ(decode_one(type_code::double_, {d.out()})[0].value<double>(0), -0.25);
  auto b = decode_one(type_code::boolean, {std::string("\x00", 1), std::string("\x02", 1)});
  EXPECT_FALSE(b[0].value<bool>(0));
  EXPECT_TRUE(b[0].value<bool>(1));
  // date: 2^31 is 1970-01-01
  auto dt = decode_one(type_code::date, {be32(static_cast<int32_t>(0x80000000u + 19000)), be32(static_cast<int32_t>(0x80000000u - 1))});
  EXPECT_EQ(dt[0].type(), data_type(type_id::date32));
  EXPECT_EQ(dt[0].value<int32_t>(0), 19000);
  EXPECT_EQ(dt[0].value<int32_t>(1), -1);
  byte_writer ts;
  ts.i64(1700000000123);
  auto tt = decode_one(type_code::timestamp, {ts.out()});
  EXPECT_EQ(tt[0].type(), timestamp(time_unit::ms));
  EXPECT_EQ(tt[0].value<int64_t>(0), 1700000000123);
  byte_writer tm;
  tm.i64(3600LL * 1000000000);
  auto tn = decode_one(type_code::time, {tm.out()});
  EXPECT_EQ(tn[0].type(), duration(time_unit::ns));
  EXPECT_EQ(tn[0].value<int64_t>(0), 3600LL * 1000000000);
}

TEST(CassandraProtocol, DecodesDecimalsToTheScale) {
  auto dec = [](int32_t scale, __int128 unscaled) { return be32(scale) + encode_varint(unscaled); };
  type_options o;
  o.decimal_scale = 4;
  auto t = decode_one(type_code::decimal, {dec(2, 12345), dec(0, -7), dec(6, 1230000)}, o);
  EXPECT_EQ(t[0].type(), decimal(38, 4));
  EXPECT_TRUE(t[0].value<__int128>(0) == 1234500);   // 123.45
  EXPECT_TRUE(t[0].value<__int128>(1) == -70000);    // -7
  EXPECT_TRUE(t[0].value<__int128>(2) == 12300);     // 1.230000
  // digits beyond the scale are an error, never rounded
  EXPECT_THROW(decode_one(type_code::decimal, {dec(6, 1234567)}, o), io_error);
  // scales at the ends of int32 (found by the fuzz target: the difference overflowed an int)
  EXPECT_THROW(decode_one(type_code::decimal, {dec(-2147483646, 5)}, o), io_error);
  EXPECT_THROW(decode_one(type_code::decimal, {dec(2147483647, 5)}, o), io_error);
}

TEST(CassandraProtocol, RowCountsBeyondTheBodyAreMalformed) {
  // found by the fuzz target: counts that made decoders reserve gigabytes before failing
  auto rows = [](int32_t flags, int32_t columns, int32_t rows_count, bool spec) {
    byte_writer w;
    w.i32(2);
    w.i32(flags);
    w.i32(columns);
    if (spec) {
      w.string("ks");
      w.string("t");
      w.string("c");
      w.u16(0x0009);
    }
    w.i32(rows_count);
    w.bytes(be32(1));
    return w.out();
  };
  auto read = [](const std::string& body) {
    byte_reader r(body, host);
    return read_rows(r);
  };
  EXPECT_EQ(read(rows(0x0001, 1, 1, true)).rows_count, 1);
  EXPECT_EQ(read(rows(0x0001, 1, 2, true)).rows_count, 2);  // 8 bytes: two null-free values could fit
  EXPECT_THROW(read(rows(0x0001, 1, 3, true)), connection_error);  // 3 rows of 1 column in 8 bytes
  EXPECT_THROW(read(rows(0x0000, 0, 40596224, false)), connection_error);  // rows without columns
  EXPECT_THROW(read(rows(0x0004, 16777216, 1, false)), connection_error);  // No_metadata, 16M columns
  EXPECT_EQ(read(rows(0x0004, 1, 0, false)).rows_count, 0);
}

TEST(CassandraProtocol, DecodesTextUuidInetBlob) {
  auto s = decode_one(type_code::varchar, {std::string("héllo"), std::string(), std::nullopt});
  EXPECT_EQ(s[0].string(0), "héllo");
  EXPECT_EQ(s[0].string(1), "");
  EXPECT_TRUE(s[0].is_null(2));
  std::string uuid_bytes("\x12\x3e\x45\x67\xe8\x9b\x12\xd3\xa4\x56\x42\x66\x14\x17\x40\x00", 16);
  EXPECT_EQ(decode_one(type_code::uuid, {uuid_bytes})[0].string(0), "123e4567-e89b-12d3-a456-426614174000");
  EXPECT_EQ(decode_one(type_code::inet, {std::string("\x7f\x00\x00\x01", 4)})[0].string(0), "127.0.0.1");
  std::string v6(16, '\0');
  v6[15] = 1;
  EXPECT_EQ(decode_one(type_code::inet, {v6})[0].string(0), "::1");
  EXPECT_EQ(decode_one(type_code::blob, {std::string("\x00\xff\x10", 3)})[0].string(0), "0x00ff10");
}

TEST(CassandraProtocol, CollectionsAreNamedErrors) {
  cql_type list{type_code::list, "", {cql_type{type_code::int_}}, {}};
  try {
    to_tug_type(list, "column 'tags' of ks.t", {});
    FAIL();
  } catch (const not_implemented_error& e) {
    EXPECT_NE(std::string(e.what()).find("column 'tags' of ks.t"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("list<int>"), std::string::npos);
  }
  EXPECT_EQ(parse_type_name("frozen<map<int, text>>").to_string(), "map<int, text>");
  EXPECT_EQ(parse_type_name("text").code, type_code::varchar);
  EXPECT_EQ(parse_type_name("my_udt").code, type_code::udt);
}

TEST(CassandraProtocol, EncodesValuesBackForEveryMappedType) {
  // each value decoded from its CQL bytes and encoded again gives the same bytes
  struct tc {
    type_code type;
    std::string bytes;
  };
  std::string uuid_bytes("\x12\x3e\x45\x67\xe8\x9b\x12\xd3\xa4\x56\x42\x66\x14\x17\x40\x00", 16);
  byte_writer big;
  big.i64(-123456789012345);
  std::vector<tc> cases = {{type_code::int_, be32(-42)},
                           {type_code::bigint, big.out()},
                           {type_code::smallint, std::string("\x12\x34", 2)},
                           {type_code::tinyint, std::string("\xfe", 1)},
                           {type_code::varint, std::string("\x00\x80", 2)},
                           {type_code::boolean, std::string("\x01", 1)},
                           {type_code::varchar, "text"},
                           {type_code::ascii, "abc"},
                           {type_code::uuid, uuid_bytes},
                           {type_code::timeuuid, std::string("\x12\x3e\x45\x67\xe8\x9b\x11\xd3\xa4\x56\x42\x66\x14\x17\x40\x00", 16)},
                           {type_code::inet, std::string("\x0a\x00\x00\x07", 4)},
                           {type_code::blob, std::string("\x00\x01\xff", 3)},
                           {type_code::date, be32(static_cast<int32_t>(0x80000000u + 5))},
                           {type_code::timestamp, big.out()},
                           {type_code::decimal, be32(10) + std::string("\x30\x39", 2)}};
  byte_writer f32;
  f32.i32(0x3fc00000);
  cases.push_back({type_code::float_, f32.out()});
  byte_writer tm;
  tm.i64(86399999999999);
  cases.push_back({type_code::time, tm.out()});
  for (auto& c : cases) {
    table t = decode_one(c.type, {c.bytes});
    cql_type ct;
    ct.code = c.type;
    ASSERT_TRUE(can_write(t[0].type(), ct)) << ct.to_string();
    byte_writer w;
    encode_value(w, t[0], 0, ct, "c");
    EXPECT_EQ(w.out(), be32(static_cast<int32_t>(c.bytes.size())) + c.bytes) << ct.to_string();
  }
  // widening is allowed, narrowing is not
  EXPECT_TRUE(can_write(type_id::int32, cql_type{type_code::bigint}));
  EXPECT_FALSE(can_write(type_id::int64, cql_type{type_code::int_}));
  EXPECT_FALSE(can_write(type_id::string, cql_type{type_code::int_}));
  // a string that is no uuid names the column and the row
  auto bad = make_string_column({std::string("not-a-uuid")});
  byte_writer w;
  try {
    encode_value(w, bad, 0, cql_type{type_code::uuid}, "id");
    FAIL();
  } catch (const invalid_argument_error& e) {
    EXPECT_NE(std::string(e.what()).find("'id' row 0"), std::string::npos) << e.what();
  }
}

TEST(CassandraProtocol, ErrorCodesMapToTypedErrors) {
  auto body = [](error_code c, const std::string& extra) {
    byte_writer w;
    w.i32(static_cast<int32_t>(c));
    w.string("boom");
    w.raw(extra);
    return w.out();
  };
  byte_writer unav;
  unav.u16(4);
  unav.i32(3);
  unav.i32(1);
  byte_writer wt;
  wt.u16(6);
  wt.i32(1);
  wt.i32(2);
  wt.string("SIMPLE");
  auto check = [&]<typename E>(error_code c, const std::string& extra, bool retryable) {
    auto e = decode_error(body(c, extra), 0, host, "SELECT 1");
    try {
      std::rethrow_exception(e);
    } catch (const E& x) {
      EXPECT_EQ(x.code(), c);
      EXPECT_EQ(x.retryable(), retryable);
      std::string m = x.what();
      EXPECT_NE(m.find(host), std::string::npos) << m;
      EXPECT_NE(m.find("boom"), std::string::npos) << m;
      EXPECT_NE(m.find("SELECT 1"), std::string::npos) << m;
    } catch (...) {
      ADD_FAILURE() << "wrong class for " << to_string(c);
    }
  };
  check.template operator()<internal_server_error>(error_code::server_error, "", false);
  check.template operator()<internal_server_error>(error_code::protocol_error, "", false);
  check.template operator()<authentication_error>(error_code::bad_credentials, "", false);
  check.template operator()<unavailable_error>(error_code::unavailable, unav.out(), true);
  check.template operator()<overloaded_error>(error_code::overloaded, "", true);
  check.template operator()<overloaded_error>(error_code::is_bootstrapping, "", true);
  check.template operator()<internal_server_error>(error_code::truncate_error, "", false);
  check.template operator()<timeout_error>(error_code::write_timeout, wt.out(), true);
  byte_writer rt;  // Read_timeout: <cl><received><blockfor><data_present>
  rt.u16(1);
  rt.i32(0);
  rt.i32(1);
  rt.u8(0);
  check.template operator()<timeout_error>(error_code::read_timeout, rt.out(), true);
  byte_writer rf;  // Read_failure (v4): <cl><received><blockfor><numfailures><data_present>
  rf.u16(1);
  rf.i32(0);
  rf.i32(1);
  rf.i32(1);
  rf.u8(0);
  check.template operator()<failure_error>(error_code::read_failure, rf.out(), false);
  byte_writer wf;  // Write_failure (v4): <cl><received><blockfor><numfailures><write_type>
  wf.u16(6);
  wf.i32(0);
  wf.i32(2);
  wf.i32(1);
  wf.string("BATCH");
  check.template operator()<failure_error>(error_code::write_failure, wf.out(), false);
  byte_writer ff;  // Function_failure: <keyspace><function><arg_types>
  ff.string("ks");
  ff.string("f");
  ff.u16(0);
  check.template operator()<failure_error>(error_code::function_failure, ff.out(), false);
  // the two codes Cassandra 4.0 added (ExceptionCode.java): CDC_write_failure with no details,
  // CAS_write_unknown (v5) with <cl><received><blockfor>
  check.template operator()<failure_error>(error_code::cdc_write_failure, "", false);
  byte_writer cas;
  cas.u16(8);  // SERIAL
  cas.i32(1);
  cas.i32(2);
  check.template operator()<timeout_error>(error_code::cas_write_unknown, cas.out(), false);
  try {
    std::rethrow_exception(decode_error(body(error_code::cas_write_unknown, cas.out()), 0, host, "", 5));
  } catch (const timeout_error& e) {
    EXPECT_NE(std::string(e.what()).find("CAS_write_unknown: boom (consistency SERIAL: 1 of 2 replicas answered)"),
              std::string::npos)
        << e.what();
  }
  check.template operator()<query_error>(error_code::syntax_error, "", false);
  check.template operator()<authentication_error>(error_code::unauthorized, "", false);
  check.template operator()<query_error>(error_code::invalid, "", false);
  check.template operator()<query_error>(error_code::config_error, "", false);
  check.template operator()<query_error>(error_code::already_exists, "", false);
  check.template operator()<unprepared_error>(error_code::unprepared, "", false);
  // the details of Unavailable are in the message
  try {
    std::rethrow_exception(decode_error(body(error_code::unavailable, unav.out()), 0, host, ""));
  } catch (const unavailable_error& e) {
    EXPECT_NE(std::string(e.what()).find("QUORUM: 3 replicas required, 1 alive"), std::string::npos) << e.what();
  }
}

TEST(CassandraProtocol, RetryPolicyKeepsWritesThatMayHaveBeenAppliedFromRunningTwice) {
  const std::string host = "127.0.0.1:9042";
  auto error_of = [&](error_code c) { return server_error(c, host, "x"); };
  // the coordinator did not run the request: safe to send again, idempotent or not
  for (auto c : {error_code::unavailable, error_code::overloaded, error_code::is_bootstrapping}) {
    EXPECT_TRUE(error_of(c).retryable(true)) << to_string(c);
    EXPECT_TRUE(error_of(c).retryable(false)) << to_string(c);
  }
  EXPECT_TRUE(error_of(error_code::read_timeout).retryable(false));  // reads change nothing
  // a write that timed out may have been applied: again only when applying it twice gives the same
  // result (a plain INSERT; not IF NOT EXISTS)
  EXPECT_TRUE(error_of(error_code::write_timeout).retryable(true));
  EXPECT_FALSE(error_of(error_code::write_timeout).retryable(false));
  for (auto c : {error_code::cas_write_unknown, error_code::cdc_write_failure, error_code::write_failure,
                 error_code::read_failure, error_code::invalid, error_code::server_error, error_code::unprepared,
                 error_code::bad_credentials}) {
    EXPECT_FALSE(error_of(c).retryable(true)) << to_string(c);
  }
  // back-off: retry_delay_ms doubled at every try, the doubling bounded
  client_options o;
  o.retry_delay_ms = 100;
  EXPECT_EQ(retry_backoff(o, 0).count(), 100);
  EXPECT_EQ(retry_backoff(o, 1).count(), 200);
  EXPECT_EQ(retry_backoff(o, 3).count(), 800);
  EXPECT_EQ(retry_backoff(o, 10).count(), 102400);
  EXPECT_EQ(retry_backoff(o, 40).count(), 102400);
  o.retry_delay_ms = 0;
  EXPECT_EQ(retry_backoff(o, 5).count(), 0);
}

TEST(CassandraProtocol, Murmur3TokensOfCassandra) {
  // token() values that Cassandra 5.0.4 returned for these keys (SELECT k, token(k) ...); the live test
  // compares many more
  EXPECT_EQ(murmur3_token(be32(0)), -3485513579396041028LL);            // int 0
  EXPECT_EQ(murmur3_token(be32(1)), -4069959284402364209LL);            // int 1
  EXPECT_EQ(murmur3_token(be32(-1)), 7297452126230313552LL);            // int -1: tail bytes >= 0x80
  EXPECT_EQ(murmur3_token(be32(42)), -7160136740246525330LL);           // int 42
  EXPECT_EQ(murmur3_token(be32(2147483647)), -765994672030311617LL);    // int max
  EXPECT_EQ(murmur3_token("hello"), -3758069500696749310LL);            // text
  EXPECT_EQ(murmur3_token("\xc3\xa9t\xc3\xa9"), 1240720149139704002LL);  // text 'été' (UTF-8 bytes >= 0x80)
  EXPECT_EQ(murmur3_token("abcdefghijklmnopq"), 8459014091212432983LL); // a 16-byte block and a tail
  // composite key ((a int, b text)) = (7, 'x')
  std::string a = be32(7);
  EXPECT_EQ(murmur3_token(routing_key({a, "x"})), 6571373876230807724LL);
}

TEST(CassandraProtocol, RoutingKeyOfCompositeKeys) {
  EXPECT_EQ(routing_key({"ab"}), "ab");
  EXPECT_EQ(routing_key({"ab", "c"}), std::string("\x00\x02" "ab\x00\x00\x01" "c\x00", 9));
}

TEST(CassandraProtocol, RingSplitsCoverEveryToken) {
  for (int n : {1, 2, 3, 16, 1024}) {
    auto r = split_ring(n);
    ASSERT_EQ(static_cast<int>(r.size()), n);
    EXPECT_EQ(r.front().start, std::numeric_limits<int64_t>::min());
    EXPECT_EQ(r.back().end, std::numeric_limits<int64_t>::max());
    for (size_t i = 1; i < r.size(); ++i) {
      EXPECT_EQ(r[i].start, r[i - 1].end);
      EXPECT_LT(r[i].start, r[i].end);
    }
  }
  EXPECT_THROW(split_ring(0), invalid_argument_error);
}

TEST(CassandraProtocol, RankSharesOfTheRingAndLocalReplicas) {
  // intersect: the tokens both (start, end] ranges hold
  auto x = intersect({-10, 10}, {0, 20});
  ASSERT_TRUE(x);
  EXPECT_EQ(x->start, 0);
  EXPECT_EQ(x->end, 10);
  EXPECT_FALSE(intersect({-10, 0}, {0, 20}));  // 0 is the first's end and not in the second
  EXPECT_FALSE(intersect({5, 6}, {7, 9}));
  x = intersect({std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}, {1, 2});
  ASSERT_TRUE(x);
  EXPECT_EQ(x->start, 1);
  EXPECT_EQ(x->end, 2);
  // a rank's share of a range: the parts of each rank's split_ring slice cover it once
  for (int size : {1, 2, 3, 7}) {
    auto shares = split_ring(size);
    for (token_range r : {token_range{-5, 5}, token_range{std::numeric_limits<int64_t>::min(), 0},
                          token_range{100, std::numeric_limits<int64_t>::max()}}) {
      __int128 covered = 0;
      int64_t last = r.start;
      for (auto& s : shares)
        if (auto part = intersect(r, s)) {
          EXPECT_EQ(part->start, last);  // contiguous, in rank order
          covered += static_cast<__int128>(part->end) - part->start;
          last = part->end;
        }
      EXPECT_EQ(last, r.end);
      EXPECT_TRUE(covered == static_cast<__int128>(r.end) - r.start);
    }
  }
  // replicas on this machine first, else all of them
  std::vector<std::string> replicas = {"10.0.0.7:9042", "127.0.0.1:9042", "[::1]:9042"};
  EXPECT_EQ(io::local_replicas_first(replicas, {"127.0.0.1"}), std::vector<std::string>{"127.0.0.1:9042"});
  EXPECT_EQ(io::local_replicas_first(replicas, {"::1", "10.0.0.7"}),
            (std::vector<std::string>{"10.0.0.7:9042", "[::1]:9042"}));
  EXPECT_EQ(io::local_replicas_first(replicas, {"192.168.1.1"}), replicas);
  EXPECT_EQ(io::local_replicas_first({}, {"127.0.0.1"}), std::vector<std::string>{});
  auto mine = io::local_addresses();
  EXPECT_NE(std::find(mine.begin(), mine.end(), "127.0.0.1"), mine.end());
}

TEST(CassandraProtocol, TableBytesFromOneNodesSizeEstimates) {
  using io::size_estimate;
  const std::string lo = std::to_string(std::numeric_limits<int64_t>::min());
  const std::string hi = std::to_string(std::numeric_limits<int64_t>::max());
  EXPECT_EQ(io::estimated_table_bytes({}, "ks.t"), 0);
  // ranges covering the whole ring (a single node): the bytes as they are
  EXPECT_DOUBLE_EQ(io::estimated_table_bytes({{lo, "0", 100, 10}, {"0", hi, 100, 30}}, "ks.t"), 4000);
  EXPECT_DOUBLE_EQ(io::estimated_table_bytes({{"5", "5", 100, 10}}, "ks.t"), 1000);  // start == end: all
  // a node that owns a quarter of the ring holds about a quarter of the table
  const std::string q = std::to_string(std::numeric_limits<int64_t>::min() / 2);  // -2^62: (-2^63, -2^62]
  EXPECT_NEAR(io::estimated_table_bytes({{lo, q, 50, 20}}, "ks.t"), 4000, 1e-6);
  // a wrapping range, (2^62, -2^62]: half the ring
  const std::string w = std::to_string(std::numeric_limits<int64_t>::max() / 2 + 1);
  EXPECT_NEAR(io::estimated_table_bytes({{w, q, 10, 100}}, "ks.t"), 2000, 1e-6);
  // nothing known (no partitions yet): 0, whatever the ranges
  EXPECT_EQ(io::estimated_table_bytes({{lo, q, 0, 0}}, "ks.t"), 0);
  try {
    io::estimated_table_bytes({{"x1", "0", 1, 1}}, "ks.t");
    FAIL();
  } catch (const io_error& e) {
    EXPECT_NE(std::string(e.what()).find("ks.t"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'x1'"), std::string::npos) << e.what();
  }
}

TEST(CassandraTopology, ReplicationStrategiesParse) {
  auto s = replication_strategy::parse({{"class", "org.apache.cassandra.locator.SimpleStrategy"}, {"replication_factor", "3"}}, "ks");
  EXPECT_EQ(s.strategy, replication_strategy::kind::simple);
  EXPECT_EQ(s.factor, 3);
  s = replication_strategy::parse({{"class", "NetworkTopologyStrategy"}, {"dc1", "2"}, {"dc2", "3/1"}}, "ks");
  EXPECT_EQ(s.strategy, replication_strategy::kind::network_topology);
  EXPECT_EQ(s.per_datacenter, (std::map<std::string, int>{{"dc1", 2}, {"dc2", 3}}));
  EXPECT_EQ(replication_strategy::parse({{"class", "org.apache.cassandra.locator.LocalStrategy"}}, "system").strategy,
            replication_strategy::kind::local);
  try {
    replication_strategy::parse({{"class", "SimpleStrategy"}, {"replication_factor", "x"}}, "my_ks");
    FAIL();
  } catch (const invalid_argument_error& e) {
    EXPECT_NE(std::string(e.what()).find("my_ks"), std::string::npos);
  }
  EXPECT_THROW(replication_strategy::parse({{"class", "com.example.Odd"}}, "ks"), invalid_argument_error);
}

TEST(CassandraTopology, RingRangesAndReplicas) {
  // a: -100, 200; b: 0; c: 100 (dc2)
  token_ring ring({{"a:1", "dc1", "r", {200, -100}}, {"b:1", "dc1", "r", {0}}, {"c:1", "dc2", "r", {100}}});
  ASSERT_EQ(ring.ranges().size(), 5u);  // (min,-100] (-100,0] (0,100] (100,200] (200,max]
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  std::vector<std::pair<int64_t, int64_t>> bounds;
  std::vector<size_t> owners;
  for (auto& r : ring.ranges()) bounds.emplace_back(r.tokens.start, r.tokens.end), owners.push_back(r.owner);
  EXPECT_EQ(bounds, (std::vector<std::pair<int64_t, int64_t>>{{lo, -100}, {-100, 0}, {0, 100}, {100, 200}, {200, hi}}));
  EXPECT_EQ(owners, (std::vector<size_t>{0, 1, 2, 0, 0}));  // the wrapping range belongs to the lowest token's node
  EXPECT_EQ(ring.range_of(-100), 0u);
  EXPECT_EQ(ring.range_of(-99), 1u);
  EXPECT_EQ(ring.range_of(150), 3u);
  EXPECT_EQ(ring.range_of(hi), 4u);
  auto at = [&](const std::vector<std::vector<size_t>>& reps, int64_t t) { return reps[ring.ranges()[ring.range_of(t)].position]; };
  replication_strategy rf2;
  rf2.factor = 2;
  auto simple = ring.replicas_by_position(rf2);
  EXPECT_EQ(at(simple, -150), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(at(simple, 50), (std::vector<size_t>{2, 0}));
  EXPECT_EQ(at(simple, 150), (std::vector<size_t>{0, 1}));  // 200 (a), then -100 (a again, skipped), then 0 (b)
  rf2.factor = 5;  // more than the nodes: every node once
  EXPECT_EQ(at(ring.replicas_by_position(rf2), 10), (std::vector<size_t>{2, 0, 1}));
  replication_strategy nts;
  nts.strategy = replication_strategy::kind::network_topology;
  nts.per_datacenter = {{"dc1", 1}, {"dc2", 1}};
  auto by_dc = ring.replicas_by_position(nts);
  EXPECT_EQ(at(by_dc, -50), (std::vector<size_t>{1, 2}));  // b (dc1), then c (dc2)
  EXPECT_EQ(at(by_dc, 150), (std::vector<size_t>{0, 2}));
  replication_strategy local;
  local.strategy = replication_strategy::kind::local;
  EXPECT_TRUE(at(ring.replicas_by_position(local), 0).empty());
  EXPECT_THROW(token_ring({{"a:1", "", "", {5}}, {"b:1", "", "", {5}}}), invalid_argument_error);
  EXPECT_THROW(token_ring({{"a:1", "", "", {}}}), invalid_argument_error);
}

TEST(CassandraTopology, SplitsFollowReplicaSets) {
  std::mt19937_64 rng(5);
  std::vector<node_info> nodes;
  for (int i = 0; i < 4; ++i) {
    node_info n{"n" + std::to_string(i) + ":1", "dc", "r", {}};
    for (int t = 0; t < 16; ++t) n.tokens.push_back(static_cast<int64_t>(rng()));
    nodes.push_back(n);
  }
  token_ring ring(nodes);
  for (int rf : {1, 2, 3}) {
    replication_strategy s;
    s.factor = rf;
    auto reps = ring.replicas_by_position(s);
    for (int n : {1, 2, 7, 64, 1000}) {
      auto splits = plan_splits(ring, s, n);
      std::set<std::vector<size_t>> sets;
      std::vector<token_range> all;
      for (auto& sp : splits) {
        sets.insert(sp.replicas);
        EXPECT_EQ(static_cast<int>(sp.replicas.size()), rf);
        for (auto& r : sp.ranges) {
          ASSERT_LT(r.start, r.end);
          all.push_back(r);
          for (int64_t t : {r.start + 1, r.end}) EXPECT_EQ(reps[ring.ranges()[ring.range_of(t)].position], sp.replicas);
        }
      }
      // one split per replica set at least, about n in all
      EXPECT_GE(splits.size(), sets.size());
      EXPECT_LE(static_cast<double>(splits.size()), std::max<double>(n, static_cast<double>(sets.size())) * 1.1 + sets.size());
      if (n >= 64) EXPECT_GE(static_cast<double>(splits.size()), n * 0.9);
      std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.start < b.start; });
      EXPECT_EQ(all.front().start, std::numeric_limits<int64_t>::min());
      EXPECT_EQ(all.back().end, std::numeric_limits<int64_t>::max());
      for (size_t i = 1; i < all.size(); ++i) ASSERT_EQ(all[i].start, all[i - 1].end);
      for (size_t i = 1; i < splits.size(); ++i) EXPECT_LT(splits[i - 1].ranges[0].start, splits[i].ranges[0].start);
    }
  }
  // no ring: the even split, no replicas
  auto even = plan_splits(token_ring(), replication_strategy{}, 7);
  ASSERT_EQ(even.size(), 7u);
  EXPECT_TRUE(even[3].replicas.empty());
  EXPECT_THROW(plan_splits(ring, replication_strategy{}, 0), invalid_argument_error);
}

TEST(CassandraTopology, CollectionsOfSystemTablesDecode) {
  byte_writer w;
  w.i32(2);
  w.bytes("-5");
  w.bytes("77");
  EXPECT_EQ(decode_text_collection(w.out(), host), (std::vector<std::string>{"-5", "77"}));
  byte_writer m;
  m.i32(1);
  m.bytes("class");
  m.bytes("SimpleStrategy");
  EXPECT_EQ(decode_text_map(m.out(), host), (std::map<std::string, std::string>{{"class", "SimpleStrategy"}}));
  // a count larger than the value, a truncated element: errors naming the host
  byte_writer bad;
  bad.i32(1000000);
  EXPECT_THROW(decode_text_collection(bad.out(), host), connection_error);
  std::string cut = w.out().substr(0, 9);
  EXPECT_THROW(decode_text_collection(cut, host), connection_error);
  EXPECT_THROW(decode_text_map(cut, host), connection_error);
  byte_writer v;
  v.bytes("k");
  v.bytes(std::nullopt);
  auto vals = split_values(2, v.out());
  ASSERT_EQ(vals.size(), 2u);
  EXPECT_EQ(*vals[0], "k");
  EXPECT_FALSE(vals[1]);
}

TEST(CassandraProtocol, FuzzedBodiesGiveErrorsNotCrashes) {
  std::mt19937 rng(7);
  std::string good = rows_body(type_code::varchar, {std::string("a"), std::nullopt, std::string("bcd")});
  int errors = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string b = good;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) b[rng() % b.size()] = static_cast<char>(rng());
    if (rng() % 3 == 0) b.resize(rng() % b.size());
    try {
      byte_reader r(b, host);
      rows_result rows = read_rows(r);
      std::vector<data_type> types;
      for (auto& c : rows.metadata.columns) types.push_back(to_tug_type(c.type, c.name, {}));
      decode_rows(rows, types, {}, host);
    } catch (const tug::error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
}

namespace {
/// A listening socket on a free loopback port that never accepts (the kernel completes the TCP
/// handshake, nothing answers).
struct silent_server {
  int fd = -1;
  int port = 0;
  silent_server() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd, 16);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~silent_server() { ::close(fd); }
};
}  // namespace

TEST(CassandraDeadServer, ConnectionRefusedIsAClearError) {
  int port;
  {
    silent_server s;  // a port that was free, closed again
    port = s.port;
  }
  client_options o;
  o.contact_points = {"127.0.0.1:" + std::to_string(port)};
  o.connect_timeout_ms = 2000;
  auto t0 = std::chrono::steady_clock::now();
  try {
    session s(o);
    FAIL();
  } catch (const connection_error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << m;
    EXPECT_NE(m.find("refused"), std::string::npos) << m;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

TEST(CassandraDeadServer, SilentServerTimesOut) {
  silent_server srv;
  client_options o;
  o.contact_points = {"127.0.0.1"};
  o.port = srv.port;
  o.connect_timeout_ms = 300;
  // negotiating (OPTIONS first), or v4 at once (STARTUP first)
  for (int version : {0, 4}) {
    o.protocol_version = version;
    auto t0 = std::chrono::steady_clock::now();
    try {
      session s(o);
      FAIL();
    } catch (const connection_error& e) {
      std::string m = e.what();
      EXPECT_NE(m.find(version ? "no answer to STARTUP within 300 ms" : "no answer to OPTIONS within 300 ms"),
                std::string::npos)
          << m;
      EXPECT_NE(m.find("127.0.0.1:" + std::to_string(srv.port)), std::string::npos) << m;
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  }
}

TEST(CassandraDeadServer, GarbageAnswerIsAProtocolError) {
  silent_server srv;
  std::thread t([&] {
    int c = ::accept(srv.fd, nullptr, nullptr);
    char buf[64];
    ::recv(c, buf, sizeof buf, 0);
    const char http[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
    ::send(c, http, sizeof http - 1, MSG_NOSIGNAL);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::close(c);
  });
  client_options o;
  o.port = srv.port;
  o.connect_timeout_ms = 3000;
  try {
    session s(o);
    ADD_FAILURE();
  } catch (const connection_error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("protocol version byte 0x48"), std::string::npos) << m;
  }
  t.join();
}
