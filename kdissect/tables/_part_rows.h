/* An exchange's partition rows as machine values (see _part_rows.c): what the walk over frame bytes
 * (_walk_bytes.c) merges into and the native pairing (kafka/_details.c) writes to a piece's columns. */
#ifndef KDISSECT_TABLES_PART_ROWS_H
#define KDISSECT_TABLES_PART_ROWS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define PART_VALUES 9 /* _walk.h's N_VALUES: a row's partition values (detail_walk.PARTITION_VALUES) */

/* One partition row: tables/detail_walk.py's PARTITION_SLOTS, integers as machine values. */
typedef struct {
    PyObject *first;            /* its key's first part: the topic (non-empty), else the topic id, else None */
    PyObject *topic, *topic_id; /* NULL: None (all three strong references) */
    Py_hash_t hash;             /* of (first, partition), for the search */
    long long partition;
    long long value[PART_VALUES];
    unsigned has_value;         /* bit k: value[k] set */
    long long error_code;
    int has_error_code;
    long long records_bytes[2]; /* the request's, the response's */
    int has_records_bytes[2];
} PartRow;

/* The rows of one exchange, in the order they were first met (as the dict the body walk fills). */
typedef struct {
    PartRow *row;
    Py_ssize_t n, cap;
    Py_ssize_t *index; /* open addressing over row numbers + 1 (0: empty), once there are more than a few */
    Py_ssize_t index_size;
} PartRows;

/* The row of (topic or topic id, partition), added when new (topic and topic_id may be NULL): NULL with an
 * exception set on error. */
PartRow *part_rows_row(PartRows *rows, PyObject *topic, PyObject *topic_id, PyObject *partition);
/* One scalar of a struct (its plan flags and value slot) folded into its row as _native.c's walk_merge_value
 * folds it: 1, 0 (a value the row cannot hold as a machine value: the walk declines), -1. */
int part_rows_merge(PartRow *row, long flags, long slot, PyObject *v, int response);
/* The same for a value read as a machine value (the walk's INT members: an int64 holds it). */
void part_rows_merge_int(PartRow *row, long flags, long slot, long long x, int response);
/* Every row, emptied (the allocation kept unless it grew large). */
void part_rows_clear(PartRows *rows);
/* Each row after ``prefix`` (nprefix cells shared by the exchange's rows) into ``columns`` (lists, or
 * bytearrays of typed cells: _typed.h): 0, or -1 (nothing appended when the columns do not fit). */
int part_rows_emit(const PartRows *rows, PyObject *columns, PyObject *const *prefix, Py_ssize_t nprefix);
/* The rows as the body walk's dict, (first, partition) -> PARTITION_SLOTS list, into ``partitions`` (empty):
 * for the differential tests (walk_frame). 0 or -1. */
int part_rows_to_dict(const PartRows *rows, PyObject *partitions);

#endif
