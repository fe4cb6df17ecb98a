// Native CPU kernel for y = A @ x, A a 2-D COO matrix given by its BCOO
// buffers (data (nse,), indices (nse, 2)), registered with jax.ffi.
//
//   y[r, :] += data[i] * x[c, :]   for each entry i with 0 <= r < m, 0 <= c < k
//
// Entries with an out-of-range index (padding: index == dimension; negative
// indices, defensively) add nothing. The output is zeroed first and
// accumulated in the output dtype, entry by entry in storage order, so every
// y[r, j] is the result of a serial loop over the entries (the summation
// order of a sequential scatter-add). Row-sorted input (canonical form)
// streams through memory; a run of consecutive entries of one row
// accumulates in registers (kernels.h).
//
// Leading batch dimensions (from jax.vmap with vmap_method="expand_dims"):
// data (*B, nse), indices (*B, nse, 2), x (*B, k) or (*B, k, n), out
// (*B', m) or (*B', m, n); each input batch dimension is 1 (broadcast) or
// equal to the output's.

#include <complex>
#include <cstdint>
#include <cstring>

#include "xla/ffi/api/ffi.h"

#include "config.h"

#define BCOO_KERNEL_NS bcoo_generic
#include "kernels.h"
#undef BCOO_KERNEL_NS

#if BCOO_HAVE_AVX2
namespace bcoo_avx2 {
bool HostComputeAvx2(int dtype, bool idx64, const void* data, const void* idx, int64_t nse,
                     const void* x, int64_t k, int64_t n, void* y, int64_t m, bool vec);
bool HostCsrSpmvAvx2(int dtype, bool idx64, const void* indptr, const void* cols, const void* data,
                     const void* x, void* y, int64_t m);
bool CsrComputeAvx2(const xla::ffi::AnyBuffer& indptr, const xla::ffi::AnyBuffer& cols,
                    const xla::ffi::AnyBuffer& data, const xla::ffi::AnyBuffer& x,
                    xla::ffi::Result<xla::ffi::AnyBuffer>& out, int64_t k, int64_t m);
bool Compute(const xla::ffi::AnyBuffer& data, const xla::ffi::AnyBuffer& indices,
             const xla::ffi::AnyBuffer& x, xla::ffi::Result<xla::ffi::AnyBuffer>& out,
             int64_t batch_rank, int64_t nse, int64_t k, int64_t n, int64_t m, bool vec);
}  // namespace bcoo_avx2
#endif

namespace ffi = xla::ffi;

