/// Host-side planning of the GPU Parquet reader (page_plan.hpp): page headers -> pages to decode.
#include "page_plan.hpp"

#include "column_decoder.hpp"

#include <algorithm>
#include <cstring>

#include "tug/core/error.hpp"
#include "tug/io/parquet/codec.hpp"
#include "tug/runtime/cuda_libraries.hpp"

namespace tug::io::parquet {
namespace {

/// The conversion of the chunk's physical values to its tug type; sets `host_reason` where the
/// device has none.
void set_conversion(chunk_plan& p, const schema_element& e, bool optional) {
  gpu::chunk_params& c = p.params;
  c.optional = optional;
  const type_id id = p.type.id;
  c.out_width = id == type_id::string ? 0 : size_of(id);
  auto none = [&] { p.host_reason = "no device conversion of its physical type to " + to_string(p.type); };
  switch (p.physical) {
    case physical_type::boolean:
      c.cv = gpu::conv::boolean;
      break;
    case physical_type::int32:
      c.phys_width = 4;
      if (id == type_id::int32 || id == type_id::uint32 || id == type_id::date32)
        c.cv = gpu::conv::copy;
      else if (id == type_id::int8 || id == type_id::uint8 || id == type_id::int16 || id == type_id::uint16)
        c.cv = gpu::conv::narrow;
      else if (id == type_id::int64)
        c.cv = gpu::conv::i32_to_i64;
      else if (id == type_id::decimal128)
        c.cv = gpu::conv::i32_to_dec;
      else
        none();
      break;
    case physical_type::int64:
      c.phys_width = 8;
      if (id == type_id::int64 || id == type_id::uint64 || id == type_id::timestamp)
        c.cv = gpu::conv::copy;
      else if (id == type_id::decimal128)
        c.cv = gpu::conv::i64_to_dec;
      else
        none();
      break;
    case physical_type::int96:
      c.phys_width = 12;
      c.cv = gpu::conv::int96_ns;
      break;
    case physical_type::float_:
      c.phys_width = 4;
      c.cv = gpu::conv::copy;
      break;
    case physical_type::double_:
      c.phys_width = 8;
      c.cv = gpu::conv::copy;
      break;
    case physical_type::byte_array:
      c.byte_array = true;
      if (id == type_id::string)
        c.cv = gpu::conv::string;
      else if (id == type_id::decimal128)
        c.cv = gpu::conv::be_to_dec;
      else
        none();
      break;
    case physical_type::fixed_len_byte_array:
      c.phys_width = e.type_length;
      if (e.type_length <= 0)
        p.host_reason = "FIXED_LEN_BYTE_ARRAY of length " + std::to_string(e.type_length);
      else if (e.logical.kind == logical_kind::uuid && e.type_length == 16 && id == type_id::string)
        p.host_reason = "UUID text";
      else if (id == type_id::decimal128 && e.type_length <= 16)
        c.cv = gpu::conv::be_to_dec;
      else if (id == type_id::float32 && e.type_length == 2)
        c.cv = gpu::conv::half_to_f32;
      else if (id == type_id::string)
        c.cv = gpu::conv::string;
      else
        none();
      break;
  }
}

/// Why the device cannot decode values of encoding `e` of this chunk (empty: it can).
std::string unsupported(const chunk_plan& p, encoding e) {
  const gpu::chunk_params& c = p.params;
  switch (e) {
    case encoding::plain:
    case encoding::plain_dictionary:
    case encoding::rle_dictionary:
      return {};
    case encoding::rle:
      if (c.cv == gpu::conv::boolean) return {};
      break;
    case encoding::delta_binary_packed:
      if (!c.byte_array && (c.phys_width == 4 || c.phys_width == 8) && c.cv != gpu::conv::int96_ns &&
          c.cv != gpu::conv::string)
        return {};
      break;
    case encoding::delta_length_byte_array:
      if (c.byte_array) return {};
      break;
    case encoding::byte_stream_split:
      if (!c.byte_array && c.cv != gpu::conv::boolean && c.cv != gpu::conv::string && c.phys_width > 0 &&
          c.phys_width <= 16)
        return {};
      break;
    default:
      break;
  }
  return "encoding " + detail::encoding_name(e);
}

}  // namespace

bool device_codec(codec c) {
#ifdef TUG_WITH_NVCOMP
  // ZSTD and GZIP stay on the host: nvCOMP's release notes (5.1, "Known issues") say that its Zstd, Gzip and
  // Deflate decompressors can only operate on valid input, and a corrupt page must give an io_error, never
  // a hung or faulting kernel (its Snappy and LZ4 decompressors report bad input in their statuses). All of
  // them where nvCOMP cannot be loaded (it is opened at run time: src/runtime/cuda_libraries.cpp).
  return (c == codec::snappy || c == codec::lz4_raw) && nvcomp_available();
#else
  (void)c;
  return false;
#endif
}

chunk_plan plan_chunk(const file_reader& r, int rg, size_t column, const uint8_t* chunk, size_t size,
                      const std::vector<row_range>& ranges, bool device_decompression) {
  const file_reader::chunk_info ci = r.chunk(rg, column);
  const column_metadata& m = *ci.meta;
  chunk_plan p;
  p.column = column;
  p.name = r.schema()[column].name;
  p.file_offset = ci.offset;
  p.size = size;
  p.num_rows = r.row_group_num_rows(rg);
  p.compression = m.compression;
  p.physical = m.type;
  p.type = r.schema()[column].type;
  set_conversion(p, *ci.element, ci.optional);
  p.where = r.path() + ": column '" + p.name + "' row group " + std::to_string(rg) + ": ";
  const std::string& where = p.where;
  auto corrupt = [&](int page, const std::string& what) {
    throw io_error(where + "page " + std::to_string(page) + ": corrupt page: " + what);
  };
  const int64_t last = ranges.empty() ? p.num_rows : ranges.back().end;  // rows needed: [0, last)
  auto wanted = [&](int64_t lo, int64_t hi) {
    if (ranges.empty()) return true;
    return std::any_of(ranges.begin(), ranges.end(), [&](const row_range& x) { return x.begin < hi && lo < x.end; });
  };
  size_t pos = 0;
  int32_t index = 0;
  int64_t row = 0;
  bool any_data = false, kept_data = false;
  while (row < last) {
    if (pos >= size)
      throw io_error(where + "corrupt page: column chunk ends after " + std::to_string(row) + " of " +
                     std::to_string(p.num_rows) + " rows");
    page_header h;
    size_t used = 0;
    try {
      h = decode_page_header(chunk + pos, size - pos, used);
    } catch (const io_error& e) {
      corrupt(index, std::string("malformed header: ") + e.what());
    }
    pos += used;
    if (static_cast<size_t>(h.compressed_page_size) > size - pos) corrupt(index, "page past the end of the column chunk");
    planned_page pg;
    pg.type = h.type;
    pg.index = index;
    pg.offset = pos;
    pg.compressed_size = h.compressed_page_size;
    pg.uncompressed_size = h.uncompressed_page_size;
    pos += static_cast<size_t>(h.compressed_page_size);
    ++index;
    bool keep = false;
    switch (h.type) {
      case page_type::dictionary_page: {
        if (!h.dict) corrupt(pg.index, "dictionary page without its header");
        if (h.dict->num_values < 0) corrupt(pg.index, "negative dictionary size");
        pg.num_values = h.dict->num_values;
        pg.enc = h.dict->enc;
        if (p.dictionary >= 0 || any_data)
          p.host_reason = "a dictionary page after the first page";
        else if (pg.enc != encoding::plain && pg.enc != encoding::plain_dictionary)
          p.host_reason = "dictionary page in " + detail::encoding_name(pg.enc);
        keep = true;
        break;
      }
      case page_type::data_page: {
        if (!h.v1) corrupt(pg.index, "data page without its header");
        pg.num_values = h.v1->num_values;
        pg.enc = h.v1->enc;
        if (ci.optional && h.v1->definition_level_encoding != encoding::rle)
          p.host_reason = "definition levels in " + detail::encoding_name(h.v1->definition_level_encoding);
        keep = true;
        break;
      }
      case page_type::data_page_v2: {
        if (!h.v2) corrupt(pg.index, "data page v2 without its header");
        const auto& v2 = *h.v2;
        pg.num_values = v2.num_values;
        pg.enc = v2.enc;
        if (v2.definition_levels_byte_length < 0 || v2.repetition_levels_byte_length < 0)
          corrupt(pg.index, "negative level length");
        const int64_t lv = int64_t{v2.definition_levels_byte_length} + v2.repetition_levels_byte_length;
        if (lv > pg.compressed_size || lv > pg.uncompressed_size) corrupt(pg.index, "levels longer than the page");
        pg.rep_bytes = v2.repetition_levels_byte_length;
        pg.def_bytes = ci.optional ? v2.definition_levels_byte_length : 0;
        pg.rep_bytes += ci.optional ? 0 : v2.definition_levels_byte_length;  // no levels to read: skipped over
        pg.compressed = v2.is_compressed;
        keep = true;
        break;
      }
      default:
        break;  // index pages carry nothing the reader needs
    }
    if (!keep) continue;
    if (p.compression == codec::uncompressed || !pg.compressed) {
      if (pg.compressed_size != pg.uncompressed_size) corrupt(pg.index, "uncompressed page sizes differ");
    } else if (p.compression == codec::lzo || p.compression == codec::brotli) {
      p.host_reason = "codec " + to_string(p.compression);
    } else if (pg.codec_out_size() > 0 && pg.codec_out_size() > max_decompressed_size(p.compression, chunk + pg.codec_in(), pg.codec_in_size())) {
      corrupt(pg.index, "page claims " + std::to_string(pg.uncompressed_size) + " bytes uncompressed from " +
                            std::to_string(pg.compressed_size) + " " + to_string(p.compression) + " bytes");
    }
    auto check_crc = [&] {
      if (!device_decompression || !h.crc || !pg.compressed || p.compression == codec::uncompressed ||
          !device_codec(p.compression))
        return;
      const uint32_t got = page_crc(chunk + pg.offset, static_cast<size_t>(pg.compressed_size));
      if (got != static_cast<uint32_t>(*h.crc))
        corrupt(pg.index, "CRC-32 " + std::to_string(got) + " of its bytes is not its header's " +
                              std::to_string(static_cast<uint32_t>(*h.crc)));
      pg.checked = true;
    };
    if (h.type == page_type::dictionary_page) {
      check_crc();
      p.dictionary = static_cast<int>(p.pages.size());
      p.pages.push_back(pg);
      continue;
    }
    any_data = true;
    if (pg.num_values < 0 || pg.num_values > p.num_rows - row) corrupt(pg.index, "page holds more rows than the row group");
    pg.first_row = row;
    row += pg.num_values;
    if (p.host_reason.empty()) p.host_reason = unsupported(p, pg.enc);
    if (!wanted(pg.first_row, row)) {
      ++p.pages_skipped;
      continue;
    }
    check_crc();
    if (!kept_data) p.first_row = pg.first_row;
    kept_data = true;
    p.decoded_rows += pg.num_values;
    p.pages.push_back(pg);
  }
  // the pages after the last needed row were not even looked at: the page index knows how many there are
  if (!ranges.empty() && row < p.num_rows) {
    const auto index = r.page_index(rg, column);
    for (const auto& ps : index)
      if (ps.rows.begin >= row) ++p.pages_skipped;
  }
  return p;
}

size_t uncompressed_layout(const chunk_plan& p, std::vector<size_t>& at) {
  at.resize(p.pages.size());
  size_t total = 0;
  for (size_t k = 0; k < p.pages.size(); ++k) {
    at[k] = total;
    total += (static_cast<size_t>(p.pages[k].uncompressed_size) + 7) / 8 * 8;
  }
  return total;
}

void decompress_page(const chunk_plan& p, const planned_page& pg, const uint8_t* chunk, uint8_t* out) {
  const size_t lv = static_cast<size_t>(pg.rep_bytes + pg.def_bytes);
  if (lv) std::memcpy(out, chunk + pg.offset, lv);
  try {
    decompress(p.compression, chunk + pg.codec_in(), pg.codec_in_size(), out + lv, pg.codec_out_size());
  } catch (const io_error& e) {
    throw io_error(p.where + "page " + std::to_string(pg.index) + ": " + e.what());
  } catch (const not_implemented_error& e) {
    throw not_implemented_error(p.where + e.what());
  }
}

std::vector<gpu::page_params> page_jobs(const chunk_plan& p, const std::vector<const uint8_t*>& data) {
  std::vector<gpu::page_params> out(p.pages.size());
  int64_t row = 0;
  for (size_t k = 0; k < p.pages.size(); ++k) {
    const planned_page& pg = p.pages[k];
    gpu::page_params& j = out[k];
    j.data = data[k];
    j.size = pg.uncompressed_size;
    j.rows = pg.num_values;
    j.index = pg.index;
    j.encoding = static_cast<gpu::enc>(pg.enc);
    j.rep_bytes = pg.rep_bytes;
    j.def_bytes = pg.def_bytes;
    if (pg.type == page_type::dictionary_page) {
      j.version = 0;
      continue;
    }
    j.version = pg.type == page_type::data_page_v2 ? 2 : 1;
    j.first_row = row;
    row += pg.num_values;
  }
  return out;
}

std::vector<std::pair<int64_t, int64_t>> range_pieces(const chunk_plan& p, const std::vector<row_range>& ranges) {
  if (ranges.empty()) return {{0, p.decoded_rows}};
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const row_range& x : ranges) {
    int64_t at = 0;  // decoded rows before the page holding x.begin
    bool found = false;
    for (const planned_page& pg : p.pages) {
      if (pg.type == page_type::dictionary_page) continue;
      if (pg.first_row <= x.begin && x.begin < pg.first_row + pg.num_values) {
        at += x.begin - pg.first_row;
        found = true;
        break;
      }
      at += pg.num_values;
    }
    if (!found || at + (x.end - x.begin) > p.decoded_rows) throw internal_error("parquet: row range not decoded");
    out.emplace_back(at, x.end - x.begin);
  }
  return out;
}

void throw_page_error(const chunk_plan& p, const gpu::error_slot& e) {
  throw io_error(p.where + "page " + std::to_string(e.page) + ": corrupt page: " + gpu::page_error_text(e.code));
}

}  // namespace tug::io::parquet
