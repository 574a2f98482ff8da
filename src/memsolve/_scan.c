/* Compiled passes of the loader and the columns: the byte scan behind memsolve.source.counted_keys
   (one pass over a JSON text's UTF-8 bytes for what follows each quote), the type scan behind
   memsolve.decode.items (which records given as Python data hold JSON's own types only), the
   records built from msgspec's decoded values (records._decoded_records) and the keys those values
   write back (decode.keys_kept), and the passes over the loaded records that lay them out as
   columns (memsolve.columns: one field of every record, each record's levels). Optional, like the
   solver kernel: without a C compiler the same answers come from numpy and Python
   (source._quote_scan_numpy, decode._plain, records._decoded_record, msgspec's encoder, columns'
   comprehensions), and tests hold the two equal. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <structmember.h>  /* PyMemberDef: a Struct field's slot offset */

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
    /* branch-free, so the compiler can vectorise it (quotes fall every few bytes at random), in
       blocks of 255 bytes whose counts fit a byte: byte lanes, not 64-bit ones */
    for (Py_ssize_t start = 0; start + 1 < n; start += 255) {
        Py_ssize_t end = start + 255 < n - 1 ? start + 255 : n - 1;
        unsigned char block = 0, blanks = 0, breaks = 0;
        for (Py_ssize_t i = start; i < end; i++) {
            unsigned char quote = data[i] == '"', next = data[i + 1];
            block += quote & (next == ':');
            blanks |= quote & ((next == ' ') | (next == '\t'));
            breaks |= quote & ((next == '\n') | (next == '\r'));
        }
        colons += block;
        blank |= blanks;
        line_break |= breaks;
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
                while (PyDict_Next(spec, &field_at, &field, &setting)) {
                    /* a level's name is its key: the exact path refuses the field, and words a key that
                       is no exact str */
                    if (!PyUnicode_CheckExact(field) || named(field, "name")) return 0;
                    if (!plain_scalar(setting) && !(named(field, "covers") && plain_names(setting))) return 0;
                }
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

/* own_number(buffer) -> bool: records.py's _own_number, one pass: whether compact JSON may hold a
   number orjson writes otherwise than repr: an exponent (a digit, `e`, then a digit or a sign) or
   a number below 1e-4 written positionally (`0.0000`). */
static PyObject *own_number(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    const unsigned char *data = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len;
    int found = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 1; i + 1 < n && !found; i++) {
        unsigned char c = data[i];
        if (c == 'e') {
            unsigned char before = data[i - 1], after = data[i + 1];
            found = before >= '0' && before <= '9' &&
                    ((after >= '0' && after <= '9') || after == '-' || after == '+');
        } else if (c == '.' && i + 4 < n && data[i - 1] == '0' && data[i + 1] == '0' && data[i + 2] == '0' &&
                   data[i + 3] == '0' && data[i + 4] == '0') {
            found = 1;
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyBool_FromLong(found);
}

/* A new bytearray of `size` bytes (its contents unset): numpy reads it without a copy, writably. */
static PyObject *scratch(Py_ssize_t size) { return PyByteArray_FromStringAndSize(NULL, size); }

/* The slot an attribute `name` of a `type` object is read from, where Python reads it from one: a
   type whose attributes are looked up the ordinary way (no __getattribute__ or __getattr__ of its
   own) and whose attribute is a member descriptor of that type or a base (a msgspec Struct's field,
   a __slots__ entry; one borrowed by another class raises in Python); -1 otherwise (no error set). */
static Py_ssize_t member_offset(PyTypeObject *type, PyObject *name) {
    PyObject *descr = type->tp_getattro == PyObject_GenericGetAttr ? _PyType_Lookup(type, name) : NULL;
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type) || !PyType_IsSubtype(type, PyDescr_TYPE(descr)))
        return -1;
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    return member->type == T_OBJECT_EX && !(member->flags & PY_AUDIT_READ) ? member->offset : -1;
}

#define SLOT(object, offset) (*(PyObject **)((char *)(object) + (offset)))

/* An attribute read as Python reads it, from its slot where it has one (member_offset), else by
   getattr. The first object's type is remembered. */
typedef struct {
    PyTypeObject *type;
    Py_ssize_t offset;  /* -1: read by PyObject_GetAttr */
} Field;

