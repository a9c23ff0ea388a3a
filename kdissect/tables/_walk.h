/* What the detail walk over decoded bodies (_native.c) shares with the walk over frame bytes
 * (_walk_bytes.c) and the partition rows (_part_rows.c), inside this extension: the plan's member flags, a
 * partition row's slots, and the steps both take the same way. */
#ifndef KDISSECT_TABLES_WALK_H
#define KDISSECT_TABLES_WALK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_part_rows.h"

/* Member flags (tables/detail_walk.py's FLAGS, same order). */
enum {
    M_STRUCT = 1, M_ARRAY = 2, M_TOPIC_NAME = 4, M_GROUP_ID = 8, M_TOPIC_ID = 16,
    M_PARTITION = 32, M_ERROR = 64, M_RECORDS = 128, M_ERROR_MESSAGE = 256,
    M_BASE_OFFSET = 512, M_ERROR_CODE = 1024, M_HOST = 2048, M_PORT = 4096,
};

/* A partition row list's slots (tables/detail_walk.py's PARTITION_SLOTS). */
enum {
    P_TOPIC, P_TOPIC_ID, P_PARTITION, P_VALUES, /* then N_VALUES partition values */
};
#define N_VALUES 9
#define P_ERROR_CODE (P_VALUES + N_VALUES)
#define P_ERROR_NAME (P_ERROR_CODE + 1)
#define P_RECORDS_BYTES (P_ERROR_NAME + 1) /* request's, then the response's */
#define P_SLOTS (P_RECORDS_BYTES + 2)
#define WALK_MAX_DEPTH 64

extern PyObject *walk_aborted_key; /* "aborted_transactions" */

/* Whether v is a uuid.UUID. */
int walk_is_uuid(PyObject *v);
/* error_name(code), a new reference (cached per code). */
PyObject *walk_error_name(PyObject *code);
/* The same from a machine value, the last code's name kept (rows of a capture share one code, 0, nearly always). */
PyObject *walk_code_name(long long code);
/* topic id -> topic into ``topics``, first name kept, the nil id skipped: 0 or -1. */
int walk_learn_topic(PyObject *topics, PyObject *topic, PyObject *topic_id);
/* The walk over a frame's bytes (_walk_bytes.c; see _native.h). */
int walk_bytes(PyObject *plan, PyObject *programs, const unsigned char *b, Py_ssize_t L, int api_key,
               int api_version, int response, PartRows *rows, PyObject *records, PyObject *learned,
               PyObject *base_offsets, int brokers, PyObject *want, PyObject **got);
/* walk_frame(...): walk_bytes for Python (the module's method). */
PyObject *walk_frame(PyObject *module, PyObject *args);

#endif
