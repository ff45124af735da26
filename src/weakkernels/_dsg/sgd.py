"""The papers' solver: doubly stochastic functional gradients (paper 000
Algorithm 1, paper 002 Eq. (22), paper 003 Eq. (14)-(16)), its step-size
schedules and its divergence check.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from weakkernels._dsg.model import Expansion, FunctionalModel
from weakkernels._options import options_of
from weakkernels._threads import one_blas_thread
from weakkernels._validation import check_divergence


def step_size(schedule: int, eta0: float, t: int, n_iter: int) -> float:
    """Step size ``gamma_t``.

    * ``0`` ("constant"): ``eta0 / T^(3/4)``, the constant step of paper 000's
      Theorem 1 for a horizon of ``T`` iterations;
    * ``1`` ("decay"): ``eta0 / (eta0 + t)``, i.e. ``~ eta0 / t`` (Dai et al.
      2014; paper 003's ``theta / t``) but never above 1, so ``(1 - gamma)``
      stays in [0, 1);
    * ``2`` ("fixed"): ``eta0`` at every step -- paper 000 Sec. 6's constant
      step ``gamma = 1/eta`` (searched over ``0 <= log10 eta <= 3``) as printed.
    """
    if schedule == 0:
        return eta0 / n_iter**0.75
    if schedule == 2:
        return eta0
    return eta0 / (eta0 + t)


SCHEDULES = {"constant": 0, "decay": 1, "fixed": 2}


def _fit_sgd(problem, spec, max_blocks, T, batch_size, step, anneal, seed,
             monitor, every):
    K, lam, dtype = problem.K, problem.lam, spec.dtype
    # T steps add at most T blocks: a tighter bound than an unbounded budget
    # lets the model allocate its final size once (the cyclic revisit starts
    # only once max_blocks blocks are in, so the result is unchanged)
    model = FunctionalModel(spec, K, min(max_blocks, max(int(T), 1)))
    sizes = problem.sizes()
    bs = batch_size
    if not isinstance(bs, (list, tuple)):
        bs = [bs] * len(sizes)
    m = [min(int(b), n) for b, n in zip(bs, sizes, strict=True)]
    cuts = np.cumsum([0] + m)
    # Minibatches come from their own stream (Philox keyed by the seed),
    # independent of the counter-based feature blocks.
    rng = np.random.Generator(np.random.Philox(key=seed))
    b = np.zeros(K)
    curve, start = [], None
    with one_blas_thread():
        for t in range(T):
            # sorted: sequential reads when a set lives on disk
            idx = [np.sort(rng.integers(0, n, size=k))
                   for n, k in zip(sizes, m, strict=True)]
            parts = [problem.rows(s, i, dtype) for s, i in enumerate(idx)]
            Xb = (sp.vstack(parts, format="csr") if sp.issparse(parts[0])
                  else np.concatenate(parts))
            g = model.evaluate(Xb)
            check_divergence(g, "eta0 (step size)")
            fs = [g[cuts[s]:cuts[s + 1]] for s in range(len(sizes))]
            if problem.intercept == "balance":
                b = problem.balance(fs[problem.balance_set])
            w = min(1.0, (t + 1) / (anneal * T)) if anneal > 0 else 1.0
            value, grads = problem.loss([f + b for f in fs], idx, sizes, w)
            curve.append(float(value))
            if t == 0:  # the model is still empty: these are the start's outputs
                # (an annealed problem's loss is called once more, at full
                # weight; TSGS3VM's, the only one annealed, has no side effect)
                start = (float(value) if w == 1.0 else float(problem.loss(
                    [f + b for f in fs], idx, sizes, 1.0)[0]))
            G = np.concatenate(grads)
            eta = step(t, T)
            model.step(Xb, G / lam, eta * lam, t)
            if problem.intercept == "free":
                # d loss / d b; b is not in the RKHS norm, so it is not shrunk
                b = b - eta * G.sum(axis=0)
            if monitor is not None and (t + 1) % every == 0:
                monitor(t + 1, model, b)
    return Expansion(model, b, T, curve, start_loss=start)


def sgd_tail(n_steps: int) -> int:
    """How many of the last SGD steps estimate the final iterate's loss."""
    return max(1, n_steps // 10)


def check_sgd_curve(est, result: Expansion, end: float | None = None) -> None:
    """Warn when an SGD run ends far worse than it started.

    Every objective of the papers is ``J(f) = R(f) + lam/2 ||f||_H^2`` with
    the iterate starting at ``f = 0`` (paper 000 Eq. (1), paper 002 Eq. (9),
    paper 003 Eq. (9)), so a minimiser has ``R(f*) <= J(f*) <= J(0) = R(0)``
    (with a balancing intercept the start is ``f = 0`` plus the bias that
    balances it, a point of the constraint set: the same bound). ``end``,
    the final iterate's ``R``, is by default the mean minibatch loss of the
    last :func:`sgd_tail` steps (an estimator whose minibatch loss is biased
    passes its own); above ``sgd_diverged_factor`` (the estimator's
    :class:`SolverOptions`) times the start's loss
    the iterate diverged (or was never near a minimiser) while its values
    stayed finite -- ``check_divergence`` only stops non-finite ones.
    Nothing is checked when the start's loss is not positive (no scale); a
    loss that can go negative (TSGSU's unbiased risk) and runs off downwards
    is not seen."""
    curve, start = result.objective_curve, result.start_loss
    if start is None or not curve or not start > 0.0:
        return
    if end is None:
        end = float(np.mean(curve[-sgd_tail(len(curve)):]))
    if end > options_of(est).sgd_diverged_factor * start:
        warnings.warn(
            f"{type(est).__name__}(solver='sgd') ended with a loss of "
            f"{end:.3g} (from the minibatches of its last steps), "
            f"{end / start:.3g} times the loss of its starting point f = 0 "
            f"({start:.3g}), which every "
            "minimiser of its objective beats: the SGD iterate diverged or is "
            "far from converged. Lower eta0 or raise max_iter.",
            ConvergenceWarning, stacklevel=3)
