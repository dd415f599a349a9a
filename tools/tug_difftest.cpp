// tug_difftest: runs a batch of differential-test cases through tug and writes the results as JSON.
//
// usage: tug_difftest CASES.json [RESULTS.json]   (results go to stdout when no output file is given)
//
// Input: {"cases": [{"id": ..., "tables": {NAME: {"schema": [{"name", "type"}], "columns": [[v...]...]}},
//                    "options": {"target_partition_rows": N}, "plan": PLAN}, ...]}
// Types are tug's short names (bool, i8..i64, u8..u64, f32, f64, decimal[p,s], date, datetime[us],
// duration[ms], str). Values: JSON numbers, or strings for 64-bit integers beyond 2^53, decimals
// ("-12.30"), and the floats "NaN", "inf", "-inf"; dates as day numbers; timestamps/durations as ticks.
//
// PLAN nodes ("op"): scan{table}, filter{input, predicate}, select{input, exprs}, with_columns{input,
// exprs}, group_by{input, keys, aggs, maintain_order}, join{left, right, left_on, right_on, how, suffix},
// sort{input, by, descending, nulls_last, stable}, slice{input, offset, length}, head{input, n},
// tail{input, n}, unique{input, subset, keep, maintain_order}, concat{inputs}, with_row_index{input, name,
// offset}, rename{input, mapping}, drop{input, columns}.
// EXPR nodes: {"col"}, {"lit", "type"?} (no type: a dynamic literal), {"fn", "args", "i0", "i1", "d0", "s0",
// "flag", "list", "list_type"} with tug's function names (add, truediv, floordiv, neq, lt_eq, str.slice,
// dt.year, ...), {"cast", "to", "strict"}, {"when": [[cond, then]...], "otherwise"}, {"agg", "arg", "ddof",
// "q", "interpolation"}, {"over", "by"}, {"alias", "name"}.
//
// Output: {"results": [{"id", "schema": [{"name", "type"}], "rows": [[v...]...]} | {"id", "error", "message"}]}
// with values in the input's canonical form (64-bit integers are always exact JSON integers).
// Under an MPI launcher every rank runs every case on its share of the data (docs/architecture.md,
// "Multi-rank execution") and rank 0 writes the results.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tug/api/lazy_frame.hpp"
#include "tug/core/scalar.hpp"
#include "tug/dist/communicator.hpp"

using json = nlohmann::json;
using namespace tug;

namespace {

[[noreturn]] void bad(const std::string& what) { throw invalid_argument_error("tug_difftest: " + what); }

time_unit parse_unit(const std::string& u) {
  if (u == "s") return time_unit::s;
  if (u == "ms") return time_unit::ms;
  if (u == "us") return time_unit::us;
  if (u == "ns") return time_unit::ns;
  bad("bad time unit " + u);
}

data_type parse_type(const std::string& s) {
  static const std::map<std::string, type_id> simple = {
      {"bool", type_id::boolean}, {"i8", type_id::int8},     {"i16", type_id::int16},   {"i32", type_id::int32},
      {"i64", type_id::int64},    {"u8", type_id::uint8},    {"u16", type_id::uint16},  {"u32", type_id::uint32},
      {"u64", type_id::uint64},   {"f32", type_id::float32}, {"f64", type_id::float64}, {"date", type_id::date32},
      {"str", type_id::string}};
  if (auto it = simple.find(s); it != simple.end()) return it->second;
  auto inner = [&](const std::string& prefix) { return s.substr(prefix.size(), s.size() - prefix.size() - 1); };
  if (s.rfind("decimal[", 0) == 0) {
    std::string in = inner("decimal[");
    auto comma = in.find(',');
    return decimal(std::stoi(in.substr(0, comma)), std::stoi(in.substr(comma + 1)));
  }
  if (s.rfind("datetime[", 0) == 0) return timestamp(parse_unit(inner("datetime[")));
  if (s.rfind("duration[", 0) == 0) return duration(parse_unit(inner("duration[")));
  bad("unknown type " + s);
}

__int128 parse_int128(const std::string& s) {
  size_t i = 0;
  bool neg = !s.empty() && s[0] == '-';
  if (neg || (!s.empty() && s[0] == '+')) i = 1;
  if (i >= s.size()) bad("bad integer \"" + s + "\"");
  __int128 v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') bad("bad integer \"" + s + "\"");
    v = v * 10 + (s[i] - '0');
  }
  return neg ? -v : v;
}

