/* Typed column buffers: the cells of a table's integer columns as machine values, no Python object per
 * cell. The twin of tables/rows.py's ``typed`` (which reads these records back with numpy) and of
 * tables/numbers.py's ``number_arrays`` (the reference: a list of Python values to an int64 array).
 *
 * A column the caller made a bytearray (the native pairing's pieces: detail_walk.LaneParts, from the
 * integer kinds of columns.TABLES) gets, per cell, TYPED_RECORD bytes: the int64 value in machine order,
 * then 1, or for a null eight zero bytes then 0. A list gets the value itself.
 *
 * Rules:
 * - Null is None, and an integer int64 cannot hold (number_arrays nulls it too: null_out_of_range);
 *   narrower kinds are checked where the column becomes an array (numbers.narrowed), as for lists.
 * - An int subclass (bool) is its integer value, as numpy reads it. Anything else is a TypeError, the
 *   cell not written (number_arrays raises on it too): a schema's integer field never is one.
 * - A cell costs one bytearray growth (amortised: the bytearray over-allocates).
 *
 * bools(values) is the other way: a list of a bool column's cells to a byte each, numbers.py's
 * _without_nulls step (bytes(values)) without its index call per value.
 */
#include "_typed.h"

#include <stdint.h>
#include <string.h>

int
typed_append(PyObject *column, PyObject *value)
{
    if (!PyByteArray_CheckExact(column))
        return PyList_Append(column, value);
    if (value == Py_None)
        return typed_put_record(column, 0, 0);
    if (!PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "a typed column's value is %.100s, not an integer", Py_TYPE(value)->tp_name);
        return -1;
    }
    int overflow = 0;
    int64_t v = (int64_t)PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    return typed_put_record(column, v, !overflow);
}

int
typed_columns(PyObject *columns)
{
    for (Py_ssize_t c = 0; c < PyTuple_GET_SIZE(columns); c++) {
        PyObject *column = PyTuple_GET_ITEM(columns, c);
        if (!PyList_Check(column) && !PyByteArray_CheckExact(column))
            return 0;
    }
    return 1;
}

/* bools(values) -> bytes | None: a list of True and False as a byte each (1, 0), as bytes(values) makes
 * it for a bool column (numbers.py's _without_nulls: a value per batch in the records and batches
 * tables' bool columns); None when the values are not a list, or one is anything else (None, an int:
 * the reference's own steps take those). No Python code runs in the loop: the list cannot change. */
PyObject *
typed_bools(PyObject *module, PyObject *values)
{
    if (!PyList_CheckExact(values))
        Py_RETURN_NONE;
    Py_ssize_t n = PyList_GET_SIZE(values);
    PyObject *out = PyBytes_FromStringAndSize(NULL, n);
    if (out == NULL)
        return NULL;
    char *bytes = PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(values, i);
        if (v != Py_True && v != Py_False) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
        bytes[i] = v == Py_True;
    }
    return out;
}