static PyObject *field_of(PyObject *item, PyObject *name, Field *field) {
    PyTypeObject *type = Py_TYPE(item);
    if (type != field->type) {
        field->type = type;
        field->offset = member_offset(type, name);
    }
    if (field->offset >= 0) {
        PyObject *value = SLOT(item, field->offset);
        if (value != NULL) {
            Py_INCREF(value);
            return value;
        }
    }
    return PyObject_GetAttr(item, name);  /* an unset slot raises as Python would */
}

/* floats(records, name) -> bytearray of float64: each record's field `name` as a float, NaN for None. */
static PyObject *floats(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *records, *name;
    if (!PyArg_ParseTuple(args, "O!U", &PyTuple_Type, &records, &name)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(records);
    PyObject *out = scratch(n * (Py_ssize_t)sizeof(double));
    if (out == NULL) return NULL;
    double *at = (double *)PyByteArray_AS_STRING(out);
    Field field = {NULL, -1};
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = field_of(PyTuple_GET_ITEM(records, i), name, &field);
        if (value == NULL) goto fail;
        at[i] = value == Py_None ? Py_NAN : PyFloat_AsDouble(value);
        Py_DECREF(value);
        if (at[i] == -1.0 && PyErr_Occurred()) goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* flags(records, name) -> bytearray of bools (0/1): each record's field `name` is true. */
static PyObject *flags(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *records, *name;
    if (!PyArg_ParseTuple(args, "O!U", &PyTuple_Type, &records, &name)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(records);
    PyObject *out = scratch(n);
    if (out == NULL) return NULL;
    char *at = PyByteArray_AS_STRING(out);
    Field field = {NULL, -1};
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = field_of(PyTuple_GET_ITEM(records, i), name, &field);
        if (value == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        int truth = PyObject_IsTrue(value);  /* as numpy's bool of it */
        Py_DECREF(value);
        if (truth < 0) {
            Py_DECREF(out);
            return NULL;
        }
        at[i] = (char)truth;
    }
    return out;
}

/* codes(records, name, index) -> bytearray of int32: each record's field `name` as its code in
   `index` (a dict, value -> code, new values appended in order of first appearance), -1 for None. */
static PyObject *codes(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *records, *name, *index;
    if (!PyArg_ParseTuple(args, "O!UO!", &PyTuple_Type, &records, &name, &PyDict_Type, &index)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(records);
    PyObject *out = scratch(n * 4);
    if (out == NULL) return NULL;
    int32_t *at = (int32_t *)PyByteArray_AS_STRING(out);
    Field field = {NULL, -1};
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = field_of(PyTuple_GET_ITEM(records, i), name, &field);
        if (value == NULL) goto fail;
        if (value == Py_None) {
            at[i] = -1;
        } else {
            PyObject *code = PyDict_GetItemWithError(index, value);
            if (code == NULL) {
                if (PyErr_Occurred()) {
                    Py_DECREF(value);
                    goto fail;
                }
                code = PyLong_FromSsize_t(PyDict_GET_SIZE(index));
                if (code == NULL || PyDict_SetItem(index, value, code) < 0) {
                    Py_XDECREF(code);
                    Py_DECREF(value);
                    goto fail;
                }
                Py_DECREF(code);  /* the dict holds it */
            }
            at[i] = (int32_t)PyLong_AsLong(code);
        }
        Py_DECREF(value);
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* the attribute names level_cells reads, interned when the module loads */
static PyObject *levels_name, *name_name, *tokens_name, *utility_name;

/* level_cells(records, column, k) -> (cells, sizes, utilities, unknown, uncounted): over every
   level of every record in order, those whose name `column` (a dict, name -> column) knows: the
   cell row * k + column (int64), the level's tokens (int64; -1 where None: to be counted from a
   text), its utility (float64; NaN where None); the rows with a level `column` does not know, and
   the (position among the known levels, level) of each level whose tokens are None, as lists. A
   token count that is no int raises TypeError (columns.py then takes its Python loop). */
static PyObject *level_cells(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *records, *column;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "O!O!n", &PyTuple_Type, &records, &PyDict_Type, &column, &k)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(records), m = 0;
    PyObject *levels_of = PyList_New(n);  /* each record's levels tuple, read once */
    if (levels_of == NULL) return NULL;
    Field levels_field = {NULL, -1}, name_field = {NULL, -1}, tokens_field = {NULL, -1}, utility_field = {NULL, -1};
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *given = field_of(PyTuple_GET_ITEM(records, i), levels_name, &levels_field);
        if (given == NULL) goto fail_list;
        PyObject *levels = PySequence_Fast(given, "level_cells: a record's levels must be a sequence");
        Py_DECREF(given);
        if (levels == NULL) goto fail_list;
        PyList_SET_ITEM(levels_of, i, levels);
        m += PySequence_Fast_GET_SIZE(levels);
    }
    PyObject *cells = scratch(m * 8), *sizes = scratch(m * 8), *values = scratch(m * 8);
    PyObject *unknown = PyList_New(0), *uncounted = PyList_New(0);
    if (!cells || !sizes || !values || !unknown || !uncounted) goto fail;
    int64_t *cell = (int64_t *)PyByteArray_AS_STRING(cells), *size = (int64_t *)PyByteArray_AS_STRING(sizes);
    double *value = (double *)PyByteArray_AS_STRING(values);
    Py_ssize_t known = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *levels = PyList_GET_ITEM(levels_of, i);
        int unknown_row = 0;
        for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(levels); j++) {
            PyObject *level = PySequence_Fast_GET_ITEM(levels, j);
            PyObject *name = field_of(level, name_name, &name_field);
            if (name == NULL) goto fail;
            PyObject *at = PyDict_GetItemWithError(column, name);
            Py_DECREF(name);
            if (at == NULL) {
                if (PyErr_Occurred()) goto fail;
                unknown_row = 1;
                continue;
            }
            Py_ssize_t col = PyLong_AsSsize_t(at);
            if (col == -1 && PyErr_Occurred()) goto fail;
            PyObject *tokens = field_of(level, tokens_name, &tokens_field);
            if (tokens == NULL) goto fail;
            if (tokens == Py_None) {
                size[known] = -1;
                PyObject *position = Py_BuildValue("nO", known, level);
                int failed = position == NULL || PyList_Append(uncounted, position) < 0;
                Py_XDECREF(position);
                if (failed) {
                    Py_DECREF(tokens);
                    goto fail;
                }
            } else {
                size[known] = PyLong_AsLongLong(tokens);
                if (size[known] == -1 && PyErr_Occurred()) {
                    Py_DECREF(tokens);
                    goto fail;
                }
            }
            Py_DECREF(tokens);
            PyObject *utility = field_of(level, utility_name, &utility_field);
            if (utility == NULL) goto fail;
            value[known] = utility == Py_None ? Py_NAN : PyFloat_AsDouble(utility);
            Py_DECREF(utility);
            if (value[known] == -1.0 && PyErr_Occurred()) goto fail;
            cell[known++] = (int64_t)i * k + col;
        }
        if (unknown_row) {
            PyObject *row = PyLong_FromSsize_t(i);
            int failed = row == NULL || PyList_Append(unknown, row) < 0;
            Py_XDECREF(row);
            if (failed) goto fail;
        }
    }
    Py_DECREF(levels_of);
    if (PyByteArray_Resize(cells, known * 8) < 0 || PyByteArray_Resize(sizes, known * 8) < 0 ||
        PyByteArray_Resize(values, known * 8) < 0) {
        levels_of = NULL;
        goto fail;
    }
    return Py_BuildValue("NNNNN", cells, sizes, values, unknown, uncounted);
fail:
    Py_XDECREF(cells);
    Py_XDECREF(sizes);
    Py_XDECREF(values);
    Py_XDECREF(unknown);
    Py_XDECREF(uncounted);
fail_list:
    Py_XDECREF(levels_of);
    return NULL;
}

/* ---- the decoded records (memsolve.decode) ---- */

/* A field's slot in a msgspec Struct (member_offset); TypeError where it has none. */
static Py_ssize_t slot_of(PyTypeObject *type, const char *name) {
    PyObject *key = PyUnicode_InternFromString(name);
    if (key == NULL) return -1;
    Py_ssize_t offset = member_offset(type, key);
    Py_DECREF(key);
    if (offset < 0) PyErr_Format(PyExc_TypeError, "%s has no slot `%s`", type->tp_name, name);
    return offset;
}

/* the `":` a string writes back as a JSON string, besides a key's own: its opening quote if a
   colon comes first, and each quote inside followed by a colon (written back as \":) */
static Py_ssize_t string_colons(PyObject *text) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t count = n > 0 && PyUnicode_READ(kind, data, 0) == ':';
    for (Py_ssize_t i = 0; i + 1 < n; i++)
        count += PyUnicode_READ(kind, data, i) == '"' && PyUnicode_READ(kind, data, i + 1) == ':';
    return count;
}

