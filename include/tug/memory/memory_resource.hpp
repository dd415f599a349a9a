#pragma once
/// Memory resources: every buffer tug allocates comes from one, and each can be tied to a budget.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tug {

/// Where a resource's memory lives.
enum class memory_kind : uint8_t { host, pinned_host, device };

class memory_budget;

/// `b` bytes for messages: "1.5 GiB", "64.0 KiB".
std::string human_bytes(int64_t b);

/// Frees memory of a budget by moving data elsewhere (the query's memory manager spills to a lower
/// tier). A budget asks it before it refuses a reservation.
class memory_reclaimer {
 public:
  virtual ~memory_reclaimer() = default;
  /// Tries to free at least `bytes` of `b`; returns the bytes freed (0: nothing more can move).
  virtual int64_t reclaim(memory_budget& b, int64_t bytes) = 0;
  /// What a refusal adds to its message: bytes held by running work, bytes already spilled.
  virtual std::string describe(const memory_budget& b) const = 0;
  /// True when this thread's last reclaim passed over data that other threads were moving or using at
  /// that moment, or another thread is spilling now: a reclaim that freed nothing may free something
  /// once they are done.
  virtual bool busy() const { return false; }
};

/// What the work of one operator reserved and moved, for per-operator statistics (exec_statistics).
/// The thread that runs an operator's work installs its account (scope; the thread pool hands it on to
/// the tasks of a parallel_for started under it); a budget notes the bytes it has in use just after
/// each reservation made there, and the memory manager the bytes that spills and restores moved when
/// they ran there, i.e. a spill counts for the operator whose reservation caused it.
struct memory_account {
  /// By memory_kind: the most bytes of that kind's budget in use just after a reservation of this work.
  std::array<std::atomic<int64_t>, 3> peak{};
  /// By transfer_direction (memory_manager.hpp): the bytes moved while this work ran.
  std::array<std::atomic<int64_t>, 6> moved{};

  void note_peak(memory_kind k, int64_t used) noexcept {
    std::atomic<int64_t>& p = peak[static_cast<size_t>(k)];
    int64_t was = p.load(std::memory_order_relaxed);
    while (used > was && !p.compare_exchange_weak(was, used, std::memory_order_relaxed)) {}
  }
  /// The account installed on the calling thread (nullptr: none).
  static memory_account* current() noexcept;
  /// Installs an account on the calling thread for its lifetime (nullptr: none), restoring the previous one.
  class scope {
   public:
    explicit scope(memory_account* a) noexcept;
    ~scope();
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;

   private:
    memory_account* _previous;
  };
};

/// Counts bytes in use against a limit. Thread-safe.
class memory_budget {
 public:
  /// `limit` in bytes; 0 = unlimited. `option` names the setting that raises the limit in error messages.
  /// A budget named "device" counts device memory, "pinned" pinned host memory, any other host memory
  /// (memory_account::peak).
  explicit memory_budget(int64_t limit = 0, std::string name = "host", std::string option = {})
      : _limit(limit), _name(std::move(name)), _option(std::move(option)),
        _kind(_name == "device"   ? memory_kind::device
              : _name == "pinned" ? memory_kind::pinned_host
                                  : memory_kind::host) {}
  /// Reserves `bytes` for `what`. Over the limit, the reclaimer (if any) spills first and the request
  /// is retried. @throws memory_error naming `what`, the request, the limit, what was spilled and the option.
  void reserve(int64_t bytes, const char* what = "allocation");
  /// Reserves `bytes` if they fit now, without asking the reclaimer. Returns false when they do not.
  bool try_reserve(int64_t bytes);
  /// Asks the reclaimer to free at least `bytes` of this budget although the reservation fitted (the
  /// memory itself ran out: a device allocation that failed within the limit). Returns the bytes freed;
  /// 0 without a reclaimer, when nothing more moves, or when called while spilling for this budget.
  int64_t reclaim(int64_t bytes);
  void release(int64_t bytes) { _used.fetch_sub(bytes, std::memory_order_relaxed); }
  int64_t used() const { return _used.load(std::memory_order_relaxed); }
  int64_t peak() const { return _peak.load(std::memory_order_relaxed); }
  int64_t limit() const { return _limit; }
  void set_limit(int64_t limit) { _limit = limit; }
  const std::string& name() const { return _name; }
  /// Asked to free memory before a reservation is refused (nullptr: none). Not owned.
  void set_reclaimer(memory_reclaimer* r) { _reclaimer = r; }
  memory_reclaimer* reclaimer() const { return _reclaimer; }

