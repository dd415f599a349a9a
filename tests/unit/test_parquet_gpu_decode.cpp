// The GPU Parquet reader on the CPU: its host-side planning (pages, offsets, rows, pruning) and its
// device decoding steps (src/io/parquet/page_decode.hpp, TUG_HOST_DEVICE) run by a team of one thread,
// compared with the CPU reader on every file of tests/data/make_parquet.py and on files of edge sizes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <barrier>
#include <random>
#include <thread>
#include <set>

#include "io/parquet/page_decode.hpp"
#include "io/parquet/page_plan.hpp"
#include "parquet_test_util.hpp"
#include "test_util.hpp"
#include "tug/api/io.hpp"
#include "tug/io/parquet/codec.hpp"
#include "tug/io/parquet/metadata.hpp"
#include "tug/io/parquet/reader.hpp"
#include "tug/io/parquet_source.hpp"
#include "tug/memory/device.hpp"
#include "tug/runtime/cuda_libraries.hpp"
#ifdef TUG_WITH_CUDA
#include "io/parquet/gpu_reader.hpp"
#endif

namespace tug {
namespace {

namespace fs = std::filesystem;
using io::parquet::chunk_plan;
using io::parquet::file_reader;
using io::parquet::page_type;
using io::parquet::row_range;
namespace pq = io::parquet;
namespace gpu = io::parquet::gpu;

/// The bytes of a column chunk as the GPU reader reads them.
std::vector<uint8_t> chunk_bytes(const file_reader& r, int rg, size_t c) {
  const auto ci = r.chunk(rg, c);
  std::vector<uint8_t> b(static_cast<size_t>(ci.size));
  r.read_bytes(ci.offset, b.size(), b.data());
  return b;
}

/// A team of `threads` host threads standing in for a thread block: its barrier is __syncthreads, its
/// count the block-wide exclusive count, so that the parallel parts of the steps (strided loops, the
/// leader publishing runs, counts across the team) run as on the device.
class thread_block {
 public:
  explicit thread_block(int threads) : _n(threads), _bar(threads), _bits(static_cast<size_t>(threads)) {}
  /// Runs f(team) on every thread of the block and waits for them.
  template <typename F>
  void run(F&& f) {
    std::vector<std::thread> ts;
    for (int r = 0; r < _n; ++r)
      ts.emplace_back([&, r] { f(team{this, r}); });
    for (auto& t : ts)
      t.join();
  }
  struct team {
    thread_block* b;
    int r;
    int rank() const { return r; }
    int size() const { return b->_n; }
    bool leader() const { return r == 0; }
    void sync() const { b->_bar.arrive_and_wait(); }
    int32_t exclusive_count(bool v, int32_t& total, gpu::page_shared&) const {
      b->_bits[static_cast<size_t>(r)] = v;
      sync();
      int32_t before = 0, all = 0;
      for (int i = 0; i < b->_n; ++i) {
        before += i < r ? b->_bits[static_cast<size_t>(i)] : 0;
        all += b->_bits[static_cast<size_t>(i)];
      }
      sync();
      total = all;
      return before;
    }
  };

