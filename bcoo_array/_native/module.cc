// The Python extension module bcoo_array._native._ffi: hands the FFI
// handlers of coo_matmul.cc to Python as PyCapsules (plain C API, no pybind11).

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "xla/ffi/api/ffi.h"

XLA_FFI_DECLARE_HANDLER_SYMBOL(BcooArrayCooMatmul);
XLA_FFI_DECLARE_HANDLER_SYMBOL(BcooArrayCsrMatvec);

bool BcooArrayHostCooMatmul(int dtype, bool idx64, const void* data, const void* idx, int64_t nse,
                            const void* x, int64_t k, int64_t n, void* y, int64_t m, bool vec);

bool BcooArrayHostCsrSpmv(int dtype, bool idx64, const void* indptr, const void* cols, const void* data,
                          const void* x, void* y, int64_t m);

int64_t BcooArrayHostCsrSelectCount(bool idx64, const void* indptr, const void* cols, const int64_t* rows,
                                    int64_t n_rows, const int64_t* col_count);
void BcooArrayHostCsrDiagonal(bool idx64, const void* indptr, const void* cols, int64_t r0, int64_t k,
                              int64_t* out, int64_t count);
void BcooArrayHostCsrSelectFill(bool idx64, bool out64, const void* indptr, const void* cols, const int64_t* rows,
                                int64_t n_rows, const int64_t* col_first, const int64_t* by_col, void* out_idx,
                                int64_t* out_src);

int64_t BcooArrayHostCooUnionCount(bool idx64, const void* x, int64_t nx, const void* y, int64_t ny);
void BcooArrayHostCooLookup(bool idx64, const void* x, int64_t nx, const void* q, int64_t nq, int64_t* pos);
bool BcooArrayHostCooUnionApply(int dtype, bool idx64, const void* x, int64_t nx, const void* y, int64_t ny,
                                const void* dx, const void* dy, const double* fill, int op, void* out_idx,
                                void* out);

namespace {

// A C-contiguous buffer of an object (a NumPy array), released on scope exit.
struct Buf {
  Py_buffer view{};
  bool ok = false;
  Buf(PyObject* obj, bool writable) {
    ok = PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) == 0;
  }
  ~Buf() {
    if (ok) PyBuffer_Release(&view);
  }
};

}  // namespace

// host_coo_matmul(data, indices, x, out, m, k, n, dtype_code, idx64, vec): out = A @ x on host
// buffers (the caller checks shapes and dtypes; see bcoo_array/_kernels/native.py).
static PyObject* host_coo_matmul(PyObject*, PyObject* args) {
  PyObject *data, *indices, *x, *out;
  long long m, k, n;
  int dtype, idx64, vec;
  if (!PyArg_ParseTuple(args, "OOOOLLLipp", &data, &indices, &x, &out, &m, &k, &n, &dtype, &idx64, &vec))
    return nullptr;
  Buf bd(data, false), bi(indices, false), bx(x, false), bo(out, true);
  if (!(bd.ok && bi.ok && bx.ok && bo.ok)) return nullptr;
  const int64_t nse = bi.view.len / (idx64 ? 16 : 8);
  bool done;
  Py_BEGIN_ALLOW_THREADS
  done = BcooArrayHostCooMatmul(dtype, idx64, bd.view.buf, bi.view.buf, nse, bx.view.buf, k, n,
                                bo.view.buf, m, vec);
  Py_END_ALLOW_THREADS
  if (!done) {
    PyErr_SetString(PyExc_TypeError, "host_coo_matmul: unsupported dtype code");
    return nullptr;
  }
  Py_RETURN_NONE;
}

