// libFuzzer target: the input is a whole Parquet file. Fuzzes the footer decoder (Thrift compact
// FileMetaData), the schema walk, statistics and, through the column chunks the footer points to,
// the page decoders. Build and run with scripts/fuzz.sh.
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tug::fuzz::read_whole_file(data, size);
  return 0;
}