 private:
  int _n;
  std::barrier<> _bar;
  std::vector<int32_t> _bits;
};

/// Runs a step with a team of `threads` (1: the serial team, else a thread_block).
template <typename F>
void with_team(int threads, F&& f) {
  if (threads == 1) return f(gpu::serial_team{});
  thread_block b(threads);
  b.run(f);
}

/// The device steps of gpu_reader.cu run on the host, in the same order, over host memory, each by a
/// team of `threads`: the pages decompressed (codec.cpp), the dictionary, each data page, the validity
/// bits, the string offsets and chars. Returns the decoded rows of the plan's pages as a host column.
column run_device_steps(const chunk_plan& p, const std::vector<uint8_t>& bytes, int threads = 1) {
  std::vector<size_t> at;
  std::vector<uint8_t> ubuf(pq::uncompressed_layout(p, at) + 8);
  std::vector<const uint8_t*> data(p.pages.size());
  for (size_t k = 0; k < p.pages.size(); ++k) {
    const pq::planned_page& pg = p.pages[k];
    if (p.compression == pq::codec::uncompressed || !pg.compressed) {
      data[k] = bytes.data() + pg.offset;
    } else {
      pq::decompress_page(p, pg, bytes.data(), ubuf.data() + at[k]);
      data[k] = ubuf.data() + at[k];
    }
  }
  const std::vector<gpu::page_params> jobs = pq::page_jobs(p, data);
  const int64_t rows = p.decoded_rows;
  const auto n = static_cast<size_t>(rows);
  gpu::chunk_params c = p.params;
  gpu::error_slot err;
  c.error = &err;
  buffer_ptr out = make_buffer(n * static_cast<size_t>(c.out_width) + 16);
  std::vector<int32_t> rank(n + 1);
  std::vector<uint32_t> indices(n + 1);
  std::vector<uint64_t> dense_values(n + 1);
  std::vector<const uint8_t*> dense_ptr(n + 1), str_ptr(n + 1);
  std::vector<int32_t> dense_len(n + 1);
  std::vector<int64_t> str_len(n + 1);
  c.out = out->as<uint8_t>();
  c.rank = rank.data();
  c.indices = indices.data();
  c.dense_values = dense_values.data();
  c.dense_ptr = dense_ptr.data();
  c.dense_len = dense_len.data();
  c.str_ptr = str_ptr.data();
  c.str_len = str_len.data();
  std::vector<uint8_t> dict_values;
  std::vector<const uint8_t*> dict_ptr;
  std::vector<int32_t> dict_len;
  if (p.dictionary >= 0) {
    const gpu::page_params& d = jobs[static_cast<size_t>(p.dictionary)];
    dict_values.resize(static_cast<size_t>(d.rows) * static_cast<size_t>(c.out_width) + 1);
    dict_ptr.resize(static_cast<size_t>(d.rows) + 1);
    dict_len.resize(static_cast<size_t>(d.rows) + 1);
    c.dict_values = dict_values.data();
    c.dict_ptr = dict_ptr.data();
    c.dict_len = dict_len.data();
    auto sh = std::make_unique<gpu::page_shared>();
    with_team(threads, [&](const auto& t) { gpu::decode_dictionary(t, c, d, *sh); });
    c.has_dict = true;
    c.dict_count = d.rows;
  }
  // every page prepared before any row is decoded, as the launches order them
  auto sh = std::make_unique<gpu::page_shared>();
  std::vector<gpu::page_state> states(jobs.size());
  for (size_t k = 0; k < jobs.size(); ++k)
    if (jobs[k].version != 0) with_team(threads, [&](const auto& t) { gpu::prepare_page(t, c, jobs[k], *sh, &states[k]); });
  for (size_t k = 0; k < jobs.size(); ++k)
    if (jobs[k].version != 0 && states[k].ok)
      for (int64_t i = 0; i < jobs[k].rows; ++i)
        gpu::decode_row(c, jobs[k], states[k], i);
  if (err.code) pq::throw_page_error(p, err);
  buffer_ptr validity;
  int64_t nulls = 0;
  if (c.optional) {
    validity = make_buffer(static_cast<size_t>(bits::bytes_for(rows)));
    for (int64_t b = 0; b < bits::bytes_for(rows); ++b)
      validity->as<uint8_t>()[b] = gpu::validity_byte(rank.data(), rows, b);
    nulls = rows - bits::count_set(validity->as<uint8_t>(), 0, rows);
  }
  if (c.cv != gpu::conv::string) return column(p.type, rows, out, nulls ? validity : nullptr, nulls);
  buffer_ptr offsets = make_buffer((n + 1) * sizeof(int64_t));
  int64_t* o = offsets->as<int64_t>();
  o[0] = 0;
  for (size_t i = 0; i < n; ++i)
    o[i + 1] = o[i] + str_len[i];
  buffer_ptr chars = make_buffer(static_cast<size_t>(o[n]) + 1);
  for (int64_t i = 0; i < rows; ++i)
    gpu::copy_string(c, o, chars->as<char>(), i);
  return column(p.type, rows, chars, nulls ? validity : nullptr, nulls, offsets);
}

/// Counts of the chunks compared.
struct compared {
  int device = 0, host = 0;
  std::set<std::string> host_reasons;
};

/// Every row group and column of `path` through the device steps equals the CPU reader; chunks the
/// plan sends to the host decoder are counted.
void compare_file(const std::string& path, compared& n, const std::vector<row_range>& ranges = {}, int threads = 1) {
  SCOPED_TRACE(path);
  const file_reader r = file_reader::open(path);
  for (int g = 0; g < r.num_row_groups(); ++g) {
    if (r.row_group_num_rows(g) == 0) continue;
    for (size_t c = 0; c < r.schema().size(); ++c) {
      const std::vector<uint8_t> bytes = chunk_bytes(r, g, c);
      const chunk_plan p = pq::plan_chunk(r, g, c, bytes.data(), bytes.size(), ranges);
      if (!p.host_reason.empty()) {
        ++n.host;
        n.host_reasons.insert(p.host_reason);
        continue;
      }
      ++n.device;
      const column decoded = run_device_steps(p, bytes, threads);
      const table want = r.read_row_group_ranges(g, {c}, ranges);
      std::vector<column> pieces;
      for (auto [at, len] : pq::range_pieces(p, ranges))
        pieces.push_back(decoded.slice(at, len));
      const column got = pieces.size() == 1 ? pieces[0] : concatenate(pieces);
      expect_columns_equal(got, want[0], r.schema()[c].name + " of row group " + std::to_string(g));
    }
  }
}

class GpuParquetFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("tug_gpu_parquet_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    const std::string cmd = test_python() + " " TUG_SOURCE_DIR "/tests/data/make_parquet.py " + dir_.string();
    ASSERT_EQ(std::system(cmd.c_str()), 0) << "generating Parquet test files failed (needs pyarrow): " << cmd;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string path(const std::string& name) { return (dir_ / name).string(); }
  static fs::path dir_;
};
fs::path GpuParquetFiles::dir_;

TEST_F(GpuParquetFiles, DeviceStepsEqualTheCpuReaderOnEveryTestFile) {
  compared n;
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    if (e.path().extension() != ".parquet") continue;
    ++files;
    compare_file(e.path().string(), n);
  }
  EXPECT_GT(files, 30);
  EXPECT_GT(n.device, 200);
  // only the encodings and types the device does not decode yet go to the host decoder
  for (const std::string& why : n.host_reasons)
    EXPECT_TRUE(why == "encoding DELTA_BYTE_ARRAY" || why == "UUID text") << why;
  EXPECT_TRUE(n.host_reasons.count("UUID text"));
}

TEST_F(GpuParquetFiles, DeviceStepsByTeamsOfThreadsEqualTheCpuReader) {
  // teams of 3 and 8 host threads: the strided loops, the runs the leader publishes and the counts
  // across the team (a block's ballots), on files with nulls, dictionaries, strings, v2 pages and deltas
  compared n;
  for (int threads : {3, 8})
    for (const char* name : {"base_v1_snappy_dict.parquet", "base_v2_zstd_plain.parquet", "base_v1_none_plain.parquet",
                             "dict_fallback.parquet", "delta_bp_v2.parquet", "delta_len_v1.parquet", "bss_v2.parquet",
                             "int96.parquet", "extra_types.parquet", "decimal_int.parquet"})
      compare_file(path(name), n, {}, threads);
  EXPECT_GT(n.device, 50);
}

TEST_F(GpuParquetFiles, PlanListsEveryPageOfAChunk) {
  // base files: 300-row row groups of 2 KiB pages, dictionary or plain, v1 or v2; dict_fallback: 20000
  // rows of 4 KiB pages whose dictionary fills up mid-chunk
  size_t most_pages = 0;
  for (const char* name : {"base_v1_snappy_dict.parquet", "base_v2_zstd_plain.parquet", "base_v1_none_plain.parquet",
                           "dict_fallback.parquet"})
  for (int g = 0; g < file_reader::open(path(name)).num_row_groups(); ++g) {
    SCOPED_TRACE(name);
    const file_reader r = file_reader::open(path(name));
    for (size_t c = 0; c < r.schema().size(); ++c) {
      const auto ci = r.chunk(g, c);
      const std::vector<uint8_t> bytes = chunk_bytes(r, g, c);
      const chunk_plan p = pq::plan_chunk(r, g, c, bytes.data(), bytes.size());
      EXPECT_EQ(p.file_offset, ci.offset);
      EXPECT_EQ(p.compression, ci.meta->compression);
      EXPECT_EQ(p.decoded_rows, r.row_group_num_rows(g));
      EXPECT_EQ(p.first_row, 0);
      int64_t row = 0;
      size_t end = 0;
      for (size_t k = 0; k < p.pages.size(); ++k) {
        const pq::planned_page& pg = p.pages[k];
        EXPECT_GT(pg.offset, end) << "page " << k << " starts after the previous one and its header";
        end = pg.offset + static_cast<size_t>(pg.compressed_size);
        EXPECT_LE(end, bytes.size());
        if (pg.type == page_type::dictionary_page) {
          EXPECT_EQ(static_cast<int>(k), p.dictionary);
          EXPECT_EQ(k, 0u);
          continue;
        }
        EXPECT_EQ(pg.first_row, row);
        row += pg.num_values;
      }
      EXPECT_EQ(row, r.row_group_num_rows(g));
      const bool dict = std::string(name).find("_dict") != std::string::npos;
      if (name[0] == 'b' && (r.schema()[c].type.id != type_id::boolean || !dict)) {
        EXPECT_EQ(p.dictionary >= 0, dict) << r.schema()[c].name;
      }
      most_pages = std::max(most_pages, p.pages.size());
    }
  }
  EXPECT_GT(most_pages, 10u) << "chunks of many pages";
}

TEST_F(GpuParquetFiles, PlanKeepsOnlyThePagesOfTheWantedRows) {
  const file_reader r = file_reader::open(path("dict_fallback.parquet"));
  const size_t c = r.schema().index_of("i");
  const std::vector<uint8_t> bytes = chunk_bytes(r, 0, c);
  const chunk_plan all = pq::plan_chunk(r, 0, c, bytes.data(), bytes.size());
  ASSERT_GT(all.pages.size(), 4u);
  ASSERT_EQ(all.dictionary, 0);
  const pq::planned_page& third = all.pages[3];
  // rows inside the third data page only, then a prefix (a limit): no page after the last wanted row
  const chunk_plan one = pq::plan_chunk(r, 0, c, bytes.data(), bytes.size(), {{third.first_row + 1, third.first_row + 2}});
  ASSERT_EQ(one.pages.size(), 2u) << "the dictionary and the page";
  EXPECT_EQ(one.pages[1].offset, third.offset);
  EXPECT_EQ(one.first_row, third.first_row);
  EXPECT_EQ(one.decoded_rows, third.num_values);
  const chunk_plan prefix = pq::plan_chunk(r, 0, c, bytes.data(), bytes.size(), {{0, 1}});
  EXPECT_EQ(prefix.pages.size(), 2u);
  EXPECT_EQ(prefix.decoded_rows, all.pages[1].num_values);
  // and the decoded rows of ranges equal the CPU reader's
  compared n;
  compare_file(path("dict_fallback.parquet"), n, {{3, 5}, {third.first_row + 1, third.first_row + 40}, {19990, 20000}});
  compare_file(path("base_v2_none_dict.parquet"), n, {{0, 1}});
  EXPECT_GE(n.device, 10);
}

/// `bytes` of the chunk of column `c` with byte `at` of its page `page` (after the header) replaced.
void expect_page_error(const std::string& path, size_t c, size_t page, size_t at, uint8_t value,
                       const std::string& what) {
  SCOPED_TRACE(what);
  const file_reader r = file_reader::open(path);
  std::vector<uint8_t> bytes = chunk_bytes(r, 0, c);
  const chunk_plan p = pq::plan_chunk(r, 0, c, bytes.data(), bytes.size());
  ASSERT_TRUE(p.host_reason.empty()) << p.host_reason;
  ASSERT_LT(page, p.pages.size());
  bytes[p.pages[page].offset + at] = value;
  try {
    run_device_steps(p, bytes);
    ADD_FAILURE() << "no error";
  } catch (const io_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(path), std::string::npos) << m;
    EXPECT_NE(m.find("column '" + r.schema()[c].name + "'"), std::string::npos) << m;
    EXPECT_NE(m.find("row group 0"), std::string::npos) << m;
    EXPECT_NE(m.find("page " + std::to_string(p.pages[page].index)), std::string::npos) << m;
    EXPECT_NE(m.find(what), std::string::npos) << m;
  }
}