typedef struct {
    PyTypeObject *record, *level;  /* decode.DecodedRecord, level.Level */
    Py_ssize_t record_slot[18], level_slot[5];
    PyObject *record_default[18], *level_default[5];
    Py_ssize_t record_fields, level_fields;
} Layout;

/* a Struct type's slots and defaults, in its field order (a field without a default: NULL) */
static int layout_of(PyTypeObject *type, Py_ssize_t *slot, PyObject **defaults, Py_ssize_t most, Py_ssize_t *count) {
    PyObject *fields = PyObject_GetAttrString((PyObject *)type, "__struct_fields__");
    PyObject *given = PyObject_GetAttrString((PyObject *)type, "__struct_defaults__");
    int ok = fields != NULL && given != NULL && PyTuple_Check(fields) && PyTuple_Check(given) &&
             PyTuple_GET_SIZE(fields) <= most;
    if (ok) {
        Py_ssize_t n = PyTuple_GET_SIZE(fields), first = n - PyTuple_GET_SIZE(given);
        for (Py_ssize_t i = 0; i < n && ok; i++) {
            const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(fields, i));
            slot[i] = name == NULL ? -1 : slot_of(type, name);
            defaults[i] = i < first ? NULL : PyTuple_GET_ITEM(given, i - first);  /* borrowed: the type keeps them */
            ok = slot[i] >= 0;
        }
        *count = n;
    } else if (!PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError, "%s is not a Struct of at most %zd fields", type->tp_name, most);
    }
    Py_XDECREF(fields);
    Py_XDECREF(given);
    return ok ? 0 : -1;
}

