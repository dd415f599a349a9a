#include "tug/io/cassandra/types.hpp"

#include <arpa/inet.h>

#include <cstring>

namespace tug::io::cassandra {

data_type to_tug_type(const cql_type& t, const std::string& what, const type_options& options) {
  switch (t.code) {
    case type_code::ascii:
    case type_code::varchar:
    case type_code::uuid:
    case type_code::timeuuid:
    case type_code::inet:
    case type_code::blob: return type_id::string;
    case type_code::bigint:
    case type_code::counter:
    case type_code::varint: return type_id::int64;
    case type_code::int_: return type_id::int32;
    case type_code::smallint: return type_id::int16;
    case type_code::tinyint: return type_id::int8;
    case type_code::boolean: return type_id::boolean;
    case type_code::float_: return type_id::float32;
    case type_code::double_: return type_id::float64;
    case type_code::decimal:
      if (options.decimal_scale < 0 || options.decimal_scale > 38)
        throw invalid_argument_error("cassandra: decimal_scale " + std::to_string(options.decimal_scale) +
                                     " outside 0..38");
      return decimal(38, options.decimal_scale);
    case type_code::timestamp: return timestamp(time_unit::ms);
    case type_code::date: return type_id::date32;
    case type_code::time: return duration(time_unit::ns);
    default: break;
  }
  throw not_implemented_error("cassandra: " + what + " has type " + t.to_string() +
                              ", which tug cannot represent (collections, tuples, user-defined and custom types "
                              "are not supported); leave it out with select() or skip_unsupported_columns");
}

namespace {

struct cell {
  const uint8_t* p;
  int32_t n;  // < 0: null
};

int64_t be_int(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  // sign-extend from n bytes
  if (n < 8 && n > 0 && (p[0] & 0x80)) v |= ~uint64_t(0) << (8 * n);
  return static_cast<int64_t>(v);
}

bool varint_to_i128(const uint8_t* p, int n, __int128& out) {
  if (n > 16) {
    // longer encodings fit only with redundant sign bytes
    for (int i = 0; i < n - 16; ++i)
      if (p[i] != ((p[n - 16] & 0x80) ? 0xff : 0x00)) return false;
    p += n - 16;
    n = 16;
  }
  unsigned __int128 v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  if (n > 0 && n < 16 && (p[0] & 0x80)) v |= ~static_cast<unsigned __int128>(0) << (8 * n);
  out = static_cast<__int128>(v);
  return true;
}

const __int128 pow10_38 = [] {
  __int128 v = 1;
  for (int i = 0; i < 38; ++i) v *= 10;
  return v;
}();

__int128 pow10(int e) {
  __int128 v = 1;
  for (int i = 0; i < e; ++i) v *= 10;
  return v;
}

[[noreturn]] void bad_value(const std::string& host, size_t col, const std::string& why) {
  throw io_error("cassandra " + host + ": result column " + std::to_string(col) + ": " + why);
}

const char hexdig[] = "0123456789abcdef";

}  // namespace

std::string format_uuid(std::string_view b) {
  std::string s;
  for (size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    auto u = static_cast<uint8_t>(b[i]);
    s += hexdig[u >> 4];
    s += hexdig[u & 15];
  }
  return s;
}

std::string format_inet(std::string_view b) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (b.size() == 4) inet_ntop(AF_INET, b.data(), buf, sizeof buf);
  else if (b.size() == 16) inet_ntop(AF_INET6, b.data(), buf, sizeof buf);
  else return format_blob(b);
  return buf;
}

std::string format_blob(std::string_view b) {
  std::string s = "0x";
  for (char c : b) {
    auto u = static_cast<uint8_t>(c);
    s += hexdig[u >> 4];
    s += hexdig[u & 15];
  }
  return s;
}

std::string encode_varint(__int128 v) {
  std::string out;
  auto u = static_cast<unsigned __int128>(v);
  for (int i = 15; i >= 0; --i) out.push_back(static_cast<char>(static_cast<uint8_t>(u >> (8 * i))));
  // drop redundant sign bytes
  size_t k = 0;
  while (k + 1 < out.size() && ((out[k] == 0 && !(static_cast<uint8_t>(out[k + 1]) & 0x80)) ||
                                (static_cast<uint8_t>(out[k]) == 0xff && (static_cast<uint8_t>(out[k + 1]) & 0x80))))
    ++k;
  return out.substr(k);
}

