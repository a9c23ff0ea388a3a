/* Typed column buffers: a cell appended to a list, or to a bytearray as a machine value (see _typed.c). */
#ifndef KDISSECT_TABLES_TYPED_H
#define KDISSECT_TABLES_TYPED_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* One cell to ``column``: a list gets ``value`` itself; a bytearray gets a TYPED_RECORD-byte record.
 * 0, or -1 with an exception set (a typed column's value that is not an integer or None). */
int typed_append(PyObject *column, PyObject *value);
/* Whether every column is a list or a bytearray. */
int typed_columns(PyObject *columns);

#define TYPED_RECORD 9 /* int64 in machine order, then a byte: 1 valid, 0 null */

/* Appends ``n`` bytes to a bytearray (which over-allocates as it grows): a machine value to a typed
 * column, here and in kafka/_pairing.c's exchanges rows. 0, or -1 with an exception set. */
static inline int
typed_put(PyObject *column, const void *value, Py_ssize_t n)
{
    Py_ssize_t size = PyByteArray_GET_SIZE(column);
    if (PyByteArray_Resize(column, size + n) < 0)
        return -1;
    memcpy(PyByteArray_AS_STRING(column) + size, value, (size_t)n);
    return 0;
}

#endif