static Py_ssize_t value_colons(PyObject *value, const Layout *layout, int depth);

/* the `":` a Struct writes back with omit_defaults: one per field that differs from its default
   (msgspec omits a value that is its default object), with what the value writes */
static Py_ssize_t struct_colons(PyObject *value, const Py_ssize_t *slot, PyObject *const *defaults, Py_ssize_t n,
                                const Layout *layout, int depth) {
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *field = SLOT(value, slot[i]);
        if (field == NULL) return -1;  /* an unset field: the encoder raises, keys_kept writes them back */
        if (field == defaults[i]) continue;
        Py_ssize_t inner = value_colons(field, layout, depth + 1);
        if (inner < 0) return -1;
        count += 1 + inner;  /* field names hold no quote */
    }
    return count;
}

/* the `":` msgspec's encoder writes for a decoded value, -1 for a value of a type not known here */
static Py_ssize_t value_colons(PyObject *value, const Layout *layout, int depth) {
    if (depth > 200) return -1;
    PyTypeObject *type = Py_TYPE(value);
    if (type == &PyUnicode_Type) return string_colons(value);
    if (type == &PyLong_Type || type == &PyFloat_Type || type == &PyBool_Type || value == Py_None) return 0;
    Py_ssize_t count = 0;
    if (type == &PyDict_Type) {
        Py_ssize_t at = 0;
        PyObject *key, *item;
        while (PyDict_Next(value, &at, &key, &item)) {
            if (!PyUnicode_CheckExact(key)) return -1;
            Py_ssize_t inner = value_colons(item, layout, depth + 1);
            if (inner < 0) return -1;
            count += 1 + string_colons(key) + inner;
        }
        return count;
    }
    if (type == &PyList_Type || type == &PyTuple_Type) {
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(value); i++) {
            Py_ssize_t inner = value_colons(PySequence_Fast_GET_ITEM(value, i), layout, depth + 1);
            if (inner < 0) return -1;
            count += inner;
        }
        return count;
    }
    if (type == layout->level)
        return struct_colons(value, layout->level_slot, layout->level_default, layout->level_fields, layout, depth);
    if (type == layout->record)
        return struct_colons(value, layout->record_slot, layout->record_default, layout->record_fields, layout, depth);
    return -1;
}

static int layout_init(Layout *layout, PyTypeObject *record, PyTypeObject *level) {
    layout->record = record;
    layout->level = level;
    if (layout_of(record, layout->record_slot, layout->record_default, 18, &layout->record_fields) < 0) return -1;
    return layout_of(level, layout->level_slot, layout->level_default, 5, &layout->level_fields);
}

