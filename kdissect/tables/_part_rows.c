/* An exchange's partition rows as machine values: the walk over frame bytes (_walk_bytes.c) merges the
 * scalars it reads into them, and the native pairing (kafka/_details.c, through the capsule) writes them
 * to a piece's partitions columns, the integers straight into the typed buffers (_typed.h).
 *
 * The walk over decoded bodies (_native.c) keeps a row as a list of PARTITION_SLOTS in a dict keyed by
 * (topic or topic id, partition); on chatty traffic building that list, its key tuple and a Python int per
 * cell, then reading each int back for its typed cell, cost about as much as the walk itself. These rows
 * hold the same slots, merged by the same rules (walk_merge_value), found by the same key, in the same order.
 *
 * Rules:
 * - Same rows as the dict: a key's equality is the tuple's (the first part compared as Python compares it,
 *   the partition as an integer), the first struct of a key makes its row, a value slot keeps its first
 *   value, the response's error code its last, the records sizes their last.
 * - A value a machine value cannot hold as the dict holds it (not an int, or beyond int64) is declined
 *   (part_rows_merge returns 0): the walk then declines the frame and the bodies are decoded and walked.
 * - Memory: one row per distinct key of the exchange's frames (bounded by their size); the search is linear
 *   over a few rows, then through an open-addressing index rebuilt as the rows double; the index, and the
 *   rows' allocation past KEEP_ROWS, are freed when the rows are cleared.
 */
#include "_part_rows.h"

#include <string.h>

#include "_typed.h"
#include "_walk.h"

#define LINEAR 8         /* rows searched one by one; past this, through the index */
#define KEEP_ROWS 256    /* an allocation larger than this is freed on clear */

_Static_assert(PART_VALUES == N_VALUES, "a row's values are the walk's value slots");

static Py_hash_t
key_hash(PyObject *first, long long partition)
{
    Py_hash_t h = PyObject_Hash(first);
    if (h == -1)
        return -1;
    Py_hash_t mixed = (Py_hash_t)(((Py_uhash_t)h * 1000003u) ^ (Py_uhash_t)partition);
    return mixed == -1 ? -2 : mixed;
}

static int
same_key(const PartRow *row, PyObject *first, long long partition, Py_hash_t hash)
{
    if (row->hash != hash || row->partition != partition)
        return 0;
    return row->first == first ? 1 : PyObject_RichCompareBool(row->first, first, Py_EQ);
}

/* The index rebuilt for ``rows->cap`` rows (its size a power of two, at least twice that). 0 or -1. */
static int
reindex(PartRows *rows)
{
    Py_ssize_t size = 16;
    while (size < 2 * rows->cap)
        size *= 2;
    Py_ssize_t *index = PyMem_Calloc((size_t)size, sizeof *index);
    if (index == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t r = 0; r < rows->n; r++) {
        Py_ssize_t at = (Py_ssize_t)((Py_uhash_t)rows->row[r].hash & (Py_uhash_t)(size - 1));
        while (index[at])
            at = (at + 1) & (size - 1);
        index[at] = r + 1;
    }
    PyMem_Free(rows->index);
    rows->index = index;
    rows->index_size = size;
    return 0;
}

