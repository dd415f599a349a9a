#pragma once
/// The Arrow C Data and C Stream interfaces (https://arrow.apache.org/docs/format/CDataInterface.html),
/// implemented from the specification: tug frames out as struct arrays (one per partition) and in from
/// any producer. Fixed-width values, validity bitmaps, large-string offsets and chars cross without a
/// copy in both directions; booleans are packed to bits on the way out and unpacked on the way in (tug
/// keeps one byte per boolean).
#include <cstdint>
#include <memory>

#include "tug/api/data_frame.hpp"

extern "C" {
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4
struct ArrowSchema {
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;
  void (*release)(struct ArrowSchema*);
  void* private_data;
};
struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  void (*release)(struct ArrowArray*);
  void* private_data;
};
#endif
#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE
struct ArrowArrayStream {
  int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);
  int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);
  const char* (*get_last_error)(struct ArrowArrayStream*);
  void (*release)(struct ArrowArrayStream*);
  void* private_data;
};
#endif
}

namespace tug::arrow_c {

/// Fills `out` with the schema of `s` as a struct ("+s") whose children are the columns.
/// @throws not_implemented_error for a type Arrow cannot describe (none today).
void export_schema(const schema& s, ArrowSchema* out);
/// Fills `out` with `t` as a struct array of schema `s`. The array shares the columns' buffers (it keeps
/// them alive until released); booleans get a new bit-packed values buffer.
/// @throws invalid_argument_error for a column in device memory.
void export_table(const schema& s, const table& t, ArrowArray* out);
/// Fills `out` with a stream of `df`'s partitions (one struct array each; no array for an empty frame).
void export_stream(const data_frame& df, ArrowArrayStream* out);

/// Reads a struct array of schema `sch` into a table, taking ownership of `array` (moved out: its
/// release is set to null here and called when the last buffer that shares its memory goes away).
/// `sch` is only read. @throws not_implemented_error naming the column and the Arrow format tug cannot
/// represent; invalid_argument_error when `sch` is no struct.
table import_table(const ArrowSchema* sch, ArrowArray* array);
/// The tug schema of an Arrow struct schema. @throws as import_table.
schema import_schema(const ArrowSchema* sch);
/// Reads a whole stream into a frame (one partition per non-empty batch), taking ownership of `stream`
/// (moved out). @throws io_error with the producer's message when the stream fails.
data_frame import_stream(ArrowArrayStream* stream);
/// A frame of one struct array (as `__arrow_c_array__` hands out), taking ownership of `array`.
data_frame import_array(const ArrowSchema* sch, ArrowArray* array);

}  // namespace tug::arrow_c
