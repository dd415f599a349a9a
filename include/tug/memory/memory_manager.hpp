#pragma once
/// The memory manager of one query: four tiers (device, pinned host, host, disk), each with a budget,
/// and the spillable tables that can move down the tiers when a budget runs short and come back when
/// they are used. Every budget of the query asks the manager to spill before it refuses a
/// reservation, so any allocation of the query (an operator's buffers, a copy, a restore) can make
/// room by moving data that nothing is using.
#include <array>
#include <cstdint>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tug/core/table.hpp"
#include "tug/memory/memory_resource.hpp"

namespace tug {

struct engine_options;

/// Where a spillable table's bytes are.
enum class memory_tier : uint8_t { device, pinned, host, disk };
const char* to_string(memory_tier t);

/// The directions data moves in, for statistics (seed 002's table).
enum class transfer_direction : uint8_t {
  device_to_pinned,
  pinned_to_device,
  device_to_host,
  host_to_device,
  host_to_disk,
  disk_to_host,
};
inline constexpr size_t num_transfer_directions = 6;
const char* to_string(transfer_direction d);

/// Totals of one direction.
struct transfer_totals {
  int64_t count = 0;
  int64_t bytes = 0;
  int64_t largest = 0;
  double seconds = 0;
  /// GB/s (10^9 bytes a second); 0 when nothing moved.
  double gb_per_second() const { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0; }
};

/// What spills first: a lower class before a higher one, the largest table first within a class.
enum class spill_priority : uint8_t {
  cold = 1,      ///< partitioned state processed last (buckets of blocking operators)
  buffered = 2,  ///< inputs held for a later phase (a join's probe side while its build side runs, shared subplans)
  queued = 3,    ///< data waiting between operators
};

class memory_manager;

/// A table that the memory manager may move to a lower tier while nothing uses it. Create with
/// memory_manager::make_spillable. Thread-safe.
class spillable_table {
 public:
  ~spillable_table();
  spillable_table(const spillable_table&) = delete;
  spillable_table& operator=(const spillable_table&) = delete;

  /// Keeps a spillable table in memory while it lives; `get()` is its table, in the memory it was made in.
  class pin {
   public:
    pin() = default;
    pin(pin&& o) noexcept : _owner(o._owner), _table(std::move(o._table)) { o._owner = nullptr; }
    pin& operator=(pin&& o) noexcept;
    ~pin() { release(); }
    const table& get() const { return _table; }
    /// Ends the pin; the table may spill again once no copy of it is left.
    void release();

   private:
    friend class spillable_table;
    pin(spillable_table* owner, table t) : _owner(owner), _table(std::move(t)) {}
    spillable_table* _owner = nullptr;
    table _table;
  };

  /// Brings the table back to the memory it was made in if it was spilled, and keeps it there until
  /// the pin is released. @throws memory_error when there is no room for it; io_error when the spill
  /// file cannot be read.
  pin acquire();
  /// The table (restored like acquire), handed over: the handle is empty afterwards.
  table take();
  /// Rows of the table (known without restoring it).
  int64_t num_rows() const { return _rows; }
  /// Bytes of the table in memory (its size as it was made).
  int64_t bytes() const { return _bytes; }
  /// The tier the table is in now.
  memory_tier tier() const;
  spill_priority priority() const { return _priority; }

 private:
  friend class memory_manager;
  struct on_disk;
  spillable_table(memory_manager* mm, table t, spill_priority p);
  /// Moves the table one tier down if it is unpinned and its buffers are its own. Returns the bytes
  /// freed in `from`. Called with _mu held.
  int64_t spill_locked(memory_tier from);
  void restore_locked();

  mutable std::mutex _mu;
  memory_manager* _mm;
  table _table;  ///< in memory (home, or the host while spilled from the device)
  memory_tier _home;
  memory_tier _tier;
  spill_priority _priority;
  int64_t _rows = 0, _bytes = 0;
  int _pins = 0;
  bool _taken = false;
  std::unique_ptr<on_disk> _disk;
};

using spillable_ptr = std::shared_ptr<spillable_table>;

/// The tiers of one query and the tables that can spill between them.
class memory_manager final : public memory_reclaimer {
 public:
  /// Memory of each tier; null resources are tiers the query does not have (no device, no pinned pool).
  struct resources {
    memory_resource* host = nullptr;  ///< required
    memory_resource* pinned = nullptr;
    memory_resource* device = nullptr;
    memory_budget* host_budget = nullptr;  ///< the budget `host` allocates against (optional)
    memory_budget* pinned_budget = nullptr;
    memory_budget* device_budget = nullptr;
  };
  /// Reads spill_directory, spill_disk_limit, host_spill_limit and spill_everything from `options`,
  /// and becomes the reclaimer of the given budgets.
  memory_manager(const engine_options& options, resources r);
  ~memory_manager() override;
  memory_manager(const memory_manager&) = delete;
  memory_manager& operator=(const memory_manager&) = delete;

  /// Registers `t` (in host or device memory) as spillable.
  spillable_ptr make_spillable(table t, spill_priority p);

  /// Moves unpinned tables out of `tier` until at least `bytes` are freed or nothing more can move.
  /// Returns the bytes freed.
  int64_t spill(memory_tier tier, int64_t bytes);
  /// Moves every unpinned table to disk (spill_everything, tests).
  void spill_all();

  // memory_reclaimer
  int64_t reclaim(memory_budget& b, int64_t bytes) override;
  bool busy() const override;
  std::string describe(const memory_budget& b) const override;

  /// Totals per direction so far.
  std::array<transfer_totals, num_transfer_directions> transfers() const;
  /// Bytes in the spill file now, and its largest size.
  int64_t disk_bytes() const;
  int64_t disk_peak() const;
  /// Bytes of host memory that hold data spilled from the device now (host_spill_limit).
  int64_t host_spilled_bytes() const;
  /// The transfers as a table (one direction a line; directions that moved nothing left out), and as JSON.
  std::string transfers_to_string() const;
  std::string transfers_to_json() const;

 private:
  friend class spillable_table;
  class spill_file;
  void record(transfer_direction d, int64_t bytes, double seconds);
  memory_resource* home_resource(memory_tier home) const;
  spill_file& file();
  bool spill_everything() const { return _spill_everything; }
  void add_host_spilled(int64_t delta);

  resources _r;
  std::string _spill_directory;
  int64_t _disk_limit;
  int64_t _host_spill_limit;
  bool _spill_everything;

  std::atomic<int> _spilling{0};  ///< threads inside spill() now
  mutable std::mutex _mu;  ///< guards _tables and _transfers
  std::vector<std::weak_ptr<spillable_table>> _tables;
  std::array<transfer_totals, num_transfer_directions> _transfers{};
  std::atomic<int64_t> _host_spilled{0};

  std::mutex _file_mu;  ///< guards creating _file
  std::unique_ptr<spill_file> _file;
};

}  // namespace tug
