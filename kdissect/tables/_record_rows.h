/* The records and batches rows in C (tables/_record_rows.c), a function of the tables extension. */
#ifndef KDISSECT_TABLES_RECORD_ROWS_H
#define KDISSECT_TABLES_RECORD_ROWS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

PyObject *record_rows(PyObject *module, PyObject *args);
PyObject *lane_records(PyObject *module, PyObject *args);

#endif
