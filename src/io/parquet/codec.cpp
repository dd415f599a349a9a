/// Parquet page codecs over snappy, zlib, zstd and lz4.
#include "tug/io/parquet/codec.hpp"

#include <lz4.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <cstring>

#include "tug/core/error.hpp"

namespace tug::io::parquet {

std::string to_string(codec c) {
  switch (c) {
    case codec::uncompressed:
      return "UNCOMPRESSED";
    case codec::snappy:
      return "SNAPPY";
    case codec::gzip:
      return "GZIP";
    case codec::lzo:
      return "LZO";
    case codec::brotli:
      return "BROTLI";
    case codec::lz4:
      return "LZ4";
    case codec::zstd:
      return "ZSTD";
    case codec::lz4_raw:
      return "LZ4_RAW";
  }
  return "codec " + std::to_string(static_cast<int>(c));
}

namespace {

[[noreturn]] void bad(codec c, const std::string& why) {
  throw io_error(to_string(c) + " page does not decompress: " + why);
}

[[noreturn]] void unsupported_codec(codec c) {
  throw not_implemented_error("Parquet codec " + to_string(c) +
                              " is not supported (supported: UNCOMPRESSED, "
                              "SNAPPY, GZIP, ZSTD, LZ4, LZ4_RAW)");
}

void inflate_gzip(const uint8_t* in, size_t size, uint8_t* out, size_t out_size) {
  z_stream s{};
  if (inflateInit2(&s, 15 + 32) != Z_OK) bad(codec::gzip, "inflateInit2 failed");
  s.next_in = const_cast<Bytef*>(in);
  s.avail_in = static_cast<uInt>(size);
  s.next_out = out;
  s.avail_out = static_cast<uInt>(out_size);
  int rc = inflate(&s, Z_FINISH);
  size_t produced = s.total_out;
  inflateEnd(&s);
  if (rc != Z_STREAM_END || produced != out_size) bad(codec::gzip, "corrupt or wrong size");
}

/// Hadoop's LZ4 framing: blocks of [big-endian uncompressed size][big-endian compressed size][lz4 block].
bool lz4_hadoop(const uint8_t* in, size_t size, uint8_t* out, size_t out_size) {
  auto be32 = [](const uint8_t* p) {
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
  };
  size_t pos = 0, done = 0;
  while (pos < size) {
    if (size - pos < 8) return false;
    uint32_t usize = be32(in + pos), csize = be32(in + pos + 4);
    pos += 8;
    if (csize > size - pos || usize > out_size - done) return false;
    int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in + pos), reinterpret_cast<char*>(out + done),
                                static_cast<int>(csize), static_cast<int>(usize));
    if (n < 0 || static_cast<uint32_t>(n) != usize) return false;
    pos += csize;
    done += usize;
  }
  return done == out_size;
}

}  // namespace

size_t max_decompressed_size(codec c, const uint8_t* in, size_t size) {
  // Worst cases: a deflate stream expands at most 1032:1, an LZ4 block 255:1 (plus Hadoop framing),
  // zstd 32768:1 (a 4-byte RLE block stands for 128 KiB); the slack covers stream headers.
  constexpr size_t slack = 1 << 17;
  switch (c) {
    case codec::uncompressed:
      return size;
    case codec::snappy: {
      size_t n = 0;
      return snappy_uncompressed_length(reinterpret_cast<const char*>(in), size, &n) == SNAPPY_OK ? n : 0;
    }
    case codec::gzip:
      return size * 1032 + slack;
    case codec::lz4_raw:
    case codec::lz4:
      return size * 255 + slack;
    case codec::zstd:
      return size * 32768 + slack;
    case codec::lzo:
    case codec::brotli:
      break;
  }
  unsupported_codec(c);
}

