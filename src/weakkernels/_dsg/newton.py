"""Truncated Newton for the primal of a fixed expansion
(``SolverOptions.primal_method="newton"``).

Each iteration solves the Newton system ``H d = -g`` by conjugate gradients
and takes the largest step of a backtracking line search. The gradient ``g``
is the objective's own, on every row of the level (one fused pass of the
features); the Hessian is the generalised one of the pointwise loss
(``Problem.curvature``: second derivatives, negative parts clipped to zero),
estimated on every labeled row and on a seeded sample of at most
``newton_hessian_rows`` rows of each larger set -- the sub-sampled Newton
method of Byrd, Chin, Neveitt and Nocedal (SIAM J. Optim. 2011), whose
Hessian-vector products cost a pass of the sample instead of one of the data.
On the squared hinge of the labeled rows it is Chapelle's primal Newton
(Neural Computation 2007) over the random features.

A direction of the conjugate gradients is always a descent direction (the
clipped Hessian is positive definite: ``lam > 0``), so the line search ends
on a decrease; the products are the solver's chunked ones, so the iterates
are the same bits for any thread count.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np


def newton_minimize(solver, z, w, max_iter, gtol):
    """Minimise ``solver.objective(., w)`` from ``z`` until the gradient's
    max-norm is at most ``gtol`` or after ``max_iter`` Newton iterations.
    ``solver`` is the :class:`~weakkernels._dsg.primal.PrimalSolver` of the
    level. Returns ``x``, ``fun`` and ``nit`` as scipy's ``minimize`` does,
    and ``gnorm``, the gradient's max-norm at ``x``.

    The line search runs on the outputs: with ``f`` and the direction's
    outputs ``u`` on every row read, the objective at ``z + t d`` is the
    loss of ``f + t u``, so an iteration reads the features twice (``u``
    and the new gradient), whatever the number of trial steps."""
    opts = solver.opts
    line = _Outputs(solver, w, z)
    value, grad = line.value_and_gradient()
    hessian = _Hessian(solver, w)
    nit = 0
    while nit < max_iter and np.abs(grad).max() > gtol:
        hessian.at(z)
        d = _conjugate_gradients(hessian.damped, -grad, opts.newton_cg_tol,
                                 opts.newton_cg_max_iter)
        slope = float(grad @ d)
        if not slope < 0.0:  # no descent left within the arithmetic
            break
        nit += 1
        t = line.search(d, value, slope)
        if t is None:
            break
        z = z + t * d
        new, grad = line.value_and_gradient()
        decrease, value = value - new, new
        if decrease <= 1e-12 * max(1.0, abs(value)):
            break
    return SimpleNamespace(x=z, fun=value, nit=nit,
                           gnorm=float(np.abs(grad).max()))


class _Outputs:
    """The outputs ``f + b`` of the iterate on every row of the sets the loss
    reads at weight ``w``, kept along the Newton iterations."""

    def __init__(self, solver, w, z):
        self.solver, self.w = solver, w
        self.sets = [(s, solver.get(s)) for s, u in enumerate(solver.used_sets(w))
                     if u]
        self.rows = [np.arange(ps.m) if solver.cur["idx"][s] is None
                     else solver.cur["idx"][s] for s, ps in self.sets]
        self.z = z
        v, b = solver.unpack(z)
        self.F = [solver.outputs(s, v, b) for s, _ in self.sets]
        self.grads = None

    def _loss(self, F, v):
        """The objective and the loss's derivatives at outputs ``F``."""
        solver, value, grads = self.solver, 0.0, []
        for (s, ps), rows, f in zip(self.sets, self.rows, F, strict=True):
            val, g = solver.problem.pointwise(s, f, rows, ps.m, self.w)
            value += float(val)
            grads.append(g)
        return value + 0.5 * solver.lam * float(np.sum(v * v)), grads

    def value_and_gradient(self):
        """``(value, gradient)`` of the objective at the kept iterate."""
        solver = self.solver
        v, _ = solver.unpack(self.z)
        value, grads = self._loss(self.F, v)
        back, gsum = np.zeros((solver.D, solver.K)), np.zeros(solver.K)
        for (_, ps), g in zip(self.sets, grads, strict=True):
            back += ps.backward(g)
            gsum += g.sum(axis=0)
        return value, solver._gradient(v, back, gsum, gsum)

    def search(self, d, value, slope):
        """The step ``t`` of a backtracking (Armijo) search along ``d`` from
        the kept iterate, which moves to ``z + t d``; None if none
        decreases the objective."""
        solver = self.solver
        dv, db = solver.unpack(d)
        if not solver.state["free"]:
            db = np.zeros(solver.K)
        d32 = solver.cur["white"].lift(dv).astype(solver.dtype)
        shift = db - solver.state["mu"] @ dv
        U = [ps.forward(d32) + shift for _, ps in self.sets]
        v, _ = solver.unpack(self.z)
        # Armijo's sufficient decrease, the step halved at most 30 times
        t = 1.0
        for _ in range(30):
            F = [f + t * u for f, u in zip(self.F, U, strict=True)]
            trial, _ = self._loss(F, v + t * dv)
            if trial <= value + 1e-4 * t * slope:
                self.z, self.F = self.z + t * d, F
                return t
            t *= 0.5
        return None


