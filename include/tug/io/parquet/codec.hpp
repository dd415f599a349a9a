#pragma once
/// Page compression of Parquet through system libraries (snappy, zlib, zstd, lz4).
#include <cstdint>
#include <string>

#include "tug/io/parquet/metadata.hpp"

namespace tug::io::parquet {

/// Name of a codec as parquet.thrift spells it (SNAPPY, ZSTD, ...).
std::string to_string(codec c);

/// Decompresses `size` bytes into exactly `out_size` bytes at `out`.
/// @throws io_error (without the file name) when the data does not decompress to that size;
/// not_implemented_error for LZO and BROTLI.
void decompress(codec c, const uint8_t* in, size_t size, uint8_t* out, size_t out_size);

/// An upper bound of the bytes that `size` bytes compressed with `c` can decompress to (the codec's
/// maximum expansion ratio, or the length a snappy header states); the reader rejects pages claiming
/// more before allocating. @throws not_implemented_error for the codecs `decompress` does not support.
size_t max_decompressed_size(codec c, const uint8_t* in, size_t size);

/// The CRC-32 (zlib's, as Parquet's page header `crc` holds it) of `size` bytes.
uint32_t page_crc(const uint8_t* in, size_t size);

/// Compresses `size` bytes, replacing `out`. @throws not_implemented_error for LZO, BROTLI and LZ4 (Hadoop).
void compress(codec c, const uint8_t* in, size_t size, std::string& out);

}  // namespace tug::io::parquet
