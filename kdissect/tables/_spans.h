/* A text or bytes column's Arrow buffers in C (tables/_spans.c), a function of the tables extension. */
#ifndef KDISSECT_TABLES_SPANS_H
#define KDISSECT_TABLES_SPANS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

PyObject *binary_spans(PyObject *module, PyObject *args);

#endif
