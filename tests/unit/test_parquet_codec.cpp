// Parquet page codecs: round trips through compress/decompress, Hadoop LZ4 framing, corrupt input.
#include <gtest/gtest.h>

#include <string>

#include "tug/core/error.hpp"
#include "tug/io/parquet/codec.hpp"

namespace tug {
namespace {

using namespace io::parquet;

std::string sample(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i)
    s.push_back(static_cast<char>("abcabcxyz"[i % 9] + (i % 97 == 0)));
  return s;
}

const uint8_t* bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

TEST(ParquetCodec, RoundTrips) {
  for (codec c : {codec::uncompressed, codec::snappy, codec::gzip, codec::zstd, codec::lz4_raw}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{1000}, size_t{100000}}) {
      SCOPED_TRACE(to_string(c) + " " + std::to_string(n));
      std::string in = sample(n), packed;
      compress(c, bytes(in), in.size(), packed);
      std::string out(n, '\0');
      decompress(c, bytes(packed), packed.size(), reinterpret_cast<uint8_t*>(out.data()), n);
      EXPECT_EQ(out, in);
    }
  }
}

TEST(ParquetCodec, HadoopLz4FramingAndRawFallback) {
  // Two Hadoop blocks: [BE uncompressed size][BE compressed size][LZ4 block] each.
  std::string a = sample(5000), b = sample(300), framed;
  for (const std::string* part : {&a, &b}) {
    std::string block;
    compress(codec::lz4_raw, bytes(*part), part->size(), block);
    for (uint32_t v : {static_cast<uint32_t>(part->size()), static_cast<uint32_t>(block.size())})
      for (int k = 3; k >= 0; --k)
        framed.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
    framed += block;
  }
  std::string out(a.size() + b.size(), '\0');
  decompress(codec::lz4, bytes(framed), framed.size(), reinterpret_cast<uint8_t*>(out.data()), out.size());
  EXPECT_EQ(out, a + b);
  // A raw block under codec LZ4 (old writers).
  std::string raw;
  compress(codec::lz4_raw, bytes(a), a.size(), raw);
  std::string out2(a.size(), '\0');
  decompress(codec::lz4, bytes(raw), raw.size(), reinterpret_cast<uint8_t*>(out2.data()), out2.size());
  EXPECT_EQ(out2, a);
}

TEST(ParquetCodec, CorruptOrWrongSizeRaisesIoError) {
  std::string in = sample(4000);
  for (codec c : {codec::snappy, codec::gzip, codec::zstd, codec::lz4_raw, codec::lz4}) {
    SCOPED_TRACE(to_string(c));
    std::string packed;
    compress(c == codec::lz4 ? codec::lz4_raw : c, bytes(in), in.size(), packed);
    std::string out(in.size() + 1, '\0');
    // Wrong expected size.
    EXPECT_THROW(decompress(c, bytes(packed), packed.size(), reinterpret_cast<uint8_t*>(out.data()), in.size() + 1),
                 io_error);
    // Truncated input.
    EXPECT_THROW(decompress(c, bytes(packed), packed.size() / 2, reinterpret_cast<uint8_t*>(out.data()), in.size()),
                 io_error);
  }
  std::string out(10, '\0');
  EXPECT_THROW(decompress(codec::brotli, bytes(in), 10, reinterpret_cast<uint8_t*>(out.data()), 10),
               not_implemented_error);
  EXPECT_THROW(decompress(codec::lzo, bytes(in), 10, reinterpret_cast<uint8_t*>(out.data()), 10),
               not_implemented_error);
}

}  // namespace
}  // namespace tug
