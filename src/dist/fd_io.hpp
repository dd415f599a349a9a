#pragma once
// Whole reads and writes on a connected stream socket (the forked ranks' sockets: socket_comm.cpp and
// src/api/forked_ranks.cpp).
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>

namespace tug::dist {

/// Writes all `n` bytes; false when the peer is gone.
inline bool write_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

/// Reads exactly `n` bytes; false at the end of the stream or on an error.
inline bool read_all(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = ::recv(fd, c, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

}  // namespace tug::dist
