/* The byte scan behind memsolve.source.counted_keys: one pass over a JSON text's UTF-8 bytes for
   what follows each quote. Optional, like the solver kernel: without a C compiler the same answer
   comes from numpy (source._quote_scan_numpy), and tests hold the two equal. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* quote_scan(buffer) -> (colons, blank, line_break, escape): how many quotes a colon follows,
   whether a blank or tab follows one, whether a line break (\n or \r) follows one (the last byte
   has no successor and counts for nothing), and whether the text writes a quote or a colon as a
   \u escape (\u0022, \u003a or \u003A, wherever a backslash starts one). */
static PyObject *quote_scan(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    const unsigned char *data = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len;
    long long colons = 0;
    int blank = 0, line_break = 0, escape = 0;
    Py_BEGIN_ALLOW_THREADS
    /* branch-free, so the compiler can vectorise it: quotes fall every few bytes at random */
    for (Py_ssize_t i = 0; i + 1 < n; i++) {
        int quote = data[i] == '"';
        unsigned char next = data[i + 1];
        colons += quote & (next == ':');
        blank |= quote & ((next == ' ') | (next == '\t'));
        line_break |= quote & ((next == '\n') | (next == '\r'));
    }
    /* backslashes are rare: from one to the next */
    for (const unsigned char *at = data, *end = data + n; at < end; at++) {
        at = memchr(at, '\\', (size_t)(end - at));
        if (at == NULL) break;
        if (end - at >= 6 && at[1] == 'u' && at[2] == '0' && at[3] == '0')
            escape |= (at[4] == '2' && at[5] == '2') || (at[4] == '3' && (at[5] == 'a' || at[5] == 'A'));
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return Py_BuildValue("LNNN", colons, PyBool_FromLong(blank), PyBool_FromLong(line_break), PyBool_FromLong(escape));
}

static PyMethodDef methods[] = {
    {"quote_scan", quote_scan, METH_VARARGS,
     "quote_scan(bytes) -> (colons, blank, line_break, escape): what follows the quotes of a JSON text"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", "Compiled byte scans of JSON texts.", -1, methods};

PyMODINIT_FUNC PyInit__scan(void) { return PyModule_Create(&module); }
