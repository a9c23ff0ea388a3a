/* A text or bytes column's Arrow buffers in C (tables/_spans.c), a function of the tables extension. */
#ifndef KDISSECT_TABLES_SPANS_H
#define KDISSECT_TABLES_SPANS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

PyObject *binary_spans(PyObject *module, PyObject *args);

/* A column's cells as one C array of strong references: `values` a list (its cells), or a tuple of
 * lists (a column held in parts, tables/columns.py's Parts: their cells end to end, no list joined).
 * NULL with *n = -1 when `values` is neither (no error set), NULL with an error set on failure; else
 * release with cells_release. Holding the references, a pass over them is safe whatever Python code
 * runs during it (a key's __eq__ changing a list). */
PyObject **cells_of(PyObject *values, Py_ssize_t *n);
void cells_release(PyObject **cells, Py_ssize_t n);

#endif
