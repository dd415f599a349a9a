#pragma once
/// TLS for the Cassandra client through OpenSSL (private to src/io/cassandra). The TLS engine works on
/// memory buffers and the connection's own threads move the bytes over the socket: the reader thread
/// decrypts while senders encrypt, and no write can raise SIGPIPE.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "tug/io/cassandra/client.hpp"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;
typedef struct bio_st BIO;

namespace tug::io::cassandra {

/// Sends all of `data` on a blocking socket (SO_SNDTIMEO bounds a stalled peer) without SIGPIPE; "" when
/// sent, else why not.
std::string send_all(int fd, std::string_view data);

/// An OpenSSL client context from tls_options: the trusted certificate authorities and the client
/// certificate, loaded once per session.
class tls_context {
 public:
  /// @throws invalid_argument_error naming the option (tls.ca_file, tls.cert_file, tls.key_file) and the
  /// file that cannot be read or does not hold what it should.
  explicit tls_context(const tls_options& options);
  ~tls_context();
  tls_context(const tls_context&) = delete;
  tls_context& operator=(const tls_context&) = delete;
  SSL_CTX* get() const { return _ctx; }
  const tls_options& options() const { return _options; }

 private:
  tls_options _options;
  SSL_CTX* _ctx = nullptr;
};

/// One TLS session over a connected, blocking socket.
class tls_stream {
 public:
  /// `host` is "address:port" (the address is checked against the certificate with verify_host).
  tls_stream(std::shared_ptr<const tls_context> ctx, int fd, const std::string& host);
  ~tls_stream();
  tls_stream(const tls_stream&) = delete;
  tls_stream& operator=(const tls_stream&) = delete;

  /// The handshake, within timeout_ms. Single-threaded (before the reader starts).
  /// @throws tls_error (certificate not trusted, rejected by the server, no TLS on the other side),
  /// connection_error (the connection broke, no answer in time).
  void handshake(int timeout_ms);
  /// Reads exactly n decrypted bytes; false when the stream ended or failed (why() says how). One thread.
  bool read(uint8_t* p, size_t n);
  /// Encrypts `data` and sends it all; false on failure (why()). Any thread.
  bool write(std::string_view data);
  /// Why the last read or write failed; "the server closed the connection" when it simply ended.
  std::string why() const;
  /// Whether the failure came from TLS itself (an alert of the server, a bad record), not the socket.
  bool tls_failure() const;

 private:
  /// Sends what the engine produced (under _send_mutex). False on a socket error.
  bool flush_locked();

  std::shared_ptr<const tls_context> _ctx;
  int _fd;
  std::string _host;
  SSL* _ssl = nullptr;
  BIO* _in = nullptr;   // bytes from the socket, for the engine
  BIO* _out = nullptr;  // bytes from the engine, for the socket
  std::mutex _send_mutex;  // order of bytes on the wire; taken before _ssl_mutex
  mutable std::mutex _ssl_mutex;
  std::string _plain;  // decrypted bytes not read yet
  size_t _plain_pos = 0;
  std::string _why;
  bool _tls_failure = false;
};

}  // namespace tug::io::cassandra