namespace {

bool UseAvx2() {
#if BCOO_HAVE_AVX2
  static const bool ok = __builtin_cpu_supports("avx2");
  return ok;
#else
  return false;
#endif
}

ffi::Error CooMatmulImpl(ffi::AnyBuffer data, ffi::AnyBuffer indices,
                         ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> out,
                         int64_t m) {
  const auto dd = data.dimensions(), id = indices.dimensions(), xd = x.dimensions(),
             od = out->dimensions();
  if (dd.size() < 1) return ffi::Error::InvalidArgument("coo_matmul: data must have rank >= 1");
  const int64_t br = static_cast<int64_t>(dd.size()) - 1;
  const int64_t xr = static_cast<int64_t>(xd.size()) - br;
  if (static_cast<int64_t>(id.size()) != br + 2 || id[br + 1] != 2 || id[br] != dd[br])
    return ffi::Error::InvalidArgument("coo_matmul: indices must have shape (..., nse, 2)");
  if (xr != 1 && xr != 2)
    return ffi::Error::InvalidArgument("coo_matmul: x must have shape (..., k) or (..., k, n)");
  if (static_cast<int64_t>(od.size()) != br + xr || od[br] != m ||
      (xr == 2 && od[br + 1] != xd[br + 1]))
    return ffi::Error::InvalidArgument("coo_matmul: output shape mismatch");
  for (int64_t b = 0; b < br; ++b) {
    if ((dd[b] != 1 && dd[b] != od[b]) || (id[b] != 1 && id[b] != od[b]) ||
        (xd[b] != 1 && xd[b] != od[b]))
      return ffi::Error::InvalidArgument("coo_matmul: batch dimensions do not broadcast");
  }
  const ffi::DataType t = data.element_type();
  if (x.element_type() != t || out->element_type() != t)
    return ffi::Error::InvalidArgument("coo_matmul: data, x and output dtypes differ");
  const int64_t nse = dd[br], k = xd[br], n = xr == 2 ? xd[br + 1] : 1;
  const bool vec = xr == 1;
  bool ok;
#if BCOO_HAVE_AVX2
  if (UseAvx2())
    ok = bcoo_avx2::Compute(data, indices, x, out, br, nse, k, n, m, vec);
  else
#endif
    ok = bcoo_generic::Compute(data, indices, x, out, br, nse, k, n, m, vec);
  if (!ok)
    return ffi::Error::InvalidArgument(
        "coo_matmul: values must be float32, float64, complex64 or complex128 and "
        "indices int32 or int64");
  return ffi::Error::Success();
}

// Whether a row pointer is non-decreasing from >= 0 to <= nnz (every entry it names is in bounds).
template <typename I>
bool IndptrSane(const I* p, int64_t m, int64_t nnz) {
  if (p[0] < 0 || p[m] > nnz) return false;
  for (int64_t r = 0; r < m; ++r)
    if (p[r] > p[r + 1]) return false;
  return true;
}

// y = A @ x for a CSR matrix (indptr (m + 1,), cols (nnz,), data (>= nnz,): the
// first nnz values, x (k,)):
// the vector product of the FFI path with 4 or 8 bytes of index per entry,
// as scipy's csr_matvec, for matrices whose rows are sorted (the CSR form is
// built from the BCOO buffers by bcoo_array/_kernels/native.py). indptr is
// checked here (non-decreasing from >= 0 to <= nnz) so that no entry is read
// out of bounds; columns out of [0, k) are padding and add nothing.
ffi::Error CsrMatvecImpl(ffi::AnyBuffer indptr, ffi::AnyBuffer cols, ffi::AnyBuffer data,
                         ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> out) {
  const auto pd = indptr.dimensions(), cd = cols.dimensions(), dd = data.dimensions(),
             xd = x.dimensions(), od = out->dimensions();
  if (pd.size() != 1 || cd.size() != 1 || dd.size() != 1 || xd.size() != 1 || od.size() != 1 || pd[0] < 1)
    return ffi::Error::InvalidArgument("csr_matvec: indptr, cols, data, x and y must be 1-D");
  const int64_t m = pd[0] - 1, nnz = cd[0], k = xd[0];
  if (dd[0] < nnz || od[0] != m)
    return ffi::Error::InvalidArgument(
        "csr_matvec: data must hold at least cols.size values and y indptr.size - 1 rows");
  const ffi::DataType t = data.element_type();
  if (x.element_type() != t || out->element_type() != t || cols.element_type() != indptr.element_type())
    return ffi::Error::InvalidArgument("csr_matvec: dtypes differ");
  bool sane = true;  // another index dtype is refused by CsrCompute below
  if (indptr.element_type() == ffi::DataType::S64)
    sane = IndptrSane(static_cast<const int64_t*>(indptr.untyped_data()), m, nnz);
  else if (indptr.element_type() == ffi::DataType::S32)
    sane = IndptrSane(static_cast<const int32_t*>(indptr.untyped_data()), m, nnz);
  if (!sane) return ffi::Error::InvalidArgument("csr_matvec: indptr must be non-decreasing within [0, nnz]");
  bool ok;
#if BCOO_HAVE_AVX2
  if (UseAvx2())
    ok = bcoo_avx2::CsrComputeAvx2(indptr, cols, data, x, out, k, m);
  else
#endif
    ok = bcoo_generic::CsrCompute(indptr, cols, data, x, out, k, m);
  if (!ok)
    return ffi::Error::InvalidArgument(
        "csr_matvec: values must be float32, float64, complex64 or complex128 and indices int32 or int64");
  return ffi::Error::Success();
}

}  // namespace

// Entry point of the host path (module.cc): the same loops, no XLA.
bool BcooArrayHostCooMatmul(int dtype, bool idx64, const void* data, const void* idx, int64_t nse,
                            const void* x, int64_t k, int64_t n, void* y, int64_t m, bool vec) {
#if BCOO_HAVE_AVX2
  if (UseAvx2()) return bcoo_avx2::HostComputeAvx2(dtype, idx64, data, idx, nse, x, k, n, y, m, vec);
#endif
  return bcoo_generic::HostCompute(dtype, idx64, data, idx, nse, x, k, n, y, m, vec);
}

// Entry point of the host CSR SpMV (module.cc).
bool BcooArrayHostCsrSpmv(int dtype, bool idx64, const void* indptr, const void* cols, const void* data,
                          const void* x, void* y, int64_t m) {
#if BCOO_HAVE_AVX2
  if (UseAvx2()) return bcoo_avx2::HostCsrSpmvAvx2(dtype, idx64, indptr, cols, data, x, y, m);
#endif
  return bcoo_generic::HostCsrSpmv(dtype, idx64, indptr, cols, data, x, y, m);
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(BcooArrayCooMatmul, CooMatmulImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()  // data
                                  .Arg<ffi::AnyBuffer>()  // indices
                                  .Arg<ffi::AnyBuffer>()  // x
                                  .Ret<ffi::AnyBuffer>()  // y
                                  .Attr<int64_t>("m"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(BcooArrayCsrMatvec, CsrMatvecImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()  // indptr
                                  .Arg<ffi::AnyBuffer>()  // cols
                                  .Arg<ffi::AnyBuffer>()  // data
                                  .Arg<ffi::AnyBuffer>()  // x
                                  .Ret<ffi::AnyBuffer>());  // y
