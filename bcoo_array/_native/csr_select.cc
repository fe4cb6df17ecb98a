// Host kernels on a canonical CSR structure (row pointer, strictly increasing columns per row):
// the positions of a diagonal's entries, and the entries of an outer selection A[np.ix_(rows, cols)].
// Algorithms as scipy's sparsetools (csr_diagonal, csr_row_index, csr_column_index1/2):
// a binary search within a row, and a count per column followed by a fill.

#include <algorithm>
#include <cstdint>

namespace {

// The positions of the diagonal entries (r0 + i, r0 + i + k), i < count, or -1 where none is stored.
template <typename I>
void CsrDiagonal(const I* indptr, const I* cols, int64_t r0, int64_t k, int64_t* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const int64_t r = r0 + i;
    const I* lo = cols + indptr[r];
    const I* hi = cols + indptr[r + 1];
    const I t = static_cast<I>(r + k);
    const I* it = std::lower_bound(lo, hi, t);
    out[i] = (it != hi && *it == t) ? static_cast<int64_t>(it - cols) : -1;
  }
}

template <typename I>
int64_t CsrSelectCount(const I* indptr, const I* cols, const int64_t* rows, int64_t n_rows,
                       const int64_t* col_count) {
  int64_t total = 0;
  for (int64_t i = 0; i < n_rows; ++i) {
    const int64_t r = rows[i];
    for (int64_t p = indptr[r]; p < static_cast<int64_t>(indptr[r + 1]); ++p) total += col_count[cols[p]];
  }
  return total;
}

// Entries of row i of the selection, row by row: for each stored entry (rows[i], c) and each output
// column j with cols_selected[j] == c (by_col[col_first[c] .. col_first[c + 1]]), the pair (i, j) and
// the source position p.
template <typename I, typename O>
void CsrSelectFill(const I* indptr, const I* cols, const int64_t* rows, int64_t n_rows, const int64_t* col_first,
                   const int64_t* by_col, O* out_idx, int64_t* out_src) {
  int64_t q = 0;
  for (int64_t i = 0; i < n_rows; ++i) {
    const int64_t r = rows[i];
    for (int64_t p = indptr[r]; p < static_cast<int64_t>(indptr[r + 1]); ++p) {
      const int64_t c = cols[p];
      for (int64_t s = col_first[c]; s < col_first[c + 1]; ++s) {
        out_idx[2 * q] = static_cast<O>(i);
        out_idx[2 * q + 1] = static_cast<O>(by_col[s]);
        out_src[q] = p;
        ++q;
      }
    }
  }
}

}  // namespace

void BcooArrayHostCsrDiagonal(bool idx64, const void* indptr, const void* cols, int64_t r0, int64_t k,
                              int64_t* out, int64_t count) {
  if (idx64)
    CsrDiagonal(static_cast<const int64_t*>(indptr), static_cast<const int64_t*>(cols), r0, k, out, count);
  else
    CsrDiagonal(static_cast<const int32_t*>(indptr), static_cast<const int32_t*>(cols), r0, k, out, count);
}

int64_t BcooArrayHostCsrSelectCount(bool idx64, const void* indptr, const void* cols, const int64_t* rows,
                                    int64_t n_rows, const int64_t* col_count) {
  if (idx64)
    return CsrSelectCount(static_cast<const int64_t*>(indptr), static_cast<const int64_t*>(cols), rows, n_rows,
                          col_count);
  return CsrSelectCount(static_cast<const int32_t*>(indptr), static_cast<const int32_t*>(cols), rows, n_rows,
                        col_count);
}

void BcooArrayHostCsrSelectFill(bool idx64, bool out64, const void* indptr, const void* cols, const int64_t* rows,
                                int64_t n_rows, const int64_t* col_first, const int64_t* by_col, void* out_idx,
                                int64_t* out_src) {
  if (idx64 && out64)
    CsrSelectFill(static_cast<const int64_t*>(indptr), static_cast<const int64_t*>(cols), rows, n_rows, col_first,
                  by_col, static_cast<int64_t*>(out_idx), out_src);
  else if (idx64)
    CsrSelectFill(static_cast<const int64_t*>(indptr), static_cast<const int64_t*>(cols), rows, n_rows, col_first,
                  by_col, static_cast<int32_t*>(out_idx), out_src);
  else if (out64)
    CsrSelectFill(static_cast<const int32_t*>(indptr), static_cast<const int32_t*>(cols), rows, n_rows, col_first,
                  by_col, static_cast<int64_t*>(out_idx), out_src);
  else
    CsrSelectFill(static_cast<const int32_t*>(indptr), static_cast<const int32_t*>(cols), rows, n_rows, col_first,
                  by_col, static_cast<int32_t*>(out_idx), out_src);
}
