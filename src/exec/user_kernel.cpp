// User kernels (docs/user-kernels.md): the partition a kernel sees, the map_partitions node both
// backends share, and the CPU backend's node (host functors).
#include "exec/user_kernel.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "exec/nvtx.hpp"
#include "memory/concatenate_where.hpp"
#include "tug/exec/cpu/require.hpp"
#include "tug/memory/device.hpp"
#include "tug/runtime/thread_pool.hpp"
#ifdef TUG_WITH_CUDA
#include "exec/cuda/ops.hpp"
#endif

namespace tug {

std::string default_kernel_cache_dir() {
  if (const char* d = std::getenv("TUG_KERNEL_CACHE")) return d;  // "" turns the cache off
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/tug/kernels";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/tug/kernels";
  return {};
}

std::string user_kernel::describe() const {
  std::string forms;
  auto add = [&](const char* f) { forms += (forms.empty() ? "" : "+") + std::string(f); };
  if (_host) add("host");
  if (_device) add("device");
  if (_source) add("cuda source");
  std::string s = "\"" + _name + "\" (" + forms + ")";
  auto list = [](const std::vector<std::string>& v) {
    std::string r;
    for (auto& c : v)
      r += (r.empty() ? "" : ", ") + c;
    return "[" + r + "]";
  };
  s += " in " + (_inputs.empty() ? std::string("[all]") : list(_inputs));
  if (!_keep.empty()) s += " keep " + list(_keep);
  s += " out [" + _outputs.to_string() + "]";
  if (!_args.empty()) {
    std::string a;
    for (auto& x : _args)
      a += (a.empty() ? "" : ", ") + x.to_string();
    s += " args [" + a + "]";
  }
  return s;
}

kernel_partition::kernel_partition(const std::string& kernel, int64_t number, backend where, void* stream,
                                   const table& input, std::vector<std::string> input_names,
                                   const std::vector<scalar>& args, memory_resource* mr, int64_t first_row,
                                   int64_t partition_rows)
    : _kernel(kernel),
      _number(number),
      _first_row(first_row),
      _partition_rows(partition_rows),
      _where(where),
      _stream(stream),
      _input(input),
      _input_names(std::move(input_names)),
      _args(args),
      _mr(mr) {}

std::string kernel_partition::where_text() const {
  std::string s = "kernel \"" + _kernel + "\", partition #" + std::to_string(_number) + " (";
  if (partition_rows() == rows()) return s + std::to_string(rows()) + " rows)";
  return s + "rows " + std::to_string(_first_row) + " to " + std::to_string(_first_row + rows() - 1) + " of " +
         std::to_string(partition_rows()) + ")";
}

const column& kernel_partition::input_column(size_t i) const {
  if (i >= _input.num_columns())
    throw invalid_argument_error(where_text() + ": input " + std::to_string(i) + " does not exist (the kernel has " +
                                 std::to_string(_input.num_columns()) + " inputs)");
  return _input[i];
}

column_view kernel_partition::input(size_t i) const { return input_column(i).view(); }

column_view kernel_partition::input(std::string_view name) const {
  for (size_t i = 0; i < _input_names.size(); ++i)
    if (_input_names[i] == name) return input(i);
  throw column_not_found_error(where_text() + ": no input column \"" + std::string(name) + "\"");
}

column_view kernel_partition::checked_input(size_t i, size_t width) const {
  column_view v = input(i);
  if (v.type.id == type_id::string || static_cast<size_t>(size_of(v.type.id)) != width)
    throw type_error(where_text() + ": input \"" + _input_names[i] + "\" is " + to_string(v.type) +
                     ", not a column of " + std::to_string(width) + "-byte values");
  return v;
}

tug::in_strings kernel_partition::in_strings(size_t i) const {
  column_view v = input(i);
  if (v.type.id != type_id::string)
    throw type_error(where_text() + ": input \"" + _input_names[i] + "\" is " + to_string(v.type) +
                     ", not a string column");
  return {static_cast<const char*>(v.data), reinterpret_cast<const long long*>(v.offsets), v.validity, v.offset,
          v.size};
}

const mutable_column_view& kernel_partition::output(size_t i) const {
  if (i >= _outputs.size())
    throw invalid_argument_error(where_text() + ": output " + std::to_string(i) + " does not exist (the kernel has " +
                                 std::to_string(_outputs.size()) + " outputs)");
  return _outputs[i].view;
}

const mutable_column_view& kernel_partition::output(std::string_view name) const {
  for (auto& s : _outputs)
    if (s.name == name) return s.view;
  throw column_not_found_error(where_text() + ": no output column \"" + std::string(name) + "\"");
}

const mutable_column_view& kernel_partition::checked_output(size_t i, size_t width) const {
  const mutable_column_view& v = output(i);
  if (v.type.id == type_id::string || static_cast<size_t>(size_of(v.type.id)) != width)
    throw type_error(where_text() + ": output \"" + _outputs[i].name + "\" is " + to_string(v.type) +
                     ", not a column of " + std::to_string(width) + "-byte values");
  return v;
}

column kernel_partition::make_strings(const std::function<void(const tug::out_strings& o)>& pass) const {
  if (_where != backend::cpu)
    throw invalid_argument_error(where_text() + ": make_strings builds columns in host memory, on the cpu engine");
  const int64_t n = rows();
  buffer_ptr offsets = make_buffer(static_cast<size_t>(n + 1) * sizeof(int64_t), _mr);
  buffer_ptr validity = make_buffer(static_cast<size_t>((n + 31) / 32) * 4, _mr);
  std::memset(offsets->data(), 0, offsets->size());
  std::memset(validity->data(), 0xff, validity->size());
  auto* off = reinterpret_cast<long long*>(offsets->data());
  tug::out_strings o{nullptr, off, validity->as<unsigned int>(), n};
  pass(o);  // the lengths, into off[0, n)
  long long total = 0;
  for (int64_t i = 0; i <= n; ++i) {
    const long long len = i < n ? off[i] : 0;
    if (len < 0)
      throw compute_error(where_text() + ": make_strings: row " + std::to_string(i) + " has length " +
                          std::to_string(len));
    off[i] = total;
    total += len;
  }
  buffer_ptr chars = make_buffer(static_cast<size_t>(total), _mr);
  if (total > 0) std::memset(chars->data(), 0, chars->size());
  char none = 0;  // never written: every row's room is 0
  o.chars = total > 0 ? chars->as<char>() : &none;
  pass(o);
  const int64_t valid = count_set_bits(*validity, 0, n);
  return column(data_type(type_id::string), n, chars, valid == n ? buffer_ptr{} : validity, n - valid, offsets);
}

void kernel_partition::set_output(size_t i, column c) {
  output(i);  // range check
  _outputs[i].replaced = std::move(c);
  _outputs[i].is_replaced = true;
}

const scalar& kernel_partition::arg(size_t i) const {
  if (i >= _args.size())
    throw invalid_argument_error(where_text() + ": argument " + std::to_string(i) + " does not exist (the kernel has " +
                                 std::to_string(_args.size()) + " arguments)");
  return _args[i];
}

int64_t kernel_call_budget(const exec_context& ctx, backend where, std::string* how) {
  if (where == backend::cuda) {
    const memory_budget* b = ctx.device_budget;
    if (!b || b->limit() <= 0) return 0;
    const int streams = std::max(1, ctx.options.num_streams);
    if (how)
      *how = "the device budget of " + std::to_string(b->limit()) + " bytes (spill_device_limit \"" +
             ctx.options.spill_device_limit + "\") over num_streams " + std::to_string(streams) +
             " partitions at once; raise spill_device_limit or lower num_streams";
    return b->limit() / streams;
  }
  if (ctx.options.memory_limit <= 0) return 0;
  const int threads = std::max(1, ctx.pool.size());
  if (how)
    *how = "memory_limit " + std::to_string(ctx.options.memory_limit) + " over " + std::to_string(threads) +
           " threads; raise memory_limit or lower num_threads";
  return ctx.options.memory_limit / threads;
}

int64_t kernel_call_bytes(const user_kernel& k, const table& input, int64_t rows) {
  const int64_t n = input.num_rows();
  int64_t bytes = 0;
  if (n > 0)  // the input's bytes in proportion (string columns: their average row)
    bytes += static_cast<int64_t>((static_cast<__int128>(input.memory_usage()) * rows + n - 1) / n);
  const int64_t words = (rows + 31) / 32 * 4;  // a validity bitmap of 32-bit words
  for (auto& f : k.output_schema())
    bytes += (f.type.id == type_id::string ? (rows + 1) * 8 : rows * size_of(f.type.id)) + words;
  return bytes;
}

int64_t kernel_call_rows(const user_kernel& k, const table& input, int64_t budget, const std::string& how) {
  const int64_t n = input.num_rows();
  if (budget <= 0 || n == 0 || kernel_call_bytes(k, input, n) <= budget) return n;
  // the largest row count that fits (the bytes grow with the rows)
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (kernel_call_bytes(k, input, mid) <= budget) lo = mid;
    else hi = mid - 1;
  }
  if (lo == 0)
    throw memory_error("kernel \"" + k.name() + "\": one row takes " + std::to_string(kernel_call_bytes(k, input, 1)) +
                       " bytes (its input and kept columns and its declared outputs) but one call may use " +
                       std::to_string(budget) + " bytes (" + how + ")");
  return lo;
}

