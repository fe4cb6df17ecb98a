"""``eigsh``: eigenpairs of a Hermitian BCOOArray by ARPACK (``scipy.sparse.linalg.eigsh``), with the
inverses that shift-invert mode needs taken from a sparse LU factorization.

scipy factorizes ``A - sigma * M`` with SuperLU only when ``A`` is one of
its own sparse classes; any other operator (a BCOOArray goes through
``aslinearoperator``) is inverted by GMRES on every ARPACK step, which does
not converge for an ill-conditioned or indefinite shift ("gmres_loose did not
converge"). ``eigsh`` here factorizes the scipy copy of ``A - sigma * M``
itself (``scipy.sparse.linalg.splu``, what scipy does for its own classes)
and hands scipy the inverse as ``OPinv``; ARPACK's products with ``A`` and
``M`` stay products with the BCOOArrays. ARPACK, the factorization and the
solves run on the host (NumPy), so ``eigsh`` is eager (not traceable).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, splu
from scipy.sparse.linalg import eigsh as _scipy_eigsh

from .._array_object import BCOOArray
from .._fill import zero_fill
from .._routing import routed

__all__ = ["eigsh"]


class SuperLUInverse(LinearOperator):
    """``x -> K^{-1} x`` by one SuperLU factorization of the scipy sparse matrix ``K``.

    As scipy's own ``SpLuInv`` (scipy/sparse/linalg/_eigen/arpack/arpack.py):
    SuperLU of a real ``K`` solves the real and imaginary parts of a complex
    ``x`` separately (it would drop the imaginary part otherwise).
    """

    def __init__(self, K):
        K = sp.csc_array(K)
        self.lu = splu(K)
        super().__init__(K.dtype, K.shape)
        self._real = K.dtype.kind != "c"

    def _matvec(self, x):
        x = np.asarray(x)
        if self._real and x.dtype.kind == "c":
            return self.lu.solve(np.real(x).astype(self.dtype)) + 1j * self.lu.solve(np.imag(x).astype(self.dtype))
        return self.lu.solve(x.astype(self.dtype, copy=False))


def sparse_form(M, name: str, what: str):
    """The scipy CSC copy of ``M`` to factorize, or None where ``M`` has none (an operator, a callable).

    Raises
    ------
    ValueError
        For a BCOOArray with a non-zero fill value (its matrix is dense).
    """
    if isinstance(M, BCOOArray):
        if not zero_fill(M.fill_value):
            raise ValueError(
                f"{name}(): {what} has fill value {M.fill_value!r}; a sparse LU factorization needs fill value 0 "
                f"(subtract the fill value, or pass OPinv / Minv yourself)")
        return M.tocsc()
    if sp.issparse(M):
        return sp.csc_array(M)
    if isinstance(M, np.ndarray):
        return sp.csc_array(M)
    return None


def shifted(A_csc, M_csc, sigma):
    """``A - sigma * M`` (``M`` None: the identity), what scipy's ``get_OPinv_matvec`` factorizes."""
    if sigma == 0:
        return A_csc  # scipy: inv(A), whatever M
    n = A_csc.shape[0]
    B = sp.eye_array(n, dtype=A_csc.dtype, format="csc") if M_csc is None else M_csc
    return sp.csc_array(A_csc - sigma * B)


def check_operator(A, name: str):
    """``A`` is a square 2-D floating array."""
    if len(A.shape) != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"{name}(): A must be a square 2-D array, got shape {A.shape}")
    if np.dtype(A.dtype).kind not in "fc":
        raise TypeError(f"{name}(): A has dtype {A.dtype}; ARPACK needs a floating-point array (use A.astype)")
    n = A.shape[0]
    return n


def run_eigsh(A, k, M, sigma, which, v0, ncv, maxiter, tol, return_eigenvectors, Minv, OPinv, mode, rng, *,
              A_csc, name: str = "eigsh"):
    """scipy's eigsh on the operator ``A`` with the inverses it needs factorized from ``A_csc``.

    ``A_csc`` is a zero-argument callable giving ``A``'s scipy CSC copy (called
    only when shift-invert mode needs a factorization and ``OPinv`` is None).
    """
    n = check_operator(A, name)
    complex_a = np.dtype(A.dtype).kind == "c"
    if k >= n - (1 if complex_a else 0):
        # scipy would switch to a dense eigh, which refuses a sparse A (TypeError) and
        # densifies anything else; ARPACK itself needs k < n (k < n - 1 for complex A).
        raise TypeError(f"{name}(): k={k} is too large for ARPACK with n={n} (k < n{' - 1' if complex_a else ''}); "
                        "reduce k, or compute every eigenvalue densely with bcoo_array.linalg.eigvalsh / eigh")
    kw = {} if rng is None else {"rng": rng}
    if sigma is None:
        if M is not None and Minv is None:
            Mc = sparse_form(M, name, "M")
            if Mc is not None:
                Minv = SuperLUInverse(Mc)  # scipy: splu for its own sparse M, GMRES for anything else
    elif OPinv is None:
        Mc = None if (M is None or sigma == 0) else sparse_form(M, name, "M")
        if M is None or sigma == 0 or Mc is not None:
            OPinv = SuperLUInverse(shifted(A_csc(), Mc, sigma))
        # else: M is an operator without a sparse form; scipy inverts A - sigma M by GMRES
    return _scipy_eigsh(A, k=k, M=M, sigma=sigma, which=which, v0=v0, ncv=ncv, maxiter=maxiter, tol=tol,
                        return_eigenvectors=return_eigenvectors, Minv=Minv, OPinv=OPinv, mode=mode, **kw)