/* the DecodedRecord fields records_of reads, by position in its field order */
enum { D_ID, D_TIMESTAMP, D_TENANT, D_STORE, D_SESSION, D_KEY, D_TTL, D_AUTHORITY, D_VERSION, D_DOCUMENT, D_TEXT,
       D_TOKENS, D_DECISION_VALUE, D_UTILITY, D_REPRESENTATIONS, D_COVERS, D_SCORE, D_METADATA, D_FIELDS };
static const char *const decoded_fields[D_FIELDS] = {
    "id", "timestamp", "tenant", "store", "session", "key", "ttl", "authority", "version", "document", "text",
    "tokens", "decision_value", "utility", "representations", "covers", "score", "metadata"};

/* A number as records.py's float() of it (msgspec bounds a decoded int within 64 bits). */
static PyObject *as_float(PyObject *number) {
    if (PyFloat_CheckExact(number)) {
        Py_INCREF(number);
        return number;
    }
    double value = PyLong_AsDouble(number);
    return value == -1.0 && PyErr_Occurred() ? NULL : PyFloat_FromDouble(value);
}

/* the Level slots records_of reads and writes */
typedef struct {
    PyTypeObject *type;
    Py_ssize_t name, tokens, text;
} LevelSlots;

/* The levels of a decoded record that writes `representations` (decode's Level objects, each
   named by the key it is written under, as level.named_levels does), or of one that does not
   (one level "raw"); Py_None where records._decoded_levels must decide (it may refuse the record). */
static PyObject *levels_of(PyObject *const *field, const LevelSlots *slots, PyObject *raw) {
    PyObject *reps = field[D_REPRESENTATIONS], *text = field[D_TEXT];
    PyObject *tokens = field[D_TOKENS], *utility = field[D_UTILITY];
    if (utility != Py_None && field[D_DECISION_VALUE] != Py_None) Py_RETURN_NONE;
    if (utility == Py_None) utility = field[D_DECISION_VALUE];
    if (reps == Py_None) {
        if (tokens == Py_None && text == Py_None) Py_RETURN_NONE;
        PyObject *given[4] = {raw, tokens, utility, text};
        PyObject *level = PyObject_Vectorcall((PyObject *)slots->type, given, 4, NULL);
        if (level == NULL) return NULL;
        PyObject *levels = PyTuple_Pack(1, level);
        Py_DECREF(level);
        if (levels != NULL && !PyType_IS_GC(slots->type)) PyObject_GC_UnTrack(levels);  /* as below */
        return levels;
    }
    if (!PyDict_CheckExact(reps) || tokens != Py_None || utility != Py_None || PyDict_GET_SIZE(reps) == 0)
        Py_RETURN_NONE;
    Py_ssize_t at = 0;
    PyObject *name, *level;
    while (PyDict_Next(reps, &at, &name, &level)) {
        if (Py_TYPE(level) != slots->type || !PyUnicode_CheckExact(name) ||
            PyUnicode_CompareWithASCIIString(name, "delete") == 0)
            Py_RETURN_NONE;
        PyObject *written = SLOT(level, slots->name);
        if (written == NULL || !PyUnicode_CheckExact(written) || PyUnicode_GET_LENGTH(written) != 0)
            Py_RETURN_NONE;  /* a level that wrote a name of its own */
        if (text == Py_None && SLOT(level, slots->tokens) == Py_None && SLOT(level, slots->text) == Py_None)
            Py_RETURN_NONE;  /* nothing to size it by: the exact path words it */
    }
    PyObject *levels = PyTuple_New(PyDict_GET_SIZE(reps));
    if (levels == NULL) return NULL;
    at = 0;
    Py_ssize_t i = 0;
    while (PyDict_Next(reps, &at, &name, &level)) {
        /* nobody holds the decoded level yet: its name is set in place, as force_setattr does */
        PyObject *old = SLOT(level, slots->name);
        Py_INCREF(name);
        SLOT(level, slots->name) = name;
        Py_XDECREF(old);
        Py_INCREF(level);
        PyTuple_SET_ITEM(levels, i++, level);
    }
    /* Levels are no containers the collector knows (gc=False): the tuple cannot be part of a cycle,
       and a million of them need not wait for a collection to find that out */
    if (!PyType_IS_GC(slots->type)) PyObject_GC_UnTrack(levels);
    return levels;
}

