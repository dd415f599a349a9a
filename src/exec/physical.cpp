#include "tug/exec/physical.hpp"

#include <cstdio>

#include "exec/nvtx.hpp"
#include "tug/memory/device.hpp"
#ifdef TUG_WITH_CUDA
#include "exec/cuda/ops.hpp"
#endif

namespace tug {

const char* to_string(backend b) { return b == backend::cpu ? "cpu" : "cuda"; }

std::vector<table> physical_node::execute(exec_context& ctx) {
  auto t0 = std::chrono::steady_clock::now();
  // children run inside run(); their recorded time is subtracted from this operator's
  size_t before = 0;
  if (ctx.stats) {
    std::lock_guard<std::mutex> g(ctx.stats->mu);
    before = ctx.stats->operators.size();
  }
  std::vector<table> out;
  try {
    nvtx_range range{name() + "@" + to_string(where)};
    out = run(ctx);
  } catch (const memory_error& e) {
    std::string m = e.what();
    if (m.rfind("operator ", 0) == 0) throw;  // the innermost operator already named itself
    throw memory_error("operator " + name() + ": " + m);
  }
  if (ctx.stats) {
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::lock_guard<std::mutex> g(ctx.stats->mu);
    double child = 0;
    for (size_t i = before; i < ctx.stats->operators.size(); ++i)
      child += ctx.stats->operators[i].seconds;
    operator_stats s;
    s.name = name();
    s.rows_out = total_rows(out);
    s.partitions_out = static_cast<int64_t>(out.size());
    for (auto& p : out)
      s.bytes_out += p.memory_usage();
    s.seconds = secs - child;
    ctx.stats->operators.push_back(std::move(s));
  }
  return out;
}

std::string filter_node::detail() const {
  return to_string(_pred) + (_keep.empty() ? "" : " -> " + std::to_string(_keep.size()) + " columns");
}

bool filter_node::narrow_output(const std::vector<std::string>& names) {
  const schema& in = children[0]->output_schema;
  std::vector<size_t> keep;
  schema out;
  for (auto& n : names) {
    keep.push_back(in.index_of(n));
    out.push_back(in[keep.back()]);
  }
  _keep = std::move(keep);
  output_schema = std::move(out);
  return true;
}

std::vector<table> physical_node::input(size_t i, exec_context& ctx) {
  physical_node& child = *children.at(i);
  if (where == backend::cuda) child.output_to_device = true;
  std::vector<table> parts = child.execute(ctx);
  if (where == backend::cuda) {
    if (!ctx.device_mr) throw internal_error("a cuda operator ran without a device memory resource");
    return map_partitions(ctx, parts, [&](const table& t) { return to_device(t, ctx.device_mr); });
  }
  bool any = false;
  for (auto& t : parts)
    any = any || on_device(t);
  if (!any) return parts;
  return map_partitions(ctx, parts, [&](const table& t) { return to_host(t, ctx.mr); });
}

std::string exec::backend_unsupported(backend b, const op_request& r) {
  if (b == backend::cpu) return {};
#ifdef TUG_WITH_CUDA
  return cuda::unsupported(r);
#else
  return "tug was built without CUDA";
#endif
}

bool uses_backend(const physical_node& root, backend b) {
  if (root.where == b) return true;
  for (auto& c : root.children)
    if (uses_backend(*c, b)) return true;
  return false;
}

std::vector<table> physical_node::map_partitions(exec_context& ctx, const std::vector<table>& in,
                                                 const std::function<table(const table&)>& f) {
  std::vector<table> out(in.size());
  ctx.pool.parallel_for(static_cast<int64_t>(in.size()),
                        [&](int64_t i) { out[static_cast<size_t>(i)] = f(in[static_cast<size_t>(i)]); });
  return out;
}

std::string exec_statistics::to_string() const {
  std::string s = "operator                         rows_out  partitions      MiB   seconds\n";
  char buf[256];
  for (auto& o : operators) {
    std::snprintf(buf, sizeof buf, "%-30s %10lld %11lld %8.1f %9.4f\n", o.name.c_str(),
                  static_cast<long long>(o.rows_out), static_cast<long long>(o.partitions_out),
                  static_cast<double>(o.bytes_out) / (1 << 20), o.seconds);
    s += buf;
  }
  std::snprintf(buf, sizeof buf, "total %.4f s, peak memory %.1f MiB\n", total_seconds,
                static_cast<double>(peak_memory) / (1 << 20));
  s += buf;
  return s;
}

namespace {
void render(const physical_node& n, int depth, std::string& out) {
  std::string line(static_cast<size_t>(depth) * 2, ' ');
  if (n.sync_point()) line += "[sync] ";
  line += n.name();
  std::string d = n.detail();
  if (!d.empty()) line += " " + d;
  line += "  @" + std::string(to_string(n.where));
  out += line + "\n";
  for (auto& c : n.children)
    render(*c, depth + 1, out);
}
}  // namespace

std::string to_string(const physical_node& root) {
  std::string out;
  render(root, 0, out);
  return out;
}

}  // namespace tug
