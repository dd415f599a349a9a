// A crash in tug_tests (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) prints the test that was running and the
// stack before the process dies as it would have, so a crash on a GPU machine or in CI names its place
// (frames as module(+offset): `addr2line -f -C -e build/tug_tests 0xOFFSET` names the line).
#include <execinfo.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

namespace {

void write_text(const char* s) {
  if (::write(STDERR_FILENO, s, std::strlen(s)) < 0) return;
}

extern "C" void on_crash(int sig) {
  write_text("\n*** tug_tests: signal ");
  write_text(strsignal(sig));
  if (const auto* t = ::testing::UnitTest::GetInstance()->current_test_info()) {
    write_text(" in ");
    write_text(t->test_suite_name());
    write_text(".");
    write_text(t->name());
  }
  write_text("; stack:\n");
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  std::signal(sig, SIG_DFL);  // die of the same signal (death tests and the shell see it)
  std::raise(sig);
}

const bool installed = [] {
  void* warm[1];
  backtrace(warm, 1);  // loads libgcc before a crash needs it
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, on_crash);
  return true;
}();

}  // namespace
