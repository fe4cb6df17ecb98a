// Kernel templates of coo_matmul.cc, included once per instruction set
// (namespace BCOO_KERNEL_NS): the generic build and, on x86-64 with GCC or
// Clang, an AVX2 build (coo_matmul_avx2.cc) chosen at run time. Plain IEEE
// operations only (no FMA contraction: C++17 ISO mode), so both builds give
// bit-identical results.
// No include guard: meant to be included once per namespace.

#include <complex>
#include <cstdint>
#include <cstring>

#include "xla/ffi/api/ffi.h"

namespace BCOO_KERNEL_NS {

namespace ffi = xla::ffi;


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

// Columns per register block of SpMM: 64 bytes of accumulators.
template <typename T>
constexpr int64_t kBlock = 64 / sizeof(T) > 0 ? 64 / sizeof(T) : 1;

// y[r, :] += data[i] * x[c, :]. A run of consecutive entries of one row is
// processed block of columns by block of columns, each block accumulated in
// registers (loaded from y before the run, stored after it), so the order of
// the additions into each y[r, j] is the entries' order, as in the plain loop.
template <typename T, typename I>
void SpmmOne(const T* __restrict data, const I* __restrict idx, int64_t nse,
             const T* __restrict x, int64_t k, int64_t n, T* __restrict y,
             int64_t m) {
  constexpr int64_t B = kBlock<T>;
  const uint64_t um = static_cast<uint64_t>(m), uk = static_cast<uint64_t>(k);
  int64_t i = 0;
  while (i < nse) {
    const int64_t r = static_cast<int64_t>(idx[2 * i]);
    if (static_cast<uint64_t>(r) >= um) {
      ++i;
      continue;
    }
    int64_t e = i + 1;  // the run of entries of row r: [i, e)
    while (e < nse && static_cast<int64_t>(idx[2 * e]) == r) ++e;
    T* __restrict yr = y + r * n;
    int64_t j0 = 0;
    for (; j0 + B <= n; j0 += B) {
      T acc[B];
      for (int64_t j = 0; j < B; ++j) acc[j] = yr[j0 + j];
      for (int64_t p = i; p < e; ++p) {
        const int64_t c = static_cast<int64_t>(idx[2 * p + 1]);
        if (static_cast<uint64_t>(c) >= uk) continue;
        const T d = data[p];
        const T* __restrict xr = x + c * n + j0;
        for (int64_t j = 0; j < B; ++j) acc[j] += Arith<T>::mul(d, xr[j]);
      }
      for (int64_t j = 0; j < B; ++j) yr[j0 + j] = acc[j];
    }
    if (j0 < n) {
      for (int64_t p = i; p < e; ++p) {
        const int64_t c = static_cast<int64_t>(idx[2 * p + 1]);
        if (static_cast<uint64_t>(c) >= uk) continue;
        const T d = data[p];
        const T* __restrict xr = x + c * n;
        for (int64_t j = j0; j < n; ++j) yr[j] += Arith<T>::mul(d, xr[j]);
      }
    }
    i = e;
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

// Calls f(T{}) with T the value type of an FFI dtype (float32/64,
// complex64/128); false, without calling f, for any other dtype.
template <typename F>
bool WithValueType(ffi::DataType t, F&& f) {
  switch (t) {
    case ffi::DataType::F32: f(float{}); return true;
    case ffi::DataType::F64: f(double{}); return true;
    case ffi::DataType::C64: f(std::complex<float>{}); return true;
    case ffi::DataType::C128: f(std::complex<double>{}); return true;
    default: return false;
  }
}

// Dispatch on the value and index dtypes; false for an unsupported pair.
bool Compute(const ffi::AnyBuffer& data, const ffi::AnyBuffer& indices,
                    const ffi::AnyBuffer& x, ffi::Result<ffi::AnyBuffer>& out,
                    int64_t batch_rank, int64_t nse, int64_t k, int64_t n,
                    int64_t m, bool vec) {
  const bool i64 = indices.element_type() == ffi::DataType::S64;
  if (!i64 && indices.element_type() != ffi::DataType::S32) return false;
  return WithValueType(data.element_type(), [&](auto tag) {
    using T = decltype(tag);
    if (i64)
      Run<T, int64_t>(data, indices, x, out, batch_rank, nse, k, n, m, vec);
    else
      Run<T, int32_t>(data, indices, x, out, batch_rank, nse, k, n, m, vec);
  });
}

// y = A @ x from a CSR structure (row pointer, columns): what scipy's
// csr_matvec does, reading 4 or 8 bytes of index per entry instead of the
// COO pair. The additions into y[r] run in entry order from 0, as in SpmvOne
// on row-sorted entries, so both give the same bits.
template <typename T, typename I>
void CsrSpmvOne(const I* __restrict indptr, const I* __restrict cols, const T* __restrict data,
                const T* __restrict x, T* __restrict y, int64_t m) {
  for (int64_t r = 0; r < m; ++r) {
    T acc = T(0);
    const int64_t end = static_cast<int64_t>(indptr[r + 1]);
    for (int64_t p = static_cast<int64_t>(indptr[r]); p < end; ++p)
      acc += Arith<T>::mul(data[p], x[static_cast<int64_t>(cols[p])]);
    y[r] = acc;
  }
}

// y = A @ x for the CSR form handed to the FFI kernel: indptr is checked by
// the caller (non-decreasing, within [0, nse]); a column out of [0, k)
// (padding) adds nothing. The same additions in the same order as
// CsrSpmvOne and as SpmvOne on row-sorted entries.
template <typename T, typename I>
void CsrSpmvChecked(const I* __restrict indptr, const I* __restrict cols, const T* __restrict data,
                    const T* __restrict x, int64_t k, T* __restrict y, int64_t m) {
  const uint64_t uk = static_cast<uint64_t>(k);
  for (int64_t r = 0; r < m; ++r) {
    T acc = T(0);
    const int64_t end = static_cast<int64_t>(indptr[r + 1]);
    for (int64_t p = static_cast<int64_t>(indptr[r]); p < end; ++p) {
      const int64_t c = static_cast<int64_t>(cols[p]);
      if (static_cast<uint64_t>(c) >= uk) continue;
      acc += Arith<T>::mul(data[p], x[c]);
    }
    y[r] = acc;
  }
}

// Dispatch of CsrSpmvChecked on the FFI buffers' dtypes; false for an unsupported pair.
inline bool CsrCompute(const ffi::AnyBuffer& indptr, const ffi::AnyBuffer& cols, const ffi::AnyBuffer& data,
                       const ffi::AnyBuffer& x, ffi::Result<ffi::AnyBuffer>& out, int64_t k, int64_t m) {
  const bool i64 = indptr.element_type() == ffi::DataType::S64;
  if (!i64 && indptr.element_type() != ffi::DataType::S32) return false;
  return WithValueType(data.element_type(), [&](auto tag) {
    using T = decltype(tag);
    const T* dp = static_cast<const T*>(data.untyped_data());
    const T* xp = static_cast<const T*>(x.untyped_data());
    T* yp = static_cast<T*>(out->untyped_data());
    if (i64)
      CsrSpmvChecked<T, int64_t>(static_cast<const int64_t*>(indptr.untyped_data()),
                                 static_cast<const int64_t*>(cols.untyped_data()), dp, xp, k, yp, m);
    else
      CsrSpmvChecked<T, int32_t>(static_cast<const int32_t*>(indptr.untyped_data()),
                                 static_cast<const int32_t*>(cols.untyped_data()), dp, xp, k, yp, m);
  });
}

inline bool HostCsrSpmv(int dtype, bool idx64, const void* indptr, const void* cols, const void* data,
                        const void* x, void* y, int64_t m) {
#define BCOO_CSR(CODE, T)                                                                          \
  case CODE:                                                                                       \
    if (idx64)                                                                                     \
      CsrSpmvOne<T, int64_t>(static_cast<const int64_t*>(indptr), static_cast<const int64_t*>(cols), \
                             static_cast<const T*>(data), static_cast<const T*>(x), static_cast<T*>(y), m); \
    else                                                                                           \
      CsrSpmvOne<T, int32_t>(static_cast<const int32_t*>(indptr), static_cast<const int32_t*>(cols), \
                             static_cast<const T*>(data), static_cast<const T*>(x), static_cast<T*>(y), m); \
    return true;
  switch (dtype) {
    BCOO_CSR(0, float)
    BCOO_CSR(1, double)
    BCOO_CSR(2, std::complex<float>)
    BCOO_CSR(3, std::complex<double>)
    default:
      return false;
  }
#undef BCOO_CSR
}

// The same loops on plain host pointers (eager calls from Python on NumPy
// buffers, no XLA dispatch). dtype: 0 float32, 1 float64, 2 complex64,
// 3 complex128; y (m,) or (m, n) is zeroed here. False for an unknown dtype.
inline bool HostCompute(int dtype, bool idx64, const void* data, const void* idx, int64_t nse,
                        const void* x, int64_t k, int64_t n, void* y, int64_t m, bool vec) {
#define BCOO_HOST(CODE, T)                                                              \
  case CODE: {                                                                          \
    T* yp = static_cast<T*>(y);                                                         \
    if (m * n > 0) std::memset(yp, 0, sizeof(T) * m * n);                               \
    if (m * n == 0) return true;                                                        \
    const T* dp = static_cast<const T*>(data);                                          \
    const T* xp = static_cast<const T*>(x);                                             \
    if (idx64) {                                                                        \
      const int64_t* ip = static_cast<const int64_t*>(idx);                             \
      if (vec || n == 1) SpmvOne<T, int64_t>(dp, ip, nse, xp, k, yp, m);                \
      else SpmmOne<T, int64_t>(dp, ip, nse, xp, k, n, yp, m);                           \
    } else {                                                                            \
      const int32_t* ip = static_cast<const int32_t*>(idx);                             \
      if (vec || n == 1) SpmvOne<T, int32_t>(dp, ip, nse, xp, k, yp, m);                \
      else SpmmOne<T, int32_t>(dp, ip, nse, xp, k, n, yp, m);                           \
    }                                                                                   \
    return true;                                                                        \
  }
  switch (dtype) {
    BCOO_HOST(0, float)
    BCOO_HOST(1, double)
    BCOO_HOST(2, std::complex<float>)
    BCOO_HOST(3, std::complex<double>)
    default:
      return false;
  }
#undef BCOO_HOST
}

}  // namespace BCOO_KERNEL_NS
