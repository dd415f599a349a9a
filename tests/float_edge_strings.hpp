#pragma once
// Strings at the edges of float parsing (special values, signs, malformed forms, the float32 / float64
// limits, halfway cases, mantissas of hundreds of digits): the host parser tests (test_float_text.cpp)
// and the GPU cast tests (test_cuda_strings.cpp) both read them.
#include <string>
#include <vector>

namespace tug {

inline std::vector<std::string> float_edge_strings() {
  std::vector<std::string> v = {"1e400",
                               "-1e400",
                               "1e-400",
                               "-0",
                               "0",
                               "+0",
                               "inf",
                               "-inf",
                               "+inf",
                               "Infinity",
                               "-INFINITY",
                               "infin",
                               "infinityy",
                               "nan",
                               "+nan",
                               "-nan",
                               "NaN",
                               "nan()",
                               "nan(abc_09)",
                               "nan(",
                               "nan(a-b)",
                               "nan)",
                               "1e",
                               "1e+",
                               "1e-",
                               ".5",
                               "5.",
                               ".",
                               "-.",
                               " 1",
                               "1 ",
                               "",
                               "+",
                               "-",
                               "++1",
                               "+-1",
                               "-+1",
                               "--1",
                               "0x1p3",
                               "1_0",
                               "1,5",
                               "1.5.2",
                               "e5",
                               ".e5",
                               "1.e5",
                               ".1e-5",
                               "1E5",
                               "1e+05",
                               "00000000000000000000001",
                               "0.000000000000000000000000000000000000000000001e45",
                               "4e-324",
                               "2e-324",
                               "3e-324",
                               "2.4703282292062327e-324",
                               "2.4703282292062328e-324",
                               "1.7976931348623157e308",
                               "1.7976931348623158e308",
                               "1.7976931348623159e308",
                               "3.4028235e38",
                               "3.4028236e38",
                               "1.4e-45",
                               "7e-46",
                               "7.1e-46",
                               "1e-45",
                               "0e99999999999999999999",
                               "1e99999999999999999999",
                               "1e-99999999999999999999",
                               "9007199254740993",
                               "9007199254740992.5",
                               "9007199254740993.0000000000000000000000000000001",
                               "18446744073709551615",
                               "18446744073709551616",
                               "12345678901234567890",
                               "1234567890123456789",
                               "0.1",
                               "0.30000000000000004",
                               "2.2250738585072011e-308",
                               "2.2250738585072012e-308",
                               "16777217",
                               "16777216.5",
                               "16777217.000000001",
                               "33554431",
                               "1e22",
                               "1e23",
                               "1e-22",
                               "1e-23",
                               "123456789e-30",
                               "8.5e-45",
                               "-NaN",
                               "nan(x1)",
                               "0x10",
                               "x",
                               "12345678901234567890e-5"};
  v.push_back("1" + std::string(900, '0'));
  v.push_back("1" + std::string(900, '0') + "e-900");
  v.push_back("0." + std::string(900, '0') + "1e900");
  v.push_back("1." + std::string(900, '0') + "1");
  v.push_back(std::string(400, '9') + "e-400");
  // the largest big integers: 800 kept digits over 5^1124, 10^308 from few digits
  for (const char* e : {"e-1123", "e-1124", "e-1125", "e-1100", "e-800", "e-492", "e-491", "e-470"}) {
    v.push_back(std::string(800, '9') + e);
    v.push_back(std::string(850, '7') + e);
    v.push_back("0." + std::string(800, '0') + std::string(790, '3') + e);
  }
  return v;
}

}  // namespace tug
