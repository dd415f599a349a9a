#include "tug/io/cassandra/client.hpp"

#include "io/cassandra/tls.hpp"
#include "tug/io/cassandra/types.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <cerrno>
#include <cstring>
#include <fcntl.h>

namespace tug::io::cassandra {

namespace {

std::string with_port(const std::string& contact, int port) {
  if (contact.find(':') != std::string::npos) return contact;
  return contact + ":" + std::to_string(port);
}

/// A connected, blocking TCP socket. @throws connection_error naming the host.
int open_socket(const std::string& host, int timeout_ms) {
  auto colon = host.rfind(':');
  std::string name = host.substr(0, colon), port = host.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(name.c_str(), port.c_str(), &hints, &res);
  if (rc != 0)
    throw connection_error(host, "cassandra " + host + ": cannot resolve the address: " + gai_strerror(rc));
  std::string last = "no address";
  for (addrinfo* a = res; a; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last = std::strerror(errno);
      continue;
    }
    int fl = fcntl(fd, F_GETFL, 0);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    int r = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (r != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      r = ::poll(&p, 1, timeout_ms);
      if (r == 0) {
        ::close(fd);
        last = "no TCP connection within " + std::to_string(timeout_ms) + " ms (connect_timeout_ms)";
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      r = err ? -1 : 0;
      errno = err;
    }
    if (r != 0) {
      last = std::strerror(errno);
      ::close(fd);
      continue;
    }
    fcntl(fd, F_SETFL, fl);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    freeaddrinfo(res);
    return fd;
  }
  freeaddrinfo(res);
  throw connection_error(host, "cassandra " + host + ": cannot connect: " + last);
}

bool read_full(int fd, uint8_t* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r <= 0) {
      if (r < 0 && errno == EINTR) continue;
      return false;
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

namespace {
/// @throws invalid_argument_error for a protocol version or a compression the client does not speak.
void check_protocol_options(const client_options& o) {
  if (o.protocol_version != 0 && o.protocol_version != 4 && o.protocol_version != 5)
    throw invalid_argument_error("cassandra: protocol_version " + std::to_string(o.protocol_version) +
                                 " is not supported (0: negotiate, 4 or 5)");
  if (!o.compression.empty() && o.compression != "lz4")
    throw invalid_argument_error("cassandra: compression '" + o.compression + "' is not supported (lz4, or empty)");
}
}  // namespace

connection::connection(const std::string& host, const client_options& options, std::shared_ptr<const tls_context> tls,
                       session_metrics* metrics)
    : _host(host), _options(options), _metrics(metrics) {
  check_protocol_options(_options);
  if (_options.tls.enabled && !tls) tls = std::make_shared<tls_context>(_options.tls);
  _fd = open_socket(_host, options.connect_timeout_ms);
  // a peer that stops reading must not block a sender forever
  timeval tv{options.request_timeout_ms / 1000, (options.request_timeout_ms % 1000) * 1000};
  setsockopt(_fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (_options.tls.enabled) {
    try {
      _tls = std::make_unique<tls_stream>(std::move(tls), _fd, _host);
      _tls->handshake(options.connect_timeout_ms);
    } catch (...) {
      _tls.reset();
      ::close(_fd);
      throw;
    }
  }
  int streams = std::clamp(options.max_requests_per_connection, 1, 32768);
  _pending.resize(static_cast<size_t>(streams));
  for (int i = streams - 1; i >= 0; --i) _free.push_back(static_cast<int16_t>(i));
  _reader = std::thread([this] { read_loop(); });
  try {
    startup();
  } catch (...) {
    close("start-up failed");
    _reader.join();
    ::close(_fd);
    throw;
  }
}

connection::~connection() {
  close("connection closed by the client");
  if (_reader.joinable()) _reader.join();
  ::close(_fd);
}

void connection::close(const std::string& why) {
  {
    std::lock_guard lk(_mutex);
    if (_close_reason.empty()) _close_reason = why;
  }
  _defunct = true;
  ::shutdown(_fd, SHUT_RDWR);  // wakes the reader, which fails every pending request
  _free_cv.notify_all();
}

void connection::fail_all(const std::string& why) {
  std::lock_guard lk(_mutex);
  if (_close_reason.empty()) _close_reason = why;
  for (size_t s = 0; s < _pending.size(); ++s) {
    if (!_pending[s]) continue;
    --_in_flight;
    if (_metrics) _metrics->add_in_flight(-1);
    _pending[s]->set_exception(std::make_exception_ptr(
        connection_error(_host, "cassandra " + _host + ": connection lost before the answer: " + _close_reason)));
    _pending[s].reset();
    _free.push_back(static_cast<int16_t>(s));
  }
  _defunct = true;
  _free_cv.notify_all();
}

bool connection::read_bytes(uint8_t* p, size_t n) {
  if (_tls) {
    if (_tls->read(p, n)) return true;
    _read_error = _tls->why();
    return false;
  }
  if (read_full(_fd, p, n)) return true;
  _read_error = "the server closed the connection";
  return false;
}

void connection::read_loop() {
  uint8_t hdr[header_size];
  try {
    while (true) {
      if (_framed) {
        if (!read_segment()) return;
        continue;
      }
      if (!read_bytes(hdr, header_size)) {
        fail_all(_read_error);
        return;
      }
      frame_header h = decode_header(hdr, _host, _version);
      auto body = std::make_unique<std::string>(static_cast<size_t>(h.length), '\0');
      if (h.length > 0 && !read_bytes(reinterpret_cast<uint8_t*>(body->data()), body->size())) {
        fail_all(_read_error + " (in the middle of a frame)");
        return;
      }
      deliver(h, std::move(body));
    }
  } catch (const std::exception& e) {
    ::shutdown(_fd, SHUT_RDWR);
    fail_all(e.what());
  }
}

bool connection::read_segment() {
  uint8_t hdr[8];
  if (!read_bytes(hdr, segment_header_size(_lz4))) {
    fail_all(_read_error);
    return false;
  }
  segment_header sh = decode_segment_header(hdr, _lz4, _host);
  std::string wire(sh.payload_length + size_t(4), '\0');
  if (!read_bytes(reinterpret_cast<uint8_t*>(wire.data()), wire.size())) {
    fail_all(_read_error + " (in the middle of a segment)");
    return false;
  }
  _inbox += decode_segment_payload(wire, sh, _lz4, _host);
  // every envelope the segments so far complete (a large one spans segments that are not self-contained)
  size_t at = 0;
  while (_inbox.size() - at >= header_size) {
    frame_header h = decode_header(reinterpret_cast<const uint8_t*>(_inbox.data()) + at, _host, _version);
    if (_inbox.size() - at - header_size < static_cast<size_t>(h.length)) break;
    auto body = std::make_unique<std::string>(_inbox.substr(at + header_size, static_cast<size_t>(h.length)));
    at += header_size + static_cast<size_t>(h.length);
    deliver(h, std::move(body));
  }
  _inbox.erase(0, at);
  if (sh.self_contained && !_inbox.empty())
    throw connection_error(_host, "cassandra " + _host + ": a self-contained protocol v5 segment ends inside an envelope");
  return true;
}

void connection::deliver(frame_header h, std::unique_ptr<std::string> body) {
  if ((h.flags & flag_compression) && _version == 4) {
    if (!_lz4) throw connection_error(_host, "cassandra " + _host + ": compressed frame, but no compression was negotiated");
    body = std::make_unique<std::string>(lz4_decompress_body(*body, _host));
    h.length = static_cast<int32_t>(body->size());
  }
  h.flags &= static_cast<uint8_t>(~flag_compression);  // v5: deprecated and ignored
  // v5: the answer to STARTUP is the last unframed frame; switched before its waiter wakes and sends
  if (_frame_after_next.exchange(false)) _framed = true;
  if (h.stream < 0) {  // an EVENT (only where REGISTER asked for them)
    std::function<void(const std::string&)> handler;
    {
      std::lock_guard lk(_mutex);
      handler = _on_event;
    }
    if (handler && static_cast<opcode>(h.op) == opcode::event) handler(*body);
    return;
  }
  std::lock_guard lk(_mutex);
  auto s = static_cast<size_t>(h.stream);
  if (s >= _pending.size() || !_pending[s]) {
    throw connection_error(_host, "cassandra " + _host + ": answer on stream " + std::to_string(h.stream) +
                                      ", which has no request");
  }
  // no longer in flight before the waiter wakes (it may send the next request at once)
  --_in_flight;
  if (_metrics) _metrics->add_in_flight(-1);
  _pending[s]->set_value(response{h, std::move(body)});
  _pending[s].reset();
  _free.push_back(h.stream);
  _free_cv.notify_one();
}

std::future<response> connection::send(opcode op, std::string_view body, uint8_t flags) {
  std::future<response> f;
  int16_t stream;
  {
    std::unique_lock lk(_mutex);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(_options.request_timeout_ms);
    while (_free.empty() && !_defunct) {
      if (_free_cv.wait_until(lk, deadline) == std::cv_status::timeout)
        throw connection_error(_host, "cassandra " + _host + ": all " + std::to_string(_pending.size()) +
                                          " stream ids stayed busy for request_timeout_ms");
    }
    if (_defunct)
      throw connection_error(_host, "cassandra " + _host + ": connection is broken: " + _close_reason);
    stream = _free.back();
    _free.pop_back();
    _pending[static_cast<size_t>(stream)].emplace();
    f = _pending[static_cast<size_t>(stream)]->get_future();
    ++_in_flight;
    if (_metrics) _metrics->add_in_flight(1);
  }
  const uint8_t version = _version;
  std::string frame;
  if (version == 4 && _lz4 && op != opcode::startup && op != opcode::options)
    frame = encode_frame(op, stream, lz4_compress_body(body), static_cast<uint8_t>(flags | flag_compression), version);
  else
    frame = encode_frame(op, stream, body, flags, version);
  if (_framed) frame = encode_segments(frame, _lz4);
  // on failure the reader fails the pending request, this one included
  if (_tls) {
    if (!_tls->write(frame)) close(_tls->why());
    return f;
  }
  std::lock_guard wl(_write_mutex);
  std::string why = send_all(_fd, frame);
  if (!why.empty()) close(why);
  return f;
}

response connection::wait(std::future<response>& f, opcode sent, const std::string& context) {
  if (f.wait_for(std::chrono::milliseconds(_options.request_timeout_ms)) != std::future_status::ready) {
    std::string why = "no answer to " + std::string(to_string(sent)) + " within " +
                      std::to_string(_options.request_timeout_ms) + " ms (request_timeout_ms)";
    close(why);
    throw connection_error(_host, "cassandra " + _host + ": " + why + (context.empty() ? "" : " [" + context + "]"));
  }
  response r = f.get();
  if (static_cast<opcode>(r.header.op) == opcode::error)
    std::rethrow_exception(decode_error(*r.body, r.header.flags, _host, context, r.header.version & 0x7f));
  return r;
}

void connection::register_events(const std::vector<std::string>& events,
                                 std::function<void(const std::string&)> handler) {
  {
    std::lock_guard lk(_mutex);
    _on_event = std::move(handler);
  }
  byte_writer w;
  w.u16(static_cast<uint16_t>(events.size()));
  for (auto& e : events) w.string(e);
  response r = request(opcode::register_, w.out(), "REGISTER");
  if (static_cast<opcode>(r.header.op) != opcode::ready)
    throw connection_error(_host, "cassandra " + _host + ": answer " + to_string(static_cast<opcode>(r.header.op)) +
                                      " to REGISTER");
}

response connection::request(opcode op, std::string_view body, const std::string& context) {
  auto f = send(op, body);
  return wait(f, op, context);
}

void connection::startup() {
  try {
    authenticate();
  } catch (const tls_error&) {
    throw;
  } catch (const connection_error& e) {
    // under TLS 1.3 the server checks the client certificate after the handshake: its refusal ends the
    // first read
    if (_tls && _tls->tls_failure())
      throw tls_error(_host, "cassandra " + _host + ": the server refused the TLS connection: " + _tls->why() +
                                 (_options.tls.cert_file.empty() ? " (no client certificate: set tls.cert_file and tls.key_file)"
                                                                 : " (client certificate tls.cert_file '" +
                                                                       _options.tls.cert_file + "')"));
    if (!_tls && std::string(e.what()).find("closed the connection") != std::string::npos)
      throw connection_error(_host, std::string(e.what()) +
                                        " (if the node has client_encryption_options enabled, set tls.enabled)");
    throw;
  }
}

response connection::startup_exchange(opcode op, std::string_view body, const std::string& context) {
  auto f = send(op, body);
  // the start-up answers within connect_timeout_ms: a server that accepts and stays silent fails fast
  if (f.wait_for(std::chrono::milliseconds(_options.connect_timeout_ms)) != std::future_status::ready)
    throw connection_error(_host, "cassandra " + _host + ": no answer to " + to_string(op) + " within " +
                                      std::to_string(_options.connect_timeout_ms) + " ms (connect_timeout_ms)" +
                                      (op == opcode::auth_response ? "" : "; is this a Cassandra native port?"));
  response r = f.get();
  if (static_cast<opcode>(r.header.op) == opcode::error)
    std::rethrow_exception(decode_error(*r.body, r.header.flags, _host, context, r.header.version & 0x7f));
  return r;
}

void connection::negotiate() {
  response r = startup_exchange(opcode::options, {}, "OPTIONS");
  auto op = static_cast<opcode>(r.header.op);
  if (op != opcode::supported)
    throw connection_error(_host, "cassandra " + _host + ": answer " + to_string(op) + " to OPTIONS");
  byte_reader rd(*r.body, _host);
  std::vector<std::string> versions, compressions;
  for (uint16_t n = rd.u16(), i = 0; i < n; ++i) {
    std::string key = rd.string();
    std::vector<std::string> values = rd.string_list();
    if (key == "PROTOCOL_VERSIONS") versions = std::move(values);
    if (key == "COMPRESSION") compressions = std::move(values);
  }
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? std::string("none") : s;
  };
  // "5/v5"; a version in beta says so ("5/v5-beta") and is not taken
  const bool v5 = std::find(versions.begin(), versions.end(), "5/v5") != versions.end();
  if (_options.protocol_version == 5 && !v5)
    throw connection_error(_host, "cassandra " + _host + ": the node does not offer protocol v5 (it offers " +
                                      list(versions) + "); set protocol_version to 0 or 4");
  if (v5 && _options.protocol_version != 4) _version = 5;
  if (_options.compression == "lz4") {
    if (std::find(compressions.begin(), compressions.end(), "lz4") == compressions.end())
      throw connection_error(_host, "cassandra " + _host + ": the node does not offer lz4 compression (it offers " +
                                        list(compressions) + "); leave compression empty");
    _lz4 = true;
  }
}

void connection::authenticate() {
  if (_options.protocol_version != 4 || !_options.compression.empty()) negotiate();
  byte_writer w;
  std::vector<std::pair<std::string, std::string>> startup = {{"CQL_VERSION", "3.0.0"}};
  if (_lz4) startup.emplace_back("COMPRESSION", "lz4");
  w.string_map(startup);
  if (_version == 5) _frame_after_next = true;
  response r = startup_exchange(opcode::startup, w.out(), "STARTUP");
  auto op = static_cast<opcode>(r.header.op);
  if (op == opcode::ready) return;
  if (op != opcode::authenticate)
    throw connection_error(_host, "cassandra " + _host + ": answer " + to_string(op) + " to STARTUP");
  byte_reader rd(*r.body, _host);
  std::string authenticator = rd.string();
  if (_options.username.empty())
    throw authentication_error(error_code::bad_credentials, _host,
                               "cassandra " + _host + ": the server requires authentication (" + authenticator +
                                   "); set username and password");
  // PasswordAuthenticator's SASL PLAIN token: \0user\0password
  std::string token;
  token.push_back('\0');
  token += _options.username;
  token.push_back('\0');
  token += _options.password;
  byte_writer a;
  a.bytes(token);
  response ar = startup_exchange(opcode::auth_response, a.out(), "authenticating as " + _options.username);
  auto aop = static_cast<opcode>(ar.header.op);
  if (aop != opcode::auth_success)
    throw authentication_error(error_code::bad_credentials, _host,
                               "cassandra " + _host + ": authenticator " + authenticator + " answered " +
                                   to_string(aop) + "; only PasswordAuthenticator is supported");
}

result decode_result(response r, const std::string& host) {
  result out;
  out.frame = std::move(r);
  out.host = host;
  byte_reader rd(*out.frame.body, host);
  if (out.frame.header.flags & flag_tracing) {
    byte_reader t = rd;
    out.tracing_id = format_uuid(t.raw(16));
  }
  skip_response_prefix(rd, out.frame.header.flags);
  if (static_cast<opcode>(out.frame.header.op) != opcode::result)
    rd.malformed(std::string("expected RESULT, got ") + to_string(static_cast<opcode>(out.frame.header.op)));
  byte_reader peek = rd;
  out.kind = static_cast<result_kind>(peek.i32());
  if (out.kind == result_kind::rows) out.rows = read_rows(rd, out.frame.header.version & 0x7f);
  return out;
}

namespace {
int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
/// An inet value as an address for "address:port" (IPv6 in brackets).
std::string address_of(std::string_view inet) {
  std::string a = format_inet(inet);
  return a.find(':') != std::string::npos ? "[" + a + "]" : a;
}
int32_t int_of(std::string_view v) {
  if (v.size() != 4) return 0;
  auto u = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(v[i])); };
  return static_cast<int32_t>(u(0) << 24 | u(1) << 16 | u(2) << 8 | u(3));
}
/// "address:port" of a row of system.peers_v2 (native_address, native_port first) or system.peers
/// (rpc_address first), whose `peer` column is at `peer_column`: the native address, or the peer's
/// where that is unset (0.0.0.0); empty when neither is known.
std::string peer_host(const std::vector<std::optional<std::string_view>>& row, bool v2, size_t peer_column,
                      int default_port) {
  const auto& native = row[0];
  const bool unset = !native || format_inet(*native) == "0.0.0.0" || format_inet(*native) == "::";
  const auto& addr = unset ? row[peer_column] : native;
  if (!addr) return {};
  const int port = v2 && row[1] ? int_of(*row[1]) : default_port;
  return address_of(*addr) + ":" + std::to_string(port);
}
}  // namespace

session::session(client_options options) : _options(std::move(options)) {
  if (_options.contact_points.empty()) throw invalid_argument_error("cassandra: no contact points");
  check_protocol_options(_options);
  if (_options.tls.enabled) _tls = std::make_shared<tls_context>(_options.tls);
  std::string failures;
  std::exception_ptr auth_failure;  // wrong credentials or certificates: the same on every node
  for (auto& cp : _options.contact_points) {
    auto h = std::make_unique<host_pool>();
    h->host = with_port(cp, _options.port);
    try {
      h->connections.push_back(std::make_shared<connection>(h->host, _options, _tls, &_metrics));
      if (_pools.empty()) {
        // every later connection speaks what the first negotiated (statements carry version-bound ids)
        _version = h->connections.back()->version();
        _options.protocol_version = _version;
      }
      _pools.push_back(std::move(h));
    } catch (const authentication_error&) {
      if (!auth_failure) auth_failure = std::current_exception();
    } catch (const tls_error&) {
      if (!auth_failure) auth_failure = std::current_exception();
    } catch (const std::exception& e) {
      failures += std::string(failures.empty() ? "" : "; ") + e.what();
    }
  }
  if (_pools.empty()) {
    if (auth_failure) std::rethrow_exception(auth_failure);
    throw connection_error(with_port(_options.contact_points[0], _options.port),
                           "cassandra: no contact point answered: " + failures);
  }
  {
    auto v = std::make_shared<topology_view>();
    for (auto& h : _pools) {
      v->hosts.push_back(h.get());
      v->by_host.emplace(h->host, h.get());
    }
    _view = std::move(v);
  }
  if (_options.token_aware || _options.discover_nodes) load_ring(*acquire_on(*_pools[0]));
  if (_options.topology_events && view()->hosts.size() > 1) watch_events();  // one node: nowhere else to go
}

void session::watch_events() {
  const int64_t now = now_ms();
  std::shared_ptr<connection> old;  // destroyed outside the lock: its reader may be waiting for it
  std::lock_guard lk(_events_mutex);
  if (_control && !_control->defunct()) return;
  if (now < _control_retry_ms) return;
  _control_retry_ms = now + _options.reconnect_delay_ms;
  old = std::move(_control);
  for (host_pool* h : view()->hosts) {
    if (h->reported_down || h->down_until_ms > now) continue;
    try {
      auto c = std::make_shared<connection>(h->host, _options, _tls, nullptr);
      c->register_events({"TOPOLOGY_CHANGE", "STATUS_CHANGE"},
                         [this, from = h->host](const std::string& body) { on_event(body, from); });
      _control = std::move(c);
      _control_up = true;
      return;
    } catch (const std::exception&) {
      // the next node; without any, requests find the nodes down themselves (and retry this later)
    }
  }
  _control_up = false;
}

void session::on_event(const std::string& body, const std::string& host) {
  byte_reader r(body, host);
  std::string type = r.string(), change = r.string();
  if (type != "STATUS_CHANGE" && type != "TOPOLOGY_CHANGE") return;
  std::string_view addr = r.raw(r.u8());
  int32_t port = r.i32();
  std::string node = address_of(addr) + ":" + std::to_string(port);
  auto v = view();
  auto it = v->by_host.find(node);
  if (it == v->by_host.end()) {  // another port than the one connected to: the same address
    for (auto& [h, pool] : v->by_host)
      if (h.rfind(address_of(addr) + ":", 0) == 0) it = v->by_host.find(h);
  }
  if (it != v->by_host.end()) {
    host_pool& p = *it->second;
    if (change == "DOWN" || change == "REMOVED_NODE") p.reported_down = true;
    if (change == "UP" || change == "NEW_NODE") {
      p.reported_down = false;
      p.down_until_ms = 0;  // connect again at once
    }
  }
  // tokens moved, a node joined or left, or one the session does not know is up: the next request reads
  // the ring again (not here: this is the control connection's reader thread)
  if (type == "TOPOLOGY_CHANGE" || it == v->by_host.end()) {
    if (it == v->by_host.end() && (change == "NEW_NODE" || change == "UP")) {
      std::lock_guard lk(_awaited_mutex);
      _awaited.push_back(address_of(addr));
      _awaited_reads = 0;
    }
    _ring_retry_ms = 0;
    _ring_stale = true;
  }
  std::lock_guard lk(_events_mutex);
  _events.push_back(change + " " + (it != v->by_host.end() ? it->first : node));
}

bool session::is_up(const std::string& host) const {
  auto v = view();
  auto it = v->by_host.find(host);
  return it == v->by_host.end() || !it->second->reported_down;
}

token_ring session::ring() const { return *view()->ring; }

std::vector<std::string> session::events() const {
  std::lock_guard lk(_events_mutex);
  return _events;
}


result session::query_on(connection& c, const std::string& cql) {
  byte_writer w;
  w.long_string(cql);
  query_parameters p;
  p.level = consistency::one;
  write_query_parameters(w, p, 0, {}, c.version());
  return decode_result(c.request(opcode::query, w.out(), cql), c.host());
}

bool session::load_ring(connection& conn) {
  // one connection answers both, so that "local" and "peers" are one node's view
  connection* c = &conn;
  auto run = [&](const std::string& cql) { return query_on(*c, cql); };
  std::vector<node_info> nodes;
  bool complete = true;
  auto tokens_of = [&](const std::optional<std::string_view>& v, const std::string& host) {
    std::vector<int64_t> out;
    if (!v) return out;
    for (auto& t : decode_text_collection(*v, c->host())) {
      try {
        out.push_back(std::stoll(t));
      } catch (const std::exception&) {
        throw invalid_argument_error("cassandra " + host + ": token '" + t +
                                     "' is no Murmur3 token; token-aware routing needs the Murmur3Partitioner");
      }
    }
    return out;
  };
  try {
    result local = run("SELECT data_center, rack, tokens, partitioner FROM system.local");
    auto rows = raw_rows(local.rows, c->host());
    if (rows.size() != 1) return true;
    auto& l = rows[0];
    if (!l[3] || l[3]->find("Murmur3Partitioner") == std::string_view::npos) return true;  // no routing
    nodes.push_back({c->host(), std::string(l[0].value_or("")), std::string(l[1].value_or("")), tokens_of(l[2], c->host())});
    result pr;
    bool v2 = true;
    try {
      pr = run("SELECT native_address, native_port, data_center, rack, tokens, peer FROM system.peers_v2");
    } catch (const query_error&) {  // before Cassandra 4.0
      v2 = false;
      pr = run("SELECT rpc_address, data_center, rack, tokens, peer FROM system.peers");
    }
    for (auto& row : raw_rows(pr.rows, c->host())) {
      size_t o = v2 ? 1 : 0;  // column offset of data_center
      std::string host = peer_host(row, v2, o + 4, _options.port);
      if (host.empty()) continue;
      auto tokens = tokens_of(row[o + 3], host);
      if (tokens.empty()) {  // a node joining: read again later
        complete = false;
        continue;
      }
      nodes.push_back({host, std::string(row[o + 1].value_or("")), std::string(row[o + 2].value_or("")), std::move(tokens)});
    }
  } catch (const server_error&) {
    return true;  // system tables not readable: no routing, the contact points only
  }
  auto ring = std::make_shared<const token_ring>(std::move(nodes));
  std::lock_guard lk(_view_mutex);
  auto v = std::make_shared<topology_view>(*_view);
  v->ring = ring;
  if (_options.discover_nodes) {
    for (auto& n : ring->nodes()) {
      if (v->by_host.count(n.host)) continue;
      auto h = std::make_unique<host_pool>();
      h->host = n.host;
      v->by_host.emplace(n.host, h.get());
      v->hosts.push_back(h.get());
      _pools.push_back(std::move(h));
    }
  }
  _view = std::move(v);
  ++_ring_reads;
  return complete;
}

void session::refresh_ring() {
  std::unique_lock lk(_refresh_mutex, std::try_to_lock);
  if (!lk.owns_lock()) return;  // another thread reads it
  _ring_stale = false;
  bool complete = false;
  try {
    complete = load_ring(*acquire());
  } catch (const std::exception&) {
    // no node answered now: the requests find out themselves; read again later
  }
  {
    // announced nodes not in the ring yet: read again later (at most 120 times after the last event)
    std::lock_guard al(_awaited_mutex);
    auto ring = view()->ring;
    std::erase_if(_awaited, [&](const std::string& address) {
      for (auto& n : ring->nodes())
        if (n.host.rfind(address + ":", 0) == 0) return true;
      return false;
    });
    if (!_awaited.empty() && ++_awaited_reads <= 120) complete = false;
    if (_awaited_reads > 120) _awaited.clear();
  }
  if (!complete) {
    _ring_retry_ms = now_ms() + _options.reconnect_delay_ms;
    _ring_stale = true;
  }
}

replication_strategy session::replication(const std::string& keyspace) {
  replica_table(keyspace, view()->ring);
  std::lock_guard lk(_replication_mutex);
  return _replication.at(keyspace).strategy;
}

std::shared_ptr<const std::vector<std::vector<size_t>>> session::replica_table(
    const std::string& keyspace, const std::shared_ptr<const token_ring>& ring) {
  std::optional<replication_strategy> strategy;
  {
    std::lock_guard lk(_replication_mutex);
    auto it = _replication.find(keyspace);
    if (it != _replication.end()) {
      if (it->second.ring == ring) return it->second.table;
      strategy = it->second.strategy;  // the ring was read again since: the same strategy on the new ring
    }
  }
  if (!strategy) {
    byte_writer v;
    v.bytes(keyspace);
    query_parameters p;
    p.level = consistency::one;
    result r = query("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?", p, {1, v.out()});
    auto rows = raw_rows(r.rows, r.host);
    if (rows.empty() || !rows[0][0])
      throw io_error("cassandra " + r.host + ": keyspace '" + keyspace + "' does not exist");
    strategy = replication_strategy::parse(decode_text_map(*rows[0][0], r.host), keyspace);
  }
  auto table = std::make_shared<const std::vector<std::vector<size_t>>>(ring->replicas_by_position(*strategy));
  std::lock_guard lk(_replication_mutex);
  _replication[keyspace] = replica_entry{*strategy, ring, table};
  return table;
}

std::vector<std::string> session::replicas(const std::string& keyspace, int64_t token) {
  auto ring = view()->ring;
  if (ring->empty()) return {};
  auto table = replica_table(keyspace, ring);
  std::vector<std::string> out;
  for (size_t n : (*table)[ring->ranges()[ring->range_of(token)].position]) out.push_back(ring->nodes()[n].host);
  return out;
}

std::vector<std::string> session::route(const prepared_statement& stmt, const bound_values& values) {
  if (!_options.token_aware || view()->ring->nodes().size() < 2 || stmt.bind.pk_indexes.empty() ||
      stmt.bind.columns.empty())
    return {};
  auto vals = split_values(values.count, values.bytes);
  std::vector<std::string_view> key;
  for (uint16_t i : stmt.bind.pk_indexes) {
    if (i >= vals.size() || !vals[i]) return {};
    key.push_back(*vals[i]);
  }
  try {
    return replicas(stmt.bind.columns[0].keyspace, murmur3_token(routing_key(key)));
  } catch (const io_error&) {
    return {};  // the keyspace just dropped: the server's answer to the request says so
  }
}

session::~session() {
  std::shared_ptr<connection> control;
  {
    std::lock_guard lk(_events_mutex);
    control = std::move(_control);
  }
  control.reset();  // its reader calls on_event: stopped before anything it uses goes
  _pools.clear();  // the connections' readers count in _metrics until they stop
}

metrics_snapshot session_metrics::snapshot() const {
  metrics_snapshot m;
  m.requests = requests;
  m.retries = retries;
  m.failures = failures;
  m.bytes_sent = bytes_sent;
  m.bytes_received = bytes_received;
  m.rows_received = rows_received;
  m.pages = pages;
  m.latency_us_total = latency_us_total;
  m.latency_count = latency_count;
  m.latency_us_max = latency_us_max;
  m.max_in_flight = max_in_flight;
  return m;
}

metrics_snapshot session_metrics::begin_interval() {
  latency_us_max = 0;
  max_in_flight = in_flight.load();
  return snapshot();
}

void session_metrics::record_latency(int64_t us) {
  latency_us_total += us;
  ++latency_count;
  int64_t m = latency_us_max;
  while (us > m && !latency_us_max.compare_exchange_weak(m, us)) {
  }
}

void session_metrics::add_in_flight(int delta) {
  int now = in_flight += delta;
  int m = max_in_flight;
  while (now > m && !max_in_flight.compare_exchange_weak(m, now)) {
  }
}

metrics_snapshot metrics_snapshot::since(const metrics_snapshot& before) const {
  metrics_snapshot d = *this;
  d.requests -= before.requests;
  d.retries -= before.retries;
  d.failures -= before.failures;
  d.bytes_sent -= before.bytes_sent;
  d.bytes_received -= before.bytes_received;
  d.rows_received -= before.rows_received;
  d.pages -= before.pages;
  d.latency_us_total -= before.latency_us_total;
  d.latency_count -= before.latency_count;
  return d;
}

std::string metrics_snapshot::to_string() const {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "requests %lld, retries %lld, failures %lld, rows %lld, pages %lld, %.2f MiB in, %.2f MiB out, "
                "in flight at most %d, latency mean %.2f ms max %.2f ms",
                static_cast<long long>(requests), static_cast<long long>(retries), static_cast<long long>(failures),
                static_cast<long long>(rows_received), static_cast<long long>(pages),
                static_cast<double>(bytes_received) / (1 << 20),
                static_cast<double>(bytes_sent) / (1 << 20), max_in_flight, mean_latency_ms(),
                static_cast<double>(latency_us_max) / 1000.0);
  return buf;
}