void decompress(codec c, const uint8_t* in, size_t size, uint8_t* out, size_t out_size) {
  switch (c) {
    case codec::uncompressed:
      if (size != out_size) bad(c, "sizes differ");
      if (size) std::memcpy(out, in, size);
      return;
    case codec::snappy: {
      size_t n = 0;
      if (snappy_uncompressed_length(reinterpret_cast<const char*>(in), size, &n) != SNAPPY_OK || n != out_size)
        bad(c, "bad length header");
      n = out_size;
      if (snappy_uncompress(reinterpret_cast<const char*>(in), size, reinterpret_cast<char*>(out), &n) != SNAPPY_OK ||
          n != out_size)
        bad(c, "corrupt data");
      return;
    }
    case codec::gzip:
      inflate_gzip(in, size, out, out_size);
      return;
    case codec::zstd: {
      // One decompression context per thread, reused for every page (creating one per page costs a
      // few hundred KiB of allocation and initialisation).
      struct dctx_holder {
        ZSTD_DCtx* ctx = ZSTD_createDCtx();
        ~dctx_holder() { ZSTD_freeDCtx(ctx); }
      };
      thread_local dctx_holder dctx;
      if (!dctx.ctx) bad(c, "ZSTD_createDCtx failed");
      size_t n = ZSTD_decompressDCtx(dctx.ctx, out, out_size, in, size);
      if (ZSTD_isError(n)) bad(c, ZSTD_getErrorName(n));
      if (n != out_size) bad(c, "wrong size");
      return;
    }
    case codec::lz4_raw: {
      int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in), reinterpret_cast<char*>(out),
                                  static_cast<int>(size), static_cast<int>(out_size));
      if (n < 0 || static_cast<size_t>(n) != out_size) bad(c, "corrupt data");
      return;
    }
    case codec::lz4: {
      if (lz4_hadoop(in, size, out, out_size)) return;
      // Older writers emitted a raw LZ4 block under this codec.
      int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in), reinterpret_cast<char*>(out),
                                  static_cast<int>(size), static_cast<int>(out_size));
      if (n < 0 || static_cast<size_t>(n) != out_size) bad(c, "corrupt data (neither Hadoop framing nor raw)");
      return;
    }
    case codec::lzo:
    case codec::brotli:
      break;
  }
  unsupported_codec(c);
}

void compress(codec c, const uint8_t* in, size_t size, std::string& out) {
  switch (c) {
    case codec::uncompressed:
      out.assign(reinterpret_cast<const char*>(in), size);
      return;
    case codec::snappy: {
      size_t n = snappy_max_compressed_length(size);
      out.resize(n);
      if (snappy_compress(reinterpret_cast<const char*>(in), size, out.data(), &n) != SNAPPY_OK)
        throw internal_error("snappy_compress failed");
      out.resize(n);
      return;
    }
    case codec::zstd: {
      size_t n = ZSTD_compressBound(size);
      out.resize(n);
      n = ZSTD_compress(out.data(), n, in, size, 1);
      if (ZSTD_isError(n)) throw internal_error(std::string("ZSTD_compress: ") + ZSTD_getErrorName(n));
      out.resize(n);
      return;
    }
    case codec::lz4_raw: {
      int n = LZ4_compressBound(static_cast<int>(size));
      out.resize(static_cast<size_t>(n));
      n = LZ4_compress_default(reinterpret_cast<const char*>(in), out.data(), static_cast<int>(size), n);
      if (n <= 0) throw internal_error("LZ4_compress_default failed");
      out.resize(static_cast<size_t>(n));
      return;
    }
    case codec::gzip: {
      uLongf n = compressBound(static_cast<uLong>(size));
      // A gzip header is required by the spec; deflateInit2 with 15+16 writes one.
      z_stream s{};
      if (deflateInit2(&s, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        throw internal_error("deflateInit2 failed");
      out.resize(n + 32);
      s.next_in = const_cast<Bytef*>(in);
      s.avail_in = static_cast<uInt>(size);
      s.next_out = reinterpret_cast<Bytef*>(out.data());
      s.avail_out = static_cast<uInt>(out.size());
      int rc = deflate(&s, Z_FINISH);
      size_t produced = s.total_out;
      deflateEnd(&s);
      if (rc != Z_STREAM_END) throw internal_error("deflate failed");
      out.resize(produced);
      return;
    }
    default:
      break;
  }
  throw not_implemented_error("writing Parquet codec " + to_string(c) + " is not supported");
}

uint32_t page_crc(const uint8_t* in, size_t size) {
  return static_cast<uint32_t>(crc32_z(crc32_z(0, nullptr, 0), in, size));
}

}  // namespace tug::io::parquet
