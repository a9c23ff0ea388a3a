/* A category column's codes in C (tables/_codes.c), a function of the tables extension. */
#ifndef KDISSECT_TABLES_CODES_H
#define KDISSECT_TABLES_CODES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

PyObject *category_codes(PyObject *module, PyObject *values);

#endif
