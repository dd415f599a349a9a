// Regression files of the Parquet fuzz targets (scripts/fuzz.sh, fuzz/): every file of tests/data/fuzz
// is opened and every row group of every column read, with statistics. Inputs that once crashed the
// reader (footer-*, page-*: crashers and inputs the fuzzers reached) must now read or fail with a
// typed tug::error, never crash or throw anything else; seed-* files are valid pyarrow files and must
// read in full.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "tug/core/error.hpp"
#include "tug/io/parquet/metadata.hpp"
#include "tug/io/parquet/reader.hpp"

namespace tug {
namespace {

namespace fs = std::filesystem;
using io::parquet::file_reader;

/// Reads all of `path` as the fuzz targets do; returns the rows read.
int64_t read_all(const std::string& path) {
  auto r = file_reader::open(path);
  std::vector<size_t> cols(r.schema().size());
  std::iota(cols.begin(), cols.end(), size_t{0});
  int64_t rows = 0;
  for (int rg = 0; rg < r.num_row_groups(); ++rg) {
    (void)r.row_group_uncompressed_bytes(rg, cols);
    for (size_t c : cols)
      (void)r.statistics(rg, c);
    table t = r.read_row_group(rg, cols);
    EXPECT_EQ(t.num_rows(), r.row_group_num_rows(rg)) << path << " row group " << rg;
    EXPECT_EQ(t.num_columns(), cols.size()) << path << " row group " << rg;
    rows += t.num_rows();
  }
  EXPECT_EQ(rows, r.num_rows()) << path;
  return rows;
}

std::vector<fs::path> files_of(const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(TUG_SOURCE_DIR "/tests/data/fuzz"))
    if (e.is_regular_file() && e.path().filename().string().starts_with(prefix)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ParquetFuzzRegressions, SeedFilesReadInFull) {
  auto files = files_of("seed-");
  ASSERT_FALSE(files.empty());
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    int64_t rows = -1;
    EXPECT_NO_THROW(rows = read_all(f.string()));
    EXPECT_GT(rows, 0);
  }
}

TEST(ParquetFuzzRegressions, FuzzerInputsReadOrFailWithTypedErrors) {
  auto files = files_of("footer-");
  auto pages = files_of("page-");
  files.insert(files.end(), pages.begin(), pages.end());
  ASSERT_FALSE(files.empty());
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    try {
      read_all(f.string());
    } catch (const tug::error& e) {
      EXPECT_FALSE(std::string(e.what()).empty());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "untyped exception: " << e.what();
    }
  }
}

/// Child process of expect_error_within_memory: limits the address space to 256 MiB more than it uses,
/// reads `path` and exits 0 on an error of type E whose message holds `what`; 1 when the read
/// succeeds, 2 on another message, 3 on another exception (std::bad_alloc).
template <typename E>
[[noreturn]] void read_within_memory(const std::string& path, const std::string& what) {
  long pages = 0;
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f || std::fscanf(f, "%ld", &pages) != 1) std::_Exit(4);
  std::fclose(f);
  const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + (256u << 20);
  rlimit r{limit, limit};
  if (::setrlimit(RLIMIT_AS, &r) != 0) std::_Exit(5);
  try {
    read_all(path);
  } catch (const E& e) {
    std::_Exit(std::string(e.what()).find(what) != std::string::npos ? 0 : 2);
  } catch (...) {
    std::_Exit(3);
  }
  std::_Exit(1);
}

/// Expects reading `name` (under tests/data/fuzz) to fail with an error of type E holding `what`, in a
/// child process whose address space is limited, so that a reader allocating sizes taken from the file
/// fails with std::bad_alloc rather than getting lazily mapped memory.
template <typename E>
void expect_error_within_memory_at(const std::string& path, const std::string& what) {
  EXPECT_EXIT(read_within_memory<E>(path, what), ::testing::ExitedWithCode(0), "")
      << path << ": exit 1 = read without error, 2 = other message, 3 = other exception (std::bad_alloc)";
}
template <typename E>
void expect_error_within_memory(const std::string& name, const std::string& what) {
  expect_error_within_memory_at<E>(TUG_SOURCE_DIR "/tests/data/fuzz/" + name, what);
}

// Found by hand while writing the targets (libFuzzer's malloc limit reports it): a SNAPPY data page
// claiming 2^31-1 uncompressed bytes from 4 made the reader allocate 2 GiB before decompressing. Pages
// claiming more than their codec can expand to are now rejected before allocating.
TEST(ParquetFuzzRegressions, PageClaimingMoreThanItsCodecCanExpandToIsRejected) {
  expect_error_within_memory<io_error>("page-oom-snappy-uncompressed-size.parquet",
                                       "column 'c' row group 0: corrupt page: page claims 2147483647 bytes "
                                       "uncompressed from 4 SNAPPY bytes");
}

// Found by parquet_page_fuzzer: a BROTLI dictionary page claiming 1.1 GiB uncompressed was allocated
// before the codec was found unsupported. The codec is now checked before allocating.
TEST(ParquetFuzzRegressions, UnsupportedCodecFailsBeforeAllocating) {
  expect_error_within_memory<not_implemented_error>("page-oom-306da29c7e6d6aadf9debad08ca80bd17721dc5d.parquet",
                                                    "codec BROTLI is not supported");
}

// Crafted files whose row group or pages declare far more rows or values than their bytes hold: the
// reader must reject them before allocating for the declared counts (within 256 MiB of address space).
namespace pq = io::parquet;

/// A data page v1 header (uncompressed) of `n` values in `enc` followed by `body`.
std::string data_page(int32_t n, pq::encoding enc, const std::string& body) {
  pq::page_header h;
  h.type = pq::page_type::data_page;
  h.uncompressed_page_size = h.compressed_page_size = static_cast<int32_t>(body.size());
  h.v1 = pq::data_page_header{n, enc, pq::encoding::rle, pq::encoding::rle};
  std::string out;
  pq::encode_page_header(h, out);
  return out + body;
}