std::string int128_string(__int128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  unsigned __int128 u = neg ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  std::string out;
  while (u) {
    out.insert(out.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  }
  return neg ? "-" + out : out;
}

// "-12.3" at scale 2 -> -1230.
__int128 parse_decimal(const std::string& s, int scale) {
  auto dot = s.find('.');
  std::string whole = s.substr(0, dot), frac = dot == std::string::npos ? "" : s.substr(dot + 1);
  if (static_cast<int>(frac.size()) > scale) bad("decimal \"" + s + "\" has more than " + std::to_string(scale) + " digits");
  frac.append(static_cast<size_t>(scale) - frac.size(), '0');
  bool neg = !whole.empty() && whole[0] == '-';
  __int128 w = parse_int128(whole == "-" || whole.empty() ? "0" : (neg ? whole.substr(1) : whole));
  __int128 f = frac.empty() ? 0 : parse_int128(frac);
  __int128 p = 1;
  for (int i = 0; i < scale; ++i) p *= 10;
  __int128 v = w * p + f;
  return neg ? -v : v;
}

std::string decimal_string(__int128 v, int scale) {
  bool neg = v < 0;
  std::string digits = int128_string(neg ? -v : v);
  const size_t sc = static_cast<size_t>(scale);
  if (sc > 0) {
    if (digits.size() <= sc) digits = std::string(sc + 1 - digits.size(), '0') + digits;
    digits = digits.substr(0, digits.size() - sc) + "." + digits.substr(digits.size() - sc);
  }
  return neg ? "-" + digits : digits;
}

int64_t json_int64(const json& v) {
  if (v.is_string()) return static_cast<int64_t>(parse_int128(v.get<std::string>()));
  if (v.is_number_unsigned()) return static_cast<int64_t>(v.get<uint64_t>());
  return v.get<int64_t>();
}
uint64_t json_uint64(const json& v) {
  if (v.is_string()) return static_cast<uint64_t>(parse_int128(v.get<std::string>()));
  return v.get<uint64_t>();
}
double json_double(const json& v) {
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s == "NaN") return std::nan("");
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    return std::stod(s);
  }
  return v.get<double>();
}

// A typed scalar from a JSON value (null -> typed null).
scalar json_scalar(const json& v, const data_type& t) {
  if (v.is_null()) return scalar::null(t);
  switch (t.id) {
    case type_id::boolean: return scalar(t, v.get<bool>());
    case type_id::uint8: case type_id::uint16: case type_id::uint32: case type_id::uint64:
      return scalar(t, json_uint64(v));
    case type_id::float32: case type_id::float64: return scalar(t, json_double(v));
    case type_id::decimal128: return scalar(t, parse_decimal(v.get<std::string>(), t.scale));
    case type_id::string: return scalar(t, v.get<std::string>());
    default: return scalar(t, json_int64(v));
  }
}

column build_column(const data_type& t, const json& values) {
  const int64_t n = static_cast<int64_t>(values.size());
  if (t.id == type_id::string) {
    string_builder b(n);
    for (auto& v : values) v.is_null() ? b.append_null() : b.append(v.get<std::string>());
    return b.finish();
  }
  return type_dispatch(t.id, [&]<type_id Id>() -> column {
    if constexpr (Id == type_id::string) {
      throw internal_error("unreachable");
    } else {
      using T = storage_t<Id>;
      fixed_width_builder<T> b(t, n);
      for (int64_t i = 0; i < n; ++i) {
        const json& v = values[static_cast<size_t>(i)];
        if (v.is_null()) { b.set_null(i); continue; }
        if constexpr (Id == type_id::boolean) b.set(i, v.get<bool>());
        else if constexpr (Id == type_id::decimal128) b.set(i, parse_decimal(v.get<std::string>(), t.scale));
        else if constexpr (std::is_floating_point_v<T>) b.set(i, static_cast<T>(json_double(v)));
        else if constexpr (std::is_unsigned_v<T>) b.set(i, static_cast<T>(json_uint64(v)));
        else b.set(i, static_cast<T>(json_int64(v)));
      }
      return b.finish();
    }
  });
}

