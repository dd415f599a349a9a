#pragma once
/// Typed errors of the Cassandra client. Every server ERROR code (native protocol v4, section 9) maps to
/// one class below; connection failures and client-side timeouts are `connection_error`s. Every message
/// names the host (address:port) and the cause.
#include <cstdint>
#include <string>

#include "tug/core/error.hpp"

namespace tug::io::cassandra {

/// The ERROR codes of the native protocol.
enum class error_code : int32_t {
  server_error = 0x0000,
  protocol_error = 0x000A,
  bad_credentials = 0x0100,
  unavailable = 0x1000,
  overloaded = 0x1001,
  is_bootstrapping = 0x1002,
  truncate_error = 0x1003,
  write_timeout = 0x1100,
  read_timeout = 0x1200,
  read_failure = 0x1300,
  function_failure = 0x1400,
  write_failure = 0x1500,
  cdc_write_failure = 0x1600,  ///< Cassandra 4.0 and later: a write to a CDC table with the CDC space full
  cas_write_unknown = 0x1700,  ///< protocol v5: a contended IF (CAS) write whose outcome is unknown
  syntax_error = 0x2000,
  unauthorized = 0x2100,
  invalid = 0x2200,
  config_error = 0x2300,
  already_exists = 0x2400,
  unprepared = 0x2500,
};

/// Name of an error code as the spec writes it ("Invalid", "Read_timeout", ...); "code 0x...." for others.
std::string to_string(error_code c);

/// An ERROR answered by a server. `host` is the node that answered.
class server_error : public io_error {
 public:
  server_error(error_code code, std::string host, const std::string& message)
      : io_error(message), _code(code), _host(std::move(host)) {}
  error_code code() const { return _code; }
  const std::string& host() const { return _host; }
  /// The retry policy (docs/cassandra.md, "Retries"): whether sending the request again may succeed and
  /// is safe. Unavailable, Overloaded and Is_bootstrapping (the coordinator did not run the request) and
  /// Read_timeout: always; Write_timeout: only for an `idempotent` request (a write that may have been
  /// applied must give the same result when applied again); anything else, CAS_write_unknown included: never.
  bool retryable(bool idempotent = true) const;

 private:
  error_code _code;
  std::string _host;
};

/// Bad_credentials and Unauthorized: wrong user name or password, or a missing permission.
class authentication_error : public server_error {
 public:
  using server_error::server_error;
};
/// Unavailable: too few replicas alive for the consistency level.
class unavailable_error : public server_error {
 public:
  using server_error::server_error;
};
/// Overloaded and Is_bootstrapping: the coordinator cannot take the request now.
class overloaded_error : public server_error {
 public:
  using server_error::server_error;
};
/// Read_timeout, Write_timeout and CAS_write_unknown: the replicas did not answer the coordinator in time
/// (a write's outcome is unknown).
class timeout_error : public server_error {
 public:
  using server_error::server_error;
};
/// Read_failure, Write_failure, Function_failure and CDC_write_failure: replicas failed the request.
class failure_error : public server_error {
 public:
  using server_error::server_error;
};
/// Syntax_error, Invalid, Config_error and Already_exists: the statement itself is wrong.
class query_error : public server_error {
 public:
  using server_error::server_error;
};
/// Unprepared: the node does not know the prepared statement id (the client prepares it again).
class unprepared_error : public server_error {
 public:
  using server_error::server_error;
};
/// Server_error, Protocol_error, Truncate_error and unknown codes.
class internal_server_error : public server_error {
 public:
  using server_error::server_error;
};

/// A node that cannot be reached, closes the connection, sends a malformed frame, or does not answer
/// within the timeout. `host` names it.
class connection_error : public io_error {
 public:
  connection_error(std::string host, const std::string& message) : io_error(message), _host(std::move(host)) {}
  const std::string& host() const { return _host; }

 private:
  std::string _host;
};

/// A TLS connection that could not be set up: the server's certificate is not trusted (unknown CA,
/// expired, another host's), the server rejected the client certificate, or one side does not speak
/// TLS. Never retried: trying again gives the same answer.
class tls_error : public connection_error {
 public:
  using connection_error::connection_error;
};

/// A schema change (CREATE, DROP, ALTER) that the coordinator applied, but whose schema version the nodes
/// up did not all report within client_options::schema_agreement_wait_ms. The message names the nodes
/// and their versions. Nodes known down (a DOWN event, a failed connect) are not waited for.
class schema_agreement_error : public io_error {
 public:
  using io_error::io_error;
};

}  // namespace tug::io::cassandra