/* Add position i to the list `todo`; -1 on an error. */
static int add_position(PyObject *todo, Py_ssize_t i) {
    PyObject *position = PyLong_FromSsize_t(i);
    int failed = position == NULL || PyList_Append(todo, position) < 0;
    Py_XDECREF(position);
    return failed ? -1 : 0;
}

/* records_of(decoded, DecodedRecord, Level, Record, UNSET, parse_timestamp, TimeValueError, RFC3339)
   -> (records, todo): the Record each decoded item (a DecodedRecord) stands for, at its position,
   as records._decoded_record builds it, for the items that write no metadata and whose time is a
   plain number (with a ttl that is one or none) or an RFC 3339 text (read by parse_timestamp, with
   no ttl); None for a None item (the exact path reads it) and for each position in `todo`, which
   records._decoded_record takes (metadata, a duration to parse, a record it may refuse). */
static PyObject *records_of(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *items, *unset, *parse, *time_error, *rfc3339;
    PyTypeObject *decoded_type, *record_type;
    LevelSlots slots;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OOOU", &PyList_Type, &items, &PyType_Type, &decoded_type, &PyType_Type,
                          &slots.type, &PyType_Type, &record_type, &unset, &parse, &time_error, &rfc3339))
        return NULL;
    Py_ssize_t slot[D_FIELDS];
    for (int f = 0; f < D_FIELDS; f++)
        if ((slot[f] = slot_of(decoded_type, decoded_fields[f])) < 0) return NULL;
    if ((slots.name = slot_of(slots.type, "name")) < 0 || (slots.tokens = slot_of(slots.type, "tokens")) < 0 ||
        (slots.text = slot_of(slots.type, "text")) < 0)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(items);
    PyObject *out = PyList_New(n), *todo = PyList_New(0), *raw = PyUnicode_InternFromString("raw");
    PyObject *number = PyUnicode_InternFromString("number"), *empty = PyTuple_New(0), *times = PyDict_New();
    if (!out || !todo || !raw || !number || !empty || !times) goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(items, i), *record = Py_None;
        Py_INCREF(Py_None);
        PyList_SET_ITEM(out, i, Py_None);
        if (item == Py_None) continue;
        if (Py_TYPE(item) != decoded_type) {
            PyErr_SetString(PyExc_TypeError, "records_of: an item is no DecodedRecord");
            goto fail;
        }
        PyObject *field[D_FIELDS];
        int unset_field = 0;
        for (int f = 0; f < D_FIELDS; f++) unset_field |= (field[f] = SLOT(item, slot[f])) == NULL;
        if (unset_field) {  /* a field deleted from the decoded value: Python reads it (and raises) */
            if (add_position(todo, i) < 0) goto fail;
            continue;
        }
        PyObject *stamp = field[D_TIMESTAMP], *ttl = field[D_TTL];
        int numeric = PyLong_CheckExact(stamp) || PyFloat_CheckExact(stamp), text = PyUnicode_CheckExact(stamp);
        int lasting = ttl == unset || ttl == Py_None;  /* no duration to read */
        int plain = (numeric || (text && lasting)) && field[D_METADATA] == Py_None &&
                    (lasting || PyLong_CheckExact(ttl) || PyFloat_CheckExact(ttl)) &&
                    (field[D_AUTHORITY] == unset || PyBool_Check(field[D_AUTHORITY]));
        PyObject *timestamp = NULL;
        if (plain) {
            if (numeric) {
                timestamp = as_float(stamp);
            } else {  /* a text read once per load: records of one session often share their time */
                timestamp = PyDict_GetItemWithError(times, stamp);
                if (timestamp != NULL) {
                    Py_INCREF(timestamp);
                } else if (!PyErr_Occurred()) {
                    timestamp = PyObject_CallOneArg(parse, stamp);
                    if (timestamp != NULL && PyDict_SetItem(times, stamp, timestamp) < 0) Py_CLEAR(timestamp);
                }
            }
            if (timestamp == NULL) {
                if (numeric || !PyErr_ExceptionMatches(time_error)) goto fail;
                PyErr_Clear();  /* a time it refuses: _decoded_record words nothing either, the exact path does */
                plain = 0;
            }
        }
        PyObject *levels = plain ? levels_of(field, &slots, raw) : (Py_INCREF(Py_None), Py_None);
        if (levels == NULL || levels == Py_None) {
            Py_XDECREF(timestamp);
            Py_XDECREF(levels);
            if (levels == NULL || add_position(todo, i) < 0) goto fail;
            continue;
        }
        PyObject *position = PyLong_FromSsize_t(i);
        PyObject *duration = lasting ? (Py_INCREF(Py_None), Py_None) : as_float(ttl);
        if (position && duration) {
            PyObject *authority = field[D_AUTHORITY] == unset ? Py_False : field[D_AUTHORITY];
            PyObject *covers = field[D_COVERS] == Py_None ? empty : field[D_COVERS];
            PyObject *given[17] = {field[D_ID], position, timestamp, levels, field[D_TENANT], field[D_STORE],
                                   field[D_SESSION], field[D_KEY], duration, ttl == unset ? Py_False : Py_True,
                                   authority, field[D_VERSION], field[D_DOCUMENT], field[D_TEXT],
                                   numeric ? number : rfc3339, covers, field[D_SCORE]};
            record = PyObject_Vectorcall((PyObject *)record_type, given, 17, NULL);
        } else {
            record = NULL;
        }
        Py_DECREF(levels);
        Py_DECREF(timestamp);
        Py_XDECREF(position);
        Py_XDECREF(duration);
        if (record == NULL) goto fail;
        PyList_SetItem(out, i, record);  /* steals it, drops the None */
    }
    Py_DECREF(raw);
    Py_DECREF(number);
    Py_DECREF(empty);
    Py_DECREF(times);
    return Py_BuildValue("NN", out, todo);
