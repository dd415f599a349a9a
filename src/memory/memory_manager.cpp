// The memory manager of one query: spillable tables, their moves between tiers, the spill file.
#include "tug/memory/memory_manager.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <system_error>

#include "tug/core/error.hpp"
#include "tug/memory/device.hpp"
#include "tug/runtime/options.hpp"

namespace tug {

const char* to_string(memory_tier t) {
  switch (t) {
    case memory_tier::device: return "device";
    case memory_tier::pinned: return "pinned";
    case memory_tier::host: return "host";
    case memory_tier::disk: return "disk";
  }
  return "?";
}

const char* to_string(transfer_direction d) {
  switch (d) {
    case transfer_direction::device_to_pinned: return "device->pinned";
    case transfer_direction::pinned_to_device: return "pinned->device";
    case transfer_direction::device_to_host: return "device->host";
    case transfer_direction::host_to_device: return "host->device";
    case transfer_direction::host_to_disk: return "host->disk";
    case transfer_direction::disk_to_host: return "disk->host";
  }
  return "?";
}

namespace {

using clock_type = std::chrono::steady_clock;
double since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

/// Spill file space is handed out in multiples of this (fewer, reusable holes).
constexpr int64_t kDiskBlock = 4096;

/// Per column of `t`: true when nothing but `t` holds its buffers (moving it frees them; a column
/// that shares a buffer with something else stays where it is).
std::vector<bool> owned_columns(const table& t) {
  std::map<const buffer*, long> seen;
  auto buffers = [](const column& c) {
    return std::array<const buffer_ptr*, 3>{&c.data_buffer(), &c.offsets_buffer(), &c.validity_buffer()};
  };
  for (auto& c : t.columns())
    for (const buffer_ptr* b : buffers(c))
      if (*b) ++seen[b->get()];
  std::vector<bool> owned;
  for (auto& c : t.columns()) {
    bool mine = c.data_buffer() != nullptr;
    for (const buffer_ptr* b : buffers(c))
      if (*b && b->use_count() != seen[b->get()]) mine = false;
    owned.push_back(mine);
  }
  return owned;
}

memory_kind kind_of(const column& c) {
  for (const buffer_ptr* b : {&c.data_buffer(), &c.offsets_buffer(), &c.validity_buffer()})
    if (*b && (*b)->resource()) return (*b)->resource()->kind();
  return memory_kind::host;
}

memory_kind kind_of(const table& t) {
  for (auto& c : t.columns())
    if (c.data_buffer()) return kind_of(c);
  return memory_kind::host;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The spill file: one per query, unlinked as soon as it is opened, so that nothing is left behind
// even after a kill -9. Space is handed out first-fit from the holes of freed extents, else at the end.

class memory_manager::spill_file {
 public:
  spill_file(std::string dir, int64_t limit) : _dir(std::move(dir)), _limit(limit) {
#ifdef O_TMPFILE
    _fd = ::open(_dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
    if (_fd < 0) {  // file systems without O_TMPFILE: create, then unlink at once
      std::string path = _dir + "/tug-spill-XXXXXX";
      _fd = ::mkostemp(path.data(), O_CLOEXEC);
      if (_fd >= 0) ::unlink(path.c_str());
    }
    if (_fd < 0)
      throw io_error("spill_directory \"" + _dir + "\": cannot create the query's spill file: " + errno_text(errno));
  }
  ~spill_file() {
    if (_fd >= 0) ::close(_fd);
  }

  /// Space for `n` bytes. @throws io_error past spill_disk_limit.
  int64_t allocate(int64_t n) {
    n = round(n);
    std::lock_guard<std::mutex> g(_mu);
    if (_limit > 0 && _used + n > _limit)
      throw io_error("spill_directory \"" + _dir + "\": the query's spill file would exceed spill_disk_limit = " +
                     human_bytes(_limit) + " (" + human_bytes(_used) + " in use, " + human_bytes(n) +
                     " more asked for); raise spill_disk_limit or memory_limit");
    int64_t off = -1;
    for (auto it = _holes.begin(); it != _holes.end(); ++it)
      if (it->second >= n) {
        off = it->first;
        if (it->second > n) _holes.emplace(off + n, it->second - n);
        _holes.erase(it);
        break;
      }
    if (off < 0) {
      off = _end;
      _end += n;
    }
    _used += n;
    _peak = std::max(_peak, _used);
    return off;
  }

  void release(int64_t off, int64_t n) {
    n = round(n);
    std::lock_guard<std::mutex> g(_mu);
    _used -= n;
    auto it = _holes.emplace(off, n).first;
    // merge with the neighbours
    if (auto next = std::next(it); next != _holes.end() && it->first + it->second == next->first) {
      it->second += next->second;
      _holes.erase(next);
    }
    if (it != _holes.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        _holes.erase(it);
        it = prev;
      }
    }
    if (it->first + it->second == _end) {  // give the tail back to the file system
      _end = it->first;
      _holes.erase(it);
      if (::ftruncate(_fd, _end) != 0) {}  // a failure keeps the space allocated; nothing is lost
    }
  }

  void write(int64_t off, const void* p, int64_t n) {
    const char* c = static_cast<const char*>(p);
    while (n > 0) {
      ssize_t w = ::pwrite(_fd, c, static_cast<size_t>(n), off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int err = w < 0 ? errno : ENOSPC;
        throw io_error("spill_directory \"" + _dir + "\": writing the query's spill file failed: " + errno_text(err) +
                       " (" + human_bytes(used()) + " spilled to disk; spill_disk_limit = " +
                       (_limit > 0 ? human_bytes(_limit) : std::string("unlimited")) +
                       "); free space there, point spill_directory elsewhere, or raise memory_limit");
      }
      c += w;
      off += w;
      n -= w;
    }
  }

  void read(int64_t off, void* p, int64_t n) {
    char* c = static_cast<char*>(p);
    while (n > 0) {
      ssize_t r = ::pread(_fd, c, static_cast<size_t>(n), off);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0)
        throw io_error("spill_directory \"" + _dir + "\": reading the query's spill file failed: " +
                       (r < 0 ? errno_text(errno) : std::string("unexpected end of file")));
      c += r;
      off += r;
      n -= r;
    }
  }

  int64_t used() const {
    std::lock_guard<std::mutex> g(_mu);
    return _used;
  }
  int64_t peak() const {
    std::lock_guard<std::mutex> g(_mu);
    return _peak;
  }

 private:
  static int64_t round(int64_t n) { return std::max<int64_t>(kDiskBlock, (n + kDiskBlock - 1) / kDiskBlock * kDiskBlock); }
  std::string _dir;
  int64_t _limit;
  int _fd = -1;
  mutable std::mutex _mu;
  std::map<int64_t, int64_t> _holes;  ///< offset -> size of free space below _end
  int64_t _end = 0, _used = 0, _peak = 0;
};

// ---------------------------------------------------------------------------------------------
// A table on disk: per column its metadata and where its buffers are in the table's one extent.
// Sliced columns are written compacted: the rows from the validity byte that holds the first row
// (so the bits keep their position within the byte), string offsets rebased to their first chars.

struct spillable_table::on_disk {
  struct piece {
    int64_t at = 0, size = 0;  ///< within the extent; size 0: no such buffer
  };
  struct column_meta {
    size_t index = 0;  ///< the column's position in the table
    data_type type;
    int64_t size = 0, offset = 0, null_count = 0;
    piece data, offsets, validity;
  };
  std::vector<column_meta> columns;  ///< the columns on disk (while the table is on disk)
  std::vector<column> kept;          ///< while on disk: the columns that stayed (empty where one is on disk)
  int64_t extent = 0, extent_size = 0;  ///< while on disk
  int64_t moved = 0;                 ///< bytes of the columns that moved out of their home tier
};

spillable_table::spillable_table(memory_manager* mm, table t, spill_priority p)
    : _mm(mm), _table(std::move(t)), _priority(p) {
  _home = kind_of(_table) == memory_kind::device ? memory_tier::device : memory_tier::host;
  _tier = kind_of(_table) == memory_kind::pinned_host ? memory_tier::pinned : _home;
  _rows = _table.num_rows();
  _bytes = _table.memory_usage();
  _disk = std::make_unique<on_disk>();  // the spill state (the header keeps it opaque)
}

spillable_table::~spillable_table() {
  if (_tier == memory_tier::disk) _mm->file().release(_disk->extent, _disk->extent_size);
  if (_home == memory_tier::device && _tier == memory_tier::host) _mm->add_host_spilled(-_disk->moved);
}

memory_tier spillable_table::tier() const {
  std::lock_guard<std::mutex> g(_mu);
  return _tier;
}

spillable_table::pin& spillable_table::pin::operator=(pin&& o) noexcept {
  if (this != &o) {
    release();
    _owner = o._owner;
    _table = std::move(o._table);
    o._owner = nullptr;
  }
  return *this;
}

void spillable_table::pin::release() {
  if (!_owner) return;
  _table = table();
  spillable_table* s = _owner;
  _owner = nullptr;
  std::lock_guard<std::mutex> g(s->_mu);
  if (--s->_pins == 0 && s->_mm->spill_everything()) {
    // debug: straight back to disk, through the tiers (a spill failure here is not the user's error)
    try {
      while (s->_tier != memory_tier::disk && s->spill_locked(s->_tier) > 0) {}
    } catch (const std::exception&) {
    }
  }
}

spillable_table::pin spillable_table::acquire() {
  std::lock_guard<std::mutex> g(_mu);
  if (_taken) throw internal_error("a spillable table was used after it was taken");
  restore_locked();
  ++_pins;
  return pin(this, _table);
}

table spillable_table::take() {
  std::lock_guard<std::mutex> g(_mu);
  if (_taken) throw internal_error("a spillable table was taken twice");
  restore_locked();
  _taken = true;
  return std::move(_table);
}

void spillable_table::restore_locked() {
  if (_tier == memory_tier::disk) {
    auto t0 = clock_type::now();
    memory_resource* mr = _mm->_r.host;
    auto load = [&](const on_disk::piece& p) -> buffer_ptr {
      if (p.size == 0) return nullptr;
      buffer_ptr b = make_buffer(static_cast<size_t>(p.size), mr);
      _mm->file().read(_disk->extent + p.at, b->data(), p.size);
      return b;
    };
    std::vector<column> cols = std::move(_disk->kept);
    for (auto& m : _disk->columns) {
      buffer_ptr data = load(m.data), offsets = load(m.offsets), validity = load(m.validity);
      if (!data) data = make_buffer(0, mr);
      cols[m.index] = column(m.type, m.size, std::move(data), std::move(validity), m.null_count, std::move(offsets), m.offset);
    }
    _table = table(std::move(cols));
    _mm->file().release(_disk->extent, _disk->extent_size);
    _disk->columns.clear();
    _tier = memory_tier::host;
    if (_home == memory_tier::device) _mm->add_host_spilled(_disk->moved);
    _mm->record(transfer_direction::disk_to_host, _disk->moved, since(t0));
  }
  if (_home == memory_tier::device && _tier != memory_tier::device) {
    auto t0 = clock_type::now();
    const memory_tier was = _tier;
    _table = to_device(_table, _mm->_r.device);  // columns that stayed on the device are shared
    _tier = memory_tier::device;
    if (was == memory_tier::host) _mm->add_host_spilled(-_disk->moved);
    _mm->record(was == memory_tier::pinned ? transfer_direction::pinned_to_device : transfer_direction::host_to_device,
                _disk->moved, since(t0));
  }
}

int64_t spillable_table::spill_locked(memory_tier from) {
  if (_pins > 0 || _taken || _tier != from || from == memory_tier::disk) return 0;
  // only the columns the table owns move: moving shared buffers would free nothing
  std::vector<bool> owned = owned_columns(_table);
  std::vector<size_t> moving;
  int64_t bytes = 0;
  for (size_t i = 0; i < owned.size(); ++i) {
    const bool here = from == memory_tier::device ? kind_of(_table[i]) == memory_kind::device
                                                  : kind_of(_table[i]) != memory_kind::device;
    if (owned[i] && here) {
      moving.push_back(i);
      bytes += _table[i].memory_usage();
    }
  }
  if (bytes == 0) return 0;
  if (from == memory_tier::device) {
    auto t0 = clock_type::now();
    std::vector<column> part;
    for (size_t i : moving)
      part.push_back(_table[i]);
    const table dev(std::move(part));
    table h;
    memory_tier to = memory_tier::host;
    if (_mm->_r.pinned) {
      try {
        h = to_host(dev, _mm->_r.pinned);
        to = memory_tier::pinned;
      } catch (const memory_error&) {  // the pinned pool is full: pageable memory next
      }
    }
    if (to != memory_tier::pinned) {
      try {
        h = to_host(dev, _mm->_r.host);
      } catch (const memory_error&) {
        return 0;  // no host room either; the caller reports what it could not get
      }
    }
    std::vector<column> cols = _table.columns();
    for (size_t k = 0; k < moving.size(); ++k)
      cols[moving[k]] = h[k];
    _table = table(std::move(cols));
    _tier = to;
    _disk->moved = bytes;
    _mm->record(to == memory_tier::pinned ? transfer_direction::device_to_pinned : transfer_direction::device_to_host,
                bytes, since(t0));
    if (to == memory_tier::host) {
      _mm->add_host_spilled(bytes);
      if (_mm->_host_spill_limit > 0 && _mm->host_spilled_bytes() > _mm->_host_spill_limit) spill_locked(memory_tier::host);
    }
    return bytes;
  }
  // host or pinned -> disk: one extent for the moving columns, compacted, one after another
  auto t0 = clock_type::now();
  on_disk* d = _disk.get();
  d->columns.clear();
  struct piece_source {
    const void* p;
    int64_t n;
    int64_t at;
  };
  std::vector<piece_source> sources;
  std::vector<std::vector<int64_t>> rebased;  // string offsets, rebased to their first chars
  int64_t at = 0;
  auto add = [&](const void* p, int64_t n) {
    on_disk::piece pc{at, n};
    if (n > 0) sources.push_back({p, n, at});
    at += (n + 63) / 64 * 64;
    return pc;
  };
  for (size_t i : moving) {
    const column& c = _table[i];
    on_disk::column_meta m;
    m.index = i;
    m.type = c.type();
    const int64_t shift = c.validity_buffer() ? c.offset() % 8 : 0;  // validity bits keep their place in the byte
    const int64_t first = c.offset() - shift, n = c.size() + shift;
    m.size = c.size();
    m.offset = shift;
    m.null_count = c.null_count();
    if (c.type().id == type_id::string) {
      const int64_t* o = c.offsets_buffer()->as<int64_t>() + first;
      m.data = add(c.data_buffer()->as<char>() + o[0], o[n] - o[0]);
      auto& r = rebased.emplace_back(static_cast<size_t>(n + 1));
      for (int64_t k = 0; k <= n; ++k)
        r[static_cast<size_t>(k)] = o[k] - o[0];
      m.offsets = add(r.data(), (n + 1) * 8);
    } else {
      const int64_t w = size_of(c.type().id);
      m.data = add(c.data_buffer()->as<char>() + first * w, n * w);
    }
    if (c.validity_buffer()) m.validity = add(c.validity_buffer()->as<uint8_t>() + first / 8, bits::bytes_for(n));
    d->columns.push_back(std::move(m));
  }
  d->extent_size = std::max<int64_t>(at, 1);
  auto& f = _mm->file();
  d->extent = f.allocate(d->extent_size);
  try {
    for (auto& src : sources)
      f.write(d->extent + src.at, src.p, src.n);
  } catch (...) {
    f.release(d->extent, d->extent_size);
    d->columns.clear();
    throw;
  }
  const memory_tier was = _tier;
  std::vector<column> cols = _table.columns();
  for (size_t i : moving)
    cols[i] = column();
  _table = table();
  d->kept = std::move(cols);
  _tier = memory_tier::disk;
  if (_home == memory_tier::device && was == memory_tier::host) _mm->add_host_spilled(-d->moved);
  d->moved = bytes;
  _mm->record(transfer_direction::host_to_disk, bytes, since(t0));
  return bytes;
}

// ---------------------------------------------------------------------------------------------

memory_manager::memory_manager(const engine_options& options, resources r)
    : _r(r),
      _spill_directory(options.spill_directory),
      _disk_limit(options.spill_disk_limit),
      _host_spill_limit(options.host_spill_limit),
      _spill_everything(options.spill_everything) {
  if (!_r.host) throw internal_error("memory_manager needs a host memory resource");
  for (memory_budget* b : {_r.host_budget, _r.pinned_budget, _r.device_budget})
    if (b) b->set_reclaimer(this);
}

memory_manager::~memory_manager() {
  for (memory_budget* b : {_r.host_budget, _r.pinned_budget, _r.device_budget})
    if (b && b->reclaimer() == this) b->set_reclaimer(nullptr);
}

spillable_ptr memory_manager::make_spillable(table t, spill_priority p) {
  spillable_ptr s(new spillable_table(this, std::move(t), p));
  {
    std::lock_guard<std::mutex> g(_mu);
    // drop the entries of tables that are gone, now and then
    if (_tables.size() >= 64 && (_tables.size() & (_tables.size() - 1)) == 0)
      _tables.erase(std::remove_if(_tables.begin(), _tables.end(), [](auto& w) { return w.expired(); }), _tables.end());
    _tables.push_back(s);
  }
  if (_spill_everything) {
    std::lock_guard<std::mutex> g(s->_mu);
    while (s->_tier != memory_tier::disk && s->spill_locked(s->_tier) > 0) {}
  }
  return s;
}

namespace {
thread_local bool passed_busy_tables = false;  ///< this thread's last spill() skipped a locked table
}  // namespace

bool memory_manager::busy() const { return passed_busy_tables || _spilling.load() > 0; }

int64_t memory_manager::spill(memory_tier tier, int64_t bytes) {
  passed_busy_tables = false;
  struct in_flight {
    std::atomic<int>& n;
    explicit in_flight(std::atomic<int>& c) : n(c) { ++n; }
    ~in_flight() { --n; }
  } spilling(_spilling);
  // only tables in `tier` that may move: out of core most tables are on disk already, and sorting them
  // all on every reclaim made a window over 4M rows in 64 MiB spend minutes here (tens of thousands
  // of bucket pieces)
  std::vector<spillable_ptr> candidates;
  {
    std::lock_guard<std::mutex> g(_mu);
    for (auto& w : _tables)
      if (auto s = w.lock()) {
        std::unique_lock<std::mutex> sg(s->_mu, std::try_to_lock);  // busy: skipped below as well
        if (sg.owns_lock() && (s->_pins > 0 || s->_taken || s->_tier != tier)) continue;
        if (!sg.owns_lock()) passed_busy_tables = true;
        candidates.push_back(std::move(s));
      }
  }
  // lowest priority class first, the largest first within a class, the older first among equals: taken
  // from a heap as long as more is wanted (a reclaim usually wants a few of many candidates)
  std::vector<std::pair<size_t, spill_priority>> order;  // (index into candidates, class)
  order.reserve(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) order.emplace_back(i, candidates[i]->_priority);
  auto later = [&](const std::pair<size_t, spill_priority>& a, const std::pair<size_t, spill_priority>& b) {
    if (a.second != b.second) return a.second > b.second;
    const int64_t x = candidates[a.first]->_bytes, y = candidates[b.first]->_bytes;
    if (x != y) return x < y;
    return a.first > b.first;
  };
  std::make_heap(order.begin(), order.end(), later);
  int64_t freed = 0;
  for (auto end = order.end(); freed < bytes && end != order.begin(); --end) {
    std::pop_heap(order.begin(), end, later);
    spillable_table& s = *candidates[(end - 1)->first];
    std::unique_lock<std::mutex> g(s._mu, std::try_to_lock);  // busy (being used or moved): skip it
    if (!g.owns_lock()) {
      passed_busy_tables = true;
      continue;
    }
    freed += s.spill_locked(tier);
  }
  return freed;
}

void memory_manager::spill_all() {
  for (memory_tier t : {memory_tier::device, memory_tier::pinned, memory_tier::host})
    spill(t, INT64_MAX);
}

int64_t memory_manager::reclaim(memory_budget& b, int64_t bytes) {
  if (&b == _r.device_budget) return spill(memory_tier::device, bytes);
  int64_t freed = 0;
  if (&b == _r.pinned_budget) freed += spill(memory_tier::pinned, bytes);
  if (&b == _r.host_budget) {
    freed += spill(memory_tier::host, bytes);
    // pinned staging is counted against the host budget when the pinned pool has no budget of its own
    if (freed < bytes && _r.pinned && !_r.pinned_budget) freed += spill(memory_tier::pinned, bytes - freed);
  }
  return freed;
}

std::string memory_manager::describe(const memory_budget& b) const {
  (void)b;
  int64_t pinned_bytes = 0, count = 0, shared_bytes = 0, shared_count = 0;
  {
    std::lock_guard<std::mutex> g(_mu);
    for (auto& w : _tables)
      if (auto s = w.lock()) {
        std::unique_lock<std::mutex> sg(s->_mu, std::try_to_lock);
        if (!sg.owns_lock() || s->_taken || s->_tier == memory_tier::disk) continue;
        if (s->_pins > 0) {
          pinned_bytes += s->_bytes;
          ++count;
          continue;
        }
        // columns whose buffers something else holds too stay where they are (spill_locked)
        const std::vector<bool> owned = owned_columns(s->_table);
        int64_t held = 0;
        for (size_t i = 0; i < owned.size(); ++i)
          if (!owned[i]) held += s->_table[i].memory_usage();
        if (held > 0) {
          shared_bytes += held;
          ++shared_count;
        }
      }
  }
  auto t = transfers();
  int64_t to_host = t[size_t(transfer_direction::device_to_host)].bytes + t[size_t(transfer_direction::device_to_pinned)].bytes;
  int64_t to_disk = t[size_t(transfer_direction::host_to_disk)].bytes;
  return human_bytes(pinned_bytes) + " of spillable data in use by running work (" + std::to_string(count) +
         " tables)" +
         (shared_count > 0 ? ", " + human_bytes(shared_bytes) + " that cannot move while other work shares its buffers (" +
                                 std::to_string(shared_count) + " tables)"
                           : std::string()) +
         "; spilled so far " + human_bytes(to_host) + " from the device, " + human_bytes(to_disk) +
         " to disk (spill_directory \"" + _spill_directory + "\")";
}

static_assert(std::tuple_size_v<decltype(memory_account::moved)> == num_transfer_directions,
              "memory_account::moved has one entry per transfer_direction");

void memory_manager::record(transfer_direction d, int64_t bytes, double seconds) {
  // the operator whose work runs on this thread: its reservation spilled, or its read restored
  if (memory_account* a = memory_account::current())
    a->moved[static_cast<size_t>(d)].fetch_add(bytes, std::memory_order_relaxed);
  std::lock_guard<std::mutex> g(_mu);
  auto& t = _transfers[static_cast<size_t>(d)];
  ++t.count;
  t.bytes += bytes;
  t.largest = std::max(t.largest, bytes);
  t.seconds += seconds;
}

std::array<transfer_totals, num_transfer_directions> memory_manager::transfers() const {
  std::lock_guard<std::mutex> g(_mu);
  return _transfers;
}

memory_manager::spill_file& memory_manager::file() {
  std::lock_guard<std::mutex> g(_file_mu);
  if (!_file) _file = std::make_unique<spill_file>(_spill_directory, _disk_limit);
  return *_file;
}

int64_t memory_manager::disk_bytes() const {
  std::lock_guard<std::mutex> g(const_cast<std::mutex&>(_file_mu));
  return _file ? _file->used() : 0;
}
int64_t memory_manager::disk_peak() const {
  std::lock_guard<std::mutex> g(const_cast<std::mutex&>(_file_mu));
  return _file ? _file->peak() : 0;
}
int64_t memory_manager::host_spilled_bytes() const { return _host_spilled.load(std::memory_order_relaxed); }
void memory_manager::add_host_spilled(int64_t delta) { _host_spilled.fetch_add(delta, std::memory_order_relaxed); }

std::string memory_manager::transfers_to_string() const {
  auto t = transfers();
  std::string s;
  char buf[256];
  for (size_t i = 0; i < num_transfer_directions; ++i) {
    if (t[i].count == 0) continue;
    if (s.empty()) s = "transfer          count        MiB  largest_MiB   seconds     GB/s\n";
    std::snprintf(buf, sizeof buf, "%-15s %7lld %10.1f %12.1f %9.4f %8.2f\n", to_string(transfer_direction(i)),
                  static_cast<long long>(t[i].count), static_cast<double>(t[i].bytes) / (1 << 20),
                  static_cast<double>(t[i].largest) / (1 << 20), t[i].seconds, t[i].gb_per_second());
    s += buf;
  }
  return s;
}

std::string memory_manager::transfers_to_json() const {
  auto t = transfers();
  std::string s = "{";
  char buf[256];
  for (size_t i = 0; i < num_transfer_directions; ++i) {
    std::snprintf(buf, sizeof buf, "%s\"%s\": {\"count\": %lld, \"bytes\": %lld, \"largest\": %lld, \"seconds\": %.6f}",
                  i ? ", " : "", to_string(transfer_direction(i)), static_cast<long long>(t[i].count),
                  static_cast<long long>(t[i].bytes), static_cast<long long>(t[i].largest), t[i].seconds);
    s += buf;
  }
  return s + "}";
}

}  // namespace tug
