/* The records and batches rows of a message's records fields, in C: the native part of
 * tables/record_rows.py (record_fields, then batch_rows and add_records) for the common case.
 *
 * record_rows(spec, located, cut, arena, prefix, base_offsets, fetch, batches, target) takes the
 * records fields one message carries (`located`: the detail walk's (topic, topic id, partition, bytes,
 * aborted) tuples) and, when every batch in them is plain — magic 2, whole, its CRC-32C right, neither
 * control nor transactional, its payload inflated without a warning, its records decoding cleanly and
 * as many as its header says, its last offset within int64, nothing after the last batch — decodes them
 * all into the records table's arena (the decoder's own loop, decoders/_records.h), appends the records
 * table's rows (each batch's span of the arena to the block, and its shared values to the table's runs)
 * and the batches rows (to `batches`' columns) and returns (batches rows added, records added, payload
 * bytes held). Anything else returns None with nothing changed (the arena cut back), and the Python
 * reference decodes the message: every warning, anomaly, transaction mark and legacy format is its. So C
 * never writes a row the reference would not.
 *
 * lane_records(...) does the same for the exchanges a lane's pairing left to the sink
 * (detail_walk.LaneParts.left), one exchange after another, without a Python step per exchange.
 *
 *   spec:    (ArenaColumns, codec names by codec number (8), timestamp type names (2), inflate, max_batches,
 *            the run's RunMeter or None)
 *            inflate(codec, payload) -> bytes, or None where the reference would warn (records.py's
 *            clean_inflate: the run's decompression budget, the inflate cache; the caller restores the
 *            budget on None)
 *   cut:     bytes kept of each key, value and header value (Payloads.keep; sys.maxsize: all)
 *   arena:   RecordArena.buffers (13 bytearrays)
 *   prefix:  (connection id, correlation id, direction)
 *   target:  (the records table's run values (lists, or typed buffers: rows.TYPED_RUNS), which SAME
 *            value each takes (-1: None), its run counts,
 *            the block's pieces, and its first offsets (a typed buffer) and record counts per batch):
 *            TableRows.record_target(); a call's batches, which follow each other in the arena, are
 *            one piece), and optionally a seventh item, (seen, least bytes): for a batch whose records
 *            take at least that many bytes on the wire, seen(payload, its first row in the call, its
 *            records, key) -> None, or a row number: its payloads are those rows' (`repeated`), so its
 *            keys, values and header values are decoded cut to 0 bytes (sizes, nulls and header keys
 *            kept; tables/repeats.py: staged as a reference).
 *            None: the records table is not written (batches alone): the arena is scratch,
 *            cut back after each message or exchange, and no records row is made
 *   batches: None (the table is not written), or a column per record_rows.BATCH_NAMES name: a typed
 *            buffer (tables/_typed.c: an int64 and a validity byte per cell, no Python object) for the
 *            integer columns, a list for the others (record_rows.batch_columns)
 *
 * Rules: no per-API code (fields come located by the schema walk); bounded as the reference is
 * (Limits.max_batches batches per field, the decompression budget spent through `inflate`, the
 * arena grown only by the decoder's loop); nothing is appended to a Python list before the last
 * batch is decoded, so a decline leaves every table as it was. Wire values are untrusted: every
 * length is checked before it is read.
 *
 * Cost (a batch per record on chatty traffic): per batch no Python object is made that the tables do
 * not keep: batches rows and the records table's integer runs go to typed columns as machine values
 * (a Cell: the prefix's and a part's ints read once, a batch's own values never made ints), a call's
 * batches are one span of the arena (one block piece), the run slots are read once per call, the
 * decompression budget only around an inflate. The cells every row a call makes has the same value in
 * (magic, crc_ok, is_control, ...: constant_cell, batch_constant_at) are written once per call as a
 * repeated item or record (flush_rows), not a cell per batch.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../decoders/_records.h"
#include "_record_rows.h"
#include "_typed.h"

#define LOG_OVERHEAD 12 /* offset (int64) + length (int32) */
#define HEADER 61       /* the record batch header (records.py's V2_HEADER) */
#define MIN_LENGTH (HEADER - LOG_OVERHEAD)
#define MAGIC_AT 16
#define CRC_FROM 21
#define ATTR_CODEC 0x07
#define ATTR_LOG_APPEND_TIME 0x08
#define ATTR_TRANSACTIONAL 0x10
#define ATTR_CONTROL 0x20
#define COLUMNS 13 /* RecordColumns' fields */
#define CODECS 8
#define BATCH_COLUMNS 25 /* record_rows.BATCH_NAMES */
#define MAX_RUNS 64    /* the records table's run columns (fewer: record_rows.SAME) */
#define RESERVED 4096  /* lane_records: the batches rows a call's columns are given room for at most */

/* A records row's values shared by its batch, in record_rows.SAME's order. */
enum {
    S_CONNECTION, S_CORRELATION, S_DIRECTION, S_TOPIC, S_TOPIC_ID, S_PARTITION, S_BATCH_BASE_OFFSET, S_MAGIC,
    S_COMPRESSION, S_BATCH_BYTES, S_COMPRESSED_BYTES, S_CRC_OK, S_IS_CONTROL, S_PRODUCER_ID, S_PRODUCER_EPOCH,
    S_BASE_SEQUENCE, S_TRANSACTIONAL, S_ABORTED, S_ABORTED_BY, S_TIMESTAMP_TYPE, SAME_COUNT
};

/* A batch decoded into the arena, its rows not yet made. */
typedef struct {
    Py_ssize_t part, position, size, compressed, decompressed, count;
    int64_t base_offset, producer_id;
    int32_t last_delta, base_sequence, record_count;
    int attrs, producer_epoch;
    Py_ssize_t starts[COLUMNS], ends[COLUMNS];
} Found;