fail:
    Py_XDECREF(out);
    Py_XDECREF(todo);
    Py_XDECREF(raw);
    Py_XDECREF(number);
    Py_XDECREF(empty);
    Py_XDECREF(times);
    return NULL;
}

/* written_keys(decoded, DecodedRecord, Level) -> int or None: the `":` the decoded values (None
   items skipped) write back through msgspec's encoder (omit_defaults), counted from the values
   themselves (decode.keys_kept without writing them); None for a value of a type not known here. */
static PyObject *written_keys(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *items;
    PyTypeObject *record, *level;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyList_Type, &items, &PyType_Type, &record, &PyType_Type, &level))
        return NULL;
    Layout layout;
    if (layout_init(&layout, record, level) < 0) {  /* types it was not written for: keys_kept writes them back */
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return NULL;
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        if (item == Py_None) continue;
        if (Py_TYPE(item) != record) Py_RETURN_NONE;
        Py_ssize_t inner = value_colons(item, &layout, 0);
        if (inner < 0) Py_RETURN_NONE;
        count += inner;
    }
    return PyLong_FromSsize_t(count);
}

static PyMethodDef methods[] = {
    {"own_number", own_number, METH_VARARGS, "own_number(bytes) -> bool: an exponent or 0.0000 in compact JSON"},
    {"floats", floats, METH_VARARGS, "floats(records, name) -> float64 bytearray, NaN for None"},
    {"flags", flags, METH_VARARGS, "flags(records, name) -> bool bytearray"},
    {"codes", codes, METH_VARARGS, "codes(records, name, index) -> int32 bytearray, -1 for None; index grows"},
    {"level_cells", level_cells, METH_VARARGS,
     "level_cells(records, column, k) -> (cells, sizes, utilities, unknown rows, uncounted positions)"},
    {"plain_records", plain_records, METH_VARARGS,
     "plain_records(list) -> [bool]: which items are records of JSON's own types (decode._plain)"},
    {"records_of", records_of, METH_VARARGS,
     "records_of(decoded, DecodedRecord, Level, Record, UNSET, parse_timestamp, TimeValueError, RFC3339) -> "
     "(records, todo): records._decoded_record in C"},
    {"written_keys", written_keys, METH_VARARGS,
     "written_keys(decoded, DecodedRecord, Level) -> the `\":` their values write back (None: not known here)"},
    {"quote_scan", quote_scan, METH_VARARGS,
     "quote_scan(bytes) -> (colons, blank, line_break, escape): what follows the quotes of a JSON text"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", "Compiled byte scans of JSON texts.", -1, methods};

PyMODINIT_FUNC PyInit__scan(void) {
    levels_name = PyUnicode_InternFromString("levels");
    name_name = PyUnicode_InternFromString("name");
    tokens_name = PyUnicode_InternFromString("tokens");
    utility_name = PyUnicode_InternFromString("utility");
    if (!levels_name || !name_name || !tokens_name || !utility_name) return NULL;
    return PyModule_Create(&module);
}