json format_double(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  return d;
}

// One value of a column in the canonical output form.
json cell(const column& c, int64_t i) {
  if (c.is_null(i)) return nullptr;
  return type_dispatch(c.type().id, [&]<type_id Id>() -> json {
    using T = storage_t<Id>;
    if constexpr (Id == type_id::string) return std::string(c.string(i));
    else if constexpr (Id == type_id::boolean) return static_cast<bool>(c.value<T>(i));
    else if constexpr (Id == type_id::decimal128) return decimal_string(c.value<T>(i), c.type().scale);
    else if constexpr (std::is_floating_point_v<T>) return format_double(static_cast<double>(c.value<T>(i)));
    else if constexpr (std::is_unsigned_v<T>) return static_cast<uint64_t>(c.value<T>(i));
    else return static_cast<int64_t>(c.value<T>(i));
  });
}

struct case_builder {
  std::map<std::string, lazy_frame> tables;

  const std::map<std::string, fn>& functions() {
    static const std::map<std::string, fn> m = [] {
      std::map<std::string, fn> r;
      for (int i = 0; i <= static_cast<int>(fn::dt_total_milliseconds); ++i) r[to_string(static_cast<fn>(i))] = static_cast<fn>(i);
      return r;
    }();
    return m;
  }
  const std::map<std::string, agg_op>& aggs() {
    static const std::map<std::string, agg_op> m = [] {
      std::map<std::string, agg_op> r;
      for (int i = 0; i <= static_cast<int>(agg_op::all); ++i) r[to_string(static_cast<agg_op>(i))] = static_cast<agg_op>(i);
      return r;
    }();
    return m;
  }

  std::vector<expr> exprs(const json& j) {
    std::vector<expr> out;
    for (auto& e : j) out.push_back(build_expr(e));
    return out;
  }

  expr literal(const json& j) {
    const json& v = j["lit"];
    if (!j.contains("type")) {
      if (v.is_boolean()) return lit(v.get<bool>());
      if (v.is_string()) return lit(v.get<std::string>());
      if (v.is_number_integer()) return expr(json_int64(v));
      if (v.is_number()) return expr(v.get<double>());
      bad("literal without a type: " + v.dump());
    }
    return lit(json_scalar(v, parse_type(j["type"].get<std::string>())));
  }

  expr build_expr(const json& j) {
    if (j.contains("col")) return col(j["col"].get<std::string>());
    if (j.contains("lit")) return literal(j);
    if (j.contains("alias")) return build_expr(j["alias"]).alias(j["name"].get<std::string>());
    if (j.contains("cast")) return build_expr(j["cast"]).cast(parse_type(j["to"].get<std::string>()), j.value("strict", true));
    if (j.contains("over")) return build_expr(j["over"]).over(exprs(j["by"]));
    if (j.contains("when")) {
      std::vector<std::pair<expr, expr>> branches;
      for (auto& b : j["when"]) branches.emplace_back(build_expr(b[0]), build_expr(b[1]));
      then_builder t(branches);
      if (j.contains("otherwise")) return t.otherwise(build_expr(j["otherwise"]));
      return t;
    }
    if (j.contains("agg")) {
      std::string name = j["agg"].get<std::string>();
      auto it = aggs().find(name);
      if (it == aggs().end()) bad("unknown aggregation " + name);
      if (it->second == agg_op::len) return len();
      expr a = build_expr(j["arg"]);
      switch (it->second) {
        case agg_op::std: return a.std(j.value("ddof", 1));
        case agg_op::var: return a.var(j.value("ddof", 1));
        case agg_op::quantile: return a.quantile(j["q"].get<double>(), j.value("interpolation", std::string("nearest")));
        default: {
          auto n = std::make_shared<expr_node>();
          n->kind = expr_kind::agg;
          n->agg = it->second;
          n->args = {a};
          return expr(n);
        }
      }
    }
    if (j.contains("fn")) {
      std::string name = j["fn"].get<std::string>();
      auto it = functions().find(name);
      if (it == functions().end()) bad("unknown function " + name);
      auto n = std::make_shared<expr_node>(make_function(it->second, exprs(j.value("args", json::array()))).node());
      n->i0 = j.value("i0", int64_t{0});
      n->i1 = j.value("i1", int64_t{-1});
      n->d0 = j.value("d0", 0.0);
      n->s0 = j.value("s0", std::string());
      n->flag = j.value("flag", false);
      if (j.contains("list")) {
        data_type lt = parse_type(j["list_type"].get<std::string>());
        for (auto& v : j["list"]) n->list.push_back(json_scalar(v, lt));
      }
      return expr(n);
    }
    bad("unknown expression " + j.dump());
  }

