// tug._tug's Apache Cassandra functions (tug.scan_cassandra, LazyFrame.sink_cassandra, tug.cassandra_execute;
// docs/python.md): the options arrive as dicts whose keys are the C++ fields' names (include/tug/api/cassandra.hpp,
// include/tug/io/cassandra/client.hpp), checked here so that a misspelt option is an error, never ignored.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <functional>
#include <string>
#include <vector>

#include "tug/api/cassandra.hpp"
#include "tug/core/error.hpp"
#include "tug/io/cassandra/client.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace tug {

/// module.cpp: runs `work` (a query) on a thread of its own while the caller watches for Ctrl-C.
void run_controlled_call(const std::function<void()>& work, nb::handle progress, double interval);

namespace {

namespace cq = io::cassandra;

/// Sets the fields of `target` from `options` (name -> value), each name through `set`, which returns false
/// for names it does not know; those are an error listing `known`.
void apply_options(const char* what, const nb::dict& options, const std::string& known,
                   const std::function<bool(const std::string&, nb::handle)>& set) {
  for (auto [k, v] : options) {
    const std::string name = nb::cast<std::string>(k);
    bool ok = false;
    try {
      ok = set(name, v);
    } catch (const nb::cast_error&) {
      throw invalid_argument_error(std::string(what) + ": option " + name + " got " +
                                   nb::cast<std::string>(nb::str(v.type().attr("__name__"))) + " " +
                                   nb::cast<std::string>(nb::repr(v)));
    }
    if (!ok) throw invalid_argument_error(std::string(what) + ": unknown option " + name + " (options: " + known + ")");
  }
}

const char* k_client_names =
    "contact_points, port, username, password, connect_timeout_ms, request_timeout_ms, connections_per_host, "
    "max_requests_per_connection, max_retries, retry_delay_ms, discover_nodes, token_aware, reconnect_delay_ms, "
    "schema_agreement_wait_ms, tls";

/// A client_options field from a Python value (false: no such field). `tls` takes True/False or a dict of
/// tls_options' fields.
bool set_client(cq::client_options& o, const std::string& k, nb::handle v, const char* what) {
  if (k == "contact_points") {
    if (nb::isinstance<nb::str>(v)) o.contact_points = {nb::cast<std::string>(v)};
    else o.contact_points = nb::cast<std::vector<std::string>>(v);
  } else if (k == "port") o.port = nb::cast<int>(v);
  else if (k == "username") o.username = nb::cast<std::string>(v);
  else if (k == "password") o.password = nb::cast<std::string>(v);
  else if (k == "connect_timeout_ms") o.connect_timeout_ms = nb::cast<int>(v);
  else if (k == "request_timeout_ms") o.request_timeout_ms = nb::cast<int>(v);
  else if (k == "connections_per_host") o.connections_per_host = nb::cast<int>(v);
  else if (k == "max_requests_per_connection") o.max_requests_per_connection = nb::cast<int>(v);
  else if (k == "max_retries") o.max_retries = nb::cast<int>(v);
  else if (k == "retry_delay_ms") o.retry_delay_ms = nb::cast<int>(v);
  else if (k == "discover_nodes") o.discover_nodes = nb::cast<bool>(v);
  else if (k == "token_aware") o.token_aware = nb::cast<bool>(v);
  else if (k == "reconnect_delay_ms") o.reconnect_delay_ms = nb::cast<int>(v);
  else if (k == "schema_agreement_wait_ms") o.schema_agreement_wait_ms = nb::cast<int>(v);
  else if (k == "tls") {
    if (nb::isinstance<nb::bool_>(v)) {
      o.tls.enabled = nb::cast<bool>(v);
    } else {
      o.tls.enabled = true;
      apply_options(what, nb::cast<nb::dict>(v), "ca_file, cert_file, key_file, verify_certificate, verify_host",
                    [&](const std::string& t, nb::handle x) {
                      if (t == "ca_file") o.tls.ca_file = nb::cast<std::string>(x);
                      else if (t == "cert_file") o.tls.cert_file = nb::cast<std::string>(x);
                      else if (t == "key_file") o.tls.key_file = nb::cast<std::string>(x);
                      else if (t == "verify_certificate") o.tls.verify_certificate = nb::cast<bool>(x);
                      else if (t == "verify_host") o.tls.verify_host = nb::cast<bool>(x);
                      else return false;
                      return true;
                    });
    }
  } else return false;
  return true;
}

cq::client_options client_of(const nb::dict& d, const char* what) {
  cq::client_options o;
  apply_options(what, d, k_client_names, [&](const std::string& k, nb::handle v) { return set_client(o, k, v, what); });
  return o;
}

nb::dict metrics_dict(const cq::metrics_snapshot& m) {
  nb::dict d;
  d["requests"] = m.requests;
  d["retries"] = m.retries;
  d["failures"] = m.failures;
  d["bytes_sent"] = m.bytes_sent;
  d["bytes_received"] = m.bytes_received;
  d["rows_received"] = m.rows_received;
  d["pages"] = m.pages;
  d["mean_latency_ms"] = m.mean_latency_ms();
  d["max_latency_ms"] = static_cast<double>(m.latency_us_max) / 1000.0;
  d["max_in_flight"] = m.max_in_flight;
  return d;
}

}  // namespace

