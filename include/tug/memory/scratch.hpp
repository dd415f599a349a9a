#pragma once
/// Working memory that does not live in buffers (hash tables and index vectors in std containers) is
/// counted against the query's host budget through scratch reservations, so that a `memory_limit` bounds
/// it too. The query installs its host budget on the thread that runs it (scratch_budget::scope); the
/// thread pool hands it on to the tasks of a parallel_for started under it, as it does the memory_account.
#include <cstdint>

namespace tug {

class memory_budget;

struct scratch_budget {
  /// The budget installed on the calling thread (nullptr: none; scratch is then not counted).
  static memory_budget* current() noexcept;
  /// Installs `b` on the calling thread for its lifetime, restoring the previous one.
  class scope {
   public:
    explicit scope(memory_budget* b) noexcept;
    ~scope();
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;

   private:
    memory_budget* _previous;
  };
};

/// Bytes of working memory reserved on the calling thread's scratch budget (none installed: nothing is
/// counted) until the reservation is destroyed. Reserving may spill other data first, and raises
/// memory_error naming `what` when the bytes cannot fit. Move-only.
class scratch_reservation {
 public:
  scratch_reservation() = default;
  scratch_reservation(int64_t bytes, const char* what) { resize(bytes, what); }
  ~scratch_reservation() { resize(0, nullptr); }
  scratch_reservation(scratch_reservation&& o) noexcept : _budget(o._budget), _bytes(o._bytes) { o._bytes = 0; }
  scratch_reservation& operator=(scratch_reservation&& o) noexcept;
  scratch_reservation(const scratch_reservation&) = delete;
  scratch_reservation& operator=(const scratch_reservation&) = delete;

  /// Grows (reserving the difference) or shrinks (releasing it) to `bytes`.
  void resize(int64_t bytes, const char* what);
  /// Adds `bytes` (may be negative).
  void add(int64_t bytes, const char* what) { resize(_bytes + bytes, what); }
  int64_t bytes() const { return _bytes; }

 private:
  memory_budget* _budget = nullptr;  ///< the budget of the first reservation (kept for the releases)
  int64_t _bytes = 0;
};

/// Bytes a std::vector's buffer holds.
template <typename V> int64_t capacity_bytes(const V& v) {
  return static_cast<int64_t>(v.capacity() * sizeof(typename V::value_type));
}

}  // namespace tug