PartRow *
part_rows_row(PartRows *rows, PyObject *topic, PyObject *topic_id, PyObject *partition)
{
    int overflow = 0;
    long long part = PyLong_AsLongLongAndOverflow(partition, &overflow);
    if ((part == -1 && PyErr_Occurred()) || overflow) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_OverflowError, "a partition beyond int64");
        return NULL;
    }
    PyObject *first = (topic != NULL && PyUnicode_GET_LENGTH(topic) > 0) ? topic : (topic_id ? topic_id : Py_None);
    Py_hash_t hash = key_hash(first, part);
    if (hash == -1)
        return NULL;
    Py_ssize_t slot = -1;
    if (rows->n <= LINEAR) {
        for (Py_ssize_t r = 0; r < rows->n; r++) {
            int same = same_key(&rows->row[r], first, part, hash);
            if (same)
                return same < 0 ? NULL : &rows->row[r];
        }
    } else {
        Py_ssize_t mask = rows->index_size - 1;
        for (slot = (Py_ssize_t)((Py_uhash_t)hash & (Py_uhash_t)mask); rows->index[slot]; slot = (slot + 1) & mask) {
            PartRow *row = &rows->row[rows->index[slot] - 1];
            int same = same_key(row, first, part, hash);
            if (same)
                return same < 0 ? NULL : row;
        }
    }
    if (rows->n == rows->cap) {
        Py_ssize_t cap = rows->cap ? 2 * rows->cap : LINEAR;
        PartRow *grown = cap > PY_SSIZE_T_MAX / (Py_ssize_t)sizeof *grown ? NULL
                                                                         : PyMem_Realloc(rows->row, (size_t)cap * sizeof *grown);
        if (grown == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        rows->row = grown;
        rows->cap = cap;
    }
    PartRow *row = &rows->row[rows->n++];
    memset(row, 0, sizeof *row);
    row->first = Py_NewRef(first);
    row->topic = Py_XNewRef(topic);
    row->topic_id = Py_XNewRef(topic_id);
    row->hash = hash;
    row->partition = part;
    if (rows->n > LINEAR) {
        if (rows->index == NULL || 2 * rows->n > rows->index_size) {
            if (reindex(rows) < 0) {
                rows->n--; /* (the row is not kept: its references go) */
                Py_DECREF(row->first);
                Py_XDECREF(row->topic);
                Py_XDECREF(row->topic_id);
                return NULL;
            }
        } else {
            Py_ssize_t mask = rows->index_size - 1, at = (Py_ssize_t)((Py_uhash_t)hash & (Py_uhash_t)mask);
            while (rows->index[at])
                at = (at + 1) & mask;
            rows->index[at] = rows->n;
        }
    }
    return row;
}

/* v as an int64, the way a typed cell holds it: 1, or 0 (not an int, or beyond int64). */
static int
as_int64(PyObject *v, long long *out)
{
    if (!PyLong_CheckExact(v))
        return 0;
    int overflow = 0;
    *out = PyLong_AsLongLongAndOverflow(v, &overflow);
    return !overflow;
}

void
part_rows_merge_int(PartRow *row, long flags, long slot, long long x, int response)
{
    if (slot >= 0 && slot < PART_VALUES && !(row->has_value >> slot & 1u)) {
        row->value[slot] = x;
        row->has_value |= 1u << slot;
    }
    if (response && (flags & M_ERROR_CODE)) {
        row->error_code = x;
        row->has_error_code = 1;
    }
}

int
part_rows_merge(PartRow *row, long flags, long slot, PyObject *v, int response)
{
    long long x = 0;
    int in_slot = slot >= 0 && slot < PART_VALUES && !(row->has_value >> slot & 1u);
    int code = response && (flags & M_ERROR_CODE);
    if (v == Py_None) /* (a null value fills no slot, and is no error code) */
        return !code;
    if (!in_slot && !code)
        return 1;
    if (!as_int64(v, &x))
        return 0;
    part_rows_merge_int(row, flags, slot, x, response);
    return 1;
}

void
part_rows_clear(PartRows *rows)
{
    for (Py_ssize_t r = 0; r < rows->n; r++) {
        Py_DECREF(rows->row[r].first);
        Py_XDECREF(rows->row[r].topic);
        Py_XDECREF(rows->row[r].topic_id);
    }
    rows->n = 0;
    if (rows->cap > KEEP_ROWS) {
        PyMem_Free(rows->row);
        rows->row = NULL;
        rows->cap = 0;
    }
    PyMem_Free(rows->index);
    rows->index = NULL;
    rows->index_size = 0;
}

/* The row's error name: error_name(code), None without a code (a new reference). */
static PyObject *
error_name_of(const PartRow *row)
{
    return row->has_error_code ? walk_code_name(row->error_code) : Py_NewRef(Py_None);
}