@routed
def eigsh(A, k: int = 6, M=None, sigma=None, which: str = "LM", v0=None, ncv=None, maxiter=None, tol: float = 0,
          return_eigenvectors: bool = True, Minv=None, OPinv=None, mode: str = "normal", rng=None):
    """``k`` eigenvalues and eigenvectors of a Hermitian ``A`` (or of ``A x = w M x``) by ARPACK.

    Calls ``scipy.sparse.linalg.eigsh`` (ARPACK's implicitly restarted
    Lanczos method) with ``A`` as the operator, so its products run as
    BCOOArray products. With ``sigma`` (shift-invert mode), ARPACK needs
    ``x -> (A - sigma M)^{-1} x`` at every step: scipy factorizes
    ``A - sigma M`` with SuperLU only for its own sparse classes and
    otherwise solves by GMRES, which does not converge for an ill-conditioned
    or indefinite shift. Here ``A - sigma M`` (``A - sigma I`` without
    ``M``; ``A`` for ``sigma == 0``) is converted to scipy's CSC and
    factorized once with ``scipy.sparse.linalg.splu``, and scipy receives the
    solves as ``OPinv``. Likewise, for ``M`` without ``sigma`` (the
    generalized problem, ARPACK's mode 2) ``M`` is factorized for ``Minv``.
    The results are those of ``scipy.sparse.linalg.eigsh(A.tocsr(), ...)``.

    Parameters
    ----------
    A : BCOOArray, shape (n, n), floating, Hermitian
        Fill value 0 when a factorization is needed (``sigma`` given).
    k : int
        Number of eigenpairs; ``k < n`` (``k < n - 1`` for complex ``A``).
    M : BCOOArray, scipy sparse array, numpy.ndarray or LinearOperator, optional
        Hermitian positive (semi-)definite matrix of the generalized problem.
        An operator without a sparse form is inverted the way scipy does
        (iteratively).
    sigma : float, optional
        Shift: find the eigenvalues nearest ``sigma`` (shift-invert mode).
    which : {"LM", "SM", "LA", "SA", "BE"}
        Which ``k`` eigenvalues (of ``(A - sigma M)^{-1}`` with ``sigma``).
    v0 : numpy.ndarray, shape (n,), optional
        ARPACK's starting vector (default random).
    ncv : int, optional
        Number of Lanczos vectors.
    maxiter : int, optional
        Maximum number of Arnoldi update iterations.
    tol : float
        Relative accuracy of the eigenvalues (0: machine precision).
    return_eigenvectors : bool
        Return the eigenvectors too.
    Minv, OPinv : LinearOperator, optional
        scipy's own: inverses to use instead of the factorizations.
    mode : {"normal", "buckling", "cayley"}
        Shift-invert variant (with ``sigma``).
    rng : numpy.random.Generator, optional
        scipy's random state for the starting vector (scipy >= 1.15).

    Returns
    -------
    w : numpy.ndarray, shape (k,)
        The eigenvalues, in scipy's order (ascending for real ``A``).
    v : numpy.ndarray, shape (n, k)
        The eigenvectors (columns), only with ``return_eigenvectors``.

    Raises
    ------
    TypeError
        If ``A`` is not a floating BCOOArray, or ``k`` is too large for ARPACK.
    ValueError
        If ``A`` is not square; if a factorized matrix has a non-zero fill value.
    RuntimeError
        SuperLU's "Factor is exactly singular" when ``sigma`` is an eigenvalue.
    scipy.sparse.linalg.ArpackNoConvergence
        When ARPACK does not converge in ``maxiter`` iterations.

    Notes
    -----
    For a [`ShardedBCOOArray`][bcoo_array.sharded.ShardedBCOOArray] without
    ``sigma`` the products run on the mesh; shift-invert needs the whole
    matrix on the host for SuperLU: gather it first,
    ``eigsh(bcoo_array.sharded.unshard(A), k, sigma=sigma)``.

    References
    ----------
    R. B. Lehoucq, D. C. Sorensen and C. Yang, *ARPACK Users' Guide:
    Solution of Large-Scale Eigenvalue Problems with Implicitly Restarted
    Arnoldi Methods*, SIAM, 1998 (section 3.2: shift-invert mode), through
    ``scipy.sparse.linalg.eigsh``. X. S. Li, "An overview of SuperLU",
    ACM TOMS 31(3), 2005, through ``scipy.sparse.linalg.splu``.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp, bcoo_array as xp
    >>> n = 50
    >>> S = sp.diags_array([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], offsets=[-1, 0, 1])
    >>> w, v = xp.linalg.eigsh(xp.asarray(S), k=2, sigma=0)
    >>> np.allclose(w, 2 - 2 * np.cos(np.pi * np.arange(1, 3) / (n + 1)))
    True
    """
    if not isinstance(A, BCOOArray):
        raise TypeError(f"eigsh(): A must be a BCOOArray, got {type(A).__name__}; convert with bcoo_array.asarray "
                        "(or call scipy.sparse.linalg.eigsh for scipy's own types)")
    return run_eigsh(A, k, M, sigma, which, v0, ncv, maxiter, tol, return_eigenvectors, Minv, OPinv, mode, rng,
                     A_csc=lambda: sparse_form(A, "eigsh", "A"))