TEST_F(GpuParquetFiles, CorruptPagesNameFileColumnRowGroupAndPage) {
  const std::string dict = path("base_v1_none_dict.parquet"), plain = path("base_v1_none_plain.parquet");
  const file_reader r = file_reader::open(dict);
  const size_t i32 = r.schema().index_of("i32"), s = r.schema().index_of("s");
  // v1 optional page: 4-byte level length first; a length past the page
  expect_page_error(plain, i32, 0, 3, 0x7f, "definition levels past the end");
  // dictionary data page: level length, levels, then the index bit width
  {
    const std::vector<uint8_t> bytes = chunk_bytes(r, 0, i32);
    const chunk_plan p = pq::plan_chunk(r, 0, i32, bytes.data(), bytes.size());
    const uint8_t* q = bytes.data() + p.pages[1].offset;
    const uint32_t len = gpu::load_le32(q);
    expect_page_error(dict, i32, 1, 4 + len, 40, "bit width above 32");
    // width 31: the indices run past the page or point past the dictionary
    try {
      expect_page_error(dict, i32, 1, 4 + len, 31, "");
    } catch (...) {
      ADD_FAILURE() << "a crash-free error expected";
    }
  }
  // a string length past the page
  expect_page_error(plain, s, 0, 3, 0x7f, "definition levels past the end");
  // a dictionary page shorter than its entries: a string length past its end
  expect_page_error(dict, s, 0, 3, 0x7f, "values past the end");
}

