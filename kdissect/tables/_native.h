/* The detail walk's C interface (tables/_native.c), for other extensions: import it with
 *     KdDetailApi *api = PyCapsule_Import(KD_DETAIL_CAPSULE, 0);
 * walk_body walks one decoded body with a plan from tables/detail_walk.py's plan_of (NULL for an
 * output not wanted; see _native.c's header for each output) and returns 0, or -1 with an
 * exception set; append_rows is the module's append_rows(columns, prefix, rows) (args a tuple);
 * append_cell appends one cell to a column list or typed buffer (_typed.h's typed_append); walk_bytes
 * walks a frame's bytes with the same plan instead of its decoded body, or declines (_walk_bytes.c), its
 * partition rows merged into a PartRows (machine values, _part_rows.h) that rows_emit writes to a piece's
 * columns and rows_clear empties.
 * The module's setup() must have run (importing kdissect.tables.detail_walk does it).
 */
#ifndef KDISSECT_TABLES_NATIVE_H
#define KDISSECT_TABLES_NATIVE_H

#include <Python.h>

#include "_part_rows.h"

#define KD_DETAIL_CAPSULE "kdissect.tables._native._C_API"

typedef struct {
    int (*walk_body)(PyObject *plan, PyObject *body, int response, PyObject *partitions, PyObject *errors,
                     PyObject *records, PyObject *topics, PyObject *base_offsets, PyObject *brokers);
    PyObject *(*append_rows)(PyObject *self, PyObject *args);
    int (*append_cell)(PyObject *column, PyObject *value);
    /* 1 walked, 0 declined (the caller decodes and calls walk_body), -1 error; see _walk_bytes.c */
    int (*walk_bytes)(PyObject *plan, PyObject *programs, const unsigned char *b, Py_ssize_t L, int api_key,
                      int api_version, int response, PartRows *rows, PyObject *records, PyObject *learned,
                      PyObject *base_offsets, int brokers, PyObject *want, PyObject **got);
    int (*rows_emit)(const PartRows *rows, PyObject *columns, PyObject *const *prefix, Py_ssize_t nprefix);
    void (*rows_clear)(PartRows *rows);
} KdDetailApi;

#endif
