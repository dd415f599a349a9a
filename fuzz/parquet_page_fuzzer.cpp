// libFuzzer target for the page decoders: the input is one column chunk (page headers and page bytes)
// behind a 5-byte prefix that picks the column. The target wraps it in a valid file skeleton (magic,
// a footer with one column chunk spanning the input) and reads it, so every input reaches the page
// header decoder, the decompressors, the level and value decoders without first having to mutate a
// valid footer. Build and run with scripts/fuzz.sh; fuzz/make_seeds.py extracts seeds from pyarrow files.
//
// Prefix: [0] physical type (low 3 bits), [1] bit 0 optional, bits 1-3 codec, [2] FIXED_LEN_BYTE_ARRAY
// length, [3..4] row count - 1 (little endian, modulo 4096).
// With TUG_FUZZ_WRITE_FILE=path set, the wrapped file is also written there (before it is read).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz_common.hpp"
#include "tug/io/parquet/metadata.hpp"

namespace pq = tug::io::parquet;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t prefix = 5;
  if (size < prefix) return 0;
  const auto type = static_cast<pq::physical_type>(data[0] & 7);
  const bool optional = data[1] & 1;
  const auto codec = static_cast<pq::codec>((data[1] >> 1) & 7);
  const int32_t type_length = data[2];
  const int64_t rows = ((data[3] | (data[4] << 8)) % 4096) + 1;
  const uint8_t* chunk = data + prefix;
  const size_t chunk_size = size - prefix;

  pq::file_metadata m;
  m.version = 1;
  pq::schema_element root;
  root.name = "schema";
  root.num_children = 1;
  pq::schema_element leaf;
  leaf.type = type;
  leaf.type_length = type == pq::physical_type::fixed_len_byte_array ? type_length : 0;
  leaf.repetition_type = optional ? pq::repetition::optional : pq::repetition::required;
  leaf.name = "c";
  m.schema = {root, leaf};
  m.num_rows = rows;
  pq::column_metadata cm;
  cm.type = type;
  cm.encodings = {pq::encoding::plain};
  cm.path_in_schema = {"c"};
  cm.compression = codec;
  cm.num_values = rows;
  cm.total_compressed_size = static_cast<int64_t>(chunk_size);
  cm.total_uncompressed_size = static_cast<int64_t>(chunk_size);
  cm.data_page_offset = 4;
  pq::column_chunk cc;
  cc.file_offset = 4;
  cc.meta = cm;
  pq::row_group rg;
  rg.columns = {cc};
  rg.num_rows = rows;
  rg.total_byte_size = static_cast<int64_t>(chunk_size);
  m.row_groups = {rg};

  std::string file = "PAR1";
  file.append(reinterpret_cast<const char*>(chunk), chunk_size);
  std::string footer;
  pq::encode_file_metadata(m, footer);
  file += footer;
  const uint32_t len = static_cast<uint32_t>(footer.size());
  file.append(reinterpret_cast<const char*>(&len), 4);
  file += "PAR1";
  // scripts/fuzz.sh keeps a crasher as the whole file it stands for (TUG_FUZZ_WRITE_FILE=path).
  static const char* keep = std::getenv("TUG_FUZZ_WRITE_FILE");
  if (keep) {
    std::FILE* f = std::fopen(keep, "wb");
    if (!f || std::fwrite(file.data(), 1, file.size(), f) != file.size() || std::fclose(f) != 0) std::abort();
  }
  tug::fuzz::read_whole_file(reinterpret_cast<const uint8_t*>(file.data()), file.size());
  return 0;
}
