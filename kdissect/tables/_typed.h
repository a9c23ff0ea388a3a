/* Typed column buffers: a cell appended to a list, or to a bytearray as a machine value (see _typed.c). */
#ifndef KDISSECT_TABLES_TYPED_H
#define KDISSECT_TABLES_TYPED_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* One cell to ``column``: a list gets ``value`` itself; a bytearray gets a TYPED_RECORD-byte record.
 * 0, or -1 with an exception set (a typed column's value that is not an integer or None). */
int typed_append(PyObject *column, PyObject *value);
/* Whether every column is a list or a bytearray. */
int typed_columns(PyObject *columns);
/* bools(values) -> bytes | None: a bool column's list as a byte per value (see _typed.c). */
PyObject *typed_bools(PyObject *module, PyObject *values);

#define TYPED_RECORD 9 /* int64 in machine order, then a byte: 1 valid, 0 null */

/* Appends ``n`` bytes to a bytearray: a machine value to a typed column, here and in kafka/_pairing.c's
 * exchanges rows. Within the room already allocated it writes in place (what PyByteArray_Resize does
 * there, without its call); past it the buffer grows by half again as much as needed, not by the eighth
 * PyByteArray_Resize adds (a piece's column was otherwise copied about eight times over as it grew; the
 * decoder's columns grow the same way, decoders/_native.c put). An exported bytearray (a view held) goes
 * through PyByteArray_Resize, which refuses it. 0, or -1 with an exception set. */
static inline int
typed_put(PyObject *column, const void *value, Py_ssize_t n)
{
    PyByteArrayObject *a = (PyByteArrayObject *)column;
    Py_ssize_t size = Py_SIZE(a), need = size + n;
    if (a->ob_exports > 0 || a->ob_start != a->ob_bytes || need + 1 > a->ob_alloc) {
        if (need > PY_SSIZE_T_MAX / 3) {
            PyErr_NoMemory();
            return -1;
        }
        if (PyByteArray_Resize(column, a->ob_exports > 0 ? need : need + need / 2 + 16) < 0)
            return -1;
    }
    /* (ob_start, not PyByteArray_AS_STRING: that is a shared "" while the size is 0, room or not) */
    memcpy(a->ob_start + size, value, (size_t)n);
    Py_SET_SIZE(a, need); /* (within the room: what PyByteArray_Resize's quick exit does) */
    a->ob_start[need] = '\0';
    return 0;
}

/* A typed cell's record (a bytearray column's): the value, then 1; or zeros then 0 when not ``valid``.
 * Inline, for the rows made in C a cell at a time (tables/_record_rows.c: some forty cells a batch).
 * 0, or -1 with an exception set. */
static inline int
typed_put_record(PyObject *column, int64_t v, int valid)
{
    unsigned char cell[TYPED_RECORD];
    int64_t value = valid ? v : 0;
    memcpy(cell, &value, sizeof value);
    cell[sizeof value] = valid != 0;
    return typed_put(column, cell, TYPED_RECORD);
}

/* An integer cell from C: a typed column gets its record, a list an int (None when not ``valid``). 0, or -1.
 * (Inline: a partition row writes thirteen.) */
static inline int
typed_put_int(PyObject *column, int64_t v, int valid)
{
    if (PyByteArray_CheckExact(column))
        return typed_put_record(column, v, valid);
    PyObject *value = valid ? PyLong_FromLongLong(v) : Py_NewRef(Py_None);
    if (value == NULL)
        return -1;
    int rc = PyList_Append(column, value);
    Py_DECREF(value);
    return rc;
}

#endif
