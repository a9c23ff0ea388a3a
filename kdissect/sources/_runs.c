/* The Spark engine's crossing runs -> TcpSegment objects, many per call: the twin of
 * engines/units.py's run_segments reference, for a decode task's shuffled runs (a connection's
 * segments kept as packed headers, units.RUN_HEADER, their payloads left in the capture files).
 *
 * Rules:
 * - Segment i is TcpSegment(ts, a_ip, a_port, b_ip, b_port, seq, ack, flags, window, payload,
 *   payload_len) of header i and ends[runs[i]] = (a_ip, a_port, b_ip, b_port, file_index), the
 *   addresses swapped when the header is not ``forward``: the ends' own objects, shared.
 * - The payload is the bytes ``maps[file_index][payload_at : payload_at + captured]`` (a Python
 *   slice's bounds), or b"" when payload_at is negative (no payload captured).
 * - A header whose file is not mapped (``maps[file_index]`` None) stops the walk before it: the caller
 *   maps the file and goes on from there. A map's buffer is held only during the call.
 * - Every index is checked: a run or file index out of range raises IndexError.
 */
#include "_segments.h"

#include <stdint.h>

#pragma pack(push, 1)
typedef struct { /* units.RUN_HEADER: little-endian, packed (57 bytes) */
    int64_t pos, ts, seq, ack;
    int32_t flags, window, payload_len, captured;
    int64_t payload_at;
    int8_t forward;
} RunHeader;
#pragma pack(pop)

size_t
run_header_size(void)
{
    return sizeof(RunHeader);
}

/* The file index of an ends tuple, checked against the maps: -1 with an exception set. */
static Py_ssize_t
file_of(PyObject *end, Py_ssize_t files)
{
    if (!PyTuple_Check(end) || PyTuple_GET_SIZE(end) != 5) {
        PyErr_SetString(PyExc_TypeError, "a run's ends are (a_ip, a_port, b_ip, b_port, file_index)");
        return -1;
    }
    Py_ssize_t file = PyLong_AsSsize_t(PyTuple_GET_ITEM(end, 4));
    if (file == -1 && PyErr_Occurred())
        return -1;
    if (file < 0 || file >= files) {
        PyErr_SetString(PyExc_IndexError, "a run's file index is not among the maps");
        return -1;
    }
    return file;
}

/* The payload of header ``h`` in ``map`` (a Python slice of it), or b"" when it has none. */
static PyObject *
payload_of(const RunHeader *h, const Py_buffer *map)
{
    if (h->payload_at < 0)
        return PyBytes_FromStringAndSize(NULL, 0);
    if (h->payload_at >= (int64_t)map->len)
        return PyBytes_FromStringAndSize(NULL, 0);
    Py_ssize_t start = (Py_ssize_t)h->payload_at, stop = start + (Py_ssize_t)h->captured; /* start < len: no overflow */
    Py_ssize_t size = PySlice_AdjustIndices(map->len, &start, &stop, 1);
    return PyBytes_FromStringAndSize((const char *)map->buf + start, size);
}

/* run_segments(headers, runs, ends, maps, start, segment_type, out) -> index: segments of headers from
 * ``start`` appended to ``out``, up to the end (their count) or the first whose file is not mapped. */
PyObject *
run_segments(PyObject *module, PyObject *args)
{
    Py_buffer headers, runs, map = {0};
    Py_ssize_t start, mapped = -1; /* mapped: the file whose buffer ``map`` holds */
    PyObject *ends, *maps, *segment_type, *out, *result = NULL;
    (void)module;
    if (!PyArg_ParseTuple(args, "y*y*O!O!nOO!", &headers, &runs, &PyList_Type, &ends, &PyList_Type, &maps, &start,
                          &segment_type, &PyList_Type, &out))
        return NULL;
    Py_ssize_t n = headers.len / (Py_ssize_t)sizeof(RunHeader);
    if (headers.len % (Py_ssize_t)sizeof(RunHeader) != 0 || runs.len != n * (Py_ssize_t)sizeof(int64_t)
        || start < 0 || start > n) {
        PyErr_SetString(PyExc_ValueError, "headers, runs and start do not agree");
        goto done;
    }
    const RunHeader *hs = headers.buf;
    const int64_t *rs = runs.buf;
    Py_ssize_t i = start;
    for (; i < n; i++) {
        RunHeader h;
        int64_t run;
        memcpy(&h, &hs[i], sizeof h);
        memcpy(&run, &rs[i], sizeof run);
        if (run < 0 || run >= PyList_GET_SIZE(ends)) {
            PyErr_SetString(PyExc_IndexError, "a header's run is not among the ends");
            goto done;
        }
        PyObject *end = PyList_GET_ITEM(ends, run);
        Py_ssize_t file = file_of(end, PyList_GET_SIZE(maps));
        if (file < 0)
            goto done;
        if (h.payload_at >= 0 && file != mapped) {
            PyObject *buffer = PyList_GET_ITEM(maps, file);
            if (buffer == Py_None)
                break; /* the caller maps it */
            if (mapped >= 0)
                PyBuffer_Release(&map);
            mapped = -1;
            if (PyObject_GetBuffer(buffer, &map, PyBUF_SIMPLE) < 0)
                goto done;
            mapped = file;
        }
        int a = h.forward ? 0 : 2, b = h.forward ? 2 : 0; /* the source's and destination's items */
        PyObject *fields[SEGMENT_FIELDS] = {
            [SF_TS_NS] = PyLong_FromLongLong(h.ts),
            [SF_SRC_IP] = Py_NewRef(PyTuple_GET_ITEM(end, a)),
            [SF_SRC_PORT] = Py_NewRef(PyTuple_GET_ITEM(end, a + 1)),
            [SF_DST_IP] = Py_NewRef(PyTuple_GET_ITEM(end, b)),
            [SF_DST_PORT] = Py_NewRef(PyTuple_GET_ITEM(end, b + 1)),
            [SF_SEQ] = PyLong_FromLongLong(h.seq),
            [SF_ACK] = PyLong_FromLongLong(h.ack),
            [SF_FLAGS] = PyLong_FromLong(h.flags),
            [SF_WINDOW] = PyLong_FromLong(h.window),
            [SF_PAYLOAD] = payload_of(&h, &map),
            [SF_PAYLOAD_LEN] = PyLong_FromLong(h.payload_len),
        };
        PyObject *segment = segment_of(segment_type, fields);
        if (segment == NULL || PyList_Append(out, segment) < 0) {
            Py_XDECREF(segment);
            goto done;
        }
        Py_DECREF(segment);
    }
    result = PyLong_FromSsize_t(i);
done:
    if (mapped >= 0)
        PyBuffer_Release(&map);
    PyBuffer_Release(&headers);
    PyBuffer_Release(&runs);
    return result;
}
