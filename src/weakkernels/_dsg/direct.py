"""The direct solve of a loss quadratic in the outputs (TSGSU's squared loss):
its normal equations, one pass over the rows, Cholesky."""

from __future__ import annotations

import numpy as np

from weakkernels._dsg.chunks import Whitening, primal_chunk
from weakkernels._dsg.model import FunctionalModel, _set_primal
from weakkernels._options import DEFAULT_OPTIONS, SolverOptions
from weakkernels._threads import one_blas_thread


def solve_quadratic(spec, n_blocks: int, sets, q, lin, lam: float,
                    intercept: bool, opts: SolverOptions = DEFAULT_OPTIONS):
    """Exact minimizer of a loss that is quadratic in the outputs,
    ``sum_s mean_{x in s} (q_s f(x)^2 / 2 + l_s f(x)) + lam/2 ||v||^2`` with
    ``f = psi v (+ b)`` on the first ``n_blocks`` blocks of ``spec``
    (``psi = features / sqrt(n_blocks)`` as the L-BFGS primal): the normal
    equations ``(lam I + sum_s q_s/n_s P_s'P_s) v + c b = -sum_s l_s/n_s
    P_s'1`` (and ``c'v + (sum q_s) b = -sum l_s`` for the bias, ``c =
    sum_s q_s/n_s P_s'1``), accumulated in float64 chunk by chunk over the
    rows of every set ``(X, idx)`` (``idx`` None: all rows), solved by
    Cholesky. One pass over the rows, ``O(n D^2)`` work and ``D x D``
    memory, against L-BFGS's ``O(n D)`` per iteration. Returns ``(model,
    b)``."""
    from scipy.linalg import cho_factor, cho_solve, solve

    dtype = spec.dtype
    model = FunctionalModel(spec, 1, n_blocks)
    with one_blas_thread():
        W, second = spec.blocks(0, n_blocks)
        norm = dtype.type(1.0 / np.sqrt(n_blocks))
        D = W.shape[-1]
        white = Whitening(spec)
        # the streamed products, whitened once at the end (H = T'(P'P)T)
        H = lam * np.eye(D) if white.T is None else np.zeros((D, D))
        rhs, c = np.zeros(D), np.zeros(D)
        for (X, idx), qs, ls in zip(sets, q, lin, strict=True):
            n = X.shape[0] if idx is None else idx.size
            step = opts.primal_chunk_rows
            for r0 in range(0, n, step):
                rows = (slice(r0, min(n, r0 + step)) if idx is None
                        else idx[r0:r0 + step])
                P = primal_chunk(X[rows], spec, W, second, norm).astype(np.float64)
                total = P.sum(axis=0)
                if qs:
                    H += (qs / n) * (P.T @ P)
                rhs -= (ls / n) * total
                c += (qs / n) * total
        if white.T is not None:
            H = white.lower(white.lower(H).T)  # T' H T (H symmetric)
            H[np.diag_indices_from(H)] += lam
            rhs, c = white.lower(rhs), white.lower(c)
        if intercept:
            A = np.block([[H, c[:, None]], [c[None, :], np.array([[sum(q)]])]])
            z = solve(A, np.append(rhs, -sum(lin)), assume_a="sym")
            v, b = z[:-1], z[-1]
        else:
            v, b = cho_solve(cho_factor(H), rhs), 0.0
    _set_primal(model, v[:, None], n_blocks, norm, W, second)
    return model, np.array([b])
