/* The exchange scan of a whole frame (decoders/_native.c, "scanning"), offered to the native pairing
 * (kafka/_pairing.c) through a capsule: what the exchanges row needs of a request or a response,
 * read by the same programs and rules as decode_frame, building nothing. */
#ifndef KDISSECT_SCAN_H
#define KDISSECT_SCAN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define SCAN_CAPSULE "kdissect.decoders._native.scan_api"

enum { SLOT_CLIENT_ID = 1, SLOT_ACKS = 2, SLOT_THROTTLE = 3, SLOTS = 4 }; /* program.py's SCANNED, from 1 */

typedef struct {
    int found[SLOTS];        /* whether the top-level field of that slot is in the message */
    long long value[SLOTS];  /* its value (integers) */
    Py_ssize_t at[SLOTS];    /* strings: where its bytes start (value: their length; -1 null) */
    long long first_error;   /* the first non-zero error code in the order entities.walk lists them */
    long long errors;        /* how many error codes are non-zero */
} Scan;

typedef struct {
    /* 1: the frame b[0:L] decodes exactly (header, body, no byte after it) with the programs of
     * (api_key, api_version) in ``programs`` (compiler.FRAME_PROGRAMS[kind]), *out filled; 0: it does
     * not, or only the Python decoder can tell (no programs yet, a tagged error code...); -1: error. */
    int (*scan_frame)(PyObject *programs, const unsigned char *b, Py_ssize_t L, int api_key, int api_version,
                      Scan *out);
} ScanApi;

#endif
