/* Compiled scans of the loader's input: the byte scan behind memsolve.source.counted_keys (one
   pass over a JSON text's UTF-8 bytes for what follows each quote) and the type scan behind
   memsolve.decode.items (which records given as Python data hold JSON's own types only).
   Optional, like the solver kernel: without a C compiler the same answers come from numpy and
   Python (source._quote_scan_numpy, decode._plain), and tests hold the two equal. */
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

static int plain_scalar(PyObject *value) {
    PyTypeObject *type = Py_TYPE(value);
    return type == &PyUnicode_Type || type == &PyLong_Type || type == &PyFloat_Type || type == &PyBool_Type ||
           value == Py_None;
}

static int plain_names(PyObject *value) {
    if (!PyList_CheckExact(value)) return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++)
        if (!PyUnicode_CheckExact(PyList_GET_ITEM(value, i))) return 0;
    return 1;
}

/* An exact str key equal to `name`; a key of another type is no field name here (its record takes
   the exact path, which words it), and comparing it would run its own code mid-walk. */
static int named(PyObject *key, const char *name) {
    return PyUnicode_CheckExact(key) && PyUnicode_CompareWithASCIIString(key, name) == 0;
}

/* decode._plain: every value of JSON's own types; `metadata` a dict whatever it holds, `covers`
   a list of strings, `representations` a dict of str to dicts of such values. */
static int plain_record(PyObject *item) {
    if (!PyDict_CheckExact(item)) return 0;
    Py_ssize_t at = 0;
    PyObject *key, *value;
    while (PyDict_Next(item, &at, &key, &value)) {
        if (plain_scalar(value) || (named(key, "metadata") && PyDict_CheckExact(value))) continue;
        if (named(key, "covers")) {
            if (!plain_names(value)) return 0;
        } else if (named(key, "representations") && PyDict_CheckExact(value)) {
            Py_ssize_t level_at = 0;
            PyObject *level, *spec;
            while (PyDict_Next(value, &level_at, &level, &spec)) {
                if (!PyUnicode_CheckExact(level) || !PyDict_CheckExact(spec)) return 0;
                Py_ssize_t field_at = 0;
                PyObject *field, *setting;
                while (PyDict_Next(spec, &field_at, &field, &setting))
                    if (!plain_scalar(setting) && !(named(field, "covers") && plain_names(setting))) return 0;
            }
        } else {
            return 0;
        }
    }
    return 1;
}

/* plain_records(list) -> list of bools, one per item: whether it is a record of JSON's own types. */
static PyObject *plain_records(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *items;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &items)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(items);
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *flag = plain_record(PyList_GET_ITEM(items, i)) ? Py_True : Py_False;
        Py_INCREF(flag);
        PyList_SET_ITEM(out, i, flag);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"plain_records", plain_records, METH_VARARGS,
     "plain_records(list) -> [bool]: which items are records of JSON's own types (decode._plain)"},
    {"quote_scan", quote_scan, METH_VARARGS,
     "quote_scan(bytes) -> (colons, blank, line_break, escape): what follows the quotes of a JSON text"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", "Compiled byte scans of JSON texts.", -1, methods};

PyMODINIT_FUNC PyInit__scan(void) { return PyModule_Create(&module); }