/// Writes a file of one INT64 column 'c' whose single row group declares `rows` rows (and the column
/// chunk `values` values, default `rows`) and holds `chunk`; returns its path.
std::string crafted_file(const std::string& name, bool optional, int64_t rows, const std::string& chunk,
                         int64_t values = -1) {
  pq::file_metadata m;
  m.version = 1;
  pq::schema_element root, leaf;
  root.name = "schema";
  root.num_children = 1;
  leaf.type = pq::physical_type::int64;
  leaf.repetition_type = optional ? pq::repetition::optional : pq::repetition::required;
  leaf.name = "c";
  m.schema = {root, leaf};
  m.num_rows = rows;
  pq::column_metadata cm;
  cm.type = pq::physical_type::int64;
  cm.encodings = {pq::encoding::plain};
  cm.path_in_schema = {"c"};
  cm.num_values = values < 0 ? rows : values;
  cm.total_compressed_size = cm.total_uncompressed_size = static_cast<int64_t>(chunk.size());
  cm.data_page_offset = 4;
  pq::column_chunk cc;
  cc.file_offset = 4;
  cc.meta = cm;
  pq::row_group rg;
  rg.columns = {cc};
  rg.num_rows = rows;
  m.row_groups = {rg};
  std::string file = "PAR1" + chunk, footer;
  pq::encode_file_metadata(m, footer);
  const auto len = static_cast<uint32_t>(footer.size());
  file += footer + std::string(reinterpret_cast<const char*>(&len), 4) + "PAR1";
  const std::string path = (fs::path(::testing::TempDir()) / name).string();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  EXPECT_TRUE(f && std::fwrite(file.data(), 1, file.size(), f) == file.size());
  if (f) std::fclose(f);
  return path;
}

const std::string two_int64s(16, '\x01');
/// Definition levels of an optional page: 4-byte length, then one RLE run of `n` ones.
std::string levels_run(uint8_t n) { return std::string{2, 0, 0, 0, static_cast<char>(n << 1), 1}; }

TEST(ParquetBounds, RowGroupDeclaringMoreRowsThanItsPagesHold) {
  const int64_t rows = int64_t{1} << 40;
  auto path =
      crafted_file("bounds-rows.parquet", true, rows, data_page(2, pq::encoding::plain, levels_run(2) + two_int64s));
  expect_error_within_memory_at<io_error>(path,
                                          "bounds-rows.parquet: column 'c' row group 0: corrupt page: column "
                                          "chunk ends after 2 of 1099511627776 rows");
}

TEST(ParquetBounds, PageDeclaringMoreValuesThanItsLevelsHold) {
  const int32_t n = INT32_MAX;
  auto path =
      crafted_file("bounds-levels.parquet", true, n, data_page(n, pq::encoding::plain, levels_run(2) + two_int64s));
  expect_error_within_memory_at<io_error>(
      path, "column 'c' row group 0: corrupt page: page declares 2147483647 values, its definition levels hold fewer");
}

TEST(ParquetBounds, PlainPageDeclaringMoreValuesThanItsBytesHold) {
  const int32_t n = INT32_MAX;
  auto path = crafted_file("bounds-plain.parquet", false, n, data_page(n, pq::encoding::plain, two_int64s));
  expect_error_within_memory_at<io_error>(
      path, "column 'c' row group 0: corrupt page: page declares 2147483647 PLAIN values, its bytes hold fewer");
}

TEST(ParquetBounds, DictionaryPageDeclaringMoreIndicesThanItsBytesHold) {
  const int32_t n = INT32_MAX;
  pq::page_header d;
  d.type = pq::page_type::dictionary_page;
  d.uncompressed_page_size = d.compressed_page_size = 8;
  d.dict = pq::dictionary_page_header{1, pq::encoding::plain};
  std::string chunk;
  pq::encode_page_header(d, chunk);
  chunk += std::string(8, '\0');
  // bit width 1, one bit-packed group of 8 indices (header 0b11), all zero
  chunk += data_page(n, pq::encoding::rle_dictionary, std::string{1, 3, 0});
  auto path = crafted_file("bounds-dict.parquet", false, n, chunk);
  expect_error_within_memory_at<io_error>(
      path,
      "column 'c' row group 0: corrupt page: page declares 2147483647 RLE_DICTIONARY values, its bytes hold fewer");
}

TEST(ParquetBounds, DictionaryPageDeclaringMoreEntriesThanItsBytesHold) {
  pq::page_header d;
  d.type = pq::page_type::dictionary_page;
  d.uncompressed_page_size = d.compressed_page_size = 16;
  d.dict = pq::dictionary_page_header{INT32_MAX, pq::encoding::plain};
  std::string chunk;
  pq::encode_page_header(d, chunk);
  chunk += two_int64s;
  auto path = crafted_file("bounds-dict-entries.parquet", false, 4, chunk);
  expect_error_within_memory_at<io_error>(
      path, "corrupt page: dictionary of 2147483647 values does not fit its 16-byte page");
}

TEST(ParquetBounds, ColumnChunkValueCountMustAgreeWithRowGroup) {
  auto path = crafted_file("bounds-count.parquet", false, 3, data_page(2, pq::encoding::plain, two_int64s), 2);
  try {
    (void)file_reader::open(path);
    ADD_FAILURE() << "opened";
  } catch (const io_error& e) {
    EXPECT_NE(std::string(e.what()).find("bounds-count.parquet: corrupt Parquet footer: column chunk of 'c' in row "
                                         "group 0 holds 2 values for 3 rows"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tug