/* An object cell (None for NULL) to a list or a typed buffer. 0 or -1. */
static int
put_object(PyObject *column, PyObject *v)
{
    return typed_append(column, v ? v : Py_None);
}

int
part_rows_emit(const PartRows *rows, PyObject *columns, PyObject *const *prefix, Py_ssize_t nprefix)
{
    if (!PyTuple_Check(columns) || PyTuple_GET_SIZE(columns) != nprefix + P_SLOTS || !typed_columns(columns)) {
        PyErr_SetString(PyExc_ValueError, "the partitions columns do not fit a partition row and its prefix");
        return -1;
    }
    PyObject **col = &PyTuple_GET_ITEM(columns, 0), **s = col + nprefix;
    for (Py_ssize_t r = 0; r < rows->n; r++) {
        const PartRow *row = &rows->row[r];
        int rc = 0;
        for (Py_ssize_t c = 0; rc == 0 && c < nprefix; c++)
            rc = typed_append(col[c], prefix[c]);
        if (rc == 0 && (rc = put_object(s[P_TOPIC], row->topic)) == 0 && (rc = put_object(s[P_TOPIC_ID], row->topic_id)) == 0)
            rc = typed_put_int(s[P_PARTITION], row->partition, 1);
        for (int k = 0; rc == 0 && k < N_VALUES; k++)
            rc = typed_put_int(s[P_VALUES + k], row->value[k], row->has_value >> k & 1u);
        if (rc == 0)
            rc = typed_put_int(s[P_ERROR_CODE], row->error_code, row->has_error_code);
        if (rc == 0) {
            PyObject *name = error_name_of(row);
            rc = name == NULL ? -1 : put_object(s[P_ERROR_NAME], name);
            Py_XDECREF(name);
        }
        for (int k = 0; rc == 0 && k < 2; k++)
            rc = typed_put_int(s[P_RECORDS_BYTES + k], row->records_bytes[k], row->has_records_bytes[k]);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* An int, or None when not valid (a new reference). */
static PyObject *
int_or_none(int valid, long long v)
{
    return valid ? PyLong_FromLongLong(v) : Py_NewRef(Py_None);
}

int
part_rows_to_dict(const PartRows *rows, PyObject *partitions)
{
    for (Py_ssize_t r = 0; r < rows->n; r++) {
        const PartRow *row = &rows->row[r];
        PyObject *list = PyList_New(P_SLOTS), *key = NULL;
        if (list == NULL)
            return -1;
        PyList_SET_ITEM(list, P_TOPIC, Py_NewRef(row->topic ? row->topic : Py_None));
        PyList_SET_ITEM(list, P_TOPIC_ID, Py_NewRef(row->topic_id ? row->topic_id : Py_None));
        PyList_SET_ITEM(list, P_PARTITION, PyLong_FromLongLong(row->partition));
        for (int k = 0; k < N_VALUES; k++)
            PyList_SET_ITEM(list, P_VALUES + k, int_or_none(row->has_value >> k & 1u, row->value[k]));
        PyList_SET_ITEM(list, P_ERROR_CODE, int_or_none(row->has_error_code, row->error_code));
        PyList_SET_ITEM(list, P_ERROR_NAME, error_name_of(row));
        for (int k = 0; k < 2; k++)
            PyList_SET_ITEM(list, P_RECORDS_BYTES + k, int_or_none(row->has_records_bytes[k], row->records_bytes[k]));
        int rc = 0;
        for (Py_ssize_t k = 0; k < P_SLOTS; k++)
            if (PyList_GET_ITEM(list, k) == NULL)
                rc = -1;
        if (rc == 0 && (key = PyTuple_Pack(2, row->first, PyList_GET_ITEM(list, P_PARTITION))) == NULL)
            rc = -1;
        if (rc == 0)
            rc = PyDict_SetItem(partitions, key, list);
        Py_XDECREF(key);
        Py_DECREF(list);
        if (rc < 0)
            return -1;
    }
    return 0;
}