table decode_rows(const rows_result& rows, const std::vector<data_type>& types, const type_options& options,
                  const std::string& host, memory_resource* mr) {
  const auto& md = rows.metadata;
  const size_t ncols = types.size();
  if (static_cast<size_t>(md.columns_count) != ncols)
    bad_value(host, 0, "the result has " + std::to_string(md.columns_count) + " columns, expected " +
                           std::to_string(ncols));
  const int64_t n = rows.rows_count;
  // first pass: where each value lies
  std::string hostcopy = host;
  byte_reader r(rows.rows, hostcopy);
  if (static_cast<uint64_t>(n) * ncols > r.remaining() / 4 + 1 && ncols > 0)
    r.malformed("row count " + std::to_string(n) + " larger than the body");
  std::vector<cell> cells(static_cast<size_t>(n) * ncols);
  for (int64_t i = 0; i < n; ++i)
    for (size_t j = 0; j < ncols; ++j) {
      int32_t len = r.i32();
      const auto* p = reinterpret_cast<const uint8_t*>(r.position());
      if (len > 0) r.raw(static_cast<size_t>(len));
      cells[static_cast<size_t>(i) * ncols + j] = {p, len};
    }
  std::vector<column> cols;
  cols.reserve(ncols);
  for (size_t j = 0; j < ncols; ++j) {
    const cql_type& ct = md.columns.empty() ? cql_type{} : md.columns[j].type;
    const std::string name = md.columns.empty() ? std::to_string(j) : "'" + md.columns[j].name + "'";
    auto at = [&](int64_t i) -> const cell& { return cells[static_cast<size_t>(i) * ncols + j]; };
    auto fixed = [&]<typename T>(int width, auto convert) {
      fixed_width_builder<T> b(types[j], n, mr);
      for (int64_t i = 0; i < n; ++i) {
        const cell& c = at(i);
        if (c.n <= 0) {  // null, or an empty legacy value
          b.set_null(i);
          continue;
        }
        if (width > 0 && c.n != width)
          bad_value(host, j, "column " + name + " (" + ct.to_string() + ") has a value of " + std::to_string(c.n) +
                                 " bytes, expected " + std::to_string(width));
        b.set(i, convert(c));
      }
      cols.push_back(b.finish());
    };
    switch (ct.code) {
      case type_code::int_: fixed.template operator()<int32_t>(4, [](const cell& c) { return int32_t(be_int(c.p, 4)); }); break;
      case type_code::bigint:
      case type_code::counter: fixed.template operator()<int64_t>(8, [](const cell& c) { return be_int(c.p, 8); }); break;
      case type_code::smallint: fixed.template operator()<int16_t>(2, [](const cell& c) { return int16_t(be_int(c.p, 2)); }); break;
      case type_code::tinyint: fixed.template operator()<int8_t>(1, [](const cell& c) { return int8_t(be_int(c.p, 1)); }); break;
      case type_code::boolean: fixed.template operator()<bool>(1, [](const cell& c) { return c.p[0] != 0; }); break;
      case type_code::float_:
        fixed.template operator()<float>(4, [](const cell& c) {
          auto u = static_cast<uint32_t>(be_int(c.p, 4));
          float f;
          std::memcpy(&f, &u, 4);
          return f;
        });
        break;
      case type_code::double_:
        fixed.template operator()<double>(8, [](const cell& c) {
          auto u = static_cast<uint64_t>(be_int(c.p, 8));
          double d;
          std::memcpy(&d, &u, 8);
          return d;
        });
        break;
      case type_code::timestamp:
      case type_code::time: fixed.template operator()<int64_t>(8, [](const cell& c) { return be_int(c.p, 8); }); break;
      case type_code::date:
        fixed.template operator()<int32_t>(4, [](const cell& c) {
          return static_cast<int32_t>(static_cast<uint32_t>(be_int(c.p, 4)) - 0x80000000u);
        });
        break;
      case type_code::varint:
        fixed.template operator()<int64_t>(0, [&](const cell& c) {
          __int128 v;
          if (!varint_to_i128(c.p, c.n, v) || v > INT64_MAX || v < INT64_MIN)
            bad_value(host, j, "column " + name + " (varint) has a value that does not fit in 64 bits");
          return static_cast<int64_t>(v);
        });
        break;
      case type_code::decimal: {
        const int target = types[j].scale;
        fixed.template operator()<__int128>(0, [&](const cell& c) {
          if (c.n < 4) bad_value(host, j, "column " + name + " (decimal) has a value of " + std::to_string(c.n) + " bytes");
          auto scale = static_cast<int32_t>(be_int(c.p, 4));
          __int128 v;
          if (!varint_to_i128(c.p + 4, c.n - 4, v) || v >= pow10_38 || v <= -pow10_38)
            bad_value(host, j, "column " + name + " (decimal) has a value of more than 38 digits");
          if (scale > target) {
            int64_t drop = static_cast<int64_t>(scale) - target;  // 64 bits: any int32 scale
            __int128 d = drop > 38 ? 0 : pow10(static_cast<int>(drop));
            if (d == 0 || v % d != 0)
              bad_value(host, j, "column " + name + " has a decimal with " + std::to_string(scale) +
                                     " fractional digits, more than decimal_scale " + std::to_string(target) +
                                     " holds; raise decimal_scale");
            v /= d;
          } else if (scale < target) {
            int64_t add = static_cast<int64_t>(target) - scale;
            __int128 m = add > 38 ? 0 : pow10(static_cast<int>(add));
            if (m == 0 || v >= pow10_38 / m || v <= -pow10_38 / m)
              bad_value(host, j, "column " + name + " has a decimal that does not fit decimal[38, " +
                                     std::to_string(target) + "]; lower decimal_scale");
            v *= m;
          }
          return v;
        });
        break;
      }
      case type_code::ascii:
      case type_code::varchar:
      case type_code::uuid:
      case type_code::timeuuid:
      case type_code::inet:
      case type_code::blob: {
        const bool raw = ct.code == type_code::ascii || ct.code == type_code::varchar;
        int64_t bytes = 0;
        for (int64_t i = 0; i < n; ++i) bytes += std::max(0, at(i).n) * (raw ? 1 : 3);
        string_builder b(n, bytes, mr);
        for (int64_t i = 0; i < n; ++i) {
          const cell& c = at(i);
          if (c.n < 0) {
            b.append_null();
            continue;
          }
          std::string_view v(reinterpret_cast<const char*>(c.p), static_cast<size_t>(c.n));
          if (raw) b.append(v);
          else if (ct.code == type_code::blob) b.append(format_blob(v));
          else if (c.n == 0) b.append_null();
          else if (ct.code == type_code::inet) b.append(format_inet(v));
          else if (c.n != 16)
            bad_value(host, j, "column " + name + " (" + ct.to_string() + ") has a value of " + std::to_string(c.n) +
                                   " bytes, expected 16");
          else b.append(format_uuid(v));
        }
        cols.push_back(b.finish());
        break;
      }
      default:
        bad_value(host, j, "column " + name + " has type " + ct.to_string() + ", which tug cannot represent");
    }
    if (!(cols.back().type() == types[j]))
      throw internal_error("cassandra: decoded column " + name + " as " + to_string(cols.back().type()) + ", expected " +
                           to_string(types[j]));
  }
  if (ncols == 0) return table::empty_with_rows(n);
  return table(std::move(cols));
}