typedef struct {
    Found *items;
    Py_ssize_t n, cap;
} FoundList;

static RecordsApi *records_api;

static int64_t
be64(const unsigned char *b)
{
    uint64_t v;
    memcpy(&v, b, sizeof v);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return (int64_t)v;
}

static uint32_t
be32(const unsigned char *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static int
be16(const unsigned char *b)
{
    return (int16_t)(uint16_t)((unsigned)b[0] << 8 | b[1]);
}

static void
lengths(PyObject *arena, Py_ssize_t *out)
{
    for (int i = 0; i < COLUMNS; i++)
        out[i] = PyByteArray_GET_SIZE(PyTuple_GET_ITEM(arena, i));
}

/* Cut the arena back to `to` (a shrink, which cannot fail; an exception being raised is kept), in the
 * room each bytearray has (_records.h: a scratch arena, cut back after every exchange, is not
 * reallocated smaller and grown again each time). */
static void
cut_back(PyObject *arena, const Py_ssize_t *to)
{
    for (int i = 0; i < COLUMNS; i++)
        into_size(PyTuple_GET_ITEM(arena, i), to[i]);
}

static Found *
next_found(FoundList *l)
{
    if (l->n == l->cap) {
        Py_ssize_t cap = l->cap ? 2 * l->cap : 16;
        Found *items = realloc(l->items, (size_t)cap * sizeof(Found));
        if (items == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        l->items = items;
        l->cap = cap;
    }
    return &l->items[l->n++];
}

/* Room for `more` items past a list's size: past what it has allocated, twice as much. PyList_Append
 * grows a list by an eighth, copying it each time (realloc seldom extends in place): the records table's
 * run lists, a value per batch for the whole run, were copied some eight times over, a third of the rows'
 * cost on chatty traffic (a pointer per batch: the room left unused is small beside the batch's rows).
 * 0, or -1 with an exception set. */
static int
list_room(PyListObject *list, Py_ssize_t more)
{
    Py_ssize_t n = Py_SIZE(list);
    if (more <= list->allocated - n)
        return 0;
    if (n > (PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(PyObject *) - 16) / 2 - more) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t room = n + more > 2 * n + 16 ? n + more : 2 * n + 16;
    PyObject **items = PyMem_Realloc(list->ob_item, (size_t)room * sizeof(PyObject *));
    if (items == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    list->ob_item = items;
    list->allocated = room;
    return 0;
}

/* A cell given as an object to a column: a list's item (what PyList_Append does, growing it as
 * list_room does), or a typed column's record (typed_append). 0, or -1 with an exception set. */
static inline int
put_obj(PyObject *column, PyObject *value)
{
    if (PyList_CheckExact(column)) {
        PyListObject *list = (PyListObject *)column;
        if (list_room(list, 1) < 0)
            return -1;
        list->ob_item[Py_SIZE(list)] = Py_NewRef(value);
        Py_SET_SIZE(list, Py_SIZE(list) + 1);
        return 0;
    }
    return typed_append(column, value);
}

/* put_obj of a new reference (stolen; NULL: the error it failed with). */
static int
put_obj_steal(PyObject *column, PyObject *value)
{
    if (value == NULL)
        return -1;
    int bad = put_obj(column, value);
    Py_DECREF(value);
    return bad;
}

/* Room for `rows` more cells in each column of a call's batches piece (lane_records: a cell per
 * exchange's batch, the piece's columns otherwise grown a step at a time from empty, each step a copy).
 * A typed column's room is allocated with its size kept (into_size, _records.h). 0, or -1. */
static int
reserve_rows(PyObject *columns, Py_ssize_t rows)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(columns); i++) {
        PyObject *column = PyTuple_GET_ITEM(columns, i);
        if (PyList_CheckExact(column)) {
            if (list_room((PyListObject *)column, rows) < 0)
                return -1;
            continue;
        }
        PyByteArrayObject *a = (PyByteArrayObject *)column;
        Py_ssize_t size = Py_SIZE(a), need = size + rows * TYPED_RECORD;
        if (!PyByteArray_CheckExact(column) || a->ob_exports > 0 || need < a->ob_alloc)
            continue;
        if (PyByteArray_Resize(column, need) < 0)
            return -1;
        into_size(column, size);
    }
    return 0;
}

/* An integer cell as a machine value: a typed column's record written inline (_typed.h), a list's int. */
static inline int
put_int(PyObject *column, int64_t v, int valid)
{
    return PyByteArray_CheckExact(column) ? typed_put_record(column, v, valid) : typed_put_int(column, v, valid);
}

/* The arguments both entry points share, checked once per call, and what a call keeps from batch to batch. */
typedef struct {
    PyObject *spec, *arena, *target, *batches; /* target, batches: NULL when not written */
    Py_ssize_t cut, max_batches;
    int slots[MAX_RUNS];     /* which SAME value each run list takes (-1: None), read once */
    int runs[MAX_RUNS], varying; /* the run lists whose value is the batch's own (not constant_cell's) */
    Py_ssize_t batch_rows, run_rows; /* rows made in the call, their constant cells not yet written */
    PyObject *meter;         /* lane_records: the run's RunMeter (NULL: none, or the caller restores it) */
    PyObject *budget;        /* the meter's `left` before the exchange's first inflate (NULL: none yet) */
    PyObject *seen;          /* the target's seen(payload, row, count) (NULL: none) */
    Py_ssize_t least, row;   /* the compressed bytes seen asks about; the next batch's row in the call */
    int span_open;           /* the arena span of the call's batches so far, one ArenaColumns when it ends */
    Py_ssize_t span_starts[COLUMNS], span_ends[COLUMNS], span_count;
} Call;

/* The payload a batch's records are read from: the field itself, or its inflated bytes (a new
 * reference in *owned). 1: there; 0: the reference would warn (declined); -1: error. */
static int
payload(Call *c, PyObject *raw, Py_ssize_t body, Py_ssize_t end, int codec, Found *f, PyObject **owned)
{
    *owned = NULL;
    if (codec == 0)
        return 1;
    if (c->meter != NULL && c->budget == NULL && (c->budget = PyObject_GetAttrString(c->meter, "left")) == NULL)
        return -1; /* (the budget as it was before this exchange's first inflate, for a decline to restore) */
    PyObject *compressed = PyBytes_FromStringAndSize(PyBytes_AS_STRING(raw) + body, end - body);
    if (compressed == NULL)
        return -1;
    PyObject *data = PyObject_CallFunction(PyTuple_GET_ITEM(c->spec, 3), "iO", codec, compressed);
    Py_DECREF(compressed);
    if (data == NULL)
        return -1;
    if (!PyBytes_CheckExact(data)) { /* None: a warning; anything else: the reference's columns decline */
        Py_DECREF(data);
        return 0;
    }
    f->compressed = end - body;
    f->decompressed = PyBytes_GET_SIZE(data);
    *owned = data;
    return 1;
}

/* Whether a batch's records are a repeat of rows the task made before (the target's seen, see the header):
 * asked with the inflated payload itself (the inflate cache hands back the object it made: its identity
 * is the key), or with a copy of an uncompressed batch's records and its CRC-32C as the key. 1, 0 (or
 * too small to ask about), -1 with an exception set. */
static int
repeated(Call *c, PyObject *inflated, PyObject *raw, Py_ssize_t body, Py_ssize_t end, uint32_t crc, int32_t count)
{
    PyObject *row;
    if (inflated != NULL) {
        if (PyBytes_GET_SIZE(inflated) < c->least || end - body < c->least)
            return 0;
        row = PyObject_CallFunction(c->seen, "OnnO", inflated, c->row, (Py_ssize_t)count, Py_None);
    } else {
        if (end - body < c->least)
            return 0;
        PyObject *records = PyBytes_FromStringAndSize(PyBytes_AS_STRING(raw) + body, end - body);
        if (records == NULL)
            return -1;
        row = PyObject_CallFunction(c->seen, "Onnk", records, c->row, (Py_ssize_t)count, (unsigned long)crc);
        Py_DECREF(records);
    }
    if (row == NULL)
        return -1;
    int again = row != Py_None;
    Py_DECREF(row);
    return again;
}

/* One field's batches into the arena. 1: all plain; 0: declined; -1: error. */
static int
decode_field(Call *c, Py_ssize_t part, PyObject *raw, FoundList *found)
{
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(raw);
    Py_ssize_t n = PyBytes_GET_SIZE(raw), pos = 0, batches = 0;
    while (pos < n) {
        if (n - pos < HEADER || b[pos + MAGIC_AT] != 2 || batches >= c->max_batches)
            return 0; /* a cut batch, another magic, the batch bound: the reference's */
        int64_t length = (int32_t)be32(b + pos + 8);
        if (length < MIN_LENGTH || length > n - pos - LOG_OVERHEAD)
            return 0;
        Py_ssize_t end = pos + LOG_OVERHEAD + (Py_ssize_t)length, body = pos + HEADER;
        int attrs = be16(b + pos + 21);
        int64_t last_offset;
        if (attrs & (ATTR_CONTROL | ATTR_TRANSACTIONAL) ||
            __builtin_add_overflow(be64(b + pos), (int64_t)(int32_t)be32(b + pos + 23), &last_offset) ||
            records_api->crc32c(b + pos + CRC_FROM, end - pos - CRC_FROM) != be32(b + pos + 17))
            return 0; /* (a last offset beyond int64: the reference's, whose cell is then null) */
        Found *f = next_found(found);
        if (f == NULL)
            return -1;
        memset(f, 0, sizeof *f);
        f->part = part;
        f->position = pos;
        f->size = end - pos;
        f->attrs = attrs;
        f->base_offset = be64(b + pos);
        f->last_delta = (int32_t)be32(b + pos + 23);
        f->producer_id = be64(b + pos + 43);
        f->producer_epoch = be16(b + pos + 51);
        f->base_sequence = (int32_t)be32(b + pos + 53);
        f->record_count = (int32_t)be32(b + pos + 57);
        int64_t base_ts = be64(b + pos + 27), max_ts = be64(b + pos + 35);
        PyObject *inflated;
        int got = payload(c, raw, body, end, attrs & ATTR_CODEC, f, &inflated);
        if (got <= 0)
            return got;
        PyObject *append_ts = attrs & ATTR_LOG_APPEND_TIME ? PyLong_FromLongLong(max_ts) : Py_NewRef(Py_None);
        if (append_ts == NULL) {
            Py_XDECREF(inflated);
            return -1;
        }
        int again = c->seen == NULL ? 0 : repeated(c, inflated, raw, body, end, be32(b + pos + 17), f->record_count);
        if (again < 0) {
            Py_XDECREF(inflated);
            Py_DECREF(append_ts);
            return -1;
        }
        Py_ssize_t cut = again ? 0 : c->cut; /* a repeat of rows made before: staged as a reference to them */
        lengths(c->arena, f->starts);
        f->count = inflated == NULL
                       ? records_api->v2_into(raw, body, end, f->base_offset, base_ts, append_ts, cut, c->arena)
                       : records_api->v2_into(inflated, 0, f->decompressed, f->base_offset, base_ts, append_ts,
                                              cut, c->arena);
        Py_XDECREF(inflated);
        Py_DECREF(append_ts);
        if (f->count == -1) {
            if (!PyErr_ExceptionMatches(PyExc_BufferError))
                return -1;
            PyErr_Clear(); /* an array still points into the arena: the reference starts new buffers */
            return 0;
        }
        if (f->count < 0 || f->count != f->record_count)
            return 0; /* records the reference decodes as objects, or a count it warns about */
        lengths(c->arena, f->ends);
        c->row += f->count;
        pos = end;
        batches++;
    }
    return 1;
}

static PyObject *
lengths_tuple(const Py_ssize_t *v)
{
    PyObject *t = PyTuple_New(COLUMNS);
    for (int i = 0; t != NULL && i < COLUMNS; i++) {
        PyObject *x = PyLong_FromSsize_t(v[i]);
        if (x == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

/* A tuple of `n` new references (stolen, NULLs allowed: then NULL) of the tuple subclass `type`. */
static PyObject *
tuple_of(PyTypeObject *type, PyObject **items, Py_ssize_t n)
{
    PyObject *t = NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        if (items[i] == NULL)
            goto fail;
    t = type->tp_alloc(type, n);
    if (t == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SET_ITEM(t, i, items[i]);
    return t;
fail:
    for (Py_ssize_t i = 0; i < n; i++)
        Py_XDECREF(items[i]);
    return NULL;
}

/* A cell a batch's rows share: an object (`obj`), a machine value (`machine`: `v`, null unless `valid`),
 * or both (an exact int read once per call or part). A typed column takes the machine value, written
 * as it is (no int object per cell); a list the object, or an int made from the machine value. */
typedef struct {
    PyObject *obj; /* borrowed; NULL: the machine value only */
    int64_t v;
    int valid, machine;
} Cell;

static Cell
machine_cell(int64_t v, int valid)
{
    return (Cell){NULL, v, valid, 1};
}

/* An object's cell: an exact int also as its machine value, read as typed_append reads it (an integer
 * int64 cannot hold: null). */
static Cell
object_cell(PyObject *obj)
{
    Cell cell = {obj, 0, 0, 0};
    if (PyLong_CheckExact(obj)) {
        int overflow = 0;
        cell.v = (int64_t)PyLong_AsLongLongAndOverflow(obj, &overflow);
        cell.machine = 1;
        cell.valid = !overflow;
    }
    return cell;
}

/* A cell to a column. 0, or -1 with an exception set. (Inline: some thirty a batch.) */
static inline int
put_cell(PyObject *column, const Cell *cell)
{
    if (cell->machine && (cell->obj == NULL || PyByteArray_CheckExact(column)))
        return put_int(column, cell->v, cell->valid);
    return put_obj(column, cell->obj);
}

/* The same cell `n` times to a column: put_cell once, then its item (a list's) or its record (a typed
 * column's) repeated in room made once. The constant columns of a call's rows, written when it ends
 * (flush_rows) and not a cell per batch: every row the call makes has the same value there, and no
 * other code appends to the call's columns while it runs. 0, or -1 with an exception set. */
static int
put_many(PyObject *column, const Cell *cell, Py_ssize_t n)
{
    if (n <= 0 || put_cell(column, cell) < 0)
        return n <= 0 ? 0 : -1;
    Py_ssize_t size = Py_SIZE(column), more = n - 1;
    if (PyList_CheckExact(column)) {
        PyListObject *list = (PyListObject *)column;
        if (list_room(list, more) < 0)
            return -1;
        for (Py_ssize_t i = 0; i < more; i++)
            list->ob_item[size + i] = Py_NewRef(list->ob_item[size - 1]);
        Py_SET_SIZE(list, size + more);
        return 0;
    }
    if (!PyByteArray_CheckExact(column)) { /* (a list subclass: a cell at a time) */
        for (Py_ssize_t i = 0; i < more; i++)
            if (put_cell(column, cell) < 0)
                return -1;
        return 0;
    }
    if (more > (PY_SSIZE_T_MAX - size) / TYPED_RECORD - 1) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t need = size + more * TYPED_RECORD; /* (grown as typed_put grows it: not a copy per call) */
    if (!into_room((PyByteArrayObject *)column, need) &&
        PyByteArray_Resize(column, need > PY_SSIZE_T_MAX / 3 ? need : need + need / 2 + 16) < 0)
        return -1;
    into_size(column, need);
    char *at = PyByteArray_AS_STRING(column) + size;
    for (Py_ssize_t i = 0; i < more; i++)
        memcpy(at + i * TYPED_RECORD, at - TYPED_RECORD, TYPED_RECORD);
    return 0;
}

/* The value a records run (a SAME slot; -1: none, None) takes in every row made in C, where it is one
 * (batch_cells and make_rows make only plain batches: magic 2, CRC right, neither control nor
 * transactional, nor aborted). 1 and the cell, or 0: the batch's own. */
static int
constant_cell(int slot, Cell *cell)
{
    switch (slot) {
    case S_MAGIC:
        *cell = machine_cell(2, 1);
        return 1;
    case S_CRC_OK:
        *cell = object_cell(Py_True);
        return 1;
    case S_IS_CONTROL:
    case S_TRANSACTIONAL:
    case S_ABORTED:
        *cell = object_cell(Py_False);
        return 1;
    case S_ABORTED_BY:
    case -1:
        *cell = object_cell(Py_None);
        return 1;
    default:
        return 0;
    }
}

/* The batches columns every plain batch's row has the same value in (BATCH_NAMES: magic, crc_ok,
 * complete, is_control, transactional, warnings), which batch_cells leaves to flush_rows. */
#define BATCH_CONSTANTS 6
static const int batch_constant_at[BATCH_CONSTANTS] = {9, 17, 18, 19, 20, 24};

/* A batch's batches row, a cell per column of `columns` (BATCH_NAMES: the prefix, then batch_rows' values)
 * but the constant ones (batch_constant_at, written by flush_rows). */
static int
batch_cells(PyObject *columns, const Found *f, const Cell loc[3], const Cell prefix[3], PyObject *codec_name)
{
#define COL(i) PyTuple_GET_ITEM(columns, i)
    int ratio = f->decompressed && f->compressed;
    return put_cell(COL(0), &prefix[0]) || put_cell(COL(1), &prefix[1]) || put_cell(COL(2), &prefix[2]) ||
           put_cell(COL(3), &loc[0]) || put_cell(COL(4), &loc[1]) || put_cell(COL(5), &loc[2]) ||
           put_int(COL(6), f->position, 1) ||
           put_int(COL(7), f->base_offset, 1) || put_int(COL(8), f->base_offset + f->last_delta, 1) ||
           put_obj(COL(10), codec_name) ||
           put_int(COL(11), f->record_count, 1) || put_int(COL(12), f->count, 1) ||
           put_int(COL(13), f->size, 1) ||
           put_int(COL(14), f->compressed, f->compressed != 0) ||
           put_int(COL(15), f->decompressed, f->decompressed != 0) ||
           put_obj_steal(COL(16), ratio ? PyFloat_FromDouble((double)f->decompressed / (double)f->compressed)
                                        : Py_NewRef(Py_None)) ||
           put_int(COL(21), f->producer_id, 1) || put_int(COL(22), f->producer_epoch, 1) ||
           put_int(COL(23), f->base_sequence, 1)
               ? -1
               : 0;
#undef COL
}

/* The open span of the arena to the block, as one ArenaColumns for all its batches. 0, or -1 with an
 * exception set. */
static int
flush_span(Call *c)
{
    if (!c->span_open)
        return 0;
    c->span_open = 0;
    PyTypeObject *arena_columns = (PyTypeObject *)PyTuple_GET_ITEM(c->spec, 0);
    PyObject *items[4] = {Py_NewRef(c->arena), lengths_tuple(c->span_starts), lengths_tuple(c->span_ends),
                          PyLong_FromSsize_t(c->span_count)};
    PyObject *columns = tuple_of(arena_columns, items, 4);
    if (columns == NULL)
        return -1;
    int bad = PyList_Append(PyTuple_GET_ITEM(c->target, 3), columns);
    Py_DECREF(columns);
    return bad;
}

/* The call's rows made whole: the open span to the block, and the constant cells of the rows made since
 * the last flush (put_many). 0, or -1 with an exception set. */
static int
flush_rows(Call *c)
{
    if (flush_span(c) < 0)
        return -1;
    const Cell batch_constant[BATCH_CONSTANTS] = {machine_cell(2, 1), object_cell(Py_True), object_cell(Py_True),
                                                  object_cell(Py_False), object_cell(Py_False), object_cell(Py_None)};
    for (int k = 0; c->batches != NULL && k < BATCH_CONSTANTS; k++)
        if (put_many(PyTuple_GET_ITEM(c->batches, batch_constant_at[k]), &batch_constant[k], c->batch_rows) < 0)
            return -1;
    c->batch_rows = 0;
    for (Py_ssize_t i = 0; c->target != NULL && i < PyTuple_GET_SIZE(PyTuple_GET_ITEM(c->target, 0)); i++) {
        Cell cell;
        if (constant_cell(c->slots[i], &cell) &&
            put_many(PyTuple_GET_ITEM(PyTuple_GET_ITEM(c->target, 0), i), &cell, c->run_rows) < 0)
            return -1;
    }
    c->run_rows = 0;
    return 0;
}

/* A batch's records rows: its records to the arena span of the call (one block entry for the batches
 * that follow each other in the arena: they do within a call), its first offset and count to the
 * block's, its shared values to the runs. */
static int
add_batch(Call *c, const Found *f, const Cell *first, const Cell same[SAME_COUNT])
{
    PyObject *runs = PyTuple_GET_ITEM(c->target, 0), *counts = PyTuple_GET_ITEM(c->target, 2);
    PyObject *firsts = PyTuple_GET_ITEM(c->target, 4), *batch_counts = PyTuple_GET_ITEM(c->target, 5);
    if (c->span_open && memcmp(c->span_ends, f->starts, sizeof c->span_ends) == 0) {
        memcpy(c->span_ends, f->ends, sizeof c->span_ends);
        c->span_count += f->count;
    } else {
        if (flush_span(c) < 0)
            return -1;
        memcpy(c->span_starts, f->starts, sizeof c->span_starts);
        memcpy(c->span_ends, f->ends, sizeof c->span_ends);
        c->span_count = f->count;
        c->span_open = 1;
    }
    PyObject *count = PyLong_FromSsize_t(f->count);
    int bad = count == NULL || put_cell(firsts, first) < 0 || put_obj(batch_counts, count) < 0;
    for (Py_ssize_t i = 0; !bad && i < c->varying; i++)
        bad = put_cell(PyTuple_GET_ITEM(runs, c->runs[i]), &same[c->slots[c->runs[i]]]) < 0;
    bad = bad || put_obj(counts, count) < 0;
    c->run_rows++;
    Py_XDECREF(count);
    return bad ? -1 : 0;
}

/* Whether an object is a str or None (a topic), or an int or None (a partition): the items of a base
 * offsets key that are equal only where their hashes are. */
#define TOPIC_LIKE(o) (PyUnicode_CheckExact(o) || (o) == Py_None)
#define PARTITION_LIKE(o) (PyLong_CheckExact(o) || (o) == Py_None)

/* The base offset the broker assigned to (topic, partition), from the exchange's `base_offsets` dict
 * (borrowed; NULL: none, or an error set). A dict of a few (str or None, int or None) keys (an
 * exchange's partitions: one, on chatty traffic) is scanned with each key's items compared, as the
 * lookup compares them, without the key tuple and its hash a lookup makes; any other, looked up. */
static PyObject *
base_offset_of(PyObject *base_offsets, PyObject *topic, PyObject *partition)
{
    Py_ssize_t at = 0;
    PyObject *key, *value;
    int scan = PyDict_GET_SIZE(base_offsets) <= 4 && TOPIC_LIKE(topic) && PARTITION_LIKE(partition);
    while (scan && PyDict_Next(base_offsets, &at, &key, &value)) {
        if (!PyTuple_CheckExact(key) || PyTuple_GET_SIZE(key) != 2 || !TOPIC_LIKE(PyTuple_GET_ITEM(key, 0)) ||
            !PARTITION_LIKE(PyTuple_GET_ITEM(key, 1))) {
            scan = 0;
            break;
        }
        int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(key, 0), topic, Py_EQ);
        if (same > 0)
            same = PyObject_RichCompareBool(PyTuple_GET_ITEM(key, 1), partition, Py_EQ);
        if (same < 0)
            return NULL;
        if (same)
            return value;
    }
    if (scan)
        return NULL;
    key = PyTuple_Pack(2, topic, partition);
    value = key == NULL ? NULL : PyDict_GetItemWithError(base_offsets, key);
    Py_XDECREF(key);
    return value;
}

/* The rows of the batches found[from:to] (one message's, `located`; `prefix`: connection id, correlation
 * id, direction), in the reference's order; the records added through *added. */
static int
make_rows(Call *c, const FoundList *found, Py_ssize_t from, Py_ssize_t to, PyObject *located,
          PyObject *const prefix[3], PyObject *base_offsets, int fetch, Py_ssize_t *added)
{
    PyObject *codec_names = PyTuple_GET_ITEM(c->spec, 1), *ts_names = PyTuple_GET_ITEM(c->spec, 2);
    PyObject *assigned = NULL; /* the part's base offset (borrowed) */
    Cell base = {NULL, 0, 0, 0}; /* its machine value */
    Py_ssize_t part = -1, index = 0;  /* records of the part so far */
    Cell cells[3], loc_cells[3]; /* the prefix's, and the part's topic, topic id and partition */
    for (int k = 0; k < 3; k++)
        cells[k] = object_cell(prefix[k]);
    for (Py_ssize_t i = from; i < to; i++) {
        const Found *f = &found->items[i];
        PyObject *loc = PySequence_Fast_GET_ITEM(located, f->part);
        if (f->part != part) {
            part = f->part;
            index = 0;
            for (int k = 0; k < 3; k++)
                loc_cells[k] = object_cell(PyTuple_GET_ITEM(loc, k));
            assigned = base_offset_of(base_offsets, PyTuple_GET_ITEM(loc, 0), PyTuple_GET_ITEM(loc, 2));
            if (assigned == NULL && PyErr_Occurred())
                return -1;
            if (assigned != NULL && !(base = object_cell(assigned)).machine) {
                PyErr_SetString(PyExc_TypeError, "record_rows: a base offset is not an int");
                return -1;
            }
        }
        PyObject *codec_name = PyTuple_GET_ITEM(codec_names, f->attrs & ATTR_CODEC);
        if (c->batches != NULL && batch_cells(c->batches, f, loc_cells, cells, codec_name) < 0)
            return -1;
        c->batch_rows += c->batches != NULL;
        if (f->count == 0 || c->target == NULL) /* (add_records passes batches without records by) */
            continue;
        /* The first offset: assigned + index (null past int64, as typed_cell makes it: its records' offsets
         * are unknown either way), WIRE (-1: fetch, the records' own offsets), or null (unknown). */
        Cell first = machine_cell(-1, fetch);
        if (assigned != NULL)
            first.valid = base.valid && !__builtin_add_overflow(base.v, (int64_t)index, &first.v);
        index += f->count;
        Cell same[SAME_COUNT]; /* (constant_cell's slots left unset: flush_rows writes them, add_batch reads no other) */
        same[S_CONNECTION] = cells[0], same[S_CORRELATION] = cells[1], same[S_DIRECTION] = cells[2];
        same[S_TOPIC] = loc_cells[0], same[S_TOPIC_ID] = loc_cells[1], same[S_PARTITION] = loc_cells[2];
        same[S_BATCH_BASE_OFFSET] = machine_cell(f->base_offset, 1), same[S_COMPRESSION] = object_cell(codec_name);
        same[S_BATCH_BYTES] = machine_cell(f->decompressed ? f->decompressed : f->size, 1);
        same[S_COMPRESSED_BYTES] = machine_cell(f->compressed, f->compressed != 0);
        same[S_PRODUCER_ID] = machine_cell(f->producer_id, 1), same[S_PRODUCER_EPOCH] = machine_cell(f->producer_epoch, 1);
        same[S_BASE_SEQUENCE] = machine_cell(f->base_sequence, 1);
        same[S_TIMESTAMP_TYPE] = object_cell(PyTuple_GET_ITEM(ts_names, (f->attrs & ATTR_LOG_APPEND_TIME) >> 3));
        if (add_batch(c, f, &first, same) < 0)
            return -1;
        *added += f->count;
    }
    return 0;
}

/* The records table's target (see the header), its run slots read into the call. 0, or -1 with an
 * exception set. */
static int
check_target(Call *c)
{
    PyObject *target = c->target;
    if (!PyTuple_Check(target) || PyTuple_GET_SIZE(target) < 6 || PyTuple_GET_SIZE(target) > 7 ||
        !PyTuple_Check(PyTuple_GET_ITEM(target, 0)) ||
        !PyTuple_Check(PyTuple_GET_ITEM(target, 1)) ||
        PyTuple_GET_SIZE(PyTuple_GET_ITEM(target, 0)) != PyTuple_GET_SIZE(PyTuple_GET_ITEM(target, 1)) ||
        PyTuple_GET_SIZE(PyTuple_GET_ITEM(target, 0)) > MAX_RUNS || !PyList_Check(PyTuple_GET_ITEM(target, 2)) ||
        !PyList_Check(PyTuple_GET_ITEM(target, 3)) || !PyByteArray_CheckExact(PyTuple_GET_ITEM(target, 4)) ||
        !PyList_Check(PyTuple_GET_ITEM(target, 5))) {
        PyErr_SetString(PyExc_TypeError, "record_rows: see tables/_record_rows.c for the target");
        return -1;
    }
    if (!typed_columns(PyTuple_GET_ITEM(target, 0))) {
        PyErr_SetString(PyExc_TypeError, "record_rows: the run values must be lists or typed buffers");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(PyTuple_GET_ITEM(target, 0)); i++) {
        long slot = PyLong_AsLong(PyTuple_GET_ITEM(PyTuple_GET_ITEM(target, 1), i));
        if (slot == -1 && PyErr_Occurred())
            return -1;
        c->slots[i] = slot >= 0 && slot < SAME_COUNT ? (int)slot : -1;
        Cell unused;
        if (!constant_cell(c->slots[i], &unused))
            c->runs[c->varying++] = (int)i;
    }
    if (PyTuple_GET_SIZE(target) == 7 && PyTuple_GET_ITEM(target, 6) != Py_None) {
        PyObject *repeats = PyTuple_GET_ITEM(target, 6);
        if (!PyTuple_Check(repeats) || PyTuple_GET_SIZE(repeats) != 2) {
            PyErr_SetString(PyExc_TypeError, "record_rows: the target's repeats are (seen, least compressed bytes)");
            return -1;
        }
        c->seen = PyTuple_GET_ITEM(repeats, 0);
        if ((c->least = PyLong_AsSsize_t(PyTuple_GET_ITEM(repeats, 1))) == -1 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

static int
check_call(Call *c, PyObject *batches)
{
    PyObject *spec = c->spec;
    c->meter = c->budget = c->seen = NULL;
    c->span_open = 0;
    c->least = c->row = c->batch_rows = c->run_rows = 0;
    c->varying = 0;
    c->batches = batches == Py_None ? NULL : batches;
    if (c->target == Py_None) /* batches alone */
        c->target = NULL;
    if (records_api == NULL && (records_api = PyCapsule_Import(RECORDS_CAPSULE, 0)) == NULL)
        return -1;
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 6 || !PyType_Check(PyTuple_GET_ITEM(spec, 0)) ||
        !PyTuple_Check(PyTuple_GET_ITEM(spec, 1)) || PyTuple_GET_SIZE(PyTuple_GET_ITEM(spec, 1)) != CODECS ||
        !PyTuple_Check(PyTuple_GET_ITEM(spec, 2)) || PyTuple_GET_SIZE(PyTuple_GET_ITEM(spec, 2)) != 2 ||
        PyTuple_GET_SIZE(c->arena) != COLUMNS ||
        (c->batches != NULL && (!PyTuple_Check(c->batches) || PyTuple_GET_SIZE(c->batches) != BATCH_COLUMNS ||
                                !typed_columns(c->batches)))) {
        PyErr_SetString(PyExc_TypeError, "record_rows: see tables/_record_rows.c for the arguments");
        return -1;
    }
    if (c->target != NULL && check_target(c) < 0)
        return -1;
    for (int i = 0; i < COLUMNS; i++)
        if (!PyByteArray_CheckExact(PyTuple_GET_ITEM(c->arena, i))) {
            PyErr_SetString(PyExc_TypeError, "record_rows: the arena must be 13 bytearrays");
            return -1;
        }
    c->max_batches = PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, 4));
    return c->max_batches == -1 && PyErr_Occurred() ? -1 : 0;
}

/* One message's fields (`fields`, from PySequence_Fast) into the arena, appended to `found`:
 * 1, 0 (declined: the caller cuts the arena back) or -1. */
static int
decode_message(Call *c, PyObject *fields, FoundList *found)
{
    int ok = 1;
    for (Py_ssize_t i = 0; ok == 1 && i < PySequence_Fast_GET_SIZE(fields); i++) {
        PyObject *loc = PySequence_Fast_GET_ITEM(fields, i);
        ok = PyTuple_CheckExact(loc) && PyTuple_GET_SIZE(loc) == 5 && PyBytes_CheckExact(PyTuple_GET_ITEM(loc, 3))
                 ? decode_field(c, i, PyTuple_GET_ITEM(loc, 3), found)
                 : 0;
    }
    return ok;
}

static Py_ssize_t
held_by(const FoundList *found, Py_ssize_t from)
{
    Py_ssize_t held = 0;
    for (Py_ssize_t i = from; i < found->n; i++)
        held += found->items[i].decompressed ? found->items[i].decompressed : found->items[i].size;
    return held;
}

/* record_rows(spec, located, cut, arena, prefix, base_offsets, fetch, batches, target)
 *     -> (records added, payload bytes held) | None
 * One message (see the header). */
PyObject *
record_rows(PyObject *module, PyObject *args)
{
    Call c;
    PyObject *located, *prefix, *base_offsets, *batches;
    int fetch;
    if (!PyArg_ParseTuple(args, "OOnO!O!O!pOO:record_rows", &c.spec, &located, &c.cut, &PyTuple_Type, &c.arena,
                          &PyTuple_Type, &prefix, &PyDict_Type, &base_offsets, &fetch, &batches, &c.target))
        return NULL;
    if (check_call(&c, batches) < 0)
        return NULL;
    if (PyTuple_GET_SIZE(prefix) != 3) {
        PyErr_SetString(PyExc_TypeError, "record_rows: the prefix is (connection id, correlation id, direction)");
        return NULL;
    }
    PyObject *fields = PySequence_Fast(located, "record_rows: located must be a sequence");
    if (fields == NULL)
        return NULL;
    Py_ssize_t before[COLUMNS], added = 0;
    lengths(c.arena, before);
    FoundList found = {NULL, 0, 0};
    PyObject *out = NULL;
    int ok = decode_message(&c, fields, &found);
    if (ok == 1) {
        PyObject *values[3] = {PyTuple_GET_ITEM(prefix, 0), PyTuple_GET_ITEM(prefix, 1), PyTuple_GET_ITEM(prefix, 2)};
        if (make_rows(&c, &found, 0, found.n, fields, values, base_offsets, fetch, &added) == 0 && flush_rows(&c) == 0)
            out = Py_BuildValue("(nn)", added, c.target == NULL ? 0 : held_by(&found, 0));
        if (c.target == NULL) /* a scratch arena */
            cut_back(c.arena, before);
    } else {
        cut_back(c.arena, before); /* declined (0) or failed (-1): the arena as it was */
        if (ok == 0)
            out = Py_NewRef(Py_None);
    }
    free(found.items);
    Py_DECREF(fields);
    return out;
}

/* One exchange of the lane's `left` list: both messages decoded, then their rows; 1 done, 0 declined
 * (the arena as it was), -1 error. */
static int
lane_exchange(Call *c, PyObject *t, FoundList *found, Py_ssize_t *added, Py_ssize_t *held)
{
    static PyObject *directions[2];
    PyObject *fields[2] = {NULL, NULL};
    Py_ssize_t from[3], before[COLUMNS];
    int ok = 1;
    if (!PyDict_Check(PyTuple_GET_ITEM(t, 9)))
        return 0;
    if (directions[0] == NULL && ((directions[0] = PyUnicode_InternFromString("produce")) == NULL ||
                                  (directions[1] = PyUnicode_InternFromString("fetch")) == NULL))
        return -1;
    lengths(c->arena, before);
    found->n = 0;
    c->row = *added;
    for (int d = 0; d < 2; d++) {
        from[d] = found->n;
        if (ok == 1 && PyTuple_GET_ITEM(t, 3 + d) != Py_None) {
            fields[d] = PySequence_Fast(PyTuple_GET_ITEM(t, 7 + d), "record_rows: located must be a sequence");
            ok = fields[d] == NULL ? -1 : decode_message(c, fields[d], found);
        }
    }
    from[2] = found->n;
    for (int d = 0; ok == 1 && d < 2; d++) {
        PyObject *prefix[3] = {PyTuple_GET_ITEM(t, 0), PyTuple_GET_ITEM(t, 1), directions[d]};
        if (from[d] < from[d + 1] &&
            make_rows(c, found, from[d], from[d + 1], fields[d], prefix, PyTuple_GET_ITEM(t, 9), d, added) < 0)
            ok = -1;
    }
    if (ok == 1 && c->target != NULL)
        *held += held_by(found, 0);
    else
        cut_back(c->arena, before); /* declined, failed, or a scratch arena (no records table) */
    Py_XDECREF(fields[0]);
    Py_XDECREF(fields[1]);
    return ok;
}

/* lane_records(spec, left, start, cut, arena, batches, target, errors, brokers, allowance)
 *     -> (next, records added, payload bytes held)
 * The records and batches rows of the lane's `left` exchanges (detail_walk.LaneParts.left) from
 * `start` on, one exchange at a time, as TableSink._lane_parts makes them, stopping before an exchange
 * it leaves to the sink: one whose errors (`errors`: the errors table is written) or brokers
 * (`brokers`) rows the sink makes, or whose records are not plain (the run's decompression budget
 * spec[5] restored). `batches` (the columns, or None: not written) receives the batches rows. It also
 * stops right after the exchange whose records bring the payload bytes held past `allowance` (-1: no
 * bound), for the sink's payload budget. */
PyObject *
lane_records(PyObject *module, PyObject *args)
{
    Call c;
    PyObject *left, *batches;
    Py_ssize_t start, allowance, added = 0, held = 0;
    int errors, brokers;
    if (!PyArg_ParseTuple(args, "OO!nnO!OOppn:lane_records", &c.spec, &PyList_Type, &left, &start, &c.cut,
                          &PyTuple_Type, &c.arena, &batches, &c.target, &errors, &brokers, &allowance))
        return NULL;
    if (check_call(&c, batches) < 0)
        return NULL;
    c.meter = PyTuple_GET_ITEM(c.spec, 5) == Py_None ? NULL : PyTuple_GET_ITEM(c.spec, 5);
    FoundList found = {NULL, 0, 0};
    Py_ssize_t i = start < 0 ? 0 : start, exchanges = PyList_GET_SIZE(left) - i;
    if (c.batches != NULL && exchanges > 0 && reserve_rows(c.batches, exchanges < RESERVED ? exchanges : RESERVED) < 0)
        return NULL;
    int ok = 1;
    for (; i < PyList_GET_SIZE(left); i++) {
        PyObject *t = PyList_GET_ITEM(left, i);
        if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 10 ||
            (errors && PyObject_IsTrue(PyTuple_GET_ITEM(t, 5))) || (brokers && PyObject_IsTrue(PyTuple_GET_ITEM(t, 6))))
            break;
        ok = lane_exchange(&c, t, &found, &added, &held);
        if (ok == 0 && c.budget != NULL && PyObject_SetAttrString(c.meter, "left", c.budget) < 0)
            ok = -1;
        Py_CLEAR(c.budget);
        if (ok <= 0)
            break;
        if (allowance >= 0 && held > allowance) {
            i++;
            break;
        }
    }
    free(found.items);
    if (ok >= 0 && flush_rows(&c) < 0)
        ok = -1;
    if (ok < 0)
        return NULL;
    return Py_BuildValue("(nnn)", i, added, held);
}
