// A standalone driver for LLVMFuzzerTestOneInput where libFuzzer is not available (no clang): well-formed
// response frames of every kind as seeds, then mutations of them (bytes set, bits flipped, lengths
// changed, bytes inserted or cut, frames spliced) for a bounded number of iterations, deterministic for a
// given seed. The decoder is compiled with AddressSanitizer and UBSan, so an overread is a report, not
// luck. Usage: tug_cassandra_fuzz [iterations [seed]] | tug_cassandra_fuzz FILE... (replay inputs).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "tug/io/cassandra/protocol.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" long tug_fuzz_errors;

namespace cq = tug::io::cassandra;

namespace {

std::string frame(cq::opcode op, const std::string& body, uint8_t flags = 0) {
  std::string f = cq::encode_frame(op, 3, body, flags);
  f[0] = static_cast<char>(0x84);  // a response
  return f;
}

void spec(cq::byte_writer& w, const std::string& name, uint16_t type) {
  w.string(name);
  w.u16(type);
}

/// Rows results of every native type, with nulls, a paging state, per-column table specs, and collection,
/// UDT and tuple columns; Prepared, Set_keyspace, Schema_change, errors of every code, AUTHENTICATE, and
/// the flags' prefixes.
std::vector<std::string> seeds() {
  std::vector<std::string> out;
  const std::vector<std::pair<uint16_t, std::string>> natives = {
      {0x0001, "abc"}, {0x0002, std::string("\x00\x00\x00\x02\x54\x0b\xe3\xff", 8)}, {0x0003, std::string("\x00\xff", 2)},
      {0x0004, std::string("\x01", 1)}, {0x0006, std::string("\x00\x00\x00\x02\x30\x39", 6)},
      {0x0007, std::string("\x40\x04\x00\x00\x00\x00\x00\x00", 8)}, {0x0008, std::string("\x3f\xa0\x00\x00", 4)},
      {0x0009, std::string("\xff\xff\xff\xfe", 4)}, {0x000B, std::string("\x00\x00\x01\x8d\xf0\x00\x00\x00", 8)},
      {0x000C, std::string(16, '\x12')}, {0x000D, "h\xc3\xa9llo"}, {0x000E, std::string("\x01\x00\x00", 3)},
      {0x000F, std::string(16, '\x34')}, {0x0010, std::string("\x0a\x01\x02\x03", 4)},
      {0x0011, std::string("\x80\x00\x4d\x46", 4)}, {0x0012, std::string("\x00\x00\x03\x63\x00\x00\x00\x04", 8)},
      {0x0013, std::string("\xfe\xd4", 2)}, {0x0014, std::string("\xf9", 1)}};
  // one Rows result with all of them, three rows (the last all null), global spec and a paging state
  {
    cq::byte_writer w;
    w.i32(2);
    w.i32(0x0001 | 0x0002);
    w.i32(static_cast<int32_t>(natives.size()));
    w.bytes(std::string("\x00\x01\x02", 3));  // paging state
    w.string("ks");
    w.string("t");
    for (size_t i = 0; i < natives.size(); ++i) spec(w, "c" + std::to_string(i), natives[i].first);
    w.i32(3);
    for (int r = 0; r < 3; ++r)
      for (auto& [t, v] : natives) r < 2 ? w.bytes(v) : w.bytes(std::nullopt);
    out.push_back(frame(cq::opcode::result, w.out()));
  }
  // each native type alone, with per-column table specs
  for (auto& [t, v] : natives) {
    cq::byte_writer w;
    w.i32(2);
    w.i32(0);
    w.i32(1);
    w.string("ks");
    w.string("t");
    spec(w, "c", t);
    w.i32(2);
    w.bytes(v);
    w.bytes(std::nullopt);
    out.push_back(frame(cq::opcode::result, w.out()));
  }
  // system-table shapes: set<text> tokens, map<text, text> replication, a UDT and a tuple, No_metadata
  {
    cq::byte_writer set, map, w;
    set.i32(2);
    set.bytes("-9000");
    set.bytes("42");
    map.i32(1);
    map.bytes("class");
    map.bytes("SimpleStrategy");
    w.i32(2);
    w.i32(0x0001);
    w.i32(4);
    w.string("system");
    w.string("local");
    w.string("tokens");
    w.u16(0x0022);
    w.u16(0x000D);
    w.string("replication");
    w.u16(0x0021);
    w.u16(0x000D);
    w.u16(0x000D);
    w.string("u");
    w.u16(0x0030);
    w.string("ks");
    w.string("udt");
    w.u16(2);
    w.string("a");
    w.u16(0x0009);
    w.string("b");
    w.u16(0x0020);
    w.u16(0x000D);
    w.string("tu");
    w.u16(0x0031);
    w.u16(2);
    w.u16(0x0009);
    w.u16(0x0000);
    w.string("org.apache.cassandra.db.marshal.DurationType");
    w.i32(1);
    w.bytes(set.out());
    w.bytes(map.out());
    w.bytes(std::string(8, '\0'));
    w.bytes(std::string(8, '\0'));
    out.push_back(frame(cq::opcode::result, w.out()));
    cq::byte_writer nm;
    nm.i32(2);
    nm.i32(0x0004);
    nm.i32(1);
    nm.i32(1);
    nm.bytes("x");
    out.push_back(frame(cq::opcode::result, nm.out()));
  }
  // Prepared with partition key indexes
  {
    cq::byte_writer w;
    w.i32(4);
    w.short_bytes(std::string(16, '\x7f'));
    w.i32(0x0001);
    w.i32(2);
    w.i32(2);
    w.u16(0);
    w.u16(1);
    w.string("ks");
    w.string("t");
    spec(w, "a", 0x0009);
    spec(w, "b", 0x000D);
    w.i32(0x0004);
    w.i32(3);
    out.push_back(frame(cq::opcode::result, w.out()));
  }
  {
    cq::byte_writer w;
    w.i32(3);
    w.string("ks");
    out.push_back(frame(cq::opcode::result, w.out()));
    cq::byte_writer c;
    c.i32(5);
    c.string("CREATED");
    c.string("TABLE");
    c.string("ks");
    c.string("t");
    out.push_back(frame(cq::opcode::result, c.out()));
    cq::byte_writer v;
    v.i32(1);
    // tracing id, warnings and a custom payload in front of a Void result
    cq::byte_writer pre;
    pre.raw(std::string(16, '\x01'));
    pre.u16(1);
    pre.string("a warning");
    pre.u16(1);
    pre.string("k");
    pre.bytes("v");
    out.push_back(frame(cq::opcode::result, pre.out() + v.out(), cq::flag_tracing | cq::flag_warning | cq::flag_custom_payload));
  }
  // errors, each code with the details it carries
  for (int32_t code : {0x0000, 0x000A, 0x0100, 0x1000, 0x1001, 0x1002, 0x1003, 0x1100, 0x1200, 0x1300, 0x1400, 0x1500,
                       0x2000, 0x2100, 0x2200, 0x2300, 0x2400, 0x2500}) {
    cq::byte_writer w;
    w.i32(code);
    w.string("message of " + std::to_string(code));
    switch (code) {
      case 0x1000: w.u16(4), w.i32(2), w.i32(1); break;
      case 0x1100: w.u16(1), w.i32(0), w.i32(1), w.string("SIMPLE"); break;
      case 0x1200: w.u16(1), w.i32(0), w.i32(1), w.u8(0); break;
      case 0x1300: w.u16(1), w.i32(0), w.i32(1), w.i32(1), w.raw(std::string("\x7f\x00\x00\x01", 4)), w.u16(0); break;
      case 0x1400: w.string("ks"), w.string("f"), w.u16(1), w.string("int"); break;
      case 0x1500: w.u16(1), w.i32(0), w.i32(1), w.i32(0), w.string("SIMPLE"); break;
      case 0x2400: w.string("ks"), w.string("t"); break;
      case 0x2500: w.short_bytes(std::string(16, '\x7f')); break;
      default: break;
    }
    out.push_back(frame(cq::opcode::error, w.out()));
  }
  cq::byte_writer auth;
  auth.string("org.apache.cassandra.auth.PasswordAuthenticator");
  out.push_back(frame(cq::opcode::authenticate, auth.out()));
  // protocol v5: a Prepared with its result metadata id, Rows with Metadata_changed, a Write_failure with
  // its reason map
  auto v5 = [](std::string f) {
    f[0] = static_cast<char>(0x85);
    return f;
  };
  {
    cq::byte_writer w;
    w.i32(4);
    w.short_bytes(std::string(16, '\x7f'));
    w.short_bytes(std::string(16, '\x3c'));
    w.i32(0x0001);
    w.i32(1);
    w.i32(1);
    w.u16(0);
    w.string("ks");
    w.string("t");
    spec(w, "a", 0x0009);
    w.i32(0x0004);
    w.i32(1);
    out.push_back(v5(frame(cq::opcode::result, w.out())));
    cq::byte_writer r;
    r.i32(2);
    r.i32(0x0001 | 0x0008);
    r.i32(1);
    r.short_bytes(std::string(16, '\x3d'));
    r.string("ks");
    r.string("t");
    spec(r, "a", 0x0009);
    r.i32(1);
    r.bytes(std::string("\x00\x00\x00\x07", 4));
    out.push_back(v5(frame(cq::opcode::result, r.out())));
    cq::byte_writer e;
    e.i32(0x1500);
    e.string("write failure");
    e.u16(1), e.i32(0), e.i32(1), e.i32(1);
    e.u8(4), e.raw(std::string("\x7f\x00\x00\x03", 4)), e.u16(0);
    e.string("SIMPLE");
    out.push_back(v5(frame(cq::opcode::error, e.out())));
  }
  return out;
}

std::string mutate(const std::vector<std::string>& corpus, std::mt19937_64& rng) {
  std::string s = corpus[rng() % corpus.size()];
  int steps = 1 + static_cast<int>(rng() % 6);
  for (int k = 0; k < steps; ++k) {
    size_t n = s.size();
    switch (rng() % 8) {
      case 0:  // a random byte
        if (n) s[rng() % n] = static_cast<char>(rng());
        break;
      case 1:  // a bit
        if (n) s[rng() % n] ^= static_cast<char>(1 << (rng() % 8));
        break;
      case 2: {  // a length-like field: 0, -1, huge, or off by a little
        if (n < 4) break;
        size_t at = rng() % (n - 3);
        static const int32_t values[] = {0, -1, -2, 1, 0x7fffffff, static_cast<int32_t>(0x80000000), 65535, 256};
        int32_t v = rng() % 3 ? values[rng() % 8] : static_cast<int32_t>(rng() % 64) - 32;
        for (int b = 0; b < 4; ++b) s[at + b] = static_cast<char>(static_cast<uint32_t>(v) >> (24 - 8 * b));
        break;
      }
      case 3:  // a 16-bit field
        if (n >= 2) {
          size_t at = rng() % (n - 1);
          s[at] = static_cast<char>(rng() % 2 ? 0xff : 0x00);
          s[at + 1] = static_cast<char>(rng());
        }
        break;
      case 4:  // cut
        if (n) s.resize(rng() % n);
        break;
      case 5: {  // insert bytes
        size_t at = n ? rng() % n : 0;
        s.insert(at, std::string(1 + rng() % 8, static_cast<char>(rng())));
        break;
      }
      case 6: {  // splice with another frame's tail
        const std::string& o = corpus[rng() % corpus.size()];
        if (n && !o.empty()) s = s.substr(0, rng() % n) + o.substr(rng() % o.size());
        break;
      }
      default:  // the header: flags or opcode
        if (n > 4) s[rng() % 2 ? 1 : 4] = static_cast<char>(rng() % 3 ? rng() % 0x11 : rng());
        break;
    }
  }
  // the header's length mostly matches the body, so that the body decoders run
  if (s.size() >= cq::header_size && rng() % 4) {
    auto len = static_cast<uint32_t>(s.size() - cq::header_size);
    for (int b = 0; b < 4; ++b) s[5 + b] = static_cast<char>(len >> (24 - 8 * b));
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strspn(argv[1], "0123456789") != std::strlen(argv[1])) {
    for (int i = 1; i < argc; ++i) {  // replay files
      std::ifstream f(argv[i], std::ios::binary);
      std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
    }
    return 0;
  }
  long iterations = argc > 1 ? std::atol(argv[1]) : 200000;
  unsigned long seed = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1;
  std::vector<std::string> corpus = seeds();
  for (size_t i = 0; i < corpus.size(); ++i) {
    long before = tug_fuzz_errors;
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(corpus[i].data()), corpus[i].size());
    // every seed but the ERROR frames decodes cleanly: the mutations start from frames the decoders accept
    bool is_error = corpus[i].size() > 4 && corpus[i][4] == 0;
    if (tug_fuzz_errors != before && !is_error) {
      std::fprintf(stderr, "seed %zu does not decode\n", i);
      return 1;
    }
  }
  long seed_errors = tug_fuzz_errors;
  std::mt19937_64 rng(seed);
  for (long i = 0; i < iterations; ++i) {
    std::string s = mutate(corpus, rng);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
    if (i % 4096 == 0 && corpus.size() < 4096) corpus.push_back(std::move(s));  // some mutants breed further
  }
  std::printf("cassandra frame decoder: %zu seeds, %ld mutated frames (seed %lu), %ld of them errors, all tug::errors; "
              "no crash\n",
              seeds().size(), iterations, seed, tug_fuzz_errors - seed_errors);
  return 0;
}
