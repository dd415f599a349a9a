// The tug command-line program.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "tug/version.hpp"

int main(int argc, char** argv) {
  if (argc >= 2 && (std::strcmp(argv[1], "--version") == 0 || std::strcmp(argv[1], "version") == 0)) {
    std::cout << "tug " << TUG_VERSION << "\n";
    return 0;
  }
  std::cerr << "usage: tug version\n"
               "(more commands arrive with the Parquet/CSV issue: schema, head, convert, count)\n";
  return argc >= 2 ? 2 : 0;
}
