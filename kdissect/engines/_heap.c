/* The command line's heap setting in C: glibc's malloc keeps freed memory instead of handing it
 * straight back to the system.
 *
 * Why: by default glibc trims the top of the heap whenever more than a little of it is free, and a
 * run reading a record-heavy capture frees big blocks all the time (1 MiB read chunks, frames spanning
 * many segments, the records table's growing buffers): each trimmed page comes back as a fresh page fault
 * the next time the heap grows, and each block past the mmap threshold is a fresh mapping. On a 69 MB
 * record-heavy capture that was a quarter of an exchanges run's page faults and of an every-table run's
 * (reports/record-heavy-2026-11-29.md).
 *
 * Rules:
 * - Only the process owner may call it (the command line's main): it changes the whole process's
 *   allocator, which a library must not do to its caller.
 * - glibc only (mallopt's M_TOP_PAD and M_MMAP_THRESHOLD); elsewhere it does nothing and says so. Results never
 *   depend on it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

/* keep_heap(pad, mmap_from) -> bool: the heap grows by ``pad`` bytes beyond a request and keeps ``pad`` bytes free
 * when it trims; blocks below ``mmap_from`` bytes come from the heap (M_TOP_PAD, M_MMAP_THRESHOLD). Whether both
 * were set. (Setting either fixes glibc's otherwise sliding mmap threshold, hence both.) */
static PyObject *
keep_heap(PyObject *module, PyObject *args)
{
    long pad, mmap_from;
    if (!PyArg_ParseTuple(args, "ll:keep_heap", &pad, &mmap_from))
        return NULL;
    if (pad < 0 || pad > INT_MAX || mmap_from < 0 || mmap_from > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "a heap setting is 0 to INT_MAX bytes");
        return NULL;
    }
#ifdef __GLIBC__
    return PyBool_FromLong(mallopt(M_TOP_PAD, (int)pad) == 1 && mallopt(M_MMAP_THRESHOLD, (int)mmap_from) == 1);
#else
    Py_RETURN_FALSE;
#endif
}

static PyMethodDef methods[] = {
    {"keep_heap", keep_heap, METH_VARARGS, "glibc's M_TOP_PAD and M_MMAP_THRESHOLD for this process; whether set."},
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
