/* Where a TcpSegment (sources/segment.py) keeps its fields: what the native sources write a segment
 * through (_segments.c) and the native lanes read one through (reassembly/_native.c), with no
 * attribute lookup and no ``__init__`` call per packet.
 *
 * Rules:
 * - Only a class whose instances are exactly what ``__init__`` stores is laid out: a slotted
 *   dataclass of the eleven fields (each a plain writable object slot, no ``__dict__``, no
 *   ``__post_init__``). Anything else (``direct`` 0) goes through the class and its attributes.
 * - A layout is read once per class and kept with a strong reference to it.
 */
#ifndef KDISSECT_SOURCES_SEGMENT_LAYOUT_H
#define KDISSECT_SOURCES_SEGMENT_LAYOUT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

enum { SF_TS_NS, SF_SRC_IP, SF_SRC_PORT, SF_DST_IP, SF_DST_PORT, SF_SEQ, SF_ACK, SF_FLAGS, SF_WINDOW, SF_PAYLOAD,
       SF_PAYLOAD_LEN, SEGMENT_FIELDS }; /* TcpSegment's field order */

typedef struct {
    PyObject *type; /* the class laid out (a strong reference), or NULL */
    int direct;     /* 1: its instances' fields are read and written in their slots */
    Py_ssize_t offset[SEGMENT_FIELDS];
} SegmentLayout;

/* ``layout`` for ``type`` (kept when it is already that class's): 0, or -1 with an exception set. */
static inline int
segment_layout(SegmentLayout *layout, PyObject *type)
{
    static const char *const names[SEGMENT_FIELDS] = {"ts_ns", "src_ip", "src_port", "dst_ip", "dst_port", "seq",
                                                      "ack", "flags", "window", "payload", "payload_len"};
    if (type == layout->type)
        return 0;
    Py_XSETREF(layout->type, Py_NewRef(type));
    layout->direct = 0;
    if (!PyType_Check(type) || ((PyTypeObject *)type)->tp_dictoffset != 0)
        return 0;
    PyObject *fields = PyObject_GetAttrString(type, "__dataclass_fields__");
    if (fields == NULL) {
        PyErr_Clear();
        return 0;
    }
    int plain = PyDict_Check(fields) && PyDict_GET_SIZE(fields) == SEGMENT_FIELDS
                && !PyObject_HasAttrString(type, "__post_init__");
    Py_DECREF(fields);
    for (int i = 0; plain && i < SEGMENT_FIELDS; i++) {
        PyObject *descr = PyObject_GetAttrString(type, names[i]);
        if (descr == NULL)
            return -1;
        PyMemberDef *member = Py_IS_TYPE(descr, &PyMemberDescr_Type) ? ((PyMemberDescrObject *)descr)->d_member : NULL;
        plain = member != NULL && member->type == T_OBJECT_EX && !(member->flags & READONLY);
        if (plain)
            layout->offset[i] = member->offset;
        Py_DECREF(descr);
    }
    layout->direct = plain;
    return 0;
}

/* The slot of field ``i`` of an instance of a direct layout's class. */
static inline PyObject **
segment_slot(const SegmentLayout *layout, PyObject *segment, int i)
{
    return (PyObject **)((char *)segment + layout->offset[i]);
}

#endif
