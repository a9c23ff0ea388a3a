/* The exchange scan of a whole frame (decoders/_native.c, "scanning"), offered to the native pairing
 * (kafka/_pairing.c) through a capsule: what the exchanges row needs of a request or a response,
 * read by the same programs and rules as decode_frame, building nothing. The same capsule offers the
 * readers in place ("reading in place" in _native.c): a frame's programs, a field skipped, a field's
 * value, an array's count, read by the same rules, for a walk over the bytes (tables/_walk_bytes.c). */
#ifndef KDISSECT_SCAN_H
#define KDISSECT_SCAN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define SCAN_CAPSULE "kdissect.decoders._native.scan_api"

/* Element kinds and node flags: program.py's KINDS and flags, in that order. */
enum {
    K_BOOL, K_INT8, K_INT16, K_UINT16, K_INT32, K_UINT32, K_INT64, K_FLOAT64, K_UUID,
    K_VARINT, K_VARLONG, K_UVARINT, K_STRING, K_BYTES, K_RECORDS, K_STRUCT, K_COUNT
};
enum { F_ARRAY = 1, F_NULLABLE = 2, F_COMPACT = 4, F_FLEXIBLE = 8, F_ERROR = 16, F_TOPIC = 32, F_TOPIC_ID = 64 };

/* One field of a program, as _native.c builds it from program.py's tuples (read-only for others). */
typedef struct KdNode {
    int kind;
    int flags;
    int container;       /* its values can be GC-tracked: arrays (lists) and structs */
    int holds_containers; /* structs: some member is a container (the dict is tracked from the start) */
    Py_ssize_t min_elem; /* fewest bytes one array element takes */
    long long tag;       /* -1 for regular fields */
    int within;          /* F_ERROR, F_TOPIC, F_TOPIC_ID: of its flags and its members' (what a scan reads in it) */
    PyObject *key;       /* interned result key */
    PyObject *layout;    /* structs: dict of the regular keys, in order, to None (copied per value) */
    Py_ssize_t nregular, ntagged;
    struct KdNode *regular, *tagged;
} KdNode;

enum { SLOT_CLIENT_ID = 1, SLOT_ACKS = 2, SLOT_THROTTLE = 3, SLOTS = 4 }; /* program.py's SCANNED, from 1 */

enum { SCAN_NAMED = 16, SCAN_CODES = 64 }; /* what a scan asked for names lists at most (else it declines) */

/* A struct's (topic, topic id) context, as entities.walk's Context has it: where the topic name's bytes
 * start (topic_len: their length) and where the topic id's 16 bytes do; -1 where it has none. */
typedef struct {
    Py_ssize_t topic, topic_len, id;
} Named;

typedef struct {
    int found[SLOTS];        /* whether the top-level field of that slot is in the message */
    long long value[SLOTS];  /* its value (integers) */
    Py_ssize_t at[SLOTS];    /* strings: where its bytes start (value: their length; -1 null) */
    long long first_error;   /* the first non-zero error code in the order entities.walk lists them */
    long long errors;        /* how many error codes are non-zero */
    /* asked for with names (the live figures' topics and error names; named_topics.py is the reference): */
    int names;
    int nnamed, ncodes;
    Named named[SCAN_NAMED];     /* the distinct contexts of the structs that have one, in walk order */
    long long codes[SCAN_CODES]; /* every non-zero error code, in walk order */
} Scan;

typedef struct {
    /* 1: the frame b[0:L] decodes exactly (header, body, no byte after it) with the programs of
     * (api_key, api_version) in ``programs`` (compiler.FRAME_PROGRAMS[kind]), *out filled (with ``names``
     * also its contexts and codes); 0: it does not, or only the Python decoder can tell (no programs yet,
     * a tagged error code, more contexts or codes than a Scan lists...); -1: error. */
    int (*scan_frame)(PyObject *programs, const unsigned char *b, Py_ssize_t L, int api_key, int api_version,
                      int names, Scan *out);
    /* Reading in place: each reads the field ``nd`` at b[*p:L] as decode_frame would and moves *p past it,
     * or declines (bytes that break a rule or that only the Python decoder reads: no exception left). */
    /* 1 with the header's and the body's root nodes of (api_key, api_version) in ``programs``, 0 none, -1 error */
    int (*frame_roots)(PyObject *programs, int api_key, int api_version, const KdNode **header, const KdNode **body);
    /* 0 skipped, building nothing; else it declines */
    int (*skip)(const unsigned char *b, Py_ssize_t L, Py_ssize_t *p, const KdNode *nd);
    /* its value (a new reference), or NULL: declined (no exception) or an error (exception set) */
    PyObject *(*value)(const unsigned char *b, Py_ssize_t L, Py_ssize_t *p, const KdNode *nd);
    /* a string, bytes or records field: 1 with its bytes at b[*at:*at + *n] (*n = -1: null), else it declines */
    int (*span)(const unsigned char *b, Py_ssize_t L, Py_ssize_t *p, const KdNode *nd, Py_ssize_t *at, Py_ssize_t *n);
    /* an array of structs or a struct: 1 with *n the structs that follow from *p (a struct: 1), 0 null, else it
     * declines (*p after the count or the nullable struct's marker) */
    int (*items)(const unsigned char *b, Py_ssize_t L, Py_ssize_t *p, const KdNode *nd, long long *n);
    /* an integer field (not an array, not a bool: a kind an int64 holds): 1 with *v its value, as machine value (no
     * object made), else it declines */
    int (*integer)(const unsigned char *b, Py_ssize_t L, Py_ssize_t *p, const KdNode *nd, long long *v);
} ScanApi;

#endif
