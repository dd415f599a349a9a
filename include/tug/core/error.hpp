#pragma once
/// Typed exceptions of tug. User errors (bad column, bad type, bad file, bad option) are apart from
/// internal errors (a broken invariant inside tug).
#include <cstdint>
#include <stdexcept>
#include <string>

namespace tug {

/// Base of every exception tug throws.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An error caused by the user's query or data (wrong column name, bad type, bad option value).
class user_error : public error {
 public:
  using error::error;
};

/// A column name that does not exist in the input schema, or that is ambiguous.
class column_not_found_error : public user_error {
 public:
  using user_error::user_error;
};

/// An expression applied to a type it does not support.
class type_error : public user_error {
 public:
  using user_error::user_error;
};

/// A computation that is invalid for the given values (e.g. a failing strict cast).
class compute_error : public user_error {
 public:
  using user_error::user_error;
};

/// An invalid argument or option value.
class invalid_argument_error : public user_error {
 public:
  using user_error::user_error;
};

/// A file that cannot be opened, read or decoded (missing, truncated, corrupt); the message names it.
class io_error : public user_error {
 public:
  using user_error::user_error;
};

/// Multi-rank execution failed outside this rank: another rank raised an error (named in the message),
/// a rank died, or an exchange waited longer than `collective_timeout` (naming the ranks it waited for).
class distributed_error : public error {
 public:
  using error::error;
};

/// The memory budget was exhausted after spilling. Names the operator, the request, the limit and
/// the option to change.
class memory_error : public error {
 public:
  using error::error;
};

/// The operating system refused a resource tug needs (a thread); the message names the option
/// involved and the system's error.
class resource_error : public error {
 public:
  using error::error;
};

/// A broken invariant inside tug: a bug, never the user's fault.
class internal_error : public error {
 public:
  using error::error;
};

/// A feature that tug does not implement yet; the message names it.
class not_implemented_error : public error {
 public:
  using error::error;
};

/// The query was cancelled (query_control::cancel, Ctrl-C in Python) before it finished.
class cancelled_error : public error {
 public:
  using error::error;
};

}  // namespace tug

/// Throws `internal_error` naming file and line when `cond` is false.
#define TUG_EXPECTS(cond, msg)                                                                    \
  do {                                                                                            \
    if (!(cond))                                                                                  \
      throw ::tug::internal_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " + \
                                  (msg));                                                         \
  } while (0)
