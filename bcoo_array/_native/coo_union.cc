// The union of two canonical 2-D COO patterns with an element-wise operation applied in the same pass:
// C = op(A, B) where an operand's unstored entries hold its fill value. A linear merge of the two
// row-major sorted entry lists (scipy's csr_binop_csr walks rows the same way), run twice: a count
// pass sizes the result, a fill pass writes its (row, col) pairs and values. No plan, no per-operand
// expansion of the values to the union: the memory is the result's.

#include <complex>
#include <cstdint>

namespace {

enum Op { kAdd = 0, kSubtract = 1, kMultiply = 2 };

template <typename T>
inline T Apply(int op, T a, T b) {
  switch (op) {
    case kAdd:
      return a + b;
    case kSubtract:
      return a - b;
    default:
      return a * b;
  }
}

// -1, 0, 1 as entry i of x sorts before, with, after entry j of y (row-major).
template <typename I>
inline int Compare(const I* x, int64_t i, const I* y, int64_t j) {
  const I rx = x[2 * i], ry = y[2 * j];
  if (rx != ry) return rx < ry ? -1 : 1;
  const I cx = x[2 * i + 1], cy = y[2 * j + 1];
  return cx == cy ? 0 : (cx < cy ? -1 : 1);
}

template <typename I>
int64_t UnionCount(const I* x, int64_t nx, const I* y, int64_t ny) {
  int64_t i = 0, j = 0, n = 0;
  while (i < nx && j < ny) {
    const int c = Compare(x, i, y, j);
    i += c <= 0;
    j += c >= 0;
    ++n;
  }
  return n + (nx - i) + (ny - j);
}

template <typename I, typename T>
void UnionApply(const I* x, int64_t nx, const I* y, int64_t ny, const T* dx, const T* dy, T fx, T fy, int op,
                I* out_idx, T* out) {
  int64_t i = 0, j = 0, n = 0;
  auto put = [&](const I* src, int64_t k, T v) {
    out_idx[2 * n] = src[2 * k];
    out_idx[2 * n + 1] = src[2 * k + 1];
    out[n++] = v;
  };
  while (i < nx && j < ny) {
    const int c = Compare(x, i, y, j);
    if (c < 0) {
      put(x, i, Apply(op, dx[i], fy));
      ++i;
    } else if (c > 0) {
      put(y, j, Apply(op, fx, dy[j]));
      ++j;
    } else {
      put(x, i, Apply(op, dx[i], dy[j]));
      ++i;
      ++j;
    }
  }
  for (; i < nx; ++i) put(x, i, Apply(op, dx[i], fy));
  for (; j < ny; ++j) put(y, j, Apply(op, fx, dy[j]));
}

template <typename I>
bool UnionApplyTyped(int dtype, const I* x, int64_t nx, const I* y, int64_t ny, const void* dx, const void* dy,
                     const double* fill, int op, I* out_idx, void* out) {
  // Complex products stay with NumPy: its rounding of the two terms of the real and imaginary parts can
  // differ from a plain formula's (fused multiply-adds), and std::complex's adds C99 Annex G recovery.
  if (op == kMultiply && (dtype == 2 || dtype == 3)) return false;
  switch (dtype) {
    case 0:
      UnionApply(x, nx, y, ny, static_cast<const float*>(dx), static_cast<const float*>(dy),
                 static_cast<float>(fill[0]), static_cast<float>(fill[2]), op, out_idx, static_cast<float*>(out));
      return true;
    case 1:
      UnionApply(x, nx, y, ny, static_cast<const double*>(dx), static_cast<const double*>(dy), fill[0], fill[2], op,
                 out_idx, static_cast<double*>(out));
      return true;
    case 2: {
      using C = std::complex<float>;
      UnionApply(x, nx, y, ny, static_cast<const C*>(dx), static_cast<const C*>(dy),
                 C(static_cast<float>(fill[0]), static_cast<float>(fill[1])),
                 C(static_cast<float>(fill[2]), static_cast<float>(fill[3])), op, out_idx, static_cast<C*>(out));
      return true;
    }
    case 3: {
      using C = std::complex<double>;
      UnionApply(x, nx, y, ny, static_cast<const C*>(dx), static_cast<const C*>(dy), C(fill[0], fill[1]),
                 C(fill[2], fill[3]), op, out_idx, static_cast<C*>(out));
      return true;
    }
    default:
      return false;
  }
}

// pos[q] = the entry of pattern x (nx entries, canonical) equal to query entry q (nq entries, sorted
// row-major), -1 where x stores nothing there. One forward walk over x: from the last match, a galloping
// (exponential, then binary) search for each query, so a few queries against a long pattern cost
// O(nq log(nx / nq)) and a dense query list O(nx + nq).
template <typename I>
void Lookup(const I* x, int64_t nx, const I* q, int64_t nq, int64_t* pos) {
  int64_t lo = 0;  // every entry of x before lo sorts before the current query
  for (int64_t k = 0; k < nq; ++k) {
    int64_t step = 1, hi = lo;
    while (hi < nx && Compare(x, hi, q, k) < 0) {  // gallop: x[hi] < q[k]
      lo = hi + 1;
      hi += step;
      step *= 2;
    }
    if (hi > nx) hi = nx;
    while (lo < hi) {  // the first entry in [lo, hi) not before q[k]
      const int64_t mid = lo + (hi - lo) / 2;
      if (Compare(x, mid, q, k) < 0) lo = mid + 1; else hi = mid;
    }
    pos[k] = (lo < nx && Compare(x, lo, q, k) == 0) ? lo : -1;
  }
}

}  // namespace

void BcooArrayHostCooLookup(bool idx64, const void* x, int64_t nx, const void* q, int64_t nq, int64_t* pos) {
  if (idx64)
    Lookup(static_cast<const int64_t*>(x), nx, static_cast<const int64_t*>(q), nq, pos);
  else
    Lookup(static_cast<const int32_t*>(x), nx, static_cast<const int32_t*>(q), nq, pos);
}

int64_t BcooArrayHostCooUnionCount(bool idx64, const void* x, int64_t nx, const void* y, int64_t ny) {
  if (idx64)
    return UnionCount(static_cast<const int64_t*>(x), nx, static_cast<const int64_t*>(y), ny);
  return UnionCount(static_cast<const int32_t*>(x), nx, static_cast<const int32_t*>(y), ny);
}

bool BcooArrayHostCooUnionApply(int dtype, bool idx64, const void* x, int64_t nx, const void* y, int64_t ny,
                                const void* dx, const void* dy, const double* fill, int op, void* out_idx,
                                void* out) {
  if (idx64)
    return UnionApplyTyped(dtype, static_cast<const int64_t*>(x), nx, static_cast<const int64_t*>(y), ny, dx, dy,
                           fill, op, static_cast<int64_t*>(out_idx), out);
  return UnionApplyTyped(dtype, static_cast<const int32_t*>(x), nx, static_cast<const int32_t*>(y), ny, dx, dy,
                         fill, op, static_cast<int32_t*>(out_idx), out);
}
