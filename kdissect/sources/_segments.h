/* One common-case frame -> one TcpSegment object appended to a list: what every native record walk
 * (_native.c: classic pcap, _pcapng.c: pcapng blocks, _batch.c: a live engine's CaptureRecords) ends in.
 * See _segments.c for the rules. */
#ifndef KDISSECT_SOURCES_SEGMENTS_H
#define KDISSECT_SOURCES_SEGMENTS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_headers.h"
#include "_segment_layout.h"

/* A 32-bit field of a capture file in its byte order. */
static inline uint32_t
u32(const unsigned char *s, int big_endian)
{
    if (big_endian)
        return (uint32_t)s[0] << 24 | (uint32_t)s[1] << 16 | (uint32_t)s[2] << 8 | s[3];
    return (uint32_t)s[3] << 24 | (uint32_t)s[2] << 16 | (uint32_t)s[1] << 8 | s[0];
}

/* A segment packed for a reader that wants its fields and where its payload lies, not an object: the
 * Spark engine's read side (kdissect/engines/units.py reads these with numpy; native_records.PACKED_FIELDS
 * names the same fields in the same order, and the module's PACKED_SIZE lets it check the size). */
typedef struct {
    int64_t ts_ns;
    int64_t payload_at;  /* stream offset of the captured payload's first byte */
    int64_t payload_len; /* what the headers claim the segment carried */
    uint32_t seq, ack;
    uint32_t captured; /* payload bytes captured */
    uint16_t flags, window;
    uint16_t src_port, dst_port;
    uint8_t version; /* 4 or 6: the addresses' first 4 or 16 bytes count (the rest are zero) */
    uint8_t pad[3];
    unsigned char src[16], dst[16];
} PackedSegment;

/* Where one walk's segments go, and what it counted. */
typedef struct {
    PyObject *segment_type; /* kdissect.sources.segment.TcpSegment */
    PyObject *record_type;  /* NULL or kdissect.sources.shapes.CaptureRecord: then each segment goes out as a
                               (record, segment) pair, for a reader that also wants the records */
    PyObject *packed;       /* NULL or a bytearray: then each segment is appended to it as a PackedSegment,
                               and nothing goes to out */
    const unsigned char *buf; /* the walk's buffer and the stream offset of its first byte (packed only) */
    long long base;
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

/* The last argument of a walk, what each segment becomes: None (a TcpSegment), the CaptureRecord type (a
 * (record, segment) pair), or a bytearray (a PackedSegment appended to it; only for a walk over a buffer,
 * ``buf`` at stream offset ``base``: NULL refuses it). */
int set_output(Emitter *em, PyObject *how, const unsigned char *buf, long long base);

/* A TcpSegment (or what ``segment_type`` makes) of its eleven field values, in TcpSegment's order: each
 * a new reference, which it takes (released whatever happens). NULL with an exception set, also when
 * one of them is NULL (its making failed). */
PyObject *segment_of(PyObject *segment_type, PyObject *args[SEGMENT_FIELDS]);

/* The walks, each in its own file; the module (_native.c) lists them. */
PyObject *pcapng_segments(PyObject *module, PyObject *args);
PyObject *record_segments(PyObject *module, PyObject *args);
PyObject *run_segments(PyObject *module, PyObject *args);
size_t run_header_size(void); /* _runs.c's header, for the module's RUN_HEADER_SIZE (units.RUN_HEADER's itemsize) */
/* Not a walk: where a batch of segments ends by its payload bytes (_payload_cut.c, segment.py's payload_cut). */
PyObject *payload_cut(PyObject *module, PyObject *args);

#endif