std::vector<table> map_partitions_node::run(exec_context& ctx) { return run_per_partition(ctx); }

table map_partitions_node::process_indexed(const table& t, size_t index, exec_context& ctx) {
  std::vector<table> outs;
  process_pieces(t, index, ctx, [&](table o, bool) {
    if (outs.empty() || o.num_rows() > 0) outs.push_back(std::move(o));
  });
  if (outs.size() > 1 && outs[0].num_rows() == 0) outs.erase(outs.begin());
  if (outs.size() == 1) return std::move(outs[0]);
  return concatenate_where_they_are(outs, ctx.mr, ctx.device_mr);
}

void map_partitions_node::process_pieces(const table& t, size_t index, exec_context& ctx,
                                         const std::function<void(table, bool)>& emit) {
  // what a call holds: the columns the kernel reads and those it keeps
  const schema& in = children[0]->output_schema;
  std::vector<size_t> held;
  auto hold = [&](const std::string& name) {
    const auto i = static_cast<size_t>(in.index_of(name));
    if (std::find(held.begin(), held.end(), i) == held.end()) held.push_back(i);
  };
  for (auto& n : _k->input_names().empty() ? in.names() : _k->input_names()) hold(n);
  for (auto& n : _k->kept()) hold(n);
  std::string how;
  const int64_t budget = kernel_call_budget(ctx, where, &how);
  const int64_t n = t.num_rows();
  int64_t step = kernel_call_rows(*_k, t.select(held), budget, how);
  if (step >= n) return emit(run_call(t, index, 0, n, ctx), true);
  const int64_t calls = (n + step - 1) / step;
  step = (n + calls - 1) / calls;  // slices of even size
  for (int64_t a = 0; a < n; a += step) {
    const int64_t len = std::min(step, n - a);
    emit(run_call(t.slice(a, len), index, a, n, ctx), a + len >= n);
  }
}

