#pragma once
/// Parquet value and level encodings shared by the reader and writer: bounds-checked decoders of the
/// RLE/bit-packed hybrid and DELTA_BINARY_PACKED, and the Julian-day conversion of INT96 timestamps.
#include <cstdint>

namespace tug::io::parquet {

/// Decodes `n` values of the RLE/bit-packed hybrid of width `bw` (0..32) from [p, end).
/// @throws io_error (without the file name) when the data ends early or is malformed.
void rle_decode(const uint8_t* p, const uint8_t* end, int bw, uint32_t* out, int64_t n);

/// Number of values the RLE/bit-packed hybrid stream [p, end) of width `bw` holds, counting at most
/// `limit`: what the bytes can actually hold, computed from the run headers without decoding, so a
/// caller can check a declared count before allocating for it. @throws io_error on a malformed header.
int64_t rle_count(const uint8_t* p, const uint8_t* end, int bw, int64_t limit);

/// The value count a DELTA_BINARY_PACKED stream at [p, end) declares, checked against its bytes: every
/// block of the declared count needs at least its min-delta varint and bit widths.
/// @throws io_error when the header is malformed or the bytes cannot hold the declared count.
int64_t delta_count(const uint8_t* p, const uint8_t* end);

/// Decodes a DELTA_BINARY_PACKED stream of exactly `n` values (int32_t or int64_t) from [p, end).
/// Returns the first byte after the stream. @throws io_error on malformed data.
template <typename I>
const uint8_t* delta_decode(const uint8_t* p, const uint8_t* end, int64_t n, I* out);

/// Nanoseconds since the epoch of an INT96 timestamp (8 bytes nanos of day, 4 bytes Julian day).
int64_t int96_to_ns(const uint8_t* p);

/// Reads an unsigned LEB128 varint. @throws io_error past `end`.
uint64_t read_uleb(const uint8_t*& p, const uint8_t* end);

}  // namespace tug::io::parquet