def _conjugate_gradients(product, b, rtol, max_iter):
    """``x`` with ``||product(x) - b|| <= rtol ||b||`` (or after
    ``max_iter`` steps), from ``x = 0``: every iterate is a descent direction
    of a function whose gradient is ``-b``. Not preconditioned: a diagonal
    would need the sample's features squared, which a level whose features
    are streamed or live on Dask workers does not hold, and the model would
    then depend on where the features are."""
    x = np.zeros_like(b)
    r = b.copy()
    p = r.copy()
    rr = float(r @ r)
    stop = (rtol * rtol) * rr
    for _ in range(max_iter):
        if rr <= stop:
            break
        q = product(p)
        pq = float(p @ q)
        if pq <= 0.0:
            break
        alpha = rr / pq
        x += alpha * p
        r -= alpha * q
        rr_new = float(r @ r)
        p = r + (rr_new / rr) * p
        rr = rr_new
    return x


class _Hessian:
    """The generalised Hessian of the objective at weight ``w`` on the
    current level, estimated on :meth:`PrimalSolver.hessian_sets`."""

    def __init__(self, solver, w):
        self.solver, self.w = solver, w
        self.sets = solver.hessian_sets(w)
        self.curv = []

    def at(self, z):
        """Take the loss's curvature at ``z``'s outputs on the sample."""
        solver = self.solver
        v, b = solver.unpack(z)
        v32 = solver.cur["white"].lift(v).astype(solver.dtype)
        shift = b - solver.state["mu"] @ v
        curvature = solver.problem.curvature
        self.curv = []
        for s, hs, rows in self.sets:
            c = curvature(s, hs.forward(v32) + shift, rows, hs.m, self.w)
            self.curv.append(c if np.any(c) else None)

    def damped(self, d):
        """``H d`` plus ``lam d`` on a free bias: the bias is not
        regularised, and where no row has curvature (every margin past the
        loss's quadratic part) ``H`` is singular along it; the damped
        system's solution is still a descent direction."""
        out = self.product(d)
        if self.solver.state["free"]:
            K = self.solver.K
            out[-K:] += self.solver.lam * d[-K:]
        return out

    def product(self, d):
        """``H d`` for a direction ``d`` laid out as ``z``."""
        solver = self.solver
        state, white = solver.state, solver.cur["white"]
        dv, db = solver.unpack(d)
        if not state["free"]:
            db = np.zeros(solver.K)
        mu = state["mu"]
        d32 = white.lift(dv).astype(solver.dtype)
        shift = db - mu @ dv
        back = np.zeros((solver.D, solver.K))
        rsum = np.zeros(solver.K)
        for (_, hs, _), c in zip(self.sets, self.curv, strict=True):
            if c is None:
                continue
            r = c * (hs.forward(d32) + shift)
            back += hs.backward(r)
            rsum += r.sum(axis=0)
        hv = solver.lam * dv + white.lower(back) - np.outer(mu, rsum)
        out = hv.ravel()
        if state["free"]:
            out = np.concatenate([out, rsum])
        return out
