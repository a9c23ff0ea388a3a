/* The codes of a category column, in C: the native part of tables/arrow.py's _codes (a dictionary
 * column's int32 codes into its distinct values, in order of first appearance).
 *
 * codes(values) -> (codes, nulls, distinct): `values` a list, or a tuple of lists (a column's parts, read
 * end to end: _spans.c's parts_of); `codes` the int32 codes (native byte
 * order, 0 where the value is None), `nulls` one byte per value (1: None) or None when there is no
 * None, `distinct` the distinct values in order of first appearance. Values are told apart by a
 * dict, as the Python code's dict.setdefault does (same hashing and equality, any hashable value).
 *
 * A value that is the very object the value before it was (the lanes' rows share their text objects:
 * an api name, a client id, a connection's addresses) takes its code without a lookup: the dict finds a
 * key by identity first, so the code is the one the lookup would give.
 *
 * Rules: nothing here knows a table or a column; a column of more distinct values than int32 codes
 * hold raises OverflowError (the Python path's int32 column would refuse them too); every reference
 * taken is released on every path; a list changed by a key's __eq__ (Python code) is an error, never read
 * past its end.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "_codes.h"
#include "_spans.h"

PyObject *
category_codes(PyObject *module, PyObject *values)
{
    PyObject *const *parts;
    Py_ssize_t nparts, n;
    if (parts_of(&values, &parts, &nparts, &n) < 0) {
        PyErr_SetString(PyExc_TypeError, "codes: values must be a list or a tuple of lists");
        return NULL;
    }
    PyObject *codes = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
    PyObject *nulls = PyBytes_FromStringAndSize(NULL, n);
    PyObject *index = PyDict_New(), *distinct = PyList_New(0);
    Py_ssize_t none = 0, i = 0;
    PyObject *last = NULL; /* the value before, non-None (a strong reference), and its code */
    int32_t last_code = 0;
    if (codes == NULL || nulls == NULL || index == NULL || distinct == NULL)
        goto error;
    int32_t *code = (int32_t *)PyBytes_AS_STRING(codes);
    char *null = PyBytes_AS_STRING(nulls);
    for (Py_ssize_t p = 0; p < nparts; p++) { /* (the tuple holds its lists) */
        PyObject *part = parts[p];
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(part); j++, i++) { /* (sizes read again: __eq__ runs Python) */
            PyObject *v = PyList_GET_ITEM(part, j);
            if (i >= n)
                break;
            if (v == Py_None) {
                code[i] = 0;
                null[i] = 1;
                none++;
                continue;
            }
            null[i] = 0;
            if (v == last) {
                code[i] = last_code;
                continue;
            }
            Py_INCREF(v);
            PyObject *found = PyDict_GetItemWithError(index, v);
            if (found == NULL) {
                Py_ssize_t next = PyList_GET_SIZE(distinct);
                PyObject *number = next > INT32_MAX ? NULL : PyLong_FromSsize_t(next);
                if (next > INT32_MAX)
                    PyErr_SetString(PyExc_OverflowError, "codes: more distinct values than int32 codes");
                int bad = PyErr_Occurred() || number == NULL || PyDict_SetItem(index, v, number) < 0 ||
                          PyList_Append(distinct, v) < 0;
                Py_XDECREF(number);
                if (bad) {
                    Py_DECREF(v);
                    goto error;
                }
                code[i] = (int32_t)next;
            } else {
                code[i] = (int32_t)PyLong_AsLong(found);
            }
            Py_XSETREF(last, v); /* (the reference taken above) */
            last_code = code[i];
        }
    }
    Py_XDECREF(last);
    last = NULL;
    Py_ssize_t now = -1;
    if (i != n || parts_of(&values, &parts, &nparts, &now) < 0 || now != n) {
        PyErr_SetString(PyExc_RuntimeError, "codes: a list changed size");
        goto error;
    }
    Py_DECREF(index);
    if (none == 0)
        Py_SETREF(nulls, Py_NewRef(Py_None));
    return Py_BuildValue("(NNN)", codes, nulls, distinct);
error:
    Py_XDECREF(last);
    Py_XDECREF(codes);
    Py_XDECREF(nulls);
    Py_XDECREF(index);
    Py_XDECREF(distinct);
    return NULL;
}