table map_partitions_node::run_call(const table& t, size_t index, int64_t first, int64_t total, exec_context& ctx) {
  nvtx_range range{"map_partitions " + _k->name()};
  const schema& in = children[0]->output_schema;
  std::vector<std::string> names = _k->input_names().empty() ? in.names() : _k->input_names();
  std::vector<column> cols;
  for (auto& n : names)
    cols.push_back(t[in.index_of(n)]);
  const int64_t rows = t.num_rows();
  table input = cols.empty() ? table::empty_with_rows(rows) : table(std::move(cols));
  memory_resource* mr = memory(ctx);
  kernel_partition p(_k->name(), static_cast<int64_t>(index), where, stream(), input, names, _k->arguments(), mr,
                     first, total);
  // the declared outputs, `rows` long, every row valid; string outputs come only through set_output
  for (auto& f : _k->output_schema()) {
    kernel_partition::output_slot s;
    s.name = f.name;
    s.view.type = f.type;
    if (f.type.id != type_id::string) {
      s.data = make_buffer(static_cast<size_t>(rows) * static_cast<size_t>(size_of(f.type.id)), mr);
      s.validity = make_buffer(static_cast<size_t>((rows + 31) / 32) * 4, mr);
      set_all_valid(*s.validity);
      s.view.size = rows;
      s.view.data = s.data->data();
      s.view.validity = s.validity->as<unsigned int>();
    }
    p.slots().push_back(std::move(s));
  }
  try {
    run_kernel(p, ctx);
  } catch (const error&) {
    throw;  // tug's own errors name the kernel and the partition (or are memory errors the operator names)
  } catch (const std::exception& e) {
    throw compute_error(p.where_text() + " raised: " + e.what());
  }
  // check what the kernel made against its declaration
  std::vector<column> out;
  for (auto& c : _k->kept())
    out.push_back(t[in.index_of(c)]);
  int64_t length = -1;  // the outputs' common length
  std::string length_from;
  if (!out.empty()) {
    length = rows;
    length_from = "the kept input columns";
  }
  for (auto& s : p.slots()) {
    column c;
    if (s.is_replaced) {
      c = std::move(s.replaced);
      if (!(c.type() == s.view.type))
        throw type_error(p.where_text() + ": output \"" + s.name + "\" is " + to_string(c.type()) +
                         " but the kernel declares " + to_string(s.view.type));
      if (c.size() > 0 && !in_memory(c))
        throw invalid_argument_error(p.where_text() + ": output \"" + s.name + "\" is in " +
                                     (where == backend::cuda ? "host" : "device") + " memory; a kernel on the " +
                                     to_string(where) + " engine returns columns in " +
                                     (where == backend::cuda ? "device" : "host") + " memory (kernel_partition::memory())");
    } else if (s.view.type.id == type_id::string) {
      throw invalid_argument_error(p.where_text() + ": string output \"" + s.name +
                                   "\" was not given; a kernel hands string columns over with set_output");
    } else {
      const int64_t valid = count_set_bits(*s.validity, 0, rows);
      c = column(s.view.type, rows, s.data, valid == rows ? buffer_ptr{} : s.validity, rows - valid);
    }
    if (length < 0) {
      length = c.size();
      length_from = "output \"" + s.name + "\"";
    } else if (c.size() != length) {
      throw compute_error(p.where_text() + ": output \"" + s.name + "\" has " + std::to_string(c.size()) +
                          " rows but " + length_from + " " + std::to_string(length));
    }
    out.push_back(std::move(c));
  }
  if (out.empty()) return table::empty_with_rows(0);  // a foreach kernel: nothing comes out
  return table(std::move(out));
}

namespace {

class map_partitions_op final : public map_partitions_node {
 public:
  using map_partitions_node::map_partitions_node;

 protected:
  void run_kernel(kernel_partition& p, exec_context&) const override {
    if (!_k->has_host())
      throw internal_error("kernel \"" + _k->name() + "\" reached the cpu without a host functor");
    _k->host_fn()(p);
  }
  memory_resource* memory(exec_context& ctx) const override { return ctx.mr; }
  void set_all_valid(buffer& b) const override { std::memset(b.data(), 0xff, b.size()); }
  bool in_memory(const column& c) const override { return !on_device(table({c})); }
};

}  // namespace

namespace exec {

physical_ptr make_map_partitions(backend b, physical_ptr child, std::shared_ptr<const user_kernel> k, schema out) {
  TUG_DISPATCH_CUDA(b, make_map_partitions(std::move(child), std::move(k), std::move(out)));
  return cpu::finish(std::make_unique<map_partitions_op>(std::move(k)), b, cpu::one(std::move(child)),
                     std::move(out));
}

}  // namespace exec

}  // namespace tug
