/* A text or bytes column's Arrow buffers in C: the native part of tables/arrow.py's _binary (the cells'
 * bytes end to end, where each ends, which are null), one pass over the list, no Python step per cell.
 *
 * spans(values, text) -> (data, ends, nulls) or None: `values` a list, or a tuple of lists (a column's
 * parts, read end to end: parts_of); `data` the present cells' bytes
 * end to end (text as UTF-8, errors replaced, as _utf8_joined encodes it); `ends` n + 1 int64 (native
 * byte order) after a leading 0, a null cell's end the one before it; `nulls` one byte per value (1:
 * None), or None when there is no None. None when a present cell is not exactly what the column holds
 * (a str for text, a bytes otherwise) or `values` is neither: the Python path then takes the column
 * (it shows other objects as str() does, joins any bytes-like object).
 *
 * Rules: nothing here knows a table or a column; no Python code runs during the pass (exact str and
 * bytes only, the built-in UTF-8 codec), so the list cannot change under it; every reference taken is
 * released on every path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_spans.h"

int
parts_of(PyObject *const *values, PyObject *const **parts, Py_ssize_t *nparts, Py_ssize_t *n)
{
    *parts = values; /* (a list alone: the caller's own variable, one part) */
    *nparts = 1;
    if (PyTuple_CheckExact(*values)) {
        *parts = &PyTuple_GET_ITEM(*values, 0);
        *nparts = PyTuple_GET_SIZE(*values);
    }
    *n = 0;
    for (Py_ssize_t p = 0; p < *nparts; p++) {
        if (!PyList_CheckExact((*parts)[p]))
            return -1;
        *n += PyList_GET_SIZE((*parts)[p]);
    }
    return 0;
}

/* The bytes of a present cell: pointed into the object, or (text that is not ASCII) into its UTF-8
 * encoding, a new bytes object left in *owned. 1: found; 0: not the column's type; -1: error. */
static int
cell_bytes(PyObject *v, int text, const char **at, Py_ssize_t *size, PyObject **owned)
{
    if (!text) {
        if (!PyBytes_CheckExact(v))
            return 0;
        *at = PyBytes_AS_STRING(v);
        *size = PyBytes_GET_SIZE(v);
        return 1;
    }
    if (!PyUnicode_CheckExact(v))
        return 0;
    if (PyUnicode_IS_ASCII(v)) {
        *at = (const char *)PyUnicode_DATA(v);
        *size = PyUnicode_GET_LENGTH(v);
        return 1;
    }
    *owned = PyUnicode_AsEncodedString(v, "utf-8", "replace");
    if (*owned == NULL)
        return -1;
    *at = PyBytes_AS_STRING(*owned);
    *size = PyBytes_GET_SIZE(*owned);
    return 1;
}

PyObject *
binary_spans(PyObject *module, PyObject *args)
{
    PyObject *values;
    int text;
    if (!PyArg_ParseTuple(args, "Op:spans", &values, &text))
        return NULL;
    PyObject *const *parts;
    Py_ssize_t nparts, n, none = 0, total = 0;
    if (parts_of(&values, &parts, &nparts, &n) < 0)
        Py_RETURN_NONE;
    /* the cells, borrowed: no Python code runs during the passes, so no list changes under them */
    PyObject **cells = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof *cells);
    if (cells == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t p = 0, i = 0; p < nparts; p++) {
        Py_ssize_t size = PyList_GET_SIZE(parts[p]);
        if (size > 0) /* (an empty list may have no item array: memcpy from NULL is undefined) */
            memcpy(cells + i, &PyList_GET_ITEM(parts[p], 0), (size_t)size * sizeof *cells);
        i += size;
    }
    PyObject *ends = PyBytes_FromStringAndSize(NULL, (n + 1) * (Py_ssize_t)sizeof(int64_t));
    PyObject *nulls = PyBytes_FromStringAndSize(NULL, n);
    PyObject **owned = NULL; /* per cell, its UTF-8 encoding when it had to be made (text not ASCII) */
    PyObject *data = NULL, *result = NULL;
    if (ends == NULL || nulls == NULL)
        goto done;
    int64_t *end = (int64_t *)PyBytes_AS_STRING(ends);
    char *null = PyBytes_AS_STRING(nulls);
    end[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) { /* the sizes, and the encodings text needs */
        PyObject *v = cells[i], *made = NULL;
        const char *at;
        Py_ssize_t size = 0;
        null[i] = v == Py_None;
        if (v == Py_None) {
            none++;
        } else {
            int found = cell_bytes(v, text, &at, &size, &made);
            if (found <= 0) {
                if (found == 0)
                    result = Py_NewRef(Py_None);
                goto done;
            }
            if (made != NULL) {
                if (owned == NULL && (owned = PyMem_Calloc((size_t)n, sizeof *owned)) == NULL) {
                    Py_DECREF(made);
                    PyErr_NoMemory();
                    goto done;
                }
                owned[i] = made;
            }
        }
        total += size;
        end[i + 1] = total;
    }
    data = PyBytes_FromStringAndSize(NULL, total);
    if (data == NULL)
        goto done;
    char *out = PyBytes_AS_STRING(data);
    for (Py_ssize_t i = 0; i < n; i++) { /* the bytes */
        PyObject *v = owned != NULL && owned[i] != NULL ? owned[i] : cells[i];
        Py_ssize_t size = (Py_ssize_t)(end[i + 1] - end[i]);
        if (size > 0)
            memcpy(out + end[i], PyBytes_CheckExact(v) ? PyBytes_AS_STRING(v) : (const char *)PyUnicode_DATA(v),
                   (size_t)size);
    }
    if (none == 0)
        Py_SETREF(nulls, Py_NewRef(Py_None));
    result = PyTuple_Pack(3, data, ends, nulls);
done:
    if (owned != NULL) {
        for (Py_ssize_t i = 0; i < n; i++)
            Py_XDECREF(owned[i]);
        PyMem_Free(owned);
    }
    PyMem_Free(cells);
    Py_XDECREF(data);
    Py_XDECREF(ends);
    Py_XDECREF(nulls);
    return result;
}
