/* In-sync Kafka framing of one direction of a native lane (see _framing.c for its rules). */
#ifndef KDISSECT_FRAMING_H
#define KDISSECT_FRAMING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_pairing.h"

typedef struct {
    long long frame_at;      /* stream offset of the next frame boundary (the tail's first byte) */
    unsigned char *tail;     /* bytes from frame_at not yet framed */
    Py_ssize_t tail_len, tail_cap;
    long long *chunk_start;  /* where each run holding tail bytes started, and its capture time */
    long long *chunk_ts;
    Py_ssize_t chunks, chunk_cap;
    long long waiting_end;   /* the tail's frame passed its checks: its end offset; else 0 */
    int min_frame;
    long long max_frame;
    PyObject *sane;          /* the direction's Validator.sane, and what native_sane() says of it: */
    int sane_kind;           /* SANE_PYTHON: call sane; SANE_REQUEST: the table; SANE_RESPONSE: the pairing's */
    signed char *sane_versions; /* SANE_REQUEST: per api key, the newest sane version (-1: none) */
    Py_ssize_t sane_keys;
    long long max_orphan;    /* SANE_RESPONSE: the size an answer to no waiting request may have */
    Pairing *pairing;        /* the lane's pairing (_pairing.c), offered each frame first; or NULL */
    int direction;
} Framer;

enum { SANE_PYTHON, SANE_REQUEST, SANE_RESPONSE };

/* 0, or -1 with an exception set. ``native``: Validator.native_sane(). */
int framer_init(Framer *f, long long frame_at, int min_frame, long long max_frame, PyObject *sane, PyObject *native);
void framer_clear(Framer *f);
/* Whether ``data`` (the next bytes, at frame_at + tail_len) keeps the direction in sync with no
 * event but frames: 1 yes (``*frames`` set to how many it completes), 0 no, -1 error. */
int framer_check(Framer *f, const unsigned char *data, Py_ssize_t n, Py_ssize_t *frames);
/* Commit what framer_check approved (``now``: the run's capture time): the completed frames the lane's pairing does not
 * take (Frame objects) appended to ``*out``, a list made on the first (NULL while there is none). */
int framer_take(Framer *f, PyObject *data, long long offset, long long now, PyObject *frame_type, PyObject **out);
/* (frame_at, tail bytes, [(chunk start, ts), ...], waiting_end or None): what FrameSplitter.adopt takes. */
PyObject *framer_state(const Framer *f);
/* Whether the tail holds bytes. */
static inline int
framer_pending(const Framer *f)
{
    return f->tail_len > 0;
}

#endif
