// The Python extension module bcoo_array._native._ffi: hands the FFI
// handlers of coo_matmul.cc to Python as PyCapsules (plain C API, no pybind11).

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "xla/ffi/api/ffi.h"

XLA_FFI_DECLARE_HANDLER_SYMBOL(BcooArrayCooMatmul);

static PyObject* registrations(PyObject*, PyObject*) {
  PyObject* dict = PyDict_New();
  if (dict == nullptr) return nullptr;
  PyObject* cap = PyCapsule_New(reinterpret_cast<void*>(BcooArrayCooMatmul), nullptr, nullptr);
  if (cap == nullptr || PyDict_SetItemString(dict, "bcoo_array_coo_matmul", cap) < 0) {
    Py_XDECREF(cap);
    Py_DECREF(dict);
    return nullptr;
  }
  Py_DECREF(cap);
  return dict;
}

static PyMethodDef methods[] = {
    {"registrations", registrations, METH_NOARGS,
     "Dict of FFI target name -> PyCapsule holding the XLA FFI handler."},
    {nullptr, nullptr, 0, nullptr}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ffi",
                                    "Native jax.ffi kernels of bcoo_array.", -1, methods};

PyMODINIT_FUNC PyInit__ffi(void) { return PyModule_Create(&module); }