TEST_F(GpuParquetFiles, FlippedPageBytesGiveRowsOrAnIoError) {
  std::mt19937 rng(7);
  for (const char* name : {"base_v1_none_dict.parquet", "base_v2_none_plain.parquet", "base_v1_none_plain.parquet",
                           "delta_bp_v1.parquet", "delta_len_v2.parquet", "bss_v1.parquet", "int96.parquet"}) {
    const file_reader r = file_reader::open(path(name));
    for (size_t c = 0; c < r.schema().size(); ++c) {
      const std::vector<uint8_t> clean = chunk_bytes(r, 0, c);
      const chunk_plan p = pq::plan_chunk(r, 0, c, clean.data(), clean.size());
      if (!p.host_reason.empty()) continue;
      for (int trial = 0; trial < 40; ++trial) {
        std::vector<uint8_t> bytes = clean;
        const pq::planned_page& pg = p.pages[rng() % p.pages.size()];
        if (pg.compressed_size == 0) continue;
        bytes[pg.offset + rng() % static_cast<size_t>(pg.compressed_size)] ^= static_cast<uint8_t>(1 + rng() % 255);
        try {
          EXPECT_EQ(run_device_steps(p, bytes).size(), p.decoded_rows);
        } catch (const io_error& e) {
          EXPECT_NE(std::string(e.what()).find("page "), std::string::npos) << e.what();
        }
      }
    }
  }
}

