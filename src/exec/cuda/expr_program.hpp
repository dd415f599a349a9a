#pragma once
// The register program of the CUDA expression evaluator: expr_compile.cpp translates one resolved
// expression tree into it on the host, evaluate.cu interprets it with one thread per row. Plain data,
// shared by host and device code. A string register is a view (bytes, length) into an input column,
// a column made before the program runs (program::subs) or the literal bytes; a program whose result
// is a string writes its bytes in a final stage (string_stage), in two passes: lengths, then bytes.
#include <cstdint>
#include <string>
#include <vector>

#include "tug/core/types.hpp"
#include "tug/expr/expr.hpp"

namespace tug::cuda::prog {

/// Value class of a register: integers are held sign- or zero-extended in 64 bits and wrapped to
/// their width after every operation; float32 is held as a double rounded to float after every op;
/// decimal128 (d128) is the unscaled __int128 in two 64-bit words (its scale lives in the program).
enum class nk : uint8_t { b, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, str, d128 };

enum class op : uint8_t {
  load_col,  ///< dst = column slot i0 (flag: the column of sub-program i0)
  load_lit,  ///< dst = literal: bits i0 (d128: low i0, high i1; strings: chars offset i0, length i1), valid = flag
  add,
  sub,
  mul,  ///< d128 (checked, raising on overflow): the product is rounded by 10^i0 (half away from zero); add,
        ///< sub and mul of d128 raise when the result has more than i2 (the precision) digits
  div,
  floor_div,
  mod,
  pow,  ///< dst = a op b, of kind t
  eq,
  ne,
  lt,
  le,
  gt,
  ge,  ///< dst = a op b (a, b of kind t)
  and_,
  or_,
  xor_,
  not_,
  is_null,
  is_not_null,
  is_nan,
  coalesce,  ///< dst = a valid ? a : b
  select,    ///< dst = (a valid && a) ? b : c
  is_in,     ///< dst = a in pool[i0, i0 + i1) (pairs: strings chars offset, length; d128 low, high words)
  neg,
  abs,
  round,
  floor,
  ceil,
  sqrt,
  log,
  exp,           ///< round: d0 = 10^i0 (d128: round to a multiple of 10^i1, raising past i2 digits); log:
                 ///< d0 = log(base) or 0
  cast,          ///< dst = a of kind t2 converted to kind t; flag = strict. With a d128 side: i0 the source
                 ///< scale, i1 / i2 the target scale / precision, d0 = 10^(the target scale) (float ->
                 ///< decimal).
                 ///< From a string (t2 == str): i0 a parse_as; duration: its unit's name at chars [i1, i1 + i2)
  date_to_ts,    ///< dst = a (days) * i0 (ticks per day), checked; flag = strict
  ts_to_date,    ///< dst = floor(a / i0), checked to int32; flag = strict
  change_unit,   ///< dst = a * (i1 / i0) checked when i1 >= i0, else a / (i0 / i1) (floor when flag2)
  civil,         ///< day number = a (i0 == 0) or floor(a / i0); i1: 0 year, 1 month, 2 day, 3 weekday, 4 day number
  time_of_day,   ///< floor_mod(a, i0) / i1 % i2
  dt_truncate,   ///< cpu::detail::truncate_ticks of a by the rule at pool[i0] (flag2: a is a date32 day count)
  div_trunc,     ///< a / i0 (toward zero)
  mul_wrap,      ///< a * i0 (wrapping)
  date_diff,     ///< (a - b) * 86400000
  date_add_dur,  ///< a + floor(wrap(b * i1) / i0)
  ts_add_dur,    ///< i2 != 0: a + wrap((b / i2) * i1); else a + wrap(b * i1)
  str_len_bytes,
  str_len_chars,
  str_starts_with,
  str_ends_with,
  str_contains,
  str_regex,  ///< dst = a matches the regex automaton at pool[i0] (regex.hpp); null when a is
  str_slice,  ///< dst = code points [i0, i0 + i1) of a (cpu utf8_slice: i0 < 0 from the end, i1 < 0 to the end)
  str_strip,  ///< dst = a without leading / trailing code points of the set whose bytes are chars [i0, i0 + i1)
};

/// What a cast from a string parses (instr::i0), as cpu::cast's parse_column.
enum class parse_as : uint8_t {
  number,    ///< booleans ("true" / "false") and integers of kind t
  date,      ///< date32 (temporal::parse_date)
  timestamp, ///< int64 ticks, i1 a second (temporal::parse_timestamp)
  duration,  ///< int64 ticks, optionally followed by the unit's name
  decimal,   ///< "[-+]digits[.digits]" to scale i1, precision i2
  floating,  ///< float32 / float64 of kind t, correctly rounded (exec/float_text.hpp, as cpu::cast)
};

/// How a program whose result is a string makes its bytes from the registers its code leaves.
enum class emit : uint8_t {
  copy,    ///< register 0's bytes
  concat,  ///< registers [0, args) joined by the separator (chars [text, text + text_len)); null when any is
  change_case,  ///< register 0's bytes case-mapped (unicode::map_case) by the tables at chars[text]
                ///< (4-byte aligned: unicode::case_table_blob, which says upper, lower or title), row by row
  format,  ///< register 0 (of type `from`) as cpu::cast formats it; durations append their unit's name
           ///< (chars [text, text + text_len)), timestamps use `ticks` per second, decimals `scale`
};

/// The final stage of a string program (plain data, passed to the kernel by value).
struct string_stage {
  emit kind = emit::copy;
  type_id from = type_id::int64;  ///< format: the register's type
  nk from_kind = nk::i64;         ///< format: the register's kind
  int args = 1;                   ///< concat: operand count
  int64_t text = 0, text_len = 0;
  int64_t ticks = 1;  ///< format: ticks per second of a timestamp
  int64_t scale = 0;  ///< format: scale of a decimal
};

struct instr {
  op code = op::load_lit;
  nk t = nk::i64;   ///< kind of the result (of the operands for comparisons)
  nk t2 = nk::i64;  ///< source kind of a cast
  uint8_t dst = 0, a = 0, b = 0, c = 0;
  bool flag = false, flag2 = false;
  int64_t i0 = 0, i1 = 0, i2 = 0;
  double d0 = 0;
};

/// Registers per thread; deeper expressions fall back to the CPU.
constexpr int max_regs = 24;
/// Instructions per program (staged in shared memory); longer expressions fall back to the CPU.
constexpr size_t max_code = 256;

/// A compiled expression: `code` leaves the result in register 0, of kind `out` and type `out_type`
/// (a string result: the operands of `stage`).
struct program {
  std::vector<instr> code;
  std::vector<int64_t> pool;    ///< is_in values (64-bit patterns), string (offset, length) pairs, regex tables
  std::string chars;            ///< bytes of string literals (and case tables)
  std::vector<size_t> columns;  ///< input column of each load_col slot
  std::vector<program> subs;    ///< string columns made before `code` runs: the subexpressions that
                                ///< make new bytes (case mapping, concat_str, casts to strings)
  nk out = nk::i64;
  data_type out_type;
  string_stage stage;     ///< out == str: how the result's bytes are made
  bool can_fail = false;  ///< has a strict cast or checked decimal arithmetic (raises as the CPU does)
  /// parses floats from strings or formats them (exec/float_text.hpp): run by the interpreter's
  /// instance that has the big-integer code, whose stack frame is 2-3x the others'
  bool float_text = false;
};

/// The register kind of `t`, or false when the evaluator does not handle the type.
bool kind_of(const data_type& t, nk& out);

/// Why `e` cannot be compiled ("" when it can): compile() succeeds exactly when this is empty.
std::string check(const expr& e, const schema& input);

/// Compiles `e` (check(e, input) empty, and not a bare column reference). Constant subtrees are
/// folded on the host with the CPU evaluator. @throws what the CPU evaluator throws for them.
program compile(const expr& e, const schema& input);

}  // namespace tug::cuda::prog
