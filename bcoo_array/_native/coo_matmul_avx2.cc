// The kernels of kernels.h compiled for AVX2 (no FMA: results stay
// bit-identical to the generic build), chosen at run time by coo_matmul.cc
// when the CPU has AVX2. Empty elsewhere (BCOO_HAVE_AVX2 = 0).

#include <complex>
#include <cstdint>
#include <cstring>

#include "xla/ffi/api/ffi.h"

#include "config.h"

#if BCOO_HAVE_AVX2
#pragma GCC push_options
#pragma GCC target("avx2")
#define BCOO_KERNEL_NS bcoo_avx2
#include "kernels.h"
#undef BCOO_KERNEL_NS

namespace bcoo_avx2 {
bool HostComputeAvx2(int dtype, bool idx64, const void* data, const void* idx, int64_t nse,
                     const void* x, int64_t k, int64_t n, void* y, int64_t m, bool vec) {
  return HostCompute(dtype, idx64, data, idx, nse, x, k, n, y, m, vec);
}
bool HostCsrSpmvAvx2(int dtype, bool idx64, const void* indptr, const void* cols, const void* data,
                     const void* x, void* y, int64_t m) {
  return HostCsrSpmv(dtype, idx64, indptr, cols, data, x, y, m);
}
bool CsrComputeAvx2(const xla::ffi::AnyBuffer& indptr, const xla::ffi::AnyBuffer& cols,
                    const xla::ffi::AnyBuffer& data, const xla::ffi::AnyBuffer& x,
                    xla::ffi::Result<xla::ffi::AnyBuffer>& out, int64_t k, int64_t m) {
  return CsrCompute(indptr, cols, data, x, out, k, m);
}
}  // namespace bcoo_avx2
#pragma GCC pop_options
#endif
