/* The pcapng block walk in C: runs of Enhanced and Simple Packet Blocks -> TcpSegments (_segments.c).
 *
 * The twin of pcapng.py's _step for the two packet blocks of a section whose byte order and
 * interfaces pcapng.py has already read. Every other block (section headers, interface
 * descriptions, decryption secrets, obsolete packet blocks, statistics, unknown types) stops the
 * walk and pcapng.py reads it: the interfaces are pcapng.py's _Interface objects, read here.
 *
 * Rules:
 * - It stops before a block pcapng.py would report or treat specially: a length that is impossible
 *   or does not match the trailer, a body too short, an undeclared interface, a captured length
 *   that overruns its block, a wire length below the captured length, a simple packet block before
 *   any interface, a timestamp unit or offset that does not fit 64 bits, a timestamp outside the
 *   64-bit nanosecond range.
 * - Timestamps equal pcapng.py's: units * 10^9 // units_per_s + offset_ns (in 128-bit arithmetic);
 *   a simple packet block takes the previous packet's timestamp in the section (last_ts).
 */
#include "_segments.h"

#include <limits.h>

enum { SPB_TYPE = 3, EPB_TYPE = 6, MIN_BLOCK = 12, EPB_FIXED = 20, SPB_FIXED = 4 };

/* One interface as the walk needs it; ok is 0 when its packets are pcapng.py's. */
typedef struct {
    Py_ssize_t id; /* -1: not read yet */
    int ok;
    int link_type;
    unsigned long long snaplen, units_per_s;
    long long offset_ns;
} Interface;

static int
attr_ull(PyObject *obj, const char *name, unsigned long long *v)
{
    PyObject *a = PyObject_GetAttrString(obj, name);
    if (a == NULL)
        return -1;
    *v = PyLong_AsUnsignedLongLong(a);
    Py_DECREF(a);
    return *v == (unsigned long long)-1 && PyErr_Occurred() ? -1 : 0;
}

/* Read interface ``id`` of ``interfaces`` (pcapng.py's _Interface list) into ``f``. A value that does
 * not fit is not an error: the interface is simply not the native path's (ok = 0). */
static int
read_interface(PyObject *interfaces, Py_ssize_t id, Interface *f)
{
    PyObject *iface = PyList_GET_ITEM(interfaces, id), *a;
    unsigned long long link;
    int overflow = 0;
    f->id = id;
    f->ok = 0;
    f->link_type = -1;
    if (attr_ull(iface, "link_type", &link) < 0 || attr_ull(iface, "snaplen", &f->snaplen) < 0)
        goto unfit;
    f->link_type = link <= 0xFFFF ? (int)link : -1;
    if (attr_ull(iface, "ts_units_per_s", &f->units_per_s) < 0)
        goto unfit;
    a = PyObject_GetAttrString(iface, "ts_offset_ns");
    if (a == NULL)
        return -1;
    f->offset_ns = PyLong_AsLongLongAndOverflow(a, &overflow);
    Py_DECREF(a);
    if (f->offset_ns == -1 && PyErr_Occurred())
        return -1;
    f->ok = !overflow && f->units_per_s > 0 && f->link_type >= 0;
    return 0;
unfit:
    if (!PyErr_ExceptionMatches(PyExc_OverflowError) && !PyErr_ExceptionMatches(PyExc_ValueError))
        return -1;
    PyErr_Clear();
    return 0;
}

/* units * 10^9 // units_per_s + offset_ns, as pcapng.py computes it; 0 when outside 64 bits. */
static int
timestamp(const Interface *f, unsigned long long units, long long *ts_ns)
{
    __int128 t = (__int128)((unsigned __int128)units * 1000000000u / f->units_per_s) + f->offset_ns;
    if (t > LLONG_MAX || t < LLONG_MIN)
        return 0;
    *ts_ns = (long long)t;
    return 1;
}

enum { STOP_MORE = 0 };

