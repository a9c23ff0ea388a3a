/* Where a batch of TcpSegments ends by its payload bytes: the twin of segment.py's payload_cut.
 *
 * The engines hand the core segments in batches (engines/local.py SEGMENT_BATCH) whose rows are made in
 * one call and held until it returns, so a batch is cut by its payload bytes too; reading each segment's
 * payload through Python (a getattr, len and sum per segment) cost about 400 instructions a segment,
 * here a slot read.
 *
 * Rules:
 * - The same answer as the reference for any list: items are read through their class's slots when
 *   _segment_layout.h lays it out, else by their ``payload`` attribute; a payload that is not exactly
 *   bytes is measured by len() as the reference does, and its errors are raised.
 * - It reads, never changes, the list or its items.
 */
#include "_segments.h"

static SegmentLayout layout; /* TcpSegment's, read on its first segment */

/* The length of item's payload (len()), or -1 with an exception set. */
static Py_ssize_t
payload_size(PyObject *item)
{
    static PyObject *name;
    if (name == NULL && (name = PyUnicode_InternFromString("payload")) == NULL)
        return -1;
    if ((PyObject *)Py_TYPE(item) != layout.type && segment_layout(&layout, (PyObject *)Py_TYPE(item)) < 0)
        return -1;
    PyObject *payload = layout.direct ? *segment_slot(&layout, item, SF_PAYLOAD) : NULL;
    if (payload != NULL && PyBytes_CheckExact(payload))
        return PyBytes_GET_SIZE(payload);
    payload = payload != NULL ? Py_NewRef(payload) : PyObject_GetAttr(item, name);
    if (payload == NULL)
        return -1;
    Py_ssize_t size = PyObject_Length(payload);
    Py_DECREF(payload);
    return size;
}

/* payload_cut(segments, start, most, room) -> (stop, taken) */
PyObject *
payload_cut(PyObject *module, PyObject *args)
{
    PyObject *segments;
    Py_ssize_t start, most;
    long long room, taken = 0;
    if (!PyArg_ParseTuple(args, "O!nnL", &PyList_Type, &segments, &start, &most, &room))
        return NULL;
    if (start < 0 || most < 0) {
        PyErr_SetString(PyExc_ValueError, "start and most must not be negative");
        return NULL;
    }
    Py_ssize_t stop = start, end = most > PY_SSIZE_T_MAX - start ? PY_SSIZE_T_MAX : start + most;
    /* (the list is read as it is at each step: a payload's len() may run code that changes it) */
    while (stop < end && stop < PyList_GET_SIZE(segments)) {
        PyObject *item = Py_NewRef(PyList_GET_ITEM(segments, stop));
        Py_ssize_t size = payload_size(item);
        Py_DECREF(item);
        if (size < 0)
            return NULL;
        taken += size;
        stop++;
        if (taken >= room)
            break;
    }
    return Py_BuildValue("nL", stop, taken);
}
