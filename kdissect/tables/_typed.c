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