void bind_cassandra(nb::module_& m) {
  m.def(
      "scan_cassandra",
      [](const std::string& keyspace, const std::string& table, const nb::dict& options) {
        io::cassandra_scan_options o;
        const char* what = "scan_cassandra";
        apply_options(what, options,
                      std::string(k_client_names) +
                          ", consistency, fetch_size, split_size_mb, splits_when_unknown, splits, reads_in_flight, "
                          "skip_unsupported_columns, decimal_scale",
                      [&](const std::string& k, nb::handle v) {
                        if (k == "consistency") o.consistency = nb::cast<std::string>(v);
                        else if (k == "fetch_size") o.fetch_size = nb::cast<int>(v);
                        else if (k == "split_size_mb") o.split_size_mb = nb::cast<int64_t>(v);
                        else if (k == "splits_when_unknown") o.splits_when_unknown = nb::cast<int>(v);
                        else if (k == "splits") o.splits = nb::cast<int>(v);
                        else if (k == "reads_in_flight") o.reads_in_flight = nb::cast<int>(v);
                        else if (k == "skip_unsupported_columns") o.skip_unsupported_columns = nb::cast<bool>(v);
                        else if (k == "decimal_scale") o.types.decimal_scale = nb::cast<int>(v);
                        else return set_client(o.client, k, v, what);
                        return true;
                      });
        nb::gil_scoped_release nogil;  // connects and reads the table's schema
        return scan_cassandra(keyspace, table, o);
      },
      "keyspace"_a, "table"_a, "options"_a);

  m.def(
      "sink_cassandra",
      [](const lazy_frame& q, const std::string& keyspace, const std::string& table, const nb::dict& options,
         const engine_options& engine, nb::handle progress, double interval) {
        cassandra_write_options o;
        const char* what = "sink_cassandra";
        apply_options(what, options,
                      std::string(k_client_names) +
                          ", consistency, max_in_flight, batch_max_rows, batch_max_bytes, ttl_seconds, write_time_us, "
                          "if_not_exists, max_rows_per_second",
                      [&](const std::string& k, nb::handle v) {
                        if (k == "consistency") o.consistency = nb::cast<std::string>(v);
                        else if (k == "max_in_flight") o.max_in_flight = nb::cast<int>(v);
                        else if (k == "batch_max_rows") o.batch_max_rows = nb::cast<int>(v);
                        else if (k == "batch_max_bytes") o.batch_max_bytes = nb::cast<int>(v);
                        else if (k == "ttl_seconds") o.ttl_seconds = nb::cast<int>(v);
                        else if (k == "write_time_us") o.write_time_us = nb::cast<int64_t>(v);
                        else if (k == "if_not_exists") o.if_not_exists = nb::cast<bool>(v);
                        else if (k == "max_rows_per_second") o.max_rows_per_second = nb::cast<double>(v);
                        else return set_client(o.client, k, v, what);
                        return true;
                      });
        cassandra_write_result r;
        run_controlled_call([&] { r = sink_cassandra(q, keyspace, table, o, engine); }, progress, interval);
        nb::dict d;
        d["rows_written"] = r.rows_written;
        d["rows_not_applied"] = r.rows_not_applied;
        d["requests"] = r.requests;
        d["batches"] = r.batches;
        d["retries"] = r.retries;
        d["max_in_flight"] = r.max_in_flight_seen;
        d["metrics"] = metrics_dict(r.metrics);
        d["peak_memory"] = r.peak_memory;
        d["statistics"] = r.statistics;
        return d;
      },
      "query"_a, "keyspace"_a, "table"_a, "options"_a, "engine"_a, "progress"_a.none() = nb::none(),
      "interval"_a = 0.05);

  m.def(
      "cassandra_execute",
      [](const std::string& cql, const nb::dict& options) {
        cq::client_options o = client_of(options, "cassandra_execute");
        nb::gil_scoped_release nogil;
        cq::session s(o);
        s.query(cql);
      },
      "cql"_a, "options"_a);
}

}  // namespace tug
