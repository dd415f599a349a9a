#pragma once
/// Internal to the GPU Parquet reader: the host-side plan of a column chunk. From the footer (through
/// file_reader) and the chunk's page headers (thrift.cpp's decode_page_header), the pages to
/// decompress and decode: where each lies, its sizes, codec, encoding, value count and first row,
/// the dictionary page, and whether the device can decode the chunk at all (else why not: the chunk
/// then goes to the host decoder, column_decoder.cpp).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "page_decode.hpp"
#include "tug/core/types.hpp"
#include "tug/io/parquet/metadata.hpp"
#include "tug/io/parquet/reader.hpp"

namespace tug::io::parquet {

/// One page of a column chunk as planned.
struct planned_page {
  page_type type = page_type::data_page;
  int32_t index = 0;            ///< position among the chunk's pages (errors name it)
  size_t offset = 0;            ///< of the page's bytes (after its header) in the chunk
  int32_t compressed_size = 0;  ///< bytes in the file
  int32_t uncompressed_size = 0;
  int32_t num_values = 0;       ///< values (rows: flat columns), or dictionary entries
  encoding enc = encoding::plain;
  bool compressed = true;       ///< false: the page's bytes are stored as they are (v2 is_compressed = false)
  bool checked = false;         ///< its header's CRC-32 was checked against its bytes (only what the device decompresses)
  int32_t rep_bytes = 0, def_bytes = 0;  ///< data page v2: level bytes, never compressed
  int64_t first_row = 0;        ///< data pages: the first row of the row group it holds
  /// The bytes of the page that a codec decompresses, and where they go in the uncompressed page:
  /// after the levels of a v2 page.
  size_t codec_in() const { return offset + static_cast<size_t>(rep_bytes + def_bytes); }
  size_t codec_in_size() const { return static_cast<size_t>(compressed_size - rep_bytes - def_bytes); }
  size_t codec_out_size() const { return static_cast<size_t>(uncompressed_size - rep_bytes - def_bytes); }
};

/// The plan of one column chunk of a row group.
struct chunk_plan {
  size_t column = 0;        ///< index into file_reader::schema()
  std::string name;         ///< the column's name
  std::string where;        ///< "FILE: column 'NAME' row group RG: ", the front of its errors
  int64_t file_offset = 0;  ///< of the chunk's first byte
  size_t size = 0;          ///< bytes of the chunk
  int64_t num_rows = 0;     ///< of the row group
  codec compression = codec::uncompressed;
  physical_type physical = physical_type::int32;
  data_type type;           ///< the column's tug type
  gpu::chunk_params params; ///< conversion and layout (pointers unset)
  int dictionary = -1;      ///< index in `pages` of the dictionary page, -1 none
  std::vector<planned_page> pages;  ///< the dictionary page first (if any), then the data pages to decode
  int64_t decoded_rows = 0; ///< rows of the data pages planned
  int64_t first_row = 0;    ///< the row of the row group that the first planned data page starts at
  int64_t pages_skipped = 0; ///< data pages left out: none of their rows is in the ranges
  /// Empty when the device decodes the chunk; else what it cannot decode (the host decoder does).
  std::string host_reason;
};

/// Plans the chunk of column `column` (an index into r.schema()) of row group `rg` from its bytes
/// [chunk, chunk + size) (as read from the file at r.chunk_location(rg, column)): every page header
/// is read; with `ranges` (rows of the row group, sorted and disjoint; empty: all rows) only the data
/// pages that hold some of them are kept, and no page after the last needed row is. With
/// `device_decompression`, a kept page that the device would decompress (device_codec) and whose
/// header has a CRC is checked against it (planned_page::checked): nvCOMP's decompressors are undefined
/// on corrupt input, so only checked pages go to it; every other compressed page is decompressed by the
/// host (engine_options::gpu_parquet_device_decompression).
/// @throws io_error naming the file, column, row group and page on a malformed header, a page past
/// the chunk, a CRC that does not match, or pages whose values disagree with the row group's rows.
chunk_plan plan_chunk(const file_reader& r, int rg, size_t column, const uint8_t* chunk, size_t size,
                      const std::vector<row_range>& ranges = {}, bool device_decompression = false);

/// Offsets (8-byte aligned) of the planned pages in one buffer of the chunk's uncompressed pages, in
/// `at`; returns the buffer's size.
size_t uncompressed_layout(const chunk_plan& p, std::vector<size_t>& at);

/// Decompresses page `pg` of the chunk bytes `chunk` on the host into `out` (pg.uncompressed_size
/// bytes): v2 levels copied as they are, the rest through the codec (codec.cpp).
/// @throws io_error naming the file, column, row group and page when it does not decompress.
void decompress_page(const chunk_plan& p, const planned_page& pg, const uint8_t* chunk, uint8_t* out);

/// The device steps' description of every planned page (dictionary page first), given each page's
/// uncompressed bytes `data[k]`: data pages get their first row among the decoded rows.
std::vector<gpu::page_params> page_jobs(const chunk_plan& p, const std::vector<const uint8_t*>& data);

/// Where each of `ranges` (rows of the row group; empty: all rows, one piece) lies among the rows the
/// plan decodes: (first decoded row, rows) per range. @throws internal_error when the plan does not
/// hold a range's rows.
std::vector<std::pair<int64_t, int64_t>> range_pieces(const chunk_plan& p, const std::vector<row_range>& ranges);

/// io_error of a decoding error reported in `e` (page_decode.hpp), naming the file, column, row group and page.
[[noreturn]] void throw_page_error(const chunk_plan& p, const gpu::error_slot& e);

/// The codecs the device decompresses (nvCOMP's batched API), when tug was built with nvCOMP.
bool device_codec(codec c);

}  // namespace tug::io::parquet
