/* One common-case frame -> one TcpSegment: the twin of packets.py's decode for the frames
 * _headers.c accepts.
 *
 * Rules:
 * - What it builds equals the reference: TcpSegment(ts_ns, src_ip, src_port, dst_ip, dst_port,
 *   seq, ack, flags, window, payload, payload_len); the caller computes ts_ns as its Python twin does.
 * - A frame _headers.c declines appends nothing: the caller stops before it and the Python path
 *   decodes and reports it.
 * - With a record type, the record is built too (as pcap.py/pcapng.py build it) and the pair goes
 *   out as one (record, segment) tuple: a reader that wants the records too.
 * - Packed, the same fields go into a PackedSegment, with the stream offset of the captured payload
 *   (where the Python reader would find the payload's bytes in the record), and no object is built:
 *   the Spark engine's read side keeps a connection's segments as runs of such headers.
 * - Address strings are cached (a small direct-mapped table), so a busy connection costs no string
 *   per packet.
 * - A TcpSegment is made as its ``__init__`` makes it, without the call: each value goes straight
 *   into its slot (_segment_layout.h says when a class allows it; any other is called). Calling the
 *   class ran a Python frame per packet: about 1,900 instructions, a quarter of reading a chatty capture.
 */
#include "_segments.h"

#include <arpa/inet.h>
#include <string.h>

/* ---- address strings -------------------------------------------------------------------- */

#define CACHE_SLOTS 256

typedef struct {
    int len; /* 0: empty */
    unsigned char key[16];
    PyObject *text;
} CachedAddress;

static CachedAddress cache[CACHE_SLOTS];

static PyObject *
address_text(const unsigned char *a, int len)
{
    unsigned h = 0;
    char text[INET6_ADDRSTRLEN];
    CachedAddress *slot;
    PyObject *s;
    for (int i = 0; i < len; i++)
        h = h * 31 + a[i];
    slot = &cache[h % CACHE_SLOTS];
    if (slot->len == len && memcmp(slot->key, a, (size_t)len) == 0) {
        Py_INCREF(slot->text);
        return slot->text;
    }
    if (inet_ntop(len == 4 ? AF_INET : AF_INET6, a, text, sizeof text) == NULL)
        return PyErr_SetFromErrno(PyExc_OSError);
    s = PyUnicode_FromString(text);
    if (s == NULL)
        return NULL;
    Py_XSETREF(slot->text, Py_NewRef(s));
    slot->len = len;
    memcpy(slot->key, a, (size_t)len);
    return s;
}

/* ---- one segment ------------------------------------------------------------------------ */

static SegmentLayout layout; /* TcpSegment's, read on its first segment */

PyObject *
segment_of(PyObject *segment_type, PyObject *args[SEGMENT_FIELDS])
{
    PyObject *seg = NULL;
    for (int i = 0; i < SEGMENT_FIELDS; i++)
        if (args[i] == NULL)
            goto done;
    if (segment_layout(&layout, segment_type) < 0)
        goto done;
    if (!layout.direct) {
        seg = PyObject_Vectorcall(segment_type, args, SEGMENT_FIELDS, NULL);
        goto done;
    }
    PyTypeObject *type = (PyTypeObject *)segment_type;
    if ((seg = type->tp_alloc(type, 0)) == NULL)
        goto done;
    for (int i = 0; i < SEGMENT_FIELDS; i++) { /* the slots take the references */
        *segment_slot(&layout, seg, i) = args[i];
        args[i] = NULL;
    }
done:
    for (int i = 0; i < SEGMENT_FIELDS; i++)
        Py_XDECREF(args[i]);
    return seg;
}

static PyObject *
make_segment(PyObject *segment_type, long long ts_ns, const unsigned char *frame, const CommonSegment *c)
{
    int alen = c->version == 4 ? 4 : 16;
    PyObject *args[SEGMENT_FIELDS] = {NULL};
    args[SF_TS_NS] = PyLong_FromLongLong(ts_ns);
    args[SF_SRC_IP] = address_text(c->src, alen);
    args[SF_SRC_PORT] = PyLong_FromUnsignedLong(c->src_port);
    args[SF_DST_IP] = address_text(c->dst, alen);
    args[SF_DST_PORT] = PyLong_FromUnsignedLong(c->dst_port);
    args[SF_SEQ] = PyLong_FromUnsignedLong(c->seq);
    args[SF_ACK] = PyLong_FromUnsignedLong(c->ack);
    args[SF_FLAGS] = PyLong_FromUnsignedLong(c->flags);
    args[SF_WINDOW] = PyLong_FromUnsignedLong(c->window);
    args[SF_PAYLOAD] = PyBytes_FromStringAndSize((const char *)frame + c->payload_start,
                                        (Py_ssize_t)(c->payload_end - c->payload_start));
    args[SF_PAYLOAD_LEN] = PyLong_FromLongLong(c->payload_len);
    return segment_of(segment_type, args);
}