bool can_write(const data_type& from, const cql_type& to) {
  auto int_width = [](type_code c) {
    switch (c) {
      case type_code::tinyint: return 1;
      case type_code::smallint: return 2;
      case type_code::int_: return 4;
      case type_code::bigint:
      case type_code::counter: return 8;
      case type_code::varint: return 16;
      default: return 0;
    }
  };
  switch (from.id) {
    case type_id::boolean: return to.code == type_code::boolean;
    case type_id::int8:
    case type_id::int16:
    case type_id::int32:
    case type_id::int64: return int_width(to.code) >= size_of(from.id);
    case type_id::uint8:
    case type_id::uint16:
    case type_id::uint32: return int_width(to.code) > size_of(from.id);
    case type_id::uint64: return to.code == type_code::varint;
    case type_id::float32: return to.code == type_code::float_ || to.code == type_code::double_;
    case type_id::float64: return to.code == type_code::double_;
    case type_id::decimal128: return to.code == type_code::decimal;
    case type_id::date32: return to.code == type_code::date;
    case type_id::timestamp: return to.code == type_code::timestamp;
    case type_id::duration: return to.code == type_code::time;
    case type_id::string:
      return to.code == type_code::varchar || to.code == type_code::ascii || to.code == type_code::uuid ||
             to.code == type_code::timeuuid || to.code == type_code::inet || to.code == type_code::blob;
  }
  return false;
}

namespace {
void put_int(byte_writer& w, int64_t v, int width) {
  w.i32(width);
  for (int i = width - 1; i >= 0; --i) w.u8(static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i)));
}
int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
bool parse_hex(std::string_view s, std::string& out) {
  if (s.size() % 2) return false;
  out.clear();
  for (size_t i = 0; i < s.size(); i += 2) {
    int a = hexval(s[i]), b = hexval(s[i + 1]);
    if (a < 0 || b < 0) return false;
    out.push_back(static_cast<char>(a * 16 + b));
  }
  return true;
}
}  // namespace

