/* The decoder's magic 2 record loop and batch checksum (decoders/_native.c), offered through a capsule
 * to the records table's batch rows (tables/_record_rows.c), which walk a records field's batches in C:
 *     RecordsApi *api = PyCapsule_Import(RECORDS_CAPSULE, 0);
 * The same code as the module's v2_columns(..., into) and crc32c(), without a Python call per batch. */
#ifndef KDISSECT_RECORDS_H
#define KDISSECT_RECORDS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define RECORDS_CAPSULE "kdissect.decoders._native.records_api"

typedef struct {
    /* v2_columns(buf, p, end, base_offset, base_ts, append_ts, cut, into): the records of the bytes
     * object buf[p:end] appended to the arena `into` (a tuple of 13 bytearrays); their count, -2 where
     * v2_columns gives None (the arena then as it was), -1 with an exception set (BufferError: an array
     * still points into the arena, nothing written). */
    Py_ssize_t (*v2_into)(PyObject *buf, Py_ssize_t p, Py_ssize_t end, long long base_offset, long long base_ts,
                          PyObject *append_ts, Py_ssize_t cut, PyObject *into);
    /* The CRC-32C of s[0:n], as crc32c() gives it. */
    uint32_t (*crc32c)(const unsigned char *s, Py_ssize_t n);
} RecordsApi;

/* The arena's bytearrays, grown and cut back in place by both (the arena: 13 bytearrays a record loop
 * appends to, see v2_into). */

/* Whether a bytearray may take `size` bytes in the room it has allocated, its size then set in place
 * (what PyByteArray_Resize's quick exit does, without its call, and without its shrinking the buffer
 * to the bytes used when they are under half of it: the arena's next batch would grow it again, each
 * time a copy). Not while it is exported: PyByteArray_Resize then raises BufferError, which callers
 * rely on (an array still points into the arena). */
static inline int
into_room(PyByteArrayObject *a, Py_ssize_t size)
{
    return a->ob_exports == 0 && a->ob_start == a->ob_bytes && size < a->ob_alloc;
}

/* A bytearray's size set to `size` bytes: in place within its room, else through PyByteArray_Resize
 * (keeping an exception being raised; a shrink cannot fail). */
static inline void
into_size(PyObject *into, Py_ssize_t size)
{
    PyByteArrayObject *a = (PyByteArrayObject *)into;
    if (into_room(a, size)) { /* (the trailing null too: a batch may have been written past it) */
        Py_SET_SIZE(a, size);
        a->ob_start[size] = '\0';
        return;
    }
    if (Py_SIZE(a) == size)
        return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (PyByteArray_Resize(into, size) < 0)
        PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

#endif