  static std::vector<bool> bools(const json& j, const char* key) {
    std::vector<bool> out;
    if (j.contains(key)) {
      if (j[key].is_boolean()) out.push_back(j[key].get<bool>());
      else for (auto& b : j[key]) out.push_back(b.get<bool>());
    }
    return out;
  }

  static join_type parse_how(const std::string& s) {
    static const std::map<std::string, join_type> m = {{"inner", join_type::inner}, {"left", join_type::left},
                                                       {"right", join_type::right}, {"full", join_type::full},
                                                       {"semi", join_type::semi},   {"anti", join_type::anti},
                                                       {"cross", join_type::cross}};
    auto it = m.find(s);
    if (it == m.end()) bad("unknown join type " + s);
    return it->second;
  }
  static unique_keep parse_keep(const std::string& s) {
    static const std::map<std::string, unique_keep> m = {
        {"any", unique_keep::any}, {"first", unique_keep::first}, {"last", unique_keep::last}, {"none", unique_keep::none}};
    auto it = m.find(s);
    if (it == m.end()) bad("unknown unique keep " + s);
    return it->second;
  }

  lazy_frame build_plan(const json& j) {
    const std::string op = j["op"].get<std::string>();
    if (op == "scan") {
      auto it = tables.find(j["table"].get<std::string>());
      if (it == tables.end()) bad("unknown table " + j["table"].dump());
      return it->second;
    }
    if (op == "concat") {
      std::vector<lazy_frame> in;
      for (auto& p : j["inputs"]) in.push_back(build_plan(p));
      return concat(in);
    }
    if (op == "join") {
      lazy_frame l = build_plan(j["left"]), r = build_plan(j["right"]);
      join_type how = parse_how(j.value("how", std::string("inner")));
      std::string suffix = j.value("suffix", std::string("_right"));
      if (how == join_type::cross) return l.cross_join(r, suffix);
      return l.join(r, exprs(j["left_on"]), exprs(j["right_on"]), how, suffix);
    }
    lazy_frame in = build_plan(j["input"]);
    if (op == "filter") return in.filter(build_expr(j["predicate"]));
    if (op == "select") return in.select(exprs(j["exprs"]));
    if (op == "with_columns") return in.with_columns(exprs(j["exprs"]));
    if (op == "group_by") return in.group_by(exprs(j["keys"]), j.value("maintain_order", false)).agg(exprs(j["aggs"]));
    if (op == "sort") return in.sort(exprs(j["by"]), sort_options{bools(j, "descending"), bools(j, "nulls_last"), j.value("stable", false)});
    if (op == "slice") return in.slice(j["offset"].get<int64_t>(), j.value("length", int64_t{-1}));
    if (op == "head") return in.head(j["n"].get<int64_t>());
    if (op == "tail") return in.tail(j["n"].get<int64_t>());
    if (op == "unique") {
      return in.unique(j.value("subset", std::vector<std::string>{}), parse_keep(j.value("keep", std::string("any"))),
                       j.value("maintain_order", false));
    }
    if (op == "with_row_index") return in.with_row_index(j.value("name", std::string("index")), j.value("offset", int64_t{0}));
    if (op == "rename") return in.rename(j["mapping"].get<std::map<std::string, std::string>>());
    if (op == "drop") return in.drop(j["columns"].get<std::vector<std::string>>());
    bad("unknown plan op " + op);
  }
};