namespace {

// out[p] = (row of entry p, indices[p]) for the entries of a CSR structure, in one pass.
template <typename In, typename Out>
void CsrToCoo(const In* indptr, const In* indices, Out* out, int64_t m) {
  for (int64_t r = 0; r < m; ++r) {
    const int64_t end = static_cast<int64_t>(indptr[r + 1]);
    for (int64_t p = static_cast<int64_t>(indptr[r]); p < end; ++p) {
      out[2 * p] = static_cast<Out>(r);
      out[2 * p + 1] = static_cast<Out>(indices[p]);
    }
  }
}

// The CSR structure of 2-D COO indices whose valid entries (0 <= row < m, 0 <= col < n) come first with
// non-decreasing rows, in one pass: indptr (m + 1, zeroed by the caller) gets the row pointer, cols the
// columns of the valid entries. Returns the count of valid entries, or -1 when a valid entry follows an
// invalid one or rows decrease (the caller then has no CSR structure); *canonical tells whether the
// columns also strictly increase within each row.
template <typename In, typename Out>
int64_t CooToCsr(const In* idx, int64_t nse, int64_t m, int64_t n, Out* indptr, Out* cols, bool* canonical) {
  int64_t nv = 0, prev_r = -1, prev_c = -1, run = 0;  // run: entries of row prev_r so far (kept in a register)
  bool canon = true;
  const uint64_t um = static_cast<uint64_t>(m), un = static_cast<uint64_t>(n);
  for (; nv < nse; ++nv) {
    const int64_t r = static_cast<int64_t>(idx[2 * nv]), c = static_cast<int64_t>(idx[2 * nv + 1]);
    if (static_cast<uint64_t>(r) >= um || static_cast<uint64_t>(c) >= un) break;  // the first invalid entry
    if (r != prev_r) {
      if (r < prev_r) return -1;
      if (prev_r >= 0) indptr[prev_r + 1] = static_cast<Out>(run);
      run = 0;
    } else {
      canon = canon && c > prev_c;
    }
    ++run;
    cols[nv] = static_cast<Out>(c);
    prev_r = r;
    prev_c = c;
  }
  if (prev_r >= 0) indptr[prev_r + 1] = static_cast<Out>(run);
  for (int64_t i = nv; i < nse; ++i) {
    const int64_t r = static_cast<int64_t>(idx[2 * i]), c = static_cast<int64_t>(idx[2 * i + 1]);
    if (static_cast<uint64_t>(r) < um && static_cast<uint64_t>(c) < un) return -1;  // a valid entry after padding
  }
  for (int64_t r = 0; r < m; ++r) indptr[r + 1] += indptr[r];
  *canonical = canon;
  return nv;
}

}  // namespace

// host_coo_to_csr(indices, indptr, cols, m, n, in64, out64) -> (n_valid, canonical) or None: the CSR structure
// of 2-D COO indices (see CooToCsr; indptr zeroed, both outputs sized by the caller).
static PyObject* host_coo_to_csr(PyObject*, PyObject* args) {
  PyObject *indices, *indptr, *cols;
  long long m, n;
  int in64, out64;
  if (!PyArg_ParseTuple(args, "OOOLLpp", &indices, &indptr, &cols, &m, &n, &in64, &out64)) return nullptr;
  Buf bi(indices, false), bp(indptr, true), bc(cols, true);
  if (!(bi.ok && bp.ok && bc.ok)) return nullptr;
  const int64_t nse = bi.view.len / (in64 ? 16 : 8);
  int64_t nv;
  bool canonical = false;
  Py_BEGIN_ALLOW_THREADS
  if (in64 && out64)
    nv = CooToCsr(static_cast<const int64_t*>(bi.view.buf), nse, m, n, static_cast<int64_t*>(bp.view.buf),
                  static_cast<int64_t*>(bc.view.buf), &canonical);
  else if (in64)
    nv = CooToCsr(static_cast<const int64_t*>(bi.view.buf), nse, m, n, static_cast<int32_t*>(bp.view.buf),
                  static_cast<int32_t*>(bc.view.buf), &canonical);
  else if (out64)
    nv = CooToCsr(static_cast<const int32_t*>(bi.view.buf), nse, m, n, static_cast<int64_t*>(bp.view.buf),
                  static_cast<int64_t*>(bc.view.buf), &canonical);
  else
    nv = CooToCsr(static_cast<const int32_t*>(bi.view.buf), nse, m, n, static_cast<int32_t*>(bp.view.buf),
                  static_cast<int32_t*>(bc.view.buf), &canonical);
  Py_END_ALLOW_THREADS
  if (nv < 0) Py_RETURN_NONE;
  return Py_BuildValue("(LO)", static_cast<long long>(nv), canonical ? Py_True : Py_False);
}