#ifdef TUG_WITH_CUDA
// On a GPU: the reader itself (nvCOMP or host decompression, the kernels) against the CPU reader.

/// Every row group of `path` read by the GPU reader (all columns; with `ranges` of each row group),
/// its pages decompressed on the host and, where nvCOMP takes them, on the device, equals the CPU
/// reader; returns the device-decoded chunks.
int64_t compare_on_device(const std::string& path, const std::vector<row_range>& ranges = {}) {
  SCOPED_TRACE(path);
  auto dev = make_device_resource(nullptr);
  auto pinned = make_pinned_resource();
  const file_reader r = file_reader::open(path);
  pq::device_read_counters n;
  for (int g = 0; g < r.num_row_groups(); ++g)
    for (bool device_decompression : {false, true}) {
      SCOPED_TRACE(device_decompression ? "device decompression" : "host decompression");
      if (!ranges.empty() && ranges.back().end > r.row_group_num_rows(g)) continue;
      const table got = pq::read_row_group_device(r, g, parquet_test::all_columns(r), ranges, device_decompression,
                                                  dev.get(), pinned.get(), &n);
      EXPECT_TRUE(r.schema().size() == 0 || on_device(got));
      const table host = to_host(got, default_host_resource());
      const table want = r.read_row_group_ranges(g, parquet_test::all_columns(r), ranges);
      EXPECT_EQ(host.num_columns(), want.num_columns());
      if (host.num_columns() != want.num_columns()) return 0;
      for (size_t c = 0; c < want.num_columns(); ++c)
        expect_columns_equal(host[c], want[c], r.schema()[c].name + " of row group " + std::to_string(g));
    }
  return n.device_chunks.load();
}

TEST_F(GpuParquetFiles, GpuReaderEqualsTheCpuReaderOnEveryTestFile) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  int64_t device = 0;
  for (const auto& e : fs::directory_iterator(dir_))
    if (e.path().extension() == ".parquet") device += compare_on_device(e.path().string());
  EXPECT_GT(device, 400);  // each chunk twice
  EXPECT_GT(compare_on_device(path("base_v1_snappy_plain.parquet"), {{3, 5}, {150, 220}, {290, 300}}), 0);
  EXPECT_GT(compare_on_device(path("base_v2_zstd_dict.parquet"), {{0, 1}}), 0);
}

TEST_F(GpuParquetFiles, PagesDecompressOnTheHostUnlessDeviceDecompressionIsAskedFor) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  auto dev = make_device_resource(nullptr);
  auto pinned = make_pinned_resource();
  const file_reader r = file_reader::open(path("base_v1_snappy_dict_crc.parquet"));
  for (bool device_decompression : {false, true}) {
    pq::device_read_counters n;
    for (int g = 0; g < r.num_row_groups(); ++g)
      pq::read_row_group_device(r, g, parquet_test::all_columns(r), {}, device_decompression, dev.get(), pinned.get(),
                                &n);
    EXPECT_GT(n.device_chunks.load(), 0);
    if (device_decompression && nvcomp_available()) {
      EXPECT_GT(n.device_pages.load(), 0) << "the file's pages carry CRCs: nvCOMP takes them";
    } else {
      EXPECT_EQ(n.device_pages.load(), 0);
      EXPECT_GT(n.host_pages.load(), 0);
    }
  }
}