std::vector<std::string> session::hosts() const {
  std::vector<std::string> out;
  for (host_pool* h : view()->hosts) out.push_back(h->host);
  return out;
}

std::shared_ptr<connection> session::acquire_on(host_pool& h) {
  std::lock_guard lk(h.mutex);
  struct mark_down {  // a connect that fails marks the node down for reconnect_delay_ms
    host_pool& h;
    int delay;
    bool ok = false;
    ~mark_down() {
      if (!ok) h.down_until_ms = now_ms() + delay;
    }
  } guard{h, _options.reconnect_delay_ms};
  std::erase_if(h.connections, [](auto& c) { return c->defunct(); });
  std::shared_ptr<connection> best;
  for (auto& c : h.connections)
    if (!best || c->in_flight() < best->in_flight()) best = c;
  // a new connection while the pool is not full and every connection is busy
  if ((!best || best->in_flight() > 0) && static_cast<int>(h.connections.size()) < std::max(1, _options.connections_per_host)) {
    try {
      h.connections.push_back(std::make_shared<connection>(h.host, _options, _tls, &_metrics));
      guard.ok = true;
      return h.connections.back();
    } catch (const std::exception&) {
      if (!best) throw;
    }
  }
  guard.ok = true;
  return best;
}

std::shared_ptr<connection> session::acquire(const std::vector<std::string>& preferred) {
  if (_ring_stale && now_ms() >= _ring_retry_ms) refresh_ring();
  auto v = view();
  if (_options.topology_events && v->hosts.size() > 1 && (!_control_up || control_broken())) watch_events();
  std::exception_ptr last;
  const int64_t now = now_ms();
  if (!preferred.empty()) {
    size_t start = _next_host++;
    for (size_t i = 0; i < preferred.size(); ++i) {
      auto it = v->by_host.find(preferred[(start + i) % preferred.size()]);
      if (it == v->by_host.end() || it->second->down_until_ms > now || it->second->reported_down) continue;
      try {
        return acquire_on(*it->second);
      } catch (...) {
        last = std::current_exception();
      }
    }
  }
  // round robin over the nodes up; when none is, over all of them (their errors say why)
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < v->hosts.size(); ++i) {
      auto& h = *v->hosts[(_next_host++) % v->hosts.size()];
      if (pass == 0 && (h.down_until_ms > now || h.reported_down)) continue;
      try {
        return acquire_on(h);
      } catch (...) {
        last = std::current_exception();
      }
    }
  }
  std::rethrow_exception(last);
}

