// A libFuzzer-style target for the Cassandra response decoder: the bytes are one response frame (9-byte
// header, then the body) as a node would send it, decoded by every function that reads server bytes:
// the header, the flags' prefix (tracing id, warnings, custom payload), ERROR bodies, RESULT bodies
// (Rows metadata and values into columns, Prepared, Set_keyspace, Schema_change), and the collections
// of the system tables. Malformed input must give a tug::error; any other exception, a crash or a
// sanitizer report is a bug. Built with libFuzzer under clang, else driven by fuzz_driver.cpp.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "tug/io/cassandra/protocol.hpp"
#include "tug/io/cassandra/topology.hpp"
#include "tug/io/cassandra/types.hpp"

namespace cq = tug::io::cassandra;

namespace {

void decode_frame(const uint8_t* data, size_t size) {
  static const std::string host = "fuzz:9042";
  // v5 segments around envelopes: a header's CRC24, the payload's CRC32, lz4 blocks
  for (bool lz4 : {false, true}) {
    if (size < cq::segment_header_size(lz4)) continue;
    try {
      cq::segment_header sh = cq::decode_segment_header(data, lz4, host);
      std::string_view rest(reinterpret_cast<const char*>(data) + cq::segment_header_size(lz4),
                            size - cq::segment_header_size(lz4));
      if (rest.size() >= sh.payload_length + size_t(4))
        cq::decode_segment_payload(rest.substr(0, sh.payload_length + 4), sh, lz4, host);
    } catch (const tug::error&) {
    }
  }
  try {
    cq::lz4_decompress_body(std::string_view(reinterpret_cast<const char*>(data), size), host);
  } catch (const tug::error&) {
  }
  if (size < cq::header_size) return;
  // a v5 envelope where the version byte says so (v5's Prepared and Rows metadata, failure reason maps)
  const uint8_t version = (data[0] & 0x7f) == 5 ? 5 : 4;
  cq::frame_header h = cq::decode_header(data, host, version);
  std::string_view body(reinterpret_cast<const char*>(data) + cq::header_size, size - cq::header_size);
  if (static_cast<size_t>(h.length) < body.size()) body = body.substr(0, static_cast<size_t>(h.length));
  auto op = static_cast<cq::opcode>(h.op);
  if (op == cq::opcode::error) {
    std::exception_ptr e = cq::decode_error(body, h.flags, host, "fuzz", version);
    try {
      std::rethrow_exception(e);
    } catch (const tug::error&) {
    }
    return;
  }
  cq::byte_reader r(body, host);
  cq::skip_response_prefix(r, h.flags);
  switch (op) {
    case cq::opcode::authenticate: r.string(); return;
    case cq::opcode::result: break;
    default: return;
  }
  cq::byte_reader peek = r;
  auto kind = static_cast<cq::result_kind>(peek.i32());
  if (kind == cq::result_kind::rows) {
    cq::rows_result rows = cq::read_rows(r, version);
    std::vector<tug::data_type> types;
    bool mapped = true;  // a collection or UDT column: a scan stops before decoding (the values are read raw below)
    for (auto& c : rows.metadata.columns) {
      try {
        types.push_back(cq::to_tug_type(c.type, c.name, {}));
      } catch (const tug::not_implemented_error&) {
        mapped = false;
      }
    }
    if (mapped && types.size() == static_cast<size_t>(rows.metadata.columns_count)) cq::decode_rows(rows, types, {}, host);
    for (auto& row : cq::raw_rows(rows, host))
      for (auto& v : row) {
        if (!v) continue;
        try {
          cq::decode_text_collection(*v, host);
        } catch (const tug::error&) {
        }
        try {
          cq::decode_text_map(*v, host);
        } catch (const tug::error&) {
        }
      }
  } else if (kind == cq::result_kind::prepared) {
    cq::read_prepared(r, version);
  } else if (kind == cq::result_kind::set_keyspace) {
    r.i32();
    r.string();
  } else if (kind == cq::result_kind::schema_change) {
    r.i32();
    r.string();
    r.string();
    r.string();
  }
}

}  // namespace

/// Inputs that ended in a tug::error (the driver checks that its seeds decode without one).
extern "C" {
long tug_fuzz_errors = 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    decode_frame(data, size);
  } catch (const tug::error&) {
    ++tug_fuzz_errors;  // a clear error: what malformed input must give
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cassandra frame decoder: not a tug::error: %s\n", e.what());
    std::abort();
  }
  return 0;
}