 private:
  void note_peak(int64_t now);
  std::atomic<int64_t> _used{0};
  std::atomic<int64_t> _peak{0};
  int64_t _limit;
  std::string _name;
  std::string _option;
  memory_kind _kind;
  memory_reclaimer* _reclaimer = nullptr;
};

/// Abstract allocator of raw, 64-byte aligned bytes (host, pinned host or device). A resource owned
/// by a shared_ptr is kept alive by the buffers it allocated.
class memory_resource : public std::enable_shared_from_this<memory_resource> {
 public:
  virtual ~memory_resource() = default;
  /// Allocates `bytes` (64-byte aligned). @throws memory_error when the budget or the system refuses.
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* p, size_t bytes) noexcept = 0;
  virtual memory_kind kind() const = 0;
  virtual const char* name() const = 0;
};

/// Pageable host memory, optionally counted against a budget. Freed blocks of at least 1 MiB are kept
/// for reuse by any host_memory_resource (up to a sixteenth of the machine's memory and at most 8 GiB
/// idle, outside every budget): fresh pages cost page faults and zeroing on first touch.
class host_memory_resource final : public memory_resource {
 public:
  explicit host_memory_resource(std::shared_ptr<memory_budget> budget = nullptr) : _budget(std::move(budget)) {}
  void* allocate(size_t bytes) override;
  void deallocate(void* p, size_t bytes) noexcept override;
  memory_kind kind() const override { return memory_kind::host; }
  const char* name() const override { return "host"; }
  memory_budget* budget() const { return _budget.get(); }

 private:
  std::shared_ptr<memory_budget> _budget;
};

/// Keeps the C allocator from holding freed memory resident (a fixed mmap threshold in glibc), once per
/// process; called when a query runs under a memory_limit, so that the process's memory follows the budget.
void bound_allocator_retention();

/// Bytes of freed host blocks kept for reuse (see host_memory_resource), and their bound.
size_t cached_host_bytes();
size_t cached_host_limit();

/// The process-wide default host resource (unbudgeted unless `set_default_host_resource` is called).
memory_resource* default_host_resource();
/// Replaces the default host resource; returns the previous one. The caller keeps ownership.
memory_resource* set_default_host_resource(memory_resource* mr);

/// An owning, immutable-after-fill block of bytes from a memory resource. Move-only.
class buffer {
 public:
  buffer() = default;
  /// Allocates `bytes` from `mr` (uninitialized).
  explicit buffer(size_t bytes, memory_resource* mr = default_host_resource());
  ~buffer();
  buffer(buffer&& o) noexcept;
  buffer& operator=(buffer&& o) noexcept;
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;

  void* data() { return _data; }
  const void* data() const { return _data; }
  template <typename T> T* as() { return static_cast<T*>(_data); }
  template <typename T> const T* as() const { return static_cast<const T*>(_data); }
  size_t size() const { return _size; }
  memory_resource* resource() const { return _mr; }

 private:
  void* _data = nullptr;
  size_t _size = 0;
  memory_resource* _mr = nullptr;
  std::shared_ptr<memory_resource> _keep;  ///< keeps a shared-owned resource alive
};

using buffer_ptr = std::shared_ptr<buffer>;

/// Allocates a shared buffer of `bytes` from `mr`.
buffer_ptr make_buffer(size_t bytes, memory_resource* mr = default_host_resource());

}  // namespace tug