data_frame load_table(const json& t) {
  std::vector<std::pair<std::string, column>> cols;
  const json& fields = t["schema"];
  for (size_t c = 0; c < fields.size(); ++c)
    cols.emplace_back(fields[c]["name"].get<std::string>(),
                      build_column(parse_type(fields[c]["type"].get<std::string>()), t["columns"][c]));
  return data_frame::from_columns(std::move(cols));
}

const char* error_kind(const std::exception& e) {
  if (dynamic_cast<const column_not_found_error*>(&e)) return "column_not_found_error";
  if (dynamic_cast<const type_error*>(&e)) return "type_error";
  if (dynamic_cast<const compute_error*>(&e)) return "compute_error";
  if (dynamic_cast<const invalid_argument_error*>(&e)) return "invalid_argument_error";
  if (dynamic_cast<const user_error*>(&e)) return "user_error";
  if (dynamic_cast<const memory_error*>(&e)) return "memory_error";
  if (dynamic_cast<const internal_error*>(&e)) return "internal_error";
  if (dynamic_cast<const not_implemented_error*>(&e)) return "not_implemented_error";
  if (dynamic_cast<const tug::error*>(&e)) return "error";
  return "std_exception";
}

json run_case(const json& c) {
  json out;
  out["id"] = c.value("id", json());
  try {
    case_builder b;
    std::vector<data_frame> keep;
    for (auto& [name, t] : c["tables"].items()) {
      keep.push_back(load_table(t));
      b.tables.emplace(name, keep.back().lazy());
    }
    engine_options opts;
    opts.engine = engine_kind::cpu;
    opts.fallback = fallback_mode::silent;
    if (c.contains("options")) {
      const json& o = c["options"];
      opts.target_partition_rows = o.value("target_partition_rows", opts.target_partition_rows);
      opts.num_threads = o.value("num_threads", opts.num_threads);
    }
    lazy_frame q = b.build_plan(c["plan"]);
    data_frame df = q.collect(opts);
    json schema = json::array();
    for (auto& f : df.schema()) schema.push_back({{"name", f.name}, {"type", to_string(f.type)}});
    out["schema"] = schema;
    json rows = json::array();
    for (const table& part : df.partitions()) {
      TUG_EXPECTS(part.num_columns() == df.num_columns(), "result partition has a wrong column count");
      for (int64_t r = 0; r < part.num_rows(); ++r) {
        json row = json::array();
        for (size_t k = 0; k < part.num_columns(); ++k) row.push_back(cell(part[k], r));
        rows.push_back(std::move(row));
      }
    }
    out["rows"] = std::move(rows);
  } catch (const std::exception& e) {
    out["error"] = error_kind(e);
    out["message"] = e.what();
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: tug_difftest CASES.json [RESULTS.json]\n";
    return 2;
  }
  json input;
  try {
    std::ifstream f(argv[1]);
    if (!f) {
      std::cerr << "tug_difftest: cannot open " << argv[1] << "\n";
      return 2;
    }
    input = json::parse(f);
  } catch (const std::exception& e) {
    std::cerr << "tug_difftest: bad input JSON: " << e.what() << "\n";
    return 2;
  }
  json results = json::array();
  for (auto& c : input["cases"]) results.push_back(run_case(c));
  if (dist::world()->rank() != 0) return 0;  // rank 0 has the results
  std::string text = json{{"results", results}}.dump(-1, ' ', false, json::error_handler_t::replace);
  if (argc == 3) {
    std::ofstream o(argv[2]);
    o << text;
    if (!o) {
      std::cerr << "tug_difftest: cannot write " << argv[2] << "\n";
      return 2;
    }
  } else {
    std::cout << text << "\n";
  }
  return 0;
}
