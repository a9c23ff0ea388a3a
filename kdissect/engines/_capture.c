/* The live engine's device read in C: libpcap's packets -> CaptureRecord objects, a batch per call.
 *
 * The twin of live.py's PcapDevice._read_python (pcap_next_ex through ctypes, about 2-3 µs a packet,
 * a large share of a packet's cost once the decoding is native). This is the only C that does I/O,
 * and it lives in the engine that owns the device, not in the sans-I/O sources stage.
 *
 * Rules:
 * - libpcap is not linked: the caller passes the address of pcap_next_ex from the library the ctypes
 *   binding loaded, and the pcap_t handle's address, so this builds without libpcap's headers and
 *   uses the very library the device was opened with.
 * - A record equals what _read_python builds: CaptureRecord(link_type, ts_ns, data, wire_len, 0),
 *   ts_ns = tv_sec * 10^9 + tv_usec * 1000 (libpcap's default microsecond timestamps).
 * - It reads at most ``limit`` packets and says why it stopped: READ_FULL (the limit), READ_EMPTY
 *   (none waiting: the handle is non-blocking), or libpcap's negative status (-1 error, -2 breakloop).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <sys/time.h>

/* libpcap's struct pcap_pkthdr (pcap/pcap.h), stable ABI. */
typedef struct {
    struct timeval ts;
    uint32_t caplen;
    uint32_t len;
} PacketHeader;

typedef int (*NextEx)(void *handle, PacketHeader **header, const unsigned char **data);

enum { READ_EMPTY = 0, READ_FULL = 1 };

static PyObject *
make_record(PyObject *record_type, PyObject *link, const PacketHeader *h, const unsigned char *data)
{
    PyObject *args[5] = {NULL}, *record = NULL;
    args[0] = Py_NewRef(link);
    args[1] = PyLong_FromLongLong((long long)h->ts.tv_sec * 1000000000LL + (long long)h->ts.tv_usec * 1000LL);
    args[2] = PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)h->caplen);
    args[3] = PyLong_FromUnsignedLong(h->len);
    args[4] = PyLong_FromLong(0);
    for (int i = 0; i < 5; i++)
        if (args[i] == NULL)
            goto done;
    record = PyObject_Vectorcall(record_type, args, 5, NULL);
done:
    for (int i = 0; i < 5; i++)
        Py_XDECREF(args[i]);
    return record;
}

/* device_records(next_ex_address, handle_address, limit, link_type, record_type, out) -> (count, status) */
static PyObject *
device_records(PyObject *module, PyObject *args)
{
    unsigned long long next_address, handle_address;
    Py_ssize_t limit, count = 0;
    PyObject *link, *record_type, *out;
    int status = READ_FULL;
    if (!PyArg_ParseTuple(args, "KKnO!OO!", &next_address, &handle_address, &limit, &PyLong_Type, &link,
                          &record_type, &PyList_Type, &out))
        return NULL;
    if (next_address == 0 || handle_address == 0) {
        PyErr_SetString(PyExc_ValueError, "no libpcap function or handle");
        return NULL;
    }
    NextEx next_ex = (NextEx)(uintptr_t)next_address;
    void *handle = (void *)(uintptr_t)handle_address;
    while (count < limit) {
        PacketHeader *h;
        const unsigned char *data;
        PyObject *record;
        int got = next_ex(handle, &h, &data);
        if (got != 1) {
            status = got < 0 ? got : READ_EMPTY;
            break;
        }
        record = make_record(record_type, link, h, data);
        if (record == NULL || PyList_Append(out, record) < 0) {
            Py_XDECREF(record);
            return NULL;
        }
        Py_DECREF(record);
        count++;
    }
    return Py_BuildValue("ni", count, status);
}

static PyMethodDef methods[] = {
    {"device_records", device_records, METH_VARARGS,
     "Up to limit packets of a libpcap handle -> CaptureRecords appended to out; (count, status)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "kdissect.engines._capture", "The live engine's native device read.", -1, methods,
};

PyMODINIT_FUNC
PyInit__capture(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "READ_EMPTY", READ_EMPTY) < 0
        || PyModule_AddIntConstant(m, "READ_FULL", READ_FULL) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
