#include "tug/memory/memory_resource.hpp"

#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <thread>
#include <mutex>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "memory/block_cache.hpp"
#include "tug/core/error.hpp"
#include "tug/memory/scratch.hpp"

namespace tug {

std::string human_bytes(int64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) { v /= 1024; ++u; }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

namespace {
// The budgets this thread is reclaiming for: a reservation made while spilling for a budget (a
// restore's buffer, say) is not sent back to the reclaimer of that same budget.
thread_local std::vector<const memory_budget*> reclaiming;
}  // namespace

namespace {
thread_local memory_account* t_account = nullptr;
}  // namespace

memory_account* memory_account::current() noexcept { return t_account; }
memory_account::scope::scope(memory_account* a) noexcept : _previous(t_account) { t_account = a; }
memory_account::scope::~scope() { t_account = _previous; }

namespace {
thread_local memory_budget* t_scratch = nullptr;
}  // namespace

memory_budget* scratch_budget::current() noexcept { return t_scratch; }
scratch_budget::scope::scope(memory_budget* b) noexcept : _previous(t_scratch) { t_scratch = b; }
scratch_budget::scope::~scope() { t_scratch = _previous; }

scratch_reservation& scratch_reservation::operator=(scratch_reservation&& o) noexcept {
  if (this != &o) {
    resize(0, nullptr);
    _budget = o._budget;
    _bytes = o._bytes;
    o._bytes = 0;
  }
  return *this;
}

void scratch_reservation::resize(int64_t bytes, const char* what) {
  if (bytes < 0) bytes = 0;
  if (!_budget) _budget = scratch_budget::current();
  if (_budget) {
    if (bytes > _bytes) _budget->reserve(bytes - _bytes, what ? what : "working memory");
    else if (bytes < _bytes) _budget->release(_bytes - bytes);
  }
  _bytes = _budget ? bytes : 0;
}

void memory_budget::note_peak(int64_t now) {
  int64_t p = _peak.load(std::memory_order_relaxed);
  while (now > p && !_peak.compare_exchange_weak(p, now, std::memory_order_relaxed)) {}
}

bool memory_budget::try_reserve(int64_t bytes) {
  int64_t now = _used.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (_limit > 0 && now > _limit) {
    _used.fetch_sub(bytes, std::memory_order_relaxed);
    return false;
  }
  note_peak(now);
  if (memory_account* a = memory_account::current()) a->note_peak(_kind, now);
  return true;
}

int64_t memory_budget::reclaim(int64_t bytes) {
  if (!_reclaimer || std::find(reclaiming.begin(), reclaiming.end(), this) != reclaiming.end()) return 0;
  reclaiming.push_back(this);
  struct pop {
    ~pop() { reclaiming.pop_back(); }
  } popper;
  return _reclaimer->reclaim(*this, bytes);
}

void memory_budget::reserve(int64_t bytes, const char* what) {
  if (try_reserve(bytes)) return;
  const bool may_reclaim =
      _reclaimer && std::find(reclaiming.begin(), reclaiming.end(), this) == reclaiming.end();
  if (may_reclaim) {
    reclaiming.push_back(this);
    struct pop {
      ~pop() { reclaiming.pop_back(); }
    } popper;
    // spill until the request fits or nothing more moves (other threads may take what was freed); at
    // least a 32nd of the limit (at most 64 MiB) at a time, so that the allocations after this one find
    // room without a reclaim each (every reclaim looks at every spillable table: a window over 4M rows
    // under 64 MiB, tens of thousands of bucket pieces, spent minutes reclaiming 60 KiB at a time)
    // When nothing moved because other threads were moving or using the tables at that moment (16
    // threads through 3 MiB: each finds the others' tables locked), it waits for them a millisecond at
    // a time, at most 200 times, instead of refusing at once; a bounded wait for moves under way, not
    // for memory that running work holds.
    const int64_t at_least = std::min<int64_t>(_limit / 32, int64_t{64} << 20);
    for (int round = 0, waits = 0; round < 64; ++round) {
      const int64_t short_by = used() + bytes - _limit;
      if (short_by <= 0 && try_reserve(bytes)) return;
      if (_reclaimer->reclaim(*this, std::max({short_by, bytes, at_least})) <= 0) {
        if (waits >= 200 || !_reclaimer->busy()) break;
        ++waits;
        --round;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      if (try_reserve(bytes)) return;
    }
  }
  if (try_reserve(bytes)) return;
  const int64_t in_use = used();
  std::string extra = _reclaimer ? _reclaimer->describe(*this) : std::string();
  throw memory_error(std::string("out of ") + _name + " memory in " + what + ": requested " + human_bytes(bytes) +
                     " with " + human_bytes(in_use) + " in use of a " + human_bytes(_limit) + " limit" +
                     (extra.empty() ? "" : "; " + extra) + "; raise " +
                     (_option.empty() ? std::string("the limit option (memory_limit / spill_device_limit)") : _option) +
                     " or lower target_partition_size");
}

namespace {

// Blocks of at least 1 MiB are kept for reuse when freed (block_cache.hpp), up to a sixteenth of the
// machine's memory and at most 8 GiB idle: a fresh block costs the kernel's page faults and zeroing
// on first touch, half of a single-threaded Parquet scan (AIS, 4M rows on one thread: 0.47 -> 0.27 s
// with reuse). When the system is out of memory, the idle blocks are freed and the allocation retried.
// The budget counts the bytes asked for, not the class's up to 12.5% more. Under a memory_limit the idle
// blocks stay within what the limit leaves (deallocate).
constexpr size_t kCachedHostBlock = size_t(1) << 20;

size_t host_cache_limit() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  const size_t ram = pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
  return std::min(ram / 16, size_t(8) << 30);
}

block_cache& host_blocks() {
  // never destroyed: buffers may be freed at exit
  static auto* c = new block_cache(host_cache_limit(), [](void* p) { std::free(p); });
  return *c;
}

}  // namespace

size_t cached_host_bytes() { return host_blocks().idle_bytes(); }
size_t cached_host_limit() { return host_cache_limit(); }

void* host_memory_resource::allocate(size_t bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  if (_budget) _budget->reserve(static_cast<int64_t>(rounded), "host allocation");
  const bool cached = rounded >= kCachedHostBlock;
  const size_t get = cached ? block_cache::eighth_class(rounded) : rounded;
  void* p = cached ? host_blocks().take(get) : nullptr;
  if (_budget && _budget->limit() > 0) {
    // under a memory_limit, the idle blocks give way to the bytes in use (deallocate keeps them within
    // what the limit leaves; this keeps them so as the use grows)
    const int64_t room = std::max<int64_t>(0, _budget->limit() - _budget->used());
    if (static_cast<int64_t>(host_blocks().idle_bytes()) > room) host_blocks().trim(static_cast<size_t>(room));
  }
  if (!p) p = std::aligned_alloc(64, get);
  if (!p && host_blocks().drain() > 0) p = std::aligned_alloc(64, get);
  if (!p) {
    if (_budget) _budget->release(static_cast<int64_t>(rounded));
    throw memory_error("host allocation of " + human_bytes(static_cast<int64_t>(rounded)) +
                       " failed: the system is out of memory");
  }
  return p;
}

void host_memory_resource::deallocate(void* p, size_t bytes) noexcept {
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  if (rounded >= kCachedHostBlock) {
    // under a memory_limit, idle blocks and the budget's bytes in use stay within the limit together
    // (the process's memory is what the limit bounds; the cache is no way around it)
    size_t bound = SIZE_MAX;
    if (_budget && _budget->limit() > 0)
      bound = static_cast<size_t>(std::max<int64_t>(0, _budget->limit() - (_budget->used() - static_cast<int64_t>(rounded))));
    host_blocks().give(p, block_cache::eighth_class(rounded), bound);
  } else
    std::free(p);
  if (_budget) _budget->release(static_cast<int64_t>(rounded));
}

void bound_allocator_retention() {
#ifdef __GLIBC__
  // glibc raises its mmap threshold (up to 32 MiB) each time a large block is freed, after which such
  // blocks come from its arenas and stay resident when freed: under a 64 MiB memory_limit PDS-H SF1 Q9
  // peaked at 195-225 MiB RSS. A fixed threshold turns that off: blocks of 128 KiB and more are mapped
  // and unmapped (the block cache keeps those of 1 MiB and more for reuse).
  static std::once_flag once;
  std::call_once(once, [] { ::mallopt(M_MMAP_THRESHOLD, 128 * 1024); });
#endif
}

namespace {
host_memory_resource g_default_host;
std::atomic<memory_resource*> g_current{&g_default_host};
}  // namespace

memory_resource* default_host_resource() { return g_current.load(std::memory_order_relaxed); }
memory_resource* set_default_host_resource(memory_resource* mr) {
  return g_current.exchange(mr ? mr : &g_default_host);
}

buffer::buffer(size_t bytes, memory_resource* mr) : _size(bytes), _mr(mr), _keep(mr->weak_from_this().lock()) {
  _data = _mr->allocate(bytes);
}
buffer::~buffer() {
  if (_data) _mr->deallocate(_data, _size);
}
buffer::buffer(buffer&& o) noexcept
    : _data(o._data), _size(o._size), _mr(o._mr), _keep(std::move(o._keep)) {
  o._data = nullptr;
  o._size = 0;
}
buffer& buffer::operator=(buffer&& o) noexcept {
  if (this != &o) {
    if (_data) _mr->deallocate(_data, _size);
    _data = o._data; _size = o._size; _mr = o._mr; _keep = std::move(o._keep);
    o._data = nullptr; o._size = 0;
  }
  return *this;
}

buffer_ptr make_buffer(size_t bytes, memory_resource* mr) { return std::make_shared<buffer>(bytes, mr); }

}  // namespace tug
