#pragma once
// The client options of the single test node that test_cassandra_server.cpp's environment (or ctest's
// cassandra fixture) starts: its port from TUG_CASSANDRA_DIR/port, the default superuser.
#include <fstream>
#include <string>

#include "tug/io/cassandra/client.hpp"

namespace tug::testing {

inline io::cassandra::client_options node_client() {
  std::ifstream f(std::string(TUG_CASSANDRA_DIR) + "/port");
  io::cassandra::client_options o;
  f >> o.port;
  o.username = "cassandra";
  o.password = "cassandra";
  o.request_timeout_ms = 20000;
  return o;
}

}  // namespace tug::testing
