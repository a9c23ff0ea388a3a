/* A text or bytes column's Arrow buffers in C (tables/_spans.c), a function of the tables extension. */
#ifndef KDISSECT_TABLES_SPANS_H
#define KDISSECT_TABLES_SPANS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

PyObject *binary_spans(PyObject *module, PyObject *args);

/* A column's lists: `*values` a list (its cells), or a tuple of lists (a column held in parts,
 * tables/columns.py's Parts: their cells end to end, no list joined). Sets *parts to the lists (borrowed:
 * the tuple's items, or `values` itself for a list alone), *nparts to their count and *n to their cells'
 * count; -1 when `*values` is neither. */
int parts_of(PyObject *const *values, PyObject *const **parts, Py_ssize_t *nparts, Py_ssize_t *n);

#endif
