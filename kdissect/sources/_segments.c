/* One common-case frame -> one TcpSegment: the twin of packets.py's decode for the frames
 * _headers.c accepts.
 *
 * Rules:
 * - What it builds equals the reference: TcpSegment(ts_ns, src_ip, src_port, dst_ip, dst_port,
 *   seq, ack, flags, window, payload, payload_len); the caller computes ts_ns as its Python twin does.
 * - A frame _headers.c declines appends nothing: the caller stops before it and the Python path
 *   decodes and reports it.
 * - With a record type, the record is built too (as pcap.py/pcapng.py build it) and the pair goes
 *   out as one (record, segment) tuple: the Spark engine reads records to locate payloads.
 * - Address strings are cached (a small direct-mapped table), so a busy connection costs no string
 *   per packet.
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

static PyObject *
make_segment(PyObject *segment_type, long long ts_ns, const unsigned char *frame, const CommonSegment *c)
{
    int alen = c->version == 4 ? 4 : 16;
    PyObject *args[11] = {NULL}, *seg = NULL;
    args[0] = PyLong_FromLongLong(ts_ns);
    args[1] = address_text(c->src, alen);
    args[2] = PyLong_FromUnsignedLong(c->src_port);
    args[3] = address_text(c->dst, alen);
    args[4] = PyLong_FromUnsignedLong(c->dst_port);
    args[5] = PyLong_FromUnsignedLong(c->seq);
    args[6] = PyLong_FromUnsignedLong(c->ack);
    args[7] = PyLong_FromUnsignedLong(c->flags);
    args[8] = PyLong_FromUnsignedLong(c->window);
    args[9] = PyBytes_FromStringAndSize((const char *)frame + c->payload_start,
                                        (Py_ssize_t)(c->payload_end - c->payload_start));
    args[10] = PyLong_FromLongLong(c->payload_len);
    for (int i = 0; i < 11; i++)
        if (args[i] == NULL)
            goto done;
    seg = PyObject_Vectorcall(segment_type, args, 11, NULL);
done:
    for (int i = 0; i < 11; i++)
        Py_XDECREF(args[i]);
    return seg;
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
set_record_type(Emitter *em, PyObject *record_type)
{
    if (record_type == NULL || record_type == Py_None) {
        em->record_type = NULL;
        return 0;
    }
    if (!PyType_Check(record_type)) {
        PyErr_SetString(PyExc_TypeError, "record_type must be a type or None");
        return -1;
    }
    em->record_type = record_type;
    return 0;
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