/// Files whose random bytes are overwritten, one test a file (a hang names its file): each read
/// through the GPU reader gives rows or an io_error naming the file.
class GpuReaderCorruptPages : public GpuParquetFiles, public ::testing::WithParamInterface<const char*> {};

TEST_P(GpuReaderCorruptPages, GiveIoErrors) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  std::mt19937 rng(11);
  auto dev = make_device_resource(nullptr);
  auto pinned = make_pinned_resource();
  const std::string name = GetParam();
  const std::string clean = path(name);
  const fs::path bad = dir_ / ("corrupt_" + name);
  const auto size = fs::file_size(clean);
  for (int trial = 0; trial < 30; ++trial) {
    fs::copy_file(clean, bad, fs::copy_options::overwrite_existing);
    {
      std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
      const auto at = static_cast<std::streamoff>(4 + rng() % (size / 2));  // page bytes, not the footer
      f.seekp(at);
      f.put(static_cast<char>(rng()));
    }
    try {
      const file_reader r = file_reader::open(bad.string());
      for (int g = 0; g < r.num_row_groups(); ++g)
        for (bool device_decompression : {false, true})
          pq::read_row_group_device(r, g, parquet_test::all_columns(r), {}, device_decompression, dev.get(),
                                    pinned.get());
    } catch (const io_error& e) {
      EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
    } catch (const not_implemented_error&) {
      // a flipped encoding or codec number in a page header
    }
  }
  fs::remove(bad);
}

INSTANTIATE_TEST_SUITE_P(GpuParquetFiles, GpuReaderCorruptPages,
                         ::testing::Values("base_v1_none_dict.parquet", "base_v2_none_plain.parquet",
                                           "base_v1_snappy_dict.parquet", "base_v1_snappy_plain.parquet",
                                           "base_v2_zstd_plain.parquet", "base_v1_lz4_dict.parquet",
                                           "base_v1_snappy_dict_crc.parquet", "base_v1_lz4_dict_crc.parquet"));

TEST_F(GpuParquetFiles, GpuEngineScansDecodeOnTheDevice) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (const char* name : {"base_v1_snappy_dict.parquet", "base_v2_zstd_plain.parquet", "int96.parquet"}) {
    auto src = std::make_shared<io::parquet_source>(path(name));
    engine_options gpu;
    gpu.engine = engine_kind::gpu;
    gpu.gpu_parquet_reader = true;
    engine_options cpu;
    cpu.engine = engine_kind::cpu;
    thread_pool pool(2);
    auto dev = make_device_resource(nullptr);
    std::vector<std::string> cols;
    for (const auto& f : src->schema().fields())
      cols.push_back(f.name);
    const std::vector<table> parts = src->read_device(cols, {}, gpu, pool, dev.get(), default_host_resource());
    EXPECT_GT(src->counters().device_chunks.load(), 0);
    const std::vector<table> want = src->read(cols, {}, cpu, pool, default_host_resource());
    ASSERT_EQ(parts.size(), want.size());
    for (size_t i = 0; i < parts.size(); ++i) {
      const table got = to_host(parts[i], default_host_resource());
      ASSERT_EQ(got.num_columns(), want[i].num_columns());
      for (size_t c = 0; c < got.num_columns(); ++c)
        expect_columns_equal(got[c], want[i][c], cols[c] + " of partition " + std::to_string(i));
    }
    gpu.gpu_parquet_reader = false;
    const int64_t before = src->counters().device_chunks.load();
    src->read_device(cols, {}, gpu, pool, dev.get(), default_host_resource());
    EXPECT_EQ(src->counters().device_chunks.load(), before) << "gpu_parquet_reader = false decodes on the host";
  }
}

TEST_F(GpuParquetFiles, GpuEngineQueryEqualsTheCpuEngine) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  engine_options gpu;
  gpu.engine = engine_kind::gpu;
  gpu.gpu_parquet_reader = true;
  engine_options cpu;
  cpu.engine = engine_kind::cpu;
  for (const char* name : {"base_v1_snappy_dict.parquet", "base_v2_lz4_plain.parquet", "int96.parquet"}) {
    SCOPED_TRACE(name);
    // a CUDA filter above the scan: the scan hands it device partitions from the GPU reader
    const lazy_frame q = scan_parquet(path(name)).filter(col("i32").is_not_null());
    expect_frames_equal(q.collect(gpu), q.collect(cpu));
  }
}
#endif

