/* The command line's heap setting in C: glibc's malloc keeps freed memory instead of handing it
 * straight back to the system.
 *
 * Why: by default glibc trims the top of the heap whenever more than a little of it is free, and a
 * run reading a record-heavy capture frees big blocks all the time (1 MiB read chunks, frames spanning
 * many segments, their decoded values): each trimmed page comes back as a fresh page fault the next
 * time the heap grows. On a 69 MB record-heavy capture that was about a third of the run's page faults,
 * a third of its system time (reports/record-heavy-2026-11-29.md).
 *
 * Rules:
 * - Only the process owner may call it (the command line's main): it changes the whole process's
 *   allocator, which a library must not do to its caller.
 * - glibc only (mallopt's M_TOP_PAD); elsewhere it does nothing and says so. Results never depend on it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

/* pad_heap(pad) -> bool: the heap grows by ``pad`` bytes more than asked and keeps ``pad`` bytes free when trimmed. */
static PyObject *
pad_heap(PyObject *module, PyObject *arg)
{
    long pad = PyLong_AsLong(arg);
    if (pad == -1 && PyErr_Occurred())
        return NULL;
    if (pad < 0 || pad > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "a heap pad is 0 to INT_MAX bytes");
        return NULL;
    }
#ifdef __GLIBC__
    return PyBool_FromLong(mallopt(M_TOP_PAD, (int)pad) == 1);
#else
    Py_RETURN_FALSE;
#endif
}

static PyMethodDef methods[] = {
    {"pad_heap", pad_heap, METH_O, "glibc's M_TOP_PAD for this process; whether it was set."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "kdissect.engines._heap", "The command line's heap setting.", -1, methods,
};

PyMODINIT_FUNC
PyInit__heap(void)
{
    return PyModule_Create(&module_def);
}
