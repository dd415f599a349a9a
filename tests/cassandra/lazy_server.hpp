#pragma once
// A Cassandra test server that the tests needing it start on first use (scripts/cassandra.sh), unless ctest's
// fixture already did; the binary stops it at the end when it started it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace tug::testing {

class lazy_server : public ::testing::Environment {
 public:
  /// `start`, `stop` and `status` are scripts/cassandra.sh subcommands with their arguments; `dir` holds
  /// the file `port`.
  lazy_server(std::string dir, std::string start, std::string stop, std::string status)
      : _dir(std::move(dir)), _start(std::move(start)), _stop(std::move(stop)), _status(std::move(status)) {}
  /// Starts the server when it is not running; its native port (0 when it could not start).
  int ensure() {
    if (std::system((script() + _status).c_str()) != 0) {
      if (std::system((script() + _start).c_str()) != 0) return 0;
      _started = true;
    }
    std::ifstream f(_dir + "/port");
    int port = 0;
    f >> port;
    return port;
  }
  void TearDown() override {
    if (_started) std::system((script() + _stop).c_str());
  }

 private:
  static std::string script() { return "bash " TUG_SOURCE_DIR "/scripts/cassandra.sh "; }
  std::string _dir, _start, _stop, _status;
  bool _started = false;
};

/// Registers a lazy_server with gtest (which owns it).
inline lazy_server* add_lazy_server(const std::string& dir, const std::string& start, const std::string& stop,
                                    const std::string& status) {
  return static_cast<lazy_server*>(::testing::AddGlobalTestEnvironment(new lazy_server(dir, start, stop, status)));
}

}  // namespace tug::testing