/* pcapng_segments(buf, pos, big_endian, interfaces, max_block_len, last_ts, segment_type, out, base,
 *                 record_type) -> (pos, records, captured_bytes, last_ts, stop): segments appended to out
 * ((record, segment) pairs with a record_type; PackedSegments into a bytearray given instead; base is the
 * stream offset of buf[0]). */
PyObject *
pcapng_segments(PyObject *module, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos;
    int big_endian, stop = STOP_MORE, last_ok, overflow = 0;
    long long max_block_len, last_ts, base;
    PyObject *interfaces, *last_obj, *result = NULL, *record_type;
    Emitter em = {0};
    Interface f = {.id = -1};
    if (!PyArg_ParseTuple(args, "y*npO!LOOO!LO", &view, &pos, &big_endian, &PyList_Type, &interfaces,
                          &max_block_len, &last_obj, &em.segment_type, &PyList_Type, &em.out, &base, &record_type))
        return NULL;
    const unsigned char *b = view.buf;
    if (set_output(&em, record_type, b, base) < 0)
        goto done;
    Py_ssize_t n = view.len;
    last_ts = PyLong_AsLongLongAndOverflow(last_obj, &overflow);
    if (last_ts == -1 && PyErr_Occurred())
        goto done;
    last_ok = !overflow;
    if (pos < 0) {
        PyErr_SetString(PyExc_ValueError, "bad position");
        goto done;
    }
    while (n - pos >= MIN_BLOCK) {
        const unsigned char *h = b + pos;
        uint32_t btype = u32(h, big_endian), blen = u32(h + 4, big_endian);
        const unsigned char *body = h + 8, *frame;
        size_t body_len, caplen;
        long long ts_ns, orig;
        Py_ssize_t id;
        int rc;
        if ((btype != EPB_TYPE && btype != SPB_TYPE) || blen < MIN_BLOCK || blen % 4 || blen > max_block_len) {
            stop = SEG_DEFER_SAFE;
            break;
        }
        if (n - pos < (Py_ssize_t)blen)
            break;
        if (u32(h + blen - 4, big_endian) != blen) {
            stop = SEG_DEFER_SAFE;
            break;
        }
        body_len = blen - MIN_BLOCK;
        id = btype == EPB_TYPE ? (Py_ssize_t)u32(body, big_endian) : 0;
        if (body_len < (btype == EPB_TYPE ? EPB_FIXED : SPB_FIXED) || id >= PyList_GET_SIZE(interfaces)) {
            stop = SEG_DEFER_SAFE;
            break;
        }
        if (f.id != id && read_interface(interfaces, id, &f) < 0)
            goto done;
        if (btype == EPB_TYPE) {
            unsigned long long units = (unsigned long long)u32(body + 4, big_endian) << 32 | u32(body + 8, big_endian);
            caplen = u32(body + 12, big_endian);
            orig = u32(body + 16, big_endian);
            frame = body + EPB_FIXED;
            if (!f.ok || caplen > body_len - EPB_FIXED || orig < (long long)caplen || !timestamp(&f, units, &ts_ns)) {
                stop = SEG_DEFER_SAFE;
                break;
            }
        } else {
            orig = u32(body, big_endian);
            caplen = body_len - SPB_FIXED;
            if ((unsigned long long)orig < caplen)
                caplen = (size_t)orig;
            if (f.snaplen && f.snaplen < caplen)
                caplen = (size_t)f.snaplen;
            frame = body + SPB_FIXED;
            ts_ns = last_ts;
            if (!last_ok || f.link_type < 0) {
                stop = SEG_DEFER_SAFE;
                break;
            }
        }
        rc = emit_segment(&em, ts_ns, f.link_type, frame, caplen, orig, base + pos, id);
        if (rc == EMIT_ERROR)
            goto done;
        if (rc != SEG_OK) {
            stop = rc;
            break;
        }
        pos += blen;
        last_ts = ts_ns;
        last_ok = 1;
    }
    if (last_ok)
        result = Py_BuildValue("nnLLi", pos, em.records, em.captured, last_ts, stop);
    else
        result = Py_BuildValue("nnLOi", pos, em.records, em.captured, last_obj, stop);
done:
    PyBuffer_Release(&view);
    return result;
}
