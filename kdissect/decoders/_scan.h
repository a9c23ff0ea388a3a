/* The exchange scan of a whole frame (decoders/_native.c, "scanning"), offered to the native pairing
 * (kafka/_pairing.c) through a capsule: what the exchanges row needs of a request or a response,
 * read by the same programs and rules as decode_frame, building nothing. */
#ifndef KDISSECT_SCAN_H
#define KDISSECT_SCAN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define SCAN_CAPSULE "kdissect.decoders._native.scan_api"

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
} ScanApi;

#endif
