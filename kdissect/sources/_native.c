/* The sources stage's native path: capture records -> TcpSegment objects, many per call.
 *
 * This file is the module and the classic pcap record walk (the twin of pcap.py's record step);
 * _pcapng.c walks pcapng blocks, _batch.c a live engine's CaptureRecord objects, _runs.c a Spark decode
 * task's shuffled run headers (into segments, with _segments.c's segment_of), and every walk
 * ends in _segments.c (one frame -> one TcpSegment, through _headers.c's link/IP/TCP read).
 * Python (pcap.py, pcapng.py, packets.py: the reference) is entered for everything else, one
 * record at a time.
 *
 * Rules (every walk):
 * - A walk goes from a position and stops *before* the first record it does not take: one not
 *   complete in the buffer, one whose framing the Python step would report (a captured length over
 *   the limit, a wire length below the captured length, ...), one whose frame is not the common
 *   case. It says why it stopped: the caller steps that record in Python, and goes on natively
 *   after it unless the stop was SEG_DEFER_UNSAFE (a possible IP fragment).
 * - Timestamps are computed as the Python twin computes them.
 * - Every read is checked against the buffer first.
 */
#include "_segments.h"

/* ---- the record loop (pcap.py's _step) -------------------------------------------------- */

enum { STOP_MORE = 0 }; /* needs more bytes (or the buffer ended); else a SEG_DEFER_* value */

/* pcap_segments(buf, pos, big_endian, ns_per_unit, rec_len, max_caplen, link_type, segment_type, out,
 *               base, record_type) -> (pos, records, captured_bytes, last_sec, stop): segments appended to
 * out ((record, segment) pairs with a record_type; PackedSegments into a bytearray given instead; base is
 * the stream offset of buf[0]). */
static PyObject *
pcap_segments(PyObject *module, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos;
    int big_endian, rec_len, link_type, stop = STOP_MORE;
    long long ns_per_unit, max_caplen, last_sec = -1, base;
    Emitter em = {0};
    PyObject *result = NULL, *record_type;
    if (!PyArg_ParseTuple(args, "y*npLiLiOO!LO", &view, &pos, &big_endian, &ns_per_unit, &rec_len, &max_caplen,
                          &link_type, &em.segment_type, &PyList_Type, &em.out, &base, &record_type))
        return NULL;
    const unsigned char *b = view.buf;
    if (set_output(&em, record_type, b, base) < 0)
        goto done;
    Py_ssize_t n = view.len;
    if (pos < 0 || rec_len < 16) {
        PyErr_SetString(PyExc_ValueError, "bad position or record header length");
        goto done;
    }
    while (n - pos >= rec_len) {
        const unsigned char *h = b + pos;
        uint32_t sec = u32(h, big_endian), frac = u32(h + 4, big_endian);
        uint32_t incl = u32(h + 8, big_endian), orig = u32(h + 12, big_endian);
        if ((long long)incl > max_caplen || orig < incl) {
            stop = SEG_DEFER_SAFE; /* the Python step reports it */
            break;
        }
        if (n - pos - rec_len < (Py_ssize_t)incl)
            break;
        int rc = emit_segment(&em, (long long)sec * 1000000000LL + (long long)frac * ns_per_unit, link_type,
                              h + rec_len, incl, (long long)orig, base + pos, 0);
        if (rc == EMIT_ERROR)
            goto done;
        if (rc != SEG_OK) {
            stop = rc;
            break;
        }
        pos += rec_len + (Py_ssize_t)incl;
        last_sec = sec;
    }
    result = Py_BuildValue("nnLLi", pos, em.records, em.captured, last_sec, stop);
done:
    PyBuffer_Release(&view);
    return result;
}

/* ---- module ----------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"pcap_segments", pcap_segments, METH_VARARGS,
     "Common-case pcap records from a position -> TcpSegments; (pos, records, captured, last_sec, stop)."},
    {"pcapng_segments", pcapng_segments, METH_VARARGS,
     "Common-case pcapng packet blocks from a position -> TcpSegments; (pos, records, captured, last_ts, stop)."},
    {"record_segments", record_segments, METH_VARARGS,
     "Common-case CaptureRecords of a list from an index -> TcpSegments; (index, records, captured, stop)."},
    {"run_segments", run_segments, METH_VARARGS,
     "A decode task's run headers from an index -> TcpSegments; the index of the first whose file is not mapped."},
    {"payload_cut", payload_cut, METH_VARARGS,
     "segments, start, most, room -> (stop, taken): where a batch ends by count and payload bytes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "kdissect.sources._native", "Native path of the sources stage.", -1, methods,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "STOP_MORE", STOP_MORE) < 0
        || PyModule_AddIntConstant(m, "DEFER_SAFE", SEG_DEFER_SAFE) < 0
        || PyModule_AddIntConstant(m, "DEFER_UNSAFE", SEG_DEFER_UNSAFE) < 0
        || PyModule_AddIntConstant(m, "PACKED_SIZE", (long)sizeof(PackedSegment)) < 0
        || PyModule_AddIntConstant(m, "RUN_HEADER_SIZE", (long)run_header_size()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