void encode_value(byte_writer& w, const column& c, int64_t row, const cql_type& to, const std::string& column) {
  if (c.is_null(row)) {
    w.i32(-1);
    return;
  }
  auto bad = [&](const std::string& why) {
    throw invalid_argument_error("cassandra: column '" + column + "' row " + std::to_string(row) + ": " + why);
  };
  const data_type& t = c.type();
  if (t.id == type_id::string) {
    std::string_view s = c.string(row);
    std::string bytes;
    switch (to.code) {
      case type_code::varchar:
      case type_code::ascii: w.bytes(s); return;
      case type_code::blob:
        if (!(s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) || !parse_hex(s.substr(2), bytes))
          bad("'" + std::string(s.substr(0, 64)) + "' is not a blob in 0x-hex form");
        w.bytes(bytes);
        return;
      case type_code::uuid:
      case type_code::timeuuid: {
        std::string hex;
        for (char ch : s)
          if (ch != '-') hex.push_back(ch);
        if (s.size() != 36 || hex.size() != 32 || !parse_hex(hex, bytes))
          bad("'" + std::string(s.substr(0, 64)) + "' is not a uuid (8-4-4-4-12 hex digits)");
        if (to.code == type_code::timeuuid && (static_cast<uint8_t>(bytes[6]) >> 4) != 1)
          bad("'" + std::string(s) + "' is not a version 1 (time) uuid");
        w.bytes(bytes);
        return;
      }
      case type_code::inet: {
        std::string z(s);
        unsigned char buf[16];
        if (inet_pton(AF_INET, z.c_str(), buf) == 1) w.bytes(std::string_view(reinterpret_cast<char*>(buf), 4));
        else if (inet_pton(AF_INET6, z.c_str(), buf) == 1) w.bytes(std::string_view(reinterpret_cast<char*>(buf), 16));
        else bad("'" + z.substr(0, 64) + "' is not an IPv4 or IPv6 address");
        return;
      }
      default: break;
    }
  }
  auto int_value = [&]() -> __int128 {
    return type_dispatch(t.id, [&]<type_id Id>() -> __int128 {
      if constexpr (Id == type_id::boolean || Id == type_id::string || Id == type_id::float32 ||
                    Id == type_id::float64) {
        return 0;
      } else {
        return static_cast<__int128>(c.value<storage_t<Id>>(row));
      }
    });
  };
  switch (to.code) {
    case type_code::boolean: put_int(w, c.value<bool>(row) ? 1 : 0, 1); return;
    case type_code::tinyint: put_int(w, static_cast<int64_t>(int_value()), 1); return;
    case type_code::smallint: put_int(w, static_cast<int64_t>(int_value()), 2); return;
    case type_code::int_: put_int(w, static_cast<int64_t>(int_value()), 4); return;
    case type_code::bigint:
    case type_code::counter: put_int(w, static_cast<int64_t>(int_value()), 8); return;
    case type_code::varint: w.bytes(encode_varint(int_value())); return;
    case type_code::float_: {
      float f = c.value<float>(row);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      put_int(w, static_cast<int64_t>(u), 4);
      return;
    }
    case type_code::double_: {
      double d = t.id == type_id::float32 ? static_cast<double>(c.value<float>(row)) : c.value<double>(row);
      uint64_t u;
      std::memcpy(&u, &d, 8);
      put_int(w, static_cast<int64_t>(u), 8);
      return;
    }
    case type_code::decimal: {
      std::string v = encode_varint(c.value<__int128>(row));
      w.i32(static_cast<int32_t>(4 + v.size()));
      w.i32(t.scale);
      w.raw(v);
      return;
    }
    case type_code::date: put_int(w, static_cast<int64_t>(static_cast<uint32_t>(c.value<int32_t>(row)) + 0x80000000u), 4); return;
    case type_code::timestamp: {
      int64_t v = c.value<int64_t>(row);
      int64_t per_ms = ticks_per_second(t.unit) / 1000;
      if (t.unit == time_unit::s) v *= 1000;  // overflow past year 292 million only
      else if (per_ms > 1) v = v >= 0 ? v / per_ms : -((-v + per_ms - 1) / per_ms);  // floor
      put_int(w, v, 8);
      return;
    }
    case type_code::time: {
      int64_t v = c.value<int64_t>(row);
      int64_t ns = v * (1000000000 / ticks_per_second(t.unit));
      if (ns < 0 || ns > 86399999999999LL) bad("a time of day must lie in [0, 24h), got " + std::to_string(ns) + " ns");
      put_int(w, ns, 8);
      return;
    }
    default: break;
  }
  bad("cannot write " + to_string(t) + " as " + to.to_string());
}

}  // namespace tug::io::cassandra
