#include "io/cassandra/tls.hpp"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>

namespace tug::io::cassandra {

namespace {

/// The reasons in OpenSSL's error queue of this thread, oldest first, "; "-separated; the queue is emptied.
std::string ssl_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(e);
    char buf[256];
    if (!reason) {
      ERR_error_string_n(e, buf, sizeof buf);
      reason = buf;
    }
    if (out.find(reason) == std::string::npos) out += (out.empty() ? "" : "; ") + std::string(reason);
  }
  return out.empty() ? "unknown TLS error" : out;
}

void check_file(const std::string& option, const std::string& path) {
  std::ifstream f(path);
  if (!f)
    throw invalid_argument_error("cassandra: cannot read " + option + " '" + path + "': " + std::strerror(errno));
}

}  // namespace

std::string send_all(int fd, std::string_view data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t r = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? "the server took no data for request_timeout_ms"
                                                                : std::string("send failed: ") + std::strerror(errno);
    off += static_cast<size_t>(r);
  }
  return {};
}

tls_context::tls_context(const tls_options& options) : _options(options) {
  if (_options.cert_file.empty() != _options.key_file.empty())
    throw invalid_argument_error("cassandra: tls.cert_file and tls.key_file go together (a client certificate and "
                                 "its key); only " +
                                 std::string(_options.cert_file.empty() ? "tls.key_file" : "tls.cert_file") + " is set");
  ERR_clear_error();
  _ctx = SSL_CTX_new(TLS_client_method());
  if (!_ctx) throw io_error("cassandra: cannot create a TLS context: " + ssl_errors());
  try {
    SSL_CTX_set_min_proto_version(_ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(_ctx, _options.verify_certificate ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
    if (!_options.ca_file.empty()) {
      check_file("tls.ca_file", _options.ca_file);
      if (SSL_CTX_load_verify_locations(_ctx, _options.ca_file.c_str(), nullptr) != 1)
        throw invalid_argument_error("cassandra: tls.ca_file '" + _options.ca_file +
                                     "' holds no PEM certificate: " + ssl_errors());
    } else if (SSL_CTX_set_default_verify_paths(_ctx) != 1) {
      throw io_error("cassandra: cannot load the system's trusted certificates: " + ssl_errors());
    }
    if (!_options.cert_file.empty()) {
      check_file("tls.cert_file", _options.cert_file);
      check_file("tls.key_file", _options.key_file);
      if (SSL_CTX_use_certificate_chain_file(_ctx, _options.cert_file.c_str()) != 1)
        throw invalid_argument_error("cassandra: tls.cert_file '" + _options.cert_file +
                                     "' holds no PEM certificate: " + ssl_errors());
      if (SSL_CTX_use_PrivateKey_file(_ctx, _options.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
        std::string errors = ssl_errors();
        if (errors.find("mismatch") != std::string::npos)
          throw invalid_argument_error("cassandra: tls.key_file '" + _options.key_file +
                                       "' is not the key of tls.cert_file '" + _options.cert_file + "': " + errors);
        throw invalid_argument_error("cassandra: tls.key_file '" + _options.key_file +
                                     "' holds no unencrypted PEM private key: " + errors);
      }
      if (SSL_CTX_check_private_key(_ctx) != 1)
        throw invalid_argument_error("cassandra: tls.key_file '" + _options.key_file + "' is not the key of tls.cert_file '" +
                                     _options.cert_file + "': " + ssl_errors());
    }
  } catch (...) {
    SSL_CTX_free(_ctx);
    throw;
  }
}

tls_context::~tls_context() { SSL_CTX_free(_ctx); }

tls_stream::tls_stream(std::shared_ptr<const tls_context> ctx, int fd, const std::string& host)
    : _ctx(std::move(ctx)), _fd(fd), _host(host) {
  ERR_clear_error();
  _ssl = SSL_new(_ctx->get());
  _in = BIO_new(BIO_s_mem());
  _out = BIO_new(BIO_s_mem());
  if (!_ssl || !_in || !_out) {
    if (_ssl) SSL_free(_ssl);
    if (_in) BIO_free(_in);
    if (_out) BIO_free(_out);
    throw io_error("cassandra " + host + ": cannot create a TLS session: " + ssl_errors());
  }
  BIO_set_mem_eof_return(_in, -1);  // no bytes yet: "retry", not the end of the stream
  SSL_set_bio(_ssl, _in, _out);     // the session owns both
  SSL_set_connect_state(_ssl);
  std::string address = host.substr(0, host.rfind(':'));
  if (address.size() > 2 && address.front() == '[' && address.back() == ']') address = address.substr(1, address.size() - 2);
  unsigned char ip[16];
  bool is_ip = inet_pton(AF_INET, address.c_str(), ip) == 1 || inet_pton(AF_INET6, address.c_str(), ip) == 1;
  if (!is_ip) SSL_set_tlsext_host_name(_ssl, address.c_str());
  if (_ctx->options().verify_host) {
    int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(_ssl), address.c_str())
                   : SSL_set1_host(_ssl, address.c_str());
    if (ok != 1) {
      SSL_free(_ssl);
      throw io_error("cassandra " + host + ": cannot set up host verification: " + ssl_errors());
    }
  }
}

tls_stream::~tls_stream() { SSL_free(_ssl); }

bool tls_stream::flush_locked() {
  std::string out;
  {
    std::lock_guard lk(_ssl_mutex);
    size_t n = BIO_ctrl_pending(_out);
    if (n == 0) return true;
    out.resize(n);
    BIO_read(_out, out.data(), static_cast<int>(n));
  }
  std::string why = send_all(_fd, out);
  if (why.empty()) return true;
  std::lock_guard lk(_ssl_mutex);
  _why = why;
  return false;
}

void tls_stream::handshake(int timeout_ms) {
  const std::string& ca = _ctx->options().ca_file;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  const std::string no_tls_hint = " (is client encryption (client_encryption_options) enabled on this node?)";
  std::lock_guard send_lock(_send_mutex);
  while (true) {
    ERR_clear_error();
    int r = SSL_do_handshake(_ssl);
    int e = SSL_get_error(_ssl, r);
    std::string errors = r == 1 || e == SSL_ERROR_WANT_READ ? std::string() : ssl_errors();
    if (!flush_locked())
      throw connection_error(_host, "cassandra " + _host + ": TLS handshake: " + why());
    if (r == 1) return;
    if (e != SSL_ERROR_WANT_READ) {
      long v = SSL_get_verify_result(_ssl);
      if (_ctx->options().verify_certificate && v != X509_V_OK)
        throw tls_error(_host, "cassandra " + _host + ": the server's certificate is not trusted: " +
                                   X509_verify_cert_error_string(v) + " (tls.ca_file " +
                                   (ca.empty() ? "unset: the system's trust store" : "'" + ca + "'") +
                                   (_ctx->options().verify_host ? ", tls.verify_host on" : "") + ")");
      if (errors.find("alert") != std::string::npos)
        throw tls_error(_host, "cassandra " + _host + ": the server refused the TLS connection: " + errors);
      throw tls_error(_host, "cassandra " + _host + ": TLS handshake failed: " + errors + no_tls_hint);
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{_fd, POLLIN, 0};
    int pr = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0)
      throw connection_error(_host, "cassandra " + _host + ": no TLS handshake answer within " + std::to_string(timeout_ms) +
                                        " ms (connect_timeout_ms)" + no_tls_hint);
    char buf[16384];
    ssize_t n = ::recv(_fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) throw tls_error(_host, "cassandra " + _host + ": the server closed the connection during the TLS handshake" + no_tls_hint);
    if (n < 0)
      throw connection_error(_host, "cassandra " + _host + ": TLS handshake: recv failed: " + std::strerror(errno));
    BIO_write(_in, buf, static_cast<int>(n));
  }
}

bool tls_stream::read(uint8_t* p, size_t n) {
  while (n > 0) {
    if (_plain_pos < _plain.size()) {
      size_t k = std::min(n, _plain.size() - _plain_pos);
      std::memcpy(p, _plain.data() + _plain_pos, k);
      _plain_pos += k;
      p += k;
      n -= k;
      continue;
    }
    _plain.clear();
    _plain_pos = 0;
    bool output = false;
    {
      std::lock_guard lk(_ssl_mutex);
      char buf[16384];
      while (true) {
        ERR_clear_error();
        int r = SSL_read(_ssl, buf, sizeof buf);
        if (r > 0) {
          _plain.append(buf, static_cast<size_t>(r));
          continue;
        }
        int e = SSL_get_error(_ssl, r);
        if (e == SSL_ERROR_WANT_READ) break;
        if (!_plain.empty()) break;  // the failure shows again on the next read
        if (e == SSL_ERROR_ZERO_RETURN) {
          _why = "the server closed the TLS session";
        } else {
          _why = "TLS: " + ssl_errors();
          _tls_failure = true;
        }
        return false;
      }
      output = BIO_ctrl_pending(_out) > 0;  // e.g. an answer to a key update
    }
    if (output) {
      std::lock_guard send_lock(_send_mutex);
      if (!flush_locked()) return false;
    }
    if (!_plain.empty()) continue;
    char raw[16384];
    ssize_t r = ::recv(_fd, raw, sizeof raw, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      std::lock_guard lk(_ssl_mutex);
      _why = r == 0 ? "the server closed the connection" : std::string("recv failed: ") + std::strerror(errno);
      return false;
    }
    std::lock_guard lk(_ssl_mutex);
    BIO_write(_in, raw, static_cast<int>(r));
  }
  return true;
}

bool tls_stream::write(std::string_view data) {
  std::lock_guard send_lock(_send_mutex);
  {
    std::lock_guard lk(_ssl_mutex);
    ERR_clear_error();
    // a memory BIO takes everything: SSL_write either writes all of data or fails
    if (!data.empty() && SSL_write(_ssl, data.data(), static_cast<int>(data.size())) <= 0) {
      _why = "TLS: " + ssl_errors();
      _tls_failure = true;
      return false;
    }
  }
  return flush_locked();
}

std::string tls_stream::why() const {
  std::lock_guard lk(_ssl_mutex);
  return _why;
}

bool tls_stream::tls_failure() const {
  std::lock_guard lk(_ssl_mutex);
  return _tls_failure;
}

}  // namespace tug::io::cassandra