result session::query(const std::string& cql, const query_parameters& params, const bound_values& values) {
  pending_request p;
  p._session = this;
  p._op = opcode::query;
  byte_writer w;
  w.long_string(cql);
  write_query_parameters(w, params, values.count, values.bytes, _version);
  p._body = std::move(w.out());
  p._context = cql.size() > 200 ? cql.substr(0, 200) + "..." : cql;
  p._idempotent = true;
  p._flags = params.tracing ? flag_tracing : 0;
  p.send();
  result r = p.get();
  if (r.kind == result_kind::schema_change && view()->ring->nodes().size() > 1)
    wait_for_schema_agreement(r.host, p._context);
  return r;
}

void session::wait_for_schema_agreement(const std::string& host, const std::string& statement) {
  auto v = view();
  auto it = v->by_host.find(host);
  if (it == v->by_host.end()) return;
  const int64_t deadline = now_ms() + _options.schema_agreement_wait_ms;
  std::shared_ptr<connection> c = acquire_on(*it->second);
  bool v2 = true;
  while (true) {
    // the coordinator's version, and each peer's: "address:port" -> schema_version
    std::map<std::string, std::string> versions;
    std::vector<std::string> skipped;
    result local = query_on(*c, "SELECT schema_version FROM system.local");
    for (auto& row : raw_rows(local.rows, host))
      if (row[0]) versions[host] = format_uuid(*row[0]);
    result peers;
    if (v2) {
      try {
        peers = query_on(*c, "SELECT native_address, native_port, peer, schema_version FROM system.peers_v2");
      } catch (const query_error&) {  // before Cassandra 4.0
        v2 = false;
      }
    }
    if (!v2) peers = query_on(*c, "SELECT rpc_address, peer, schema_version FROM system.peers");
    const int64_t now = now_ms();
    for (auto& row : raw_rows(peers.rows, host)) {
      const size_t o = v2 ? 1 : 0;  // column offset of peer
      const std::string peer = peer_host(row, v2, o + 1, _options.port);
      if (peer.empty()) continue;
      auto p = v->by_host.find(peer);
      if (p != v->by_host.end() && (p->second->reported_down || p->second->down_until_ms > now)) {
        skipped.push_back(peer);  // known down: it takes the schema from the others when it is back
        continue;
      }
      if (row[o + 2]) versions[peer] = format_uuid(*row[o + 2]);
    }
    std::set<std::string> distinct;
    for (auto& [node, v] : versions) distinct.insert(v);
    if (distinct.size() <= 1) return;
    if (now >= deadline) {
      std::string by_node, down;
      for (auto& [node, v] : versions) by_node += (by_node.empty() ? "" : ", ") + node + " " + v;
      for (auto& d : skipped) down += (down.empty() ? "" : ", ") + d;
      throw schema_agreement_error("cassandra " + host + ": the schema change was applied, but the nodes up report " +
                                   std::to_string(distinct.size()) + " schema versions after " +
                                   std::to_string(_options.schema_agreement_wait_ms) +
                                   " ms (schema_agreement_wait_ms): " + by_node + " (not waited for, known down: " +
                                   (down.empty() ? "none" : down) + "); statement: " + statement);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

std::shared_ptr<const prepared_statement> session::prepare(const std::string& cql) {
  {
    std::lock_guard lk(_prepared_mutex);
    auto it = _prepared.find(cql);
    if (it != _prepared.end()) return it->second;
  }
  const std::string body = prepare_body(cql);
  std::exception_ptr last;
  for (int attempt = 0; attempt <= _options.max_retries; ++attempt) {
    std::shared_ptr<connection> c;
    try {
      c = acquire();
      response r = c->request(opcode::prepare, body, "PREPARE " + cql);
      byte_reader rd(*r.body, c->host());
      skip_response_prefix(rd, r.header.flags);
      prepared_result pr = read_prepared(rd, r.header.version & 0x7f);
      auto stmt = std::make_shared<prepared_statement>(
          prepared_statement{cql, pr.id, pr.result_metadata_id, pr.bind, pr.result});
      std::lock_guard lk(_prepared_mutex);
      _prepared[cql] = stmt;
      _by_id[stmt->id] = stmt;
      return stmt;
    } catch (const tls_error&) {
      throw;  // the same answer every time
    } catch (const connection_error&) {
      last = std::current_exception();
    } catch (const server_error& e) {
      if (!e.retryable()) throw;
      last = std::current_exception();
    }
    ++_metrics.retries;
    std::this_thread::sleep_for(retry_backoff(_options, attempt));
  }
  std::rethrow_exception(last);
}

void session::reprepare(connection& c, const std::string& id) {
  std::shared_ptr<const prepared_statement> stmt;
  {
    std::lock_guard lk(_prepared_mutex);
    auto it = _by_id.find(id);
    if (it != _by_id.end()) stmt = it->second;
  }
  if (!stmt)
    throw internal_error("cassandra " + c.host() + ": Unprepared for a statement id this session never prepared");
  c.request(opcode::prepare, prepare_body(stmt->cql), "PREPARE " + stmt->cql);
}

std::string session::prepare_body(const std::string& cql) const {
  byte_writer w;
  w.long_string(cql);
  if (_version >= 5) w.i32(0);  // <flags>: no keyspace
  return std::move(w.out());
}

namespace {
std::string execute_body(const prepared_statement& stmt, const bound_values& values, const query_parameters& params,
                         uint8_t version) {
  byte_writer w;
  w.short_bytes(stmt.id);
  if (version >= 5) w.short_bytes(stmt.result_metadata_id);
  write_query_parameters(w, params, values.count, values.bytes, version);
  return std::move(w.out());
}
}  // namespace

result session::execute(const prepared_statement& stmt, const bound_values& values, const query_parameters& params,
                        const std::vector<std::string>& hosts) {
  pending_request p;
  p._session = this;
  p._op = opcode::execute;
  p._body = execute_body(stmt, values, params, _version);
  p._context = stmt.cql;
  p._flags = params.tracing ? flag_tracing : 0;
  p._preferred = hosts.empty() ? route(stmt, values) : hosts;
  p.send();
  return p.get();
}

pending_request session::execute_async(std::shared_ptr<const prepared_statement> stmt, const bound_values& values,
                                       const query_parameters& params, bool idempotent) {
  pending_request p;
  p._session = this;
  p._op = opcode::execute;
  p._body = execute_body(*stmt, values, params, _version);
  p._context = stmt->cql;
  p._idempotent = idempotent;
  p._flags = params.tracing ? flag_tracing : 0;
  p._preferred = route(*stmt, values);
  p.send();
  return p;
}

pending_request session::batch_async(std::shared_ptr<const prepared_statement> stmt,
                                     const std::vector<bound_values>& rows, consistency level, bool idempotent) {
  if (rows.size() > 0xffff) throw invalid_argument_error("cassandra: a batch of more than 65535 statements");
  byte_writer w;
  w.u8(1);  // unlogged
  w.u16(static_cast<uint16_t>(rows.size()));
  for (auto& r : rows) {
    w.u8(1);  // prepared
    w.short_bytes(stmt->id);
    w.i16(r.count);
    w.raw(r.bytes);
  }
  w.u16(static_cast<uint16_t>(level));
  if (_version >= 5) w.i32(0);  // <flags>: [int] in v5
  else w.u8(0);
  pending_request p;
  p._session = this;
  p._op = opcode::batch;
  p._body = std::move(w.out());
  p._context = "BATCH of " + std::to_string(rows.size()) + " x " + stmt->cql;
  if (!rows.empty()) p._preferred = route(*stmt, rows[0]);
  p._idempotent = idempotent;
  p.send();
  return p;
}

void pending_request::send() {
  _conn.reset();
  try {
    _conn = _session->acquire(_preferred);
    _sent_at = std::chrono::steady_clock::now();
    _future = _conn->send(_op, _body, _flags);
    ++_session->_metrics.requests;
    _session->_metrics.bytes_sent += static_cast<int64_t>(_body.size() + header_size);
  } catch (...) {
    // the error surfaces in get()
    std::promise<response> p;
    p.set_exception(std::current_exception());
    _future = p.get_future();
  }
}

result pending_request::get() {
  const auto& o = _session->options();
  for (int attempt = 0;; ++attempt) {
    std::string host = _conn ? _conn->host() : std::string();
    try {
      response r = _conn ? _conn->wait(_future, _op, _context) : _future.get();
      auto& m = _session->_metrics;
      m.record_latency(
          std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - _sent_at).count());
      m.bytes_received += static_cast<int64_t>(r.body->size() + header_size);
      result out = decode_result(std::move(r), host);
      if (out.kind == result_kind::rows) {
        m.rows_received += out.rows.rows_count;
        ++m.pages;
      }
      return out;
    } catch (const unprepared_error& e) {
      if (attempt >= o.max_retries || !_conn) {
        ++_session->_metrics.failures;
        throw;
      }
      // the id follows the EXECUTE's <id> (or a batch's first statement): prepare the statement again
      // on that node, then send again
      std::string id;
      if (_op == opcode::execute) {
        byte_reader rd(_body, host);
        id = std::string(rd.short_bytes());
      } else {
        byte_reader rd(_body, host);
        rd.raw(4);
        id = std::string(rd.short_bytes());
      }
      _session->reprepare(*_conn, id);
    } catch (const server_error& e) {
      if (!e.retryable(_idempotent) || attempt >= o.max_retries) {
        ++_session->_metrics.failures;
        throw;
      }
      std::this_thread::sleep_for(retry_backoff(o, attempt));
    } catch (const tls_error&) {
      ++_session->_metrics.failures;  // the same answer every time
      throw;
    } catch (const connection_error&) {
      if (!_idempotent || attempt >= o.max_retries) {
        ++_session->_metrics.failures;
        throw;
      }
      std::this_thread::sleep_for(retry_backoff(o, attempt));
    }
    ++_session->_metrics.retries;
    send();
  }
}

}  // namespace tug::io::cassandra