// host_csr_to_coo(indptr, indices, out, m, in64, out64): the (nnz, 2) COO index array of a CSR
// structure written into ``out`` (the caller checks shapes, dtypes and that indptr is monotone
// with indptr[0] == 0 and indptr[m] == nnz; see bcoo_array/_kernels/native.py).
static PyObject* host_csr_to_coo(PyObject*, PyObject* args) {
  PyObject *indptr, *indices, *out;
  long long m;
  int in64, out64;
  if (!PyArg_ParseTuple(args, "OOOLpp", &indptr, &indices, &out, &m, &in64, &out64)) return nullptr;
  Buf bp(indptr, false), bi(indices, false), bo(out, true);
  if (!(bp.ok && bi.ok && bo.ok)) return nullptr;
  Py_BEGIN_ALLOW_THREADS
  if (in64 && out64)
    CsrToCoo(static_cast<const int64_t*>(bp.view.buf), static_cast<const int64_t*>(bi.view.buf),
             static_cast<int64_t*>(bo.view.buf), m);
  else if (in64)
    CsrToCoo(static_cast<const int64_t*>(bp.view.buf), static_cast<const int64_t*>(bi.view.buf),
             static_cast<int32_t*>(bo.view.buf), m);
  else if (out64)
    CsrToCoo(static_cast<const int32_t*>(bp.view.buf), static_cast<const int32_t*>(bi.view.buf),
             static_cast<int64_t*>(bo.view.buf), m);
  else
    CsrToCoo(static_cast<const int32_t*>(bp.view.buf), static_cast<const int32_t*>(bi.view.buf),
             static_cast<int32_t*>(bo.view.buf), m);
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

static PyObject* registrations(PyObject*, PyObject*) {
  PyObject* dict = PyDict_New();
  if (dict == nullptr) return nullptr;
  const struct {
    const char* name;
    void* handler;
  } targets[] = {{"bcoo_array_coo_matmul", reinterpret_cast<void*>(BcooArrayCooMatmul)},
                 {"bcoo_array_csr_matvec", reinterpret_cast<void*>(BcooArrayCsrMatvec)}};
  for (const auto& t : targets) {
    PyObject* cap = PyCapsule_New(t.handler, nullptr, nullptr);
    if (cap == nullptr || PyDict_SetItemString(dict, t.name, cap) < 0) {
      Py_XDECREF(cap);
      Py_DECREF(dict);
      return nullptr;
    }
    Py_DECREF(cap);
  }
  return dict;
}

// host_csr_spmv(indptr, cols, data, x, out, m, dtype_code, idx64): out = A @ x for a CSR matrix
// on host buffers (the caller checks shapes and dtypes).
static PyObject* host_csr_spmv(PyObject*, PyObject* args) {
  PyObject *indptr, *cols, *data, *x, *out;
  long long m;
  int dtype, idx64;
  if (!PyArg_ParseTuple(args, "OOOOOLip", &indptr, &cols, &data, &x, &out, &m, &dtype, &idx64)) return nullptr;
  Buf bp(indptr, false), bc(cols, false), bd(data, false), bx(x, false), bo(out, true);
  if (!(bp.ok && bc.ok && bd.ok && bx.ok && bo.ok)) return nullptr;
  bool done;
  Py_BEGIN_ALLOW_THREADS
  done = BcooArrayHostCsrSpmv(dtype, idx64, bp.view.buf, bc.view.buf, bd.view.buf, bx.view.buf, bo.view.buf, m);
  Py_END_ALLOW_THREADS
  if (!done) {
    PyErr_SetString(PyExc_TypeError, "host_csr_spmv: unsupported dtype code");
    return nullptr;
  }
  Py_RETURN_NONE;
}

// host_csr_diagonal(indptr, cols, out, r0, k, idx64): out[i] = the position of the entry
// (r0 + i, r0 + i + k) of a canonical CSR structure, or -1 (the caller keeps both in range).
static PyObject* host_csr_diagonal(PyObject*, PyObject* args) {
  PyObject *indptr, *cols, *out;
  long long r0, k;
  int idx64;
  if (!PyArg_ParseTuple(args, "OOOLLp", &indptr, &cols, &out, &r0, &k, &idx64)) return nullptr;
  Buf bp(indptr, false), bc(cols, false), bo(out, true);
  if (!(bp.ok && bc.ok && bo.ok)) return nullptr;
  const int64_t count = bo.view.len / 8;
  Py_BEGIN_ALLOW_THREADS
  BcooArrayHostCsrDiagonal(idx64, bp.view.buf, bc.view.buf, r0, k, static_cast<int64_t*>(bo.view.buf), count);
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

// host_csr_select_count(indptr, cols, rows, col_count, idx64) -> int: the number of entries of
// A[np.ix_(rows, c)], col_count[j] being how often column j is in c (int64 arrays).
static PyObject* host_csr_select_count(PyObject*, PyObject* args) {
  PyObject *indptr, *cols, *rows, *col_count;
  int idx64;
  if (!PyArg_ParseTuple(args, "OOOOp", &indptr, &cols, &rows, &col_count, &idx64)) return nullptr;
  Buf bp(indptr, false), bc(cols, false), br(rows, false), bn(col_count, false);
  if (!(bp.ok && bc.ok && br.ok && bn.ok)) return nullptr;
  int64_t total;
  Py_BEGIN_ALLOW_THREADS
  total = BcooArrayHostCsrSelectCount(idx64, bp.view.buf, bc.view.buf, static_cast<const int64_t*>(br.view.buf),
                                      br.view.len / 8, static_cast<const int64_t*>(bn.view.buf));
  Py_END_ALLOW_THREADS
  return PyLong_FromLongLong(total);
}

// host_csr_select_fill(indptr, cols, rows, col_first, by_col, out_idx, out_src, idx64, out64): the
// (total, 2) indices and the source positions of A[np.ix_(rows, c)] (by_col: the positions of c
// grouped by column, col_first[j] where column j's group starts; sizes from host_csr_select_count).
static PyObject* host_csr_select_fill(PyObject*, PyObject* args) {
  PyObject *indptr, *cols, *rows, *col_first, *by_col, *out_idx, *out_src;
  int idx64, out64;
  if (!PyArg_ParseTuple(args, "OOOOOOOpp", &indptr, &cols, &rows, &col_first, &by_col, &out_idx, &out_src, &idx64,
                        &out64))
    return nullptr;
  Buf bp(indptr, false), bc(cols, false), br(rows, false), bf(col_first, false), bb(by_col, false),
      bi(out_idx, true), bs(out_src, true);
  if (!(bp.ok && bc.ok && br.ok && bf.ok && bb.ok && bi.ok && bs.ok)) return nullptr;
  Py_BEGIN_ALLOW_THREADS
  BcooArrayHostCsrSelectFill(idx64, out64, bp.view.buf, bc.view.buf, static_cast<const int64_t*>(br.view.buf),
                             br.view.len / 8, static_cast<const int64_t*>(bf.view.buf),
                             static_cast<const int64_t*>(bb.view.buf), bi.view.buf,
                             static_cast<int64_t*>(bs.view.buf));
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

// host_coo_union_count(ix, nx, iy, ny, idx64) -> int: the size of the union of two canonical 2-D COO
// patterns (their first nx / ny entries; the caller checks the layout).
static PyObject* host_coo_union_count(PyObject*, PyObject* args) {
  PyObject *ix, *iy;
  long long nx, ny;
  int idx64;
  if (!PyArg_ParseTuple(args, "OLOLp", &ix, &nx, &iy, &ny, &idx64)) return nullptr;
  Buf bx(ix, false), by(iy, false);
  if (!(bx.ok && by.ok)) return nullptr;
  int64_t n;
  Py_BEGIN_ALLOW_THREADS
  n = BcooArrayHostCooUnionCount(idx64, bx.view.buf, nx, by.view.buf, ny);
  Py_END_ALLOW_THREADS
  return PyLong_FromLongLong(n);
}

// host_coo_lookup(ix, nx, iq, nq, pos, idx64): pos[k] = the entry of the canonical 2-D pattern ix (its first
// nx entries) at query entry k of iq (nq entries, sorted row-major, one index dtype), -1 where none.
static PyObject* host_coo_lookup(PyObject*, PyObject* args) {
  PyObject *ix, *iq, *pos;
  long long nx, nq;
  int idx64;
  if (!PyArg_ParseTuple(args, "OLOLOp", &ix, &nx, &iq, &nq, &pos, &idx64)) return nullptr;
  Buf bx(ix, false), bq(iq, false), bp(pos, true);
  if (!(bx.ok && bq.ok && bp.ok)) return nullptr;
  Py_BEGIN_ALLOW_THREADS
  BcooArrayHostCooLookup(idx64, bx.view.buf, nx, bq.view.buf, nq, static_cast<int64_t*>(bp.view.buf));
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

// host_coo_union_apply(ix, nx, iy, ny, dx, dy, fx_re, fx_im, fy_re, fy_im, op, dtype_code, idx64, out_idx,
// out): the union's (row, col) pairs and op(x, y) values, unstored entries read as the fill values
// (op: 0 add, 1 subtract, 2 multiply).
static PyObject* host_coo_union_apply(PyObject*, PyObject* args) {
  PyObject *ix, *iy, *dx, *dy, *out_idx, *out;
  long long nx, ny;
  double fill[4];
  int op, dtype, idx64;
  if (!PyArg_ParseTuple(args, "OLOLOOddddiipOO", &ix, &nx, &iy, &ny, &dx, &dy, &fill[0], &fill[1], &fill[2],
                        &fill[3], &op, &dtype, &idx64, &out_idx, &out))
    return nullptr;
  Buf bx(ix, false), by(iy, false), bdx(dx, false), bdy(dy, false), bi(out_idx, true), bo(out, true);
  if (!(bx.ok && by.ok && bdx.ok && bdy.ok && bi.ok && bo.ok)) return nullptr;
  bool done;
  Py_BEGIN_ALLOW_THREADS
  done = BcooArrayHostCooUnionApply(dtype, idx64, bx.view.buf, nx, by.view.buf, ny, bdx.view.buf, bdy.view.buf,
                                    fill, op, bi.view.buf, bo.view.buf);
  Py_END_ALLOW_THREADS
  if (!done) {
    PyErr_SetString(PyExc_TypeError, "host_coo_union_apply: unsupported dtype code");
    return nullptr;
  }
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"registrations", registrations, METH_NOARGS,
     "Dict of FFI target name -> PyCapsule holding its XLA FFI handler."},
    {"host_coo_matmul", host_coo_matmul, METH_VARARGS,
     "out = A @ x for a COO matrix on C-contiguous host buffers (no XLA)."},
    {"host_csr_spmv", host_csr_spmv, METH_VARARGS,
     "out = A @ x for a CSR matrix on C-contiguous host buffers (no XLA)."},
    {"host_coo_to_csr", host_coo_to_csr, METH_VARARGS,
     "The CSR structure (row pointer, columns) of row-sorted 2-D COO indices, in one pass; None if not row-sorted."},
    {"host_csr_to_coo", host_csr_to_coo, METH_VARARGS,
     "out = the (nnz, 2) COO indices of a CSR structure, in one pass (no XLA)."},
    {"host_csr_diagonal", host_csr_diagonal, METH_VARARGS,
     "Positions of the k-th diagonal's entries in a canonical CSR structure, -1 where absent."},
    {"host_csr_select_count", host_csr_select_count, METH_VARARGS,
     "Entry count of an outer selection A[np.ix_(rows, cols)] of a CSR structure."},
    {"host_csr_select_fill", host_csr_select_fill, METH_VARARGS,
     "Indices and source positions of an outer selection A[np.ix_(rows, cols)] of a CSR structure."},
    {"host_coo_union_count", host_coo_union_count, METH_VARARGS,
     "Size of the union of two canonical 2-D COO patterns."},
    {"host_coo_lookup", host_coo_lookup, METH_VARARGS,
     "Positions of sorted query entries in a canonical 2-D COO pattern (-1 where none)."},
    {"host_coo_union_apply", host_coo_union_apply, METH_VARARGS,
     "The union of two canonical 2-D COO patterns with add / subtract / multiply applied in the same pass."},
    {nullptr, nullptr, 0, nullptr}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ffi",
                                    "Native jax.ffi kernels of bcoo_array.", -1, methods};

PyMODINIT_FUNC PyInit__ffi(void) { return PyModule_Create(&module); }
