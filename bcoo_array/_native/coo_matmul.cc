// Native CPU kernel for y = A @ x, A a 2-D COO matrix given by its BCOO
// buffers (data (nse,), indices (nse, 2)), registered with jax.ffi.
//
//   y[r, :] += data[i] * x[c, :]   for each entry i with 0 <= r < m, 0 <= c < k
//
// Entries with an out-of-range index (padding: index == dimension; negative
// indices, defensively) add nothing. The output is zeroed first and
// accumulated in the output dtype, entry by entry in storage order, so the
// result of each row is that of a serial loop over the entries (the same
// summation order as a sequential scatter-add). Row-sorted input (canonical
// form) streams through memory; consecutive entries of one row accumulate in
// a register (SpMV) or in the L1-resident output row (SpMM).
//
// Leading batch dimensions (from jax.vmap with vmap_method="expand_dims"):
// data (*B, nse), indices (*B, nse, 2), x (*B, k) or (*B, k, n), out
// (*B', m) or (*B', m, n); each input batch dimension is 1 (broadcast) or
// equal to the output's.

#include <complex>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

template <typename T>
struct Arith {
  static inline T mul(T a, T b) { return a * b; }
};

// Plain complex product (as XLA computes it), without the C99 Annex G
// inf/nan recovery of std::complex's operator* (a libgcc call per product).
template <typename R>
struct Arith<std::complex<R>> {
  static inline std::complex<R> mul(std::complex<R> a, std::complex<R> b) {
    return std::complex<R>(a.real() * b.real() - a.imag() * b.imag(),
                           a.real() * b.imag() + a.imag() * b.real());
  }
};

template <typename T, typename I>
void SpmvOne(const T* __restrict data, const I* __restrict idx, int64_t nse,
             const T* __restrict x, int64_t k, T* __restrict y, int64_t m) {
  const uint64_t um = static_cast<uint64_t>(m), uk = static_cast<uint64_t>(k);
  int64_t cur = -1;  // row held in acc
  T acc = T(0);
  for (int64_t i = 0; i < nse; ++i) {
    const int64_t r = static_cast<int64_t>(idx[2 * i]);
    const int64_t c = static_cast<int64_t>(idx[2 * i + 1]);
    // unsigned compare: rejects negatives and index >= dimension at once
    if (static_cast<uint64_t>(r) >= um || static_cast<uint64_t>(c) >= uk) continue;
    if (r != cur) {
      if (cur >= 0) y[cur] = acc;
      cur = r;
      acc = y[r];
    }
    acc += Arith<T>::mul(data[i], x[c]);
  }
  if (cur >= 0) y[cur] = acc;
}

template <typename T, typename I>
void SpmmOne(const T* __restrict data, const I* __restrict idx, int64_t nse,
             const T* __restrict x, int64_t k, int64_t n, T* __restrict y,
             int64_t m) {
  const uint64_t um = static_cast<uint64_t>(m), uk = static_cast<uint64_t>(k);
  for (int64_t i = 0; i < nse; ++i) {
    const int64_t r = static_cast<int64_t>(idx[2 * i]);
    const int64_t c = static_cast<int64_t>(idx[2 * i + 1]);
    if (static_cast<uint64_t>(r) >= um || static_cast<uint64_t>(c) >= uk) continue;
    const T d = data[i];
    const T* __restrict xr = x + c * n;
    T* __restrict yr = y + r * n;
    for (int64_t j = 0; j < n; ++j) yr[j] += Arith<T>::mul(d, xr[j]);
  }
}

template <typename T, typename I>
void Run(const ffi::AnyBuffer& data, const ffi::AnyBuffer& indices,
         const ffi::AnyBuffer& x, ffi::Result<ffi::AnyBuffer>& out,
         int64_t batch_rank, int64_t nse, int64_t k, int64_t n, int64_t m,
         bool vec) {
  const T* dp = static_cast<const T*>(data.untyped_data());
  const I* ip = static_cast<const I*>(indices.untyped_data());
  const T* xp = static_cast<const T*>(x.untyped_data());
  T* yp = static_cast<T*>(out->untyped_data());
  const auto dd = data.dimensions(), id = indices.dimensions(), xd = x.dimensions(),
             od = out->dimensions();
  int64_t total = 1;
  for (int64_t b = 0; b < batch_rank; ++b) total *= od[b];
  const int64_t ysz = m * n;
  if (total * ysz > 0) std::memset(yp, 0, sizeof(T) * total * ysz);
  if (ysz == 0) return;
  for (int64_t flat = 0; flat < total; ++flat) {
    // offsets of this batch element in each input (size-1 dims broadcast)
    int64_t rem = flat, doff = 0, ioff = 0, xoff = 0;
    int64_t dstr = nse, istr = 2 * nse, xstr = k * n;
    for (int64_t b = batch_rank - 1; b >= 0; --b) {
      const int64_t ob = od[b];
      const int64_t pos = rem % ob;
      rem /= ob;
      if (dd[b] != 1) doff += pos * dstr;
      if (id[b] != 1) ioff += pos * istr;
      if (xd[b] != 1) xoff += pos * xstr;
      dstr *= dd[b];
      istr *= id[b];
      xstr *= xd[b];
    }
    T* y = yp + flat * ysz;
    if (vec || n == 1)
      SpmvOne<T, I>(dp + doff, ip + ioff, nse, xp + xoff, k, y, m);
    else
      SpmmOne<T, I>(dp + doff, ip + ioff, nse, xp + xoff, k, n, y, m);
  }
}

template <typename T>
ffi::Error RunIdx(ffi::DataType it, const ffi::AnyBuffer& data,
                  const ffi::AnyBuffer& indices, const ffi::AnyBuffer& x,
                  ffi::Result<ffi::AnyBuffer>& out, int64_t batch_rank,
                  int64_t nse, int64_t k, int64_t n, int64_t m, bool vec) {
  switch (it) {
    case ffi::DataType::S32:
      Run<T, int32_t>(data, indices, x, out, batch_rank, nse, k, n, m, vec);
      return ffi::Error::Success();
    case ffi::DataType::S64:
      Run<T, int64_t>(data, indices, x, out, batch_rank, nse, k, n, m, vec);
      return ffi::Error::Success();
    default:
      return ffi::Error::InvalidArgument("coo_matmul: indices must be int32 or int64");
  }
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
  const ffi::DataType it = indices.element_type();
  switch (t) {
    case ffi::DataType::F32:
      return RunIdx<float>(it, data, indices, x, out, br, nse, k, n, m, vec);
    case ffi::DataType::F64:
      return RunIdx<double>(it, data, indices, x, out, br, nse, k, n, m, vec);
    case ffi::DataType::C64:
      return RunIdx<std::complex<float>>(it, data, indices, x, out, br, nse, k, n, m, vec);
    case ffi::DataType::C128:
      return RunIdx<std::complex<double>>(it, data, indices, x, out, br, nse, k, n, m, vec);
    default:
      return ffi::Error::InvalidArgument(
          "coo_matmul: dtype must be float32, float64, complex64 or complex128");
  }
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(BcooArrayCooMatmul, CooMatmulImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()  // data
                                  .Arg<ffi::AnyBuffer>()  // indices
                                  .Arg<ffi::AnyBuffer>()  // x
                                  .Ret<ffi::AnyBuffer>()  // y
                                  .Attr<int64_t>("m"));
