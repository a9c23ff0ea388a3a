/* A batch of CaptureRecord objects (the live engine's, from a device or a followed stream) ->
 * TcpSegments (_segments.c), many per call.
 *
 * The twin of packets.py's PacketDecoder.decode for the common record, when the defragmenter holds
 * nothing (the caller checks that before each call: a deferred record may be a fragment).
 *
 * Rules:
 * - It walks the list from an index and stops *before* the first item it does not take: anything
 *   not exactly a CaptureRecord (an anomaly, secrets), a record whose fields are not what the reader
 *   makes (data not bytes, a timestamp or wire length outside 64 bits, a wire length below the
 *   captured length), a frame _headers.c declines. The caller hands that item to Python.
 * - It never changes a record; the records stay the caller's (a raw copy may still write them).
 */
#include "_segments.h"

enum { STOP_END = 0 };

static int
attr_ll(PyObject *obj, PyObject *name, long long *v)
{
    int overflow = 0;
    PyObject *a = PyObject_GetAttr(obj, name);
    if (a == NULL)
        return -1;
    *v = PyLong_Check(a) ? PyLong_AsLongLongAndOverflow(a, &overflow) : 0;
    overflow |= !PyLong_Check(a);
    Py_DECREF(a);
    if (*v == -1 && PyErr_Occurred())
        return -1;
    return overflow ? 0 : 1;
}

/* record_segments(records, index, record_type, segment_type, out) -> (index, records, captured, stop). */
PyObject *
record_segments(PyObject *module, PyObject *args)
{
    static PyObject *s_link, *s_ts, *s_data, *s_orig;
    PyObject *records, *record_type;
    Py_ssize_t i;
    int stop = STOP_END;
    Emitter em = {0};
    if (s_link == NULL && ((s_link = PyUnicode_InternFromString("link_type")) == NULL
                           || (s_ts = PyUnicode_InternFromString("ts_ns")) == NULL
                           || (s_data = PyUnicode_InternFromString("data")) == NULL
                           || (s_orig = PyUnicode_InternFromString("orig_len")) == NULL))
        return NULL;
    if (!PyArg_ParseTuple(args, "O!nOOO!", &PyList_Type, &records, &i, &record_type, &em.segment_type,
                          &PyList_Type, &em.out))
        return NULL;
    if (i < 0) {
        PyErr_SetString(PyExc_ValueError, "bad index");
        return NULL;
    }
    for (; i < PyList_GET_SIZE(records); i++) {
        PyObject *r = PyList_GET_ITEM(records, i), *data;
        long long link, ts_ns, orig;
        int ok, rc;
        if ((PyObject *)Py_TYPE(r) != record_type) {
            stop = SEG_DEFER_SAFE;
            break;
        }
        if ((ok = attr_ll(r, s_link, &link)) < 0 || (ok && (ok = attr_ll(r, s_ts, &ts_ns)) < 0)
            || (ok && (ok = attr_ll(r, s_orig, &orig)) < 0))
            return NULL;
        if ((data = PyObject_GetAttr(r, s_data)) == NULL)
            return NULL;
        if (!ok || !PyBytes_CheckExact(data) || link < 0 || link > 0xFFFF || orig < PyBytes_GET_SIZE(data)) {
            Py_DECREF(data);
            stop = SEG_DEFER_SAFE;
            break;
        }
        rc = emit_segment(&em, ts_ns, (int)link, (const unsigned char *)PyBytes_AS_STRING(data),
                          (size_t)PyBytes_GET_SIZE(data), orig, 0, 0);
        Py_DECREF(data);
        if (rc == EMIT_ERROR)
            return NULL;
        if (rc != SEG_OK) {
            stop = rc;
            break;
        }
    }
    return Py_BuildValue("nnLi", i, em.records, em.captured, stop);
}
