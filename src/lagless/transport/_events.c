/*
 * Events of the reliability layer built in one step (lagless.transport.connection, _take_entries).
 *
 * Why this exists: see docs/compiled.md, "Events built in C". Every message costs two events, a
 * `MessageReceived` at the receiver and a `MessageDelivered` at the sender, each a tuple subclass
 * (lagless.transport.events). From Python, `tuple.__new__(kind, head + entry)` builds the fields'
 * tuple, then an argument tuple for the call, checks the type through `tuple.__new__`'s wrapper
 * and copies the fields into the event: about 0.24 microseconds per event on the 2-core VM. Here
 * the event is allocated with the class's own allocator and its fields set directly, as CPython's
 * tuple_subtype_new does, without the two temporary tuples. It is built only with the compiled
 * core; without it the connection uses the Python expression (same events).
 *
 * Python API (module lagless.transport._events):
 *   build(kind: type, head: tuple, entries: Iterable[tuple]) -> list
 *       [kind(*head, *entry) for entry in entries], the events built as tuple.__new__ builds them
 *       (no __new__ or __init__ of `kind` runs). Raises TypeError when `kind` is not a subclass of
 *       tuple, `head` is not a tuple or an entry is not a tuple.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *build(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "build() takes 3 arguments (kind, head, entries), got %zd",
                     nargs);
        return NULL;
    }
    PyObject *kind = args[0], *head = args[1];
    if (!PyType_Check(kind) || !PyType_IsSubtype((PyTypeObject *)kind, &PyTuple_Type)) {
        PyErr_Format(PyExc_TypeError, "build(): kind must be a subclass of tuple, got %.80s",
                     Py_TYPE(kind)->tp_name);
        return NULL;
    }
    if (!PyTuple_CheckExact(head)) {
        PyErr_Format(PyExc_TypeError, "build(): head must be a tuple, got %.80s",
                     Py_TYPE(head)->tp_name);
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)kind;
    Py_ssize_t head_len = PyTuple_GET_SIZE(head);
    PyObject *out = PyList_New(0);
    PyObject *iterator = out == NULL ? NULL : PyObject_GetIter(args[2]);
    if (iterator == NULL) {
        Py_XDECREF(out);
        return NULL;
    }
    PyObject *entry;
    while ((entry = PyIter_Next(iterator)) != NULL) {
        if (!PyTuple_Check(entry)) {
            PyErr_Format(PyExc_TypeError, "build(): every entry must be a tuple, got %.80s",
                         Py_TYPE(entry)->tp_name);
            Py_DECREF(entry);
            break;
        }
        Py_ssize_t entry_len = PyTuple_GET_SIZE(entry);
        PyObject *event = type->tp_alloc(type, head_len + entry_len);
        if (event == NULL) {
            Py_DECREF(entry);
            break;
        }
        for (Py_ssize_t i = 0; i < head_len; i++) {
            PyObject *item = PyTuple_GET_ITEM(head, i);
            Py_INCREF(item);
            PyTuple_SET_ITEM(event, i, item);
        }
        for (Py_ssize_t i = 0; i < entry_len; i++) {
            PyObject *item = PyTuple_GET_ITEM(entry, i);
            Py_INCREF(item);
            PyTuple_SET_ITEM(event, head_len + i, item);
        }
        Py_DECREF(entry);
        int appended = PyList_Append(out, event);
        Py_DECREF(event);
        if (appended < 0) {
            break;
        }
    }
    Py_DECREF(iterator);
    if (PyErr_Occurred()) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

static PyMethodDef events_methods[] = {
    {"build", (PyCFunction)(void (*)(void))build, METH_FASTCALL,
     "build(kind, head, entries) -> [kind(*head, *entry) for entry in entries], built as "
     "tuple.__new__ builds a tuple subclass"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef events_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "lagless.transport._events",
    .m_doc = "Events of the reliability layer built in one step (tuple subclasses).",
    .m_size = -1,
    .m_methods = events_methods,
};

PyMODINIT_FUNC PyInit__events(void) { return PyModule_Create(&events_module); }
