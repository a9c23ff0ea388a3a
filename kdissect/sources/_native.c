/* The sources stage's native path: classic pcap records -> TcpSegment objects, many per call.
 *
 * The twin of pcap.py's record step followed by packets.py's decode, for the common record:
 * complete, with a sane length, whose frame _headers.c reads as a plain TCP segment. Python
 * (pcap.py, packets.py: the reference) is entered for everything else, one record at a time.
 *
 * Rules:
 * - pcap_segments walks records from a position and stops *before* the first record it does not
 *   take: one not complete in the buffer, one whose captured length is over the limit or whose
 *   wire length is below its captured length (the Python step reports those), one whose frame is
 *   not the common case. It says why it stopped: the caller steps that record in Python, and goes
 *   on natively after it unless the stop was SEG_DEFER_UNSAFE (a possible IP fragment).
 * - What it builds equals the reference: TcpSegment(ts_ns, src_ip, src_port, dst_ip, dst_port,
 *   seq, ack, flags, window, payload, payload_len) with the timestamp computed as pcap.py does.
 * - Every read is checked against the buffer first. Address strings are cached (a small direct-
 *   mapped table), so a busy connection costs no string per packet.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <arpa/inet.h>
#include <string.h>

#include "_headers.h"

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

/* ---- the record loop (pcap.py's _step) -------------------------------------------------- */

static inline uint32_t
u32(const unsigned char *s, int big_endian)
{
    if (big_endian)
        return (uint32_t)s[0] << 24 | (uint32_t)s[1] << 16 | (uint32_t)s[2] << 8 | s[3];
    return (uint32_t)s[3] << 24 | (uint32_t)s[2] << 16 | (uint32_t)s[1] << 8 | s[0];
}

enum { STOP_MORE = 0 }; /* needs more bytes (or the buffer ended); else a SEG_DEFER_* value */

/* pcap_segments(buf, pos, big_endian, ns_per_unit, rec_len, max_caplen, link_type, segment_type, out)
 * -> (pos, records, captured_bytes, last_sec, stop): segments appended to out. */
static PyObject *
pcap_segments(PyObject *module, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos, records = 0;
    int big_endian, rec_len, link_type, stop = STOP_MORE;
    long long ns_per_unit, max_caplen, captured = 0, last_sec = -1;
    PyObject *segment_type, *out, *result = NULL;
    if (!PyArg_ParseTuple(args, "y*npLiLiOO!", &view, &pos, &big_endian, &ns_per_unit, &rec_len, &max_caplen,
                          &link_type, &segment_type, &PyList_Type, &out))
        return NULL;
    const unsigned char *b = view.buf;
    Py_ssize_t n = view.len;
    if (pos < 0 || rec_len < 16) {
        PyErr_SetString(PyExc_ValueError, "bad position or record header length");
        goto done;
    }
    while (n - pos >= rec_len) {
        const unsigned char *h = b + pos;
        uint32_t sec = u32(h, big_endian), frac = u32(h + 4, big_endian);
        uint32_t incl = u32(h + 8, big_endian), orig = u32(h + 12, big_endian);
        CommonSegment seg;
        PyObject *obj;
        if ((long long)incl > max_caplen || orig < incl) {
            stop = SEG_DEFER_SAFE; /* the Python step reports it */
            break;
        }
        if (n - pos - rec_len < (Py_ssize_t)incl)
            break;
        int rc = common_segment(link_type, h + rec_len, incl, (long long)orig, &seg);
        if (rc != SEG_OK) {
            stop = rc;
            break;
        }
        obj = make_segment(segment_type, (long long)sec * 1000000000LL + (long long)frac * ns_per_unit,
                           h + rec_len, &seg);
        if (obj == NULL || PyList_Append(out, obj) < 0) {
            Py_XDECREF(obj);
            goto done;
        }
        Py_DECREF(obj);
        pos += rec_len + (Py_ssize_t)incl;
        records++;
        captured += incl;
        last_sec = sec;
    }
    result = Py_BuildValue("nnLLi", pos, records, captured, last_sec, stop);
done:
    PyBuffer_Release(&view);
    return result;
}

/* ---- module ----------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"pcap_segments", pcap_segments, METH_VARARGS,
     "Common-case pcap records from a position -> TcpSegments; (pos, records, captured, last_sec, stop)."},
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
        || PyModule_AddIntConstant(m, "DEFER_UNSAFE", SEG_DEFER_UNSAFE) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
