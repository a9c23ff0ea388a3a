/* One common-case frame -> one TcpSegment object appended to a list: what every native record walk
 * (_native.c: classic pcap, _pcapng.c: pcapng blocks, _batch.c: a live engine's CaptureRecords) ends in.
 * See _segments.c for the rules. */
#ifndef KDISSECT_SOURCES_SEGMENTS_H
#define KDISSECT_SOURCES_SEGMENTS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_headers.h"

/* A 32-bit field of a capture file in its byte order. */
static inline uint32_t
u32(const unsigned char *s, int big_endian)
{
    if (big_endian)
        return (uint32_t)s[0] << 24 | (uint32_t)s[1] << 16 | (uint32_t)s[2] << 8 | s[3];
    return (uint32_t)s[3] << 24 | (uint32_t)s[2] << 16 | (uint32_t)s[1] << 8 | s[0];
}

/* Where one walk's segments go, and what it counted. */
typedef struct {
    PyObject *segment_type; /* kdissect.sources.segment.TcpSegment */
    PyObject *record_type;  /* NULL or kdissect.sources.shapes.CaptureRecord: then each segment goes out as a
                               (record, segment) pair, for a reader that also wants the records */
    PyObject *out;          /* a list */
    Py_ssize_t records;     /* records turned into segments */
    long long captured;     /* their captured bytes */
} Emitter;

enum { EMIT_ERROR = -1 }; /* a Python exception is set */

/* SEG_OK (a segment appended, counted), a SEG_DEFER_* value (nothing appended: the frame is the
 * Python path's), or EMIT_ERROR. ``offset`` and ``interface`` are the record's (stream offset of its
 * header or block, pcapng interface id), used only with a record_type. */
int emit_segment(Emitter *em, long long ts_ns, int link_type, const unsigned char *frame, size_t captured,
                 long long wire_len, long long offset, long long interface);

/* The optional last argument of a walk: None, or the CaptureRecord type. */
int set_record_type(Emitter *em, PyObject *record_type);

/* The walks, each in its own file; the module (_native.c) lists them. */
PyObject *pcapng_segments(PyObject *module, PyObject *args);
PyObject *record_segments(PyObject *module, PyObject *args);

#endif