/// A table of `n` rows of every type tug writes, with nulls.
table edge_table(int64_t n) {
  std::mt19937 rng(static_cast<uint32_t>(n) + 3);
  std::vector<std::optional<int32_t>> a;
  std::vector<std::optional<int64_t>> l;
  std::vector<std::optional<double>> d;
  std::vector<std::optional<bool>> b;
  std::vector<std::optional<std::string>> s;
  for (int64_t i = 0; i < n; ++i) {
    const bool null = rng() % 5 == 0;
    a.push_back(null ? std::nullopt : std::optional<int32_t>(static_cast<int32_t>(rng() % 50) - 25));
    l.push_back(static_cast<int64_t>(rng()) << 20);
    d.push_back(null ? std::nullopt : std::optional<double>(static_cast<double>(rng() % 1000) / 7));
    b.push_back(rng() % 7 == 0 ? std::nullopt : std::optional<bool>(rng() & 1));
    s.push_back(rng() % 6 == 0 ? std::nullopt : std::optional<std::string>(std::string(rng() % 20, 'a' + static_cast<char>(rng() % 26))));
  }
  return table({i32(a), i64(l), f64(d), boolean(b), str(s)});
}

TEST(GpuParquetSizes, EdgeSizesPagesRowGroupsAndCodecs) {
  const fs::path dir = fs::temp_directory_path() / ("tug_gpu_sizes_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  compared n;
  for (int64_t rows : {0, 1, 31, 32, 33, 1024}) {
    const table t = edge_table(rows);
    const schema s({{"i32", data_type(type_id::int32)}, {"i64", data_type(type_id::int64)},
                    {"f64", data_type(type_id::float64)}, {"b", data_type(type_id::boolean)},
                    {"s", data_type(type_id::string)}});
    for (const char* codec : {"none", "snappy", "zstd"})
      for (bool dict : {true, false}) {
        pq::write_options o;
        o.codec = codec;
        o.dictionary = dict;
        o.page_bytes = 64;       // many pages a chunk
        o.row_group_rows = 300;  // several row groups
        const std::string f = (dir / (std::to_string(rows) + codec + (dict ? "d" : "p") + ".parquet")).string();
        pq::write_parquet(f, s, {t}, o);
        compare_file(f, n);
      }
  }
  fs::remove_all(dir);
  EXPECT_GT(n.device, 100);
  EXPECT_EQ(n.host, 0);
}

TEST(GpuParquetSizes, LengthPrefixedValuesAcrossWalkWindows) {
  // PLAIN strings (and a dictionary of them) whose lengths put prefixes at every offset of the team's
  // window, values longer than the window (kWalkWindow), empty values and nulls, in pages of 64 KiB
  const fs::path dir = fs::temp_directory_path() / ("tug_gpu_walk_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const int64_t rows = 3000;
  std::vector<std::optional<std::string>> v;
  std::mt19937 rng(5);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t len = i % 97 == 0 ? gpu::kWalkWindow + 3 * i % 5000 : i % 13 == 0 ? 0 : static_cast<int64_t>(rng() % 61);
    if (i % 17 == 3)
      v.push_back(std::nullopt);
    else
      v.push_back(std::string(static_cast<size_t>(len), static_cast<char>('a' + i % 26)));
  }
  const table t({make_string_column(v)});
  const schema s({{"s", data_type(type_id::string)}});
  compared n;
  for (bool dict : {true, false}) {
    pq::write_options o;
    o.dictionary = dict;
    o.page_bytes = 64 << 10;
    const std::string f = (dir / (dict ? "d.parquet" : "p.parquet")).string();
    pq::write_parquet(f, s, {t}, o);
    for (int threads : {1, 8})
      compare_file(f, n, {}, threads);
  }
  fs::remove_all(dir);
  EXPECT_EQ(n.device, 4);
}

TEST(GpuParquetChecksums, PagesGoToTheDeviceCodecOnlyWhenTheirCrcIsChecked) {
  // tug writes a CRC-32 in every page header (write_options::page_checksums); the plan checks it for the
  // pages that nvCOMP would decompress (undefined on corrupt input) and rejects a page that does not match
  const fs::path dir = fs::temp_directory_path() / ("tug_gpu_crc_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const table t = edge_table(1024);
  const schema s({{"i32", data_type(type_id::int32)}, {"i64", data_type(type_id::int64)},
                  {"f64", data_type(type_id::float64)}, {"b", data_type(type_id::boolean)},
                  {"s", data_type(type_id::string)}});
  const bool device = pq::device_codec(pq::codec::snappy);
  for (bool crc : {true, false}) {
    pq::write_options o;
    o.page_bytes = 256;
    o.page_checksums = crc;
    const std::string f = (dir / (crc ? "crc.parquet" : "none.parquet")).string();
    pq::write_parquet(f, s, {t}, o);
    const file_reader r = file_reader::open(f);
    int pages = 0;
    for (size_t c = 0; c < r.schema().size(); ++c) {
      std::vector<uint8_t> bytes = chunk_bytes(r, 0, c);
      const chunk_plan p = pq::plan_chunk(r, 0, c, bytes.data(), bytes.size(), {}, true);
      for (const pq::planned_page& pg : p.pages) {
        EXPECT_EQ(pg.checked, crc && device) << r.schema()[c].name << " page " << pg.index;
        ++pages;
      }
      // without device decompression (the default) no page is checked: the host decompresses them all
      for (const pq::planned_page& pg : pq::plan_chunk(r, 0, c, bytes.data(), bytes.size()).pages)
        EXPECT_FALSE(pg.checked) << r.schema()[c].name << " page " << pg.index;
      size_t used = 0;
      const pq::page_header h = pq::decode_page_header(bytes.data(), bytes.size(), used);
      ASSERT_EQ(h.crc.has_value(), crc);
      if (crc) EXPECT_EQ(static_cast<uint32_t>(*h.crc), pq::page_crc(bytes.data() + used, static_cast<size_t>(h.compressed_page_size)));
      if (!crc || !device) continue;
      // a flipped byte in the last page's bytes: the plan names the file, column and page
      const pq::planned_page& last = p.pages.back();
      bytes[last.offset + static_cast<size_t>(last.compressed_size) / 2] ^= 0x5a;
      try {
        pq::plan_chunk(r, 0, c, bytes.data(), bytes.size(), {}, true);
        ADD_FAILURE() << "a corrupt page of " << r.schema()[c].name << " passed its CRC";
      } catch (const io_error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find(f), std::string::npos) << m;
        EXPECT_NE(m.find("page " + std::to_string(last.index)), std::string::npos) << m;
        EXPECT_NE(m.find("CRC-32"), std::string::npos) << m;
      }
    }
    EXPECT_GT(pages, 10);
  }
  fs::remove_all(dir);
  if (!device) GTEST_SKIP() << "nvCOMP cannot be loaded here: the CRCs were written but not checked";
}

#ifdef TUG_WITH_CUDA
TEST(GpuParquetPartitions, AutomaticTargetGivesTheGpuReaderLargerPartitions) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  // 12 row groups of 1000 rows: the GPU reader's automatic target (gpu_scan_partition_rows) coalesces
  // them into one partition, decoded in parallel; an explicit target_partition_rows is honoured
  const fs::path dir = fs::temp_directory_path() / ("tug_gpu_parts_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string f = (dir / "t.parquet").string();
  const table t = edge_table(12000);
  const schema s({{"i32", data_type(type_id::int32)}, {"i64", data_type(type_id::int64)},
                  {"f64", data_type(type_id::float64)}, {"b", data_type(type_id::boolean)},
                  {"s", data_type(type_id::string)}});
  pq::write_options w;
  w.row_group_rows = 1000;
  pq::write_parquet(f, s, {t}, w);
  auto src = std::make_shared<io::parquet_source>(f);
  std::vector<std::string> cols;
  for (const auto& fld : src->schema().fields())
    cols.push_back(fld.name);
  thread_pool pool(4);
  auto dev = make_device_resource(nullptr);
  engine_options cpu;
  cpu.engine = engine_kind::cpu;
  cpu.target_partition_rows = 1 << 20;
  const std::vector<table> want = src->read(cols, {}, cpu, pool, default_host_resource());
  ASSERT_EQ(want.size(), 1u);
  for (int64_t target : {int64_t{0}, int64_t{1000}, int64_t{3000}}) {
    engine_options gpu;
    gpu.engine = engine_kind::gpu;
    gpu.gpu_parquet_reader = true;
    gpu.target_partition_rows = target;
    const std::vector<table> parts = src->read_device(cols, {}, gpu, pool, dev.get(), default_host_resource());
    EXPECT_EQ(parts.size(), target == 0 ? 1u : static_cast<size_t>(12000 / target)) << "target " << target;
    std::vector<table> host;
    for (const table& p : parts)
      host.push_back(to_host(p, default_host_resource()));
    const table got = concatenate(host, default_host_resource());
    for (size_t c = 0; c < cols.size(); ++c)
      expect_columns_equal(got[c], want[0][c], cols[c] + " at target " + std::to_string(target));
  }
  fs::remove_all(dir);
}
#endif

}  // namespace
}  // namespace tug