static PyObject *
make_record(PyObject *record_type, int link_type, long long ts_ns, const unsigned char *frame, size_t captured,
            long long wire_len, long long offset, long long interface)
{
    PyObject *args[6] = {NULL}, *record = NULL;
    args[0] = PyLong_FromLong(link_type);
    args[1] = PyLong_FromLongLong(ts_ns);
    args[2] = PyBytes_FromStringAndSize((const char *)frame, (Py_ssize_t)captured);
    args[3] = PyLong_FromLongLong(wire_len);
    args[4] = PyLong_FromLongLong(offset);
    args[5] = PyLong_FromLongLong(interface);
    for (int i = 0; i < 6; i++)
        if (args[i] == NULL)
            goto done;
    record = PyObject_Vectorcall(record_type, args, 6, NULL);
done:
    for (int i = 0; i < 6; i++)
        Py_XDECREF(args[i]);
    return record;
}

int
set_output(Emitter *em, PyObject *how, const unsigned char *buf, long long base)
{
    em->record_type = em->packed = NULL;
    if (how == NULL || how == Py_None)
        return 0;
    if (PyByteArray_CheckExact(how) && buf != NULL) {
        em->packed = how;
        em->buf = buf;
        em->base = base;
        return 0;
    }
    if (!PyType_Check(how)) {
        PyErr_SetString(PyExc_TypeError, "a walk's output must be None, a record type or a bytearray");
        return -1;
    }
    em->record_type = how;
    return 0;
}

static int
append_packed(Emitter *em, long long ts_ns, const unsigned char *frame, const CommonSegment *c)
{
    PackedSegment p;
    size_t alen = c->version == 4 ? 4 : 16;
    Py_ssize_t used = PyByteArray_GET_SIZE(em->packed);
    memset(&p, 0, sizeof p);
    p.ts_ns = ts_ns;
    p.payload_at = em->base + (long long)(frame - em->buf) + (long long)c->payload_start;
    p.payload_len = c->payload_len;
    p.seq = c->seq;
    p.ack = c->ack;
    p.captured = (uint32_t)(c->payload_end - c->payload_start);
    p.flags = (uint16_t)c->flags;
    p.window = (uint16_t)c->window;
    p.src_port = (uint16_t)c->src_port;
    p.dst_port = (uint16_t)c->dst_port;
    p.version = (uint8_t)c->version;
    memcpy(p.src, c->src, alen);
    memcpy(p.dst, c->dst, alen);
    if (PyByteArray_Resize(em->packed, used + (Py_ssize_t)sizeof p) < 0)
        return EMIT_ERROR;
    memcpy(PyByteArray_AS_STRING(em->packed) + used, &p, sizeof p);
    return SEG_OK;
}

int
emit_segment(Emitter *em, long long ts_ns, int link_type, const unsigned char *frame, size_t captured,
             long long wire_len, long long offset, long long interface)
{
    CommonSegment seg;
    PyObject *obj, *record;
    int rc = common_segment(link_type, frame, captured, wire_len, &seg);
    if (rc != SEG_OK)
        return rc;
    if (em->packed != NULL) {
        if (append_packed(em, ts_ns, frame, &seg) != SEG_OK)
            return EMIT_ERROR;
        em->records++;
        em->captured += (long long)captured;
        return SEG_OK;
    }
    obj = make_segment(em->segment_type, ts_ns, frame, &seg);
    if (obj != NULL && em->record_type != NULL) {
        record = make_record(em->record_type, link_type, ts_ns, frame, captured, wire_len, offset, interface);
        Py_SETREF(obj, record == NULL ? NULL : PyTuple_Pack(2, record, obj));
        Py_XDECREF(record);
    }
    if (obj == NULL || PyList_Append(em->out, obj) < 0) {
        Py_XDECREF(obj);
        return EMIT_ERROR;
    }
    Py_DECREF(obj);
    em->records++;
    em->captured += (long long)captured;
    return SEG_OK;
}
