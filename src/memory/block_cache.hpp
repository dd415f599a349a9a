#pragma once
/// Freed memory blocks kept for reuse, by size class, up to a bound on the idle bytes: the pinned
/// resource's (cudaMallocHost costs far more than a copy of the same size) and the host resource's
/// large blocks (fresh pages cost the kernel's page faults and zeroing on first touch: half of a
/// single-threaded Parquet scan's time).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

namespace tug {

class block_cache {
 public:
  /// `release` frees a block that the cache does not keep.
  block_cache(size_t max_idle, void (*release)(void*)) : _max_idle(max_idle), _release(release) {}
  block_cache(const block_cache&) = delete;
  block_cache& operator=(const block_cache&) = delete;

  /// A kept block of class `cls`, or nullptr.
  void* take(size_t cls) {
    std::lock_guard<std::mutex> g(_mu);
    auto it = _free.find(cls);
    if (it == _free.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    _idle -= cls;
    return p;
  }
  /// Keeps `p` (of class `cls`) while the idle bytes stay within the bound (and within `bound`, the
  /// caller's own: what a memory_limit leaves), else releases it.
  void give(void* p, size_t cls, size_t bound = SIZE_MAX) {
    {
      std::lock_guard<std::mutex> g(_mu);
      if (_idle + cls <= std::min(_max_idle, bound)) {
        _free[cls].push_back(p);
        _idle += cls;
        return;
      }
    }
    _release(p);
  }
  /// Releases kept blocks, largest first, until at most `max_idle` bytes are idle; returns the bytes released.
  size_t trim(size_t max_idle) {
    std::vector<void*> out;
    size_t n = 0;
    {
      std::lock_guard<std::mutex> g(_mu);
      for (auto it = _free.rbegin(); it != _free.rend() && _idle > max_idle; ++it)
        while (!it->second.empty() && _idle > max_idle) {
          out.push_back(it->second.back());
          it->second.pop_back();
          _idle -= it->first;
          n += it->first;
        }
    }
    for (void* p : out) _release(p);
    return n;
  }
  /// Releases every kept block; returns the bytes released.
  size_t drain() {
    std::map<size_t, std::vector<void*>> blocks;
    size_t n = 0;
    {
      std::lock_guard<std::mutex> g(_mu);
      blocks.swap(_free);
      n = _idle;
      _idle = 0;
    }
    for (auto& [cls, ps] : blocks)
      for (void* p : ps) _release(p);
    return n;
  }
  size_t idle_bytes() {
    std::lock_guard<std::mutex> g(_mu);
    return _idle;
  }

  /// Power-of-two classes of at least 4 KiB.
  static size_t pow2_class(size_t bytes) { return std::bit_ceil(bytes < 4096 ? size_t{4096} : bytes); }
  /// Eight classes an octave (at most 12.5% above `bytes`), multiples of 64 bytes.
  static size_t eighth_class(size_t bytes) {
    if (bytes <= 512) return (bytes + 63) / 64 * 64;
    const size_t step = std::bit_floor(bytes) / 8;
    return (bytes + step - 1) / step * step;
  }

 private:
  std::mutex _mu;
  std::map<size_t, std::vector<void*>> _free;
  size_t _idle = 0;
  size_t _max_idle;
  void (*_release)(void*);
};

}  // namespace tug
