"""The primal solver of a fixed expansion: L-BFGS on the objective of every
row, on growing nested samples (:func:`~weakkernels._dsg.levels.primal_levels`),
with the annealing of the unlabeled term, the concave-convex steps of a
majorised loss (paper 004 Algorithm 1.3) and a held-out choice of C*.

:class:`PrimalSolver` is one solve: built from the problem, the basis and the
budget, it plans its stages (``plan``), then ``run`` takes them in order, each
from the previous solution. Its state is two dicts: ``state``, the constraint
of the chain being solved (copied with a chain, so a candidate of a held-out
choice restarts from its own), and ``cur``, the level being solved (its
sample, its point sets, its whitening).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from weakkernels._dsg.chunks import (
    RowLoss,
    Whitening,
    _PrimalSet,
    moment_terms,
    primal_cache_bytes,
)
from weakkernels._dsg.levels import level_gtol, level_rows, primal_levels
from weakkernels._dsg.model import Expansion, FunctionalModel, _set_primal
from weakkernels._dsg.newton import newton_minimize
from weakkernels._selection import SELECT_STAGES, one_se_stage
from weakkernels._threads import one_blas_thread
from weakkernels._validation import check_divergence
from weakkernels.random_features import NystromSpec


def fit_primal(problem, spec, n_blocks, max_iter, anneal, tol, seed, monitor):
    """``solver="lbfgs"`` of :func:`weakkernels._dsg.fit_expansion`."""
    solver = PrimalSolver(problem, spec, n_blocks, anneal, seed)
    try:
        return solver.run(max_iter, tol, monitor)
    finally:
        solver.close()


class PrimalSolver:
    """One L-BFGS solve of ``problem`` on the first ``n_blocks`` blocks of
    ``spec`` (see :func:`weakkernels._dsg.fit_expansion`)."""

    def __init__(self, problem, spec, n_blocks, anneal, seed):
        self.problem, self.spec, self.n_blocks = problem, spec, n_blocks
        self.seed = int(seed)
        self.K, self.lam, self.dtype = problem.K, problem.lam, spec.dtype
        self.opts = opts = problem.options
        self.sizes = sizes = problem.sizes()
        self.model = FunctionalModel(spec, self.K, n_blocks)
        with one_blas_thread():
            self.W, self.second = spec.blocks(0, n_blocks)
        # psi = features / sqrt(n_blocks): psi psi' approximates the kernel, so
        # ||v||^2 is the RKHS norm of f = psi v in the random-feature space.
        self.norm = self.dtype.type(1.0 / np.sqrt(n_blocks))
        self.D = D = self.W.shape[-1]
        # (the rows whose features fit the held bound, as enter() decides it)
        held_rows = opts.held_feature_bytes // (4 * D)
        levels = primal_levels(sizes, seed, held_rows, opts)
        # an annealed part: a term the weight switches on (TSGS3VM's unlabeled
        # loss at C* > 0; with C* = 0 the stages are one convex problem)
        annealed = (anneal > 0 and problem.uses is not None
                    and problem.uses(1.0) != problem.uses(0.0))
        if annealed and opts.primal_anneal_every_row and sum(sizes) <= held_rows:
            levels = levels[-1:]  # every row: the annealing runs where it is used
        self.levels = levels
        self.budget = primal_cache_bytes(opts)
        balance = problem.intercept == "balance"
        # an anchored balance (see Problem) starts from the supervised machine:
        # the first stage (C* = 0) runs with a free bias, the later ones hold
        # mean_B f at the target computed from the outputs they start from.
        self.anchored = anchored = balance and callable(problem.balance_target)
        # centred features psi - mu hold mean_B f = b for every v; mu enters the
        # products (f = psi v - mu.v + b), the features are never shifted
        self.state = {"center": balance and not anchored,
                      "free": problem.intercept == "free" or anchored,
                      "mu": np.zeros(D), "b": np.zeros(self.K)}
        if self.state["center"]:
            self.state["b"] = np.asarray(problem.balance_target, dtype=np.float64)
        stages = (opts.anneal_stages if anneal > 0
                  else ((0.0, 1.0) if anchored else (1.0,)))
        if problem.select is not None:
            # the supervised machine is always a candidate
            stages = SELECT_STAGES if anneal > 0 else (0.0, *(w for w in stages if w))
        self.stages = stages
        # the largest level whose features are held (0 if none is): a held-out
        # choice carries every candidate to it and scores them there
        self.pick_level = max((k for k in range(len(levels)) if not self.large(k)),
                              default=0)
        self.plan = self._plan()
        self.chains, self.scores = {}, {}
        # the Maclaurin kernel is numba-parallel only: its chunks run in order
        threads = (numba.get_num_threads()
                   if spec.is_fourier or isinstance(spec, NystromSpec) else 1)
        self.pool = ThreadPoolExecutor(threads) if threads > 1 else None
        self.cur = {"level": -1}

    def _plan(self):
        """``(level, weight, chain it starts from, chain it writes)`` per
        solve. The annealing stages on level 0, each from the previous one,
        then w = 1 on every larger sample; with a held-out choice, every stage
        is a chain of its own, warm-started level by level up to
        ``pick_level`` and scored there."""
        stages, levels = self.stages, self.levels
        if self.problem.select is None:
            return [(0, w, 0, 0) for w in stages] + [
                (k, 1.0, 0, 0) for k in range(1, len(levels))]
        return [(0, w, max(j - 1, 0), j) for j, w in enumerate(stages)] + [
            (k, w, j, j) for k in range(1, self.pick_level + 1)
            for j, w in enumerate(stages)]

    def close(self):
        if self.pool is not None:
            self.pool.shutdown()

    def large(self, k):
        """Whether level ``k``'s features exceed the held bound (a constant:
        the same arithmetic on every machine)."""
        return (level_rows(self.sizes, self.levels[k]) * self.D * 4
                > self.opts.held_feature_bytes)

    def get(self, s):
        """Set ``s``'s features on the current level (built on first use)."""
        cur = self.cur
        if cur["sets"][s] is None:
            cur["sets"][s] = self._point_set(s, cur["idx"][s], cur["cache"])
        return cur["sets"][s]

    def _point_set(self, s, idx, cache):
        """The features of rows ``idx`` (sorted; None: all) of set ``s``
        under the current level's spec."""
        cur = self.cur
        # rows held elsewhere (Dask workers) bring their own point set
        source, index = self.problem.sets[s]
        make = getattr(source, "primal_set", None)
        if make:
            return make(index, idx, cur["spec"], self.W, self.second, self.norm,
                        cache, self.pool, self.opts)
        shared = self.problem.feature_cache
        if not cache or shared is None:
            return _PrimalSet(self.problem, s, idx, cur["spec"], self.W,
                              self.second, self.norm, cache, self.pool)
        # the held features of these rows, as another solve of the same fit
        # built them (a fold, a candidate): the same bits, not built again
        key = (id(source), id(index), id(cur["spec"]), self.n_blocks,
               None if idx is None else (idx.size, hash(idx.tobytes())))
        hit = shared.get(key)
        if hit is not None and hit[0] is source and hit[1] is index and (
                hit[2] is None if idx is None else np.array_equal(hit[2], idx)):
            chunks = hit[3]
        else:
            chunks = None
        ps = _PrimalSet(self.problem, s, idx, cur["spec"], self.W, self.second,
                        self.norm, cache, self.pool, chunks)
        shared[key] = (source, index, idx, ps.chunks)
        return ps

    def hessian_sets(self, w):
        """``(s, point set, rows)`` of every set the loss reads at weight
        ``w``, on which :mod:`~weakkernels._dsg.newton` estimates the
        Hessian: the level's rows of a set of at most
        ``options.newton_hessian_rows`` rows, else a seeded sample of that
        many of them (held, built once per level); not the sets whose loss
        has no curvature (``Problem.flat``)."""
        cur, cap = self.cur, self.opts.newton_hessian_rows
        held = cur.setdefault("hessian_sets", {})
        flat = self.problem.flat
        out = []
        for s, u in enumerate(self.used_sets(w)):
            if not u or (flat is not None and flat(s, w)):
                continue
            if s not in held:
                idx = cur["idx"][s]
                n = self.sizes[s] if idx is None else idx.size
                rows = np.arange(n) if idx is None else idx
                if n <= cap:
                    held[s] = (self.get(s), rows)
                else:
                    pick = np.sort(np.random.Generator(np.random.Philox(
                        key=self.seed + 101 + s)).permutation(n)[:cap])
                    held[s] = (self._point_set(s, rows[pick], True), rows[pick])
            out.append((s, *held[s]))
        return out

    def enter(self, k):
        """Make level ``k`` current (features cached when they fit)."""
        idx = self.levels[k]
        rows = level_rows(self.sizes, idx)
        # a level past the held bound streams k(X, Z) and whitens the
        # coefficients per evaluation; a smaller one streams whitened rows,
        # built once if held (SolverOptions.primal_fold_min_rows says why)
        fold = self.large(k) or (self.opts.primal_fold_min_rows is not None
                                 and rows >= self.opts.primal_fold_min_rows)
        lspec = self.spec if fold else self.spec.row_whitened()
        cur = self.cur
        cur.pop("mu", None)
        cur.pop("psi_sums", None)
        cur.pop("hessian_sets", None)
        cur.update(level=k, idx=idx, sets=[None] * len(self.sizes), rows=rows,
                   cache=rows * self.D * self.dtype.itemsize <= self.budget,
                   spec=lspec, white=Whitening(lspec))
        self.recentre()

    def recentre(self):
        """Centre a constrained chain's features on this level's sample of B."""
        state, cur = self.state, self.cur
        if not state["free"] and (state["center"] or self.anchored):
            if "mu" not in cur:
                mean = self.get(self.problem.balance_set).mean()
                cur["mu"] = cur["white"].lower(mean)
            state["mu"] = cur["mu"]

    def last_solved(self, k):
        """Whether level ``k`` is the last one solved to the tolerance: the
        levels after it exceed the held bound and stop at
        ``primal_large_level_max_iter`` iterations, so nothing after it
        converges and its sampling-noise loosening (level_gtol) would stay in
        the model."""
        return k + 1 < len(self.levels) and self.large(k + 1) and not self.large(k)

    def used_sets(self, w):
        """Which sets the loss reads at weight ``w`` (None: all)."""
        return (self.problem.uses(w) if self.problem.uses is not None
                else [True] * len(self.sizes))

    def unpack(self, z):
        v = z[: self.D * self.K].reshape(self.D, self.K)
        b = z[self.D * self.K:] if self.state["free"] else self.state["b"]
        return v, b

    def outputs(self, s, v, b):
        """``f + b`` on set ``s`` of the current level."""
        return (self.get(s).forward(self.cur["white"].lift(v).astype(self.dtype))
                - self.state["mu"] @ v + b)

    def returned_intercept(self, v, b):
        """The bias of the machine returned at ``(v, b)``: an anchored
        constraint holds on its own outputs (a no-op for "supervised";
        "clipped" re-balances the final outputs)."""
        intercept = b - self.state["mu"] @ v
        if self.anchored:
            fB = self.outputs(self.problem.balance_set, v, b)
            intercept = intercept + self.problem.balance_target(fB) - fB.mean(axis=0)
        return intercept

    def _gradient(self, v, back, gsum, bias_grad):
        """The objective's gradient from the loss's ``psi^T g`` and ``sum g``
        (one whitening product per evaluation, on the sum over the sets)."""
        gv = (self.lam * v + self.cur["white"].lower(back)
              - np.outer(self.state["mu"], gsum))
        grad = gv.ravel()
        if self.state["free"]:
            grad = np.concatenate([grad, bias_grad])
        return grad

    def objective_pointwise(self, z, w):
        """The objective of a row-separable loss, one fused pass per set."""
        v, b = self.unpack(z)
        D, K = self.D, self.K
        v32 = self.cur["white"].lift(v).astype(self.dtype)
        shift = b - self.state["mu"] @ v
        value, back, gsum = 0.0, np.zeros((D, K)), np.zeros(K)
        for s, u in enumerate(self.used_sets(w)):
            if not u:  # an unused set's loss is zero at this weight
                continue
            ps = self.get(s)
            val, back_s, gs = ps.fused(v32, shift,
                                       RowLoss(self.problem.pointwise, s, ps.m, w))
            value += val
            back += back_s
            gsum += gs
        return (value + 0.5 * self.lam * float(np.sum(v * v)),
                self._gradient(v, back, gsum, gsum))

    def objective_moments(self, z, w):
        """The objective of a loss of the outputs' moments, one fused pass
        per set: its ``(sum f, sum f^2)``, ``psi^T f`` and ``sum f``; with
        ``(c1, c2)`` from ``problem.moments`` the set's part of ``psi^T g``
        is ``c1 sum psi + 2 c2 psi^T f`` (``sum psi`` once per level)."""
        v, b = self.unpack(z)
        v32 = self.cur["white"].lift(v).astype(self.dtype)
        shift = b - self.state["mu"] @ v
        n_sets = len(self.sizes)
        ms = [self.get(s).m for s in range(n_sets)]  # every set is read
        parts = [self.get(s).fused(v32, shift, RowLoss(moment_terms, s, ms[s], w, 2))
                 for s in range(n_sets)]
        value, coefs = self.problem.moments([p[0] for p in parts], ms, w)
        sums = self.cur.setdefault("psi_sums", {})
        back, gsum = np.zeros((self.D, 1)), np.zeros(1)
        for s, ((_, back_f, sum_f), (c1, c2)) in enumerate(
                zip(parts, coefs, strict=True)):
            if c1 != 0.0:
                if s not in sums:
                    sums[s] = self.get(s).mean()[:, None] * ms[s]
                back += c1 * sums[s]
            back += 2.0 * c2 * back_f
            gsum += c1 * ms[s] + 2.0 * c2 * sum_f
        return (value + 0.5 * self.lam * float(np.sum(v * v)),
                self._gradient(v, back, gsum, gsum))

    def objective(self, z, w):
        """``(value, gradient)`` of the objective at ``z``, weight ``w``."""
        if self.problem.pointwise is not None:
            return self.objective_pointwise(z, w)
        if self.problem.moments is not None and not self.cur["cache"]:
            # streamed features: one pass instead of two. Over held ones the
            # fused blocks of K = 1 are no faster than the two products, and
            # held levels keep their bits
            return self.objective_moments(z, w)
        v, b = self.unpack(z)
        used = self.used_sets(w)
        idx, sizes, K = self.cur["idx"], self.sizes, self.K
        # an unused set's outputs are not read: zeros of the right shape
        fs = [self.outputs(s, v, b) if u else np.zeros(
            (sizes[s] if idx[s] is None else idx[s].size, K))
            for s, u in enumerate(used)]
        value, grads = self.problem.loss(fs, idx, sizes, w)
        back, gsum = np.zeros((self.D, K)), np.zeros(K)
        for s, (gr, u) in enumerate(zip(grads, used, strict=True)):
            if u:
                back += self.get(s).backward(gr)
                gsum += gr.sum(axis=0)
        return (value + 0.5 * self.lam * float(np.sum(v * v)),
                self._gradient(v, back, gsum,
                               sum(gr.sum(axis=0) for gr in grads)))

    def _anchor(self, z):
        """(Re-)anchor the constraint on the current outputs on B:
        mean_B f = balance_target(f_B). The first time, switch from the free
        bias to centred features: f = (psi - mu) v + target is the current f
        shifted by target - mean_B f. Returns the new ``z``."""
        state = self.state
        v, b = self.unpack(z)
        fB = self.outputs(self.problem.balance_set, v, b)
        if state["free"]:
            state["free"] = False
            self.recentre()
            z = z[: self.D * self.K].copy()
        state["b"] = np.asarray(self.problem.balance_target(fB), dtype=np.float64)
        return z

    def _level_tol(self, k, gtol, g_start):
        """The gradient tolerance of level ``k`` from the last level-0
        tolerance ``gtol`` and the start's gradient max-norm ``g_start``."""
        # larger levels keep the last level-0 tolerance: the loss is written
        # with each set's full size, so the gradients are on one scale at
        # every level, and a warm start's own gradient is already small
        # (relative to it, far more iterations) -- loosened on the
        # intermediate levels to their sampling noise
        fraction = (self.opts.primal_level_noise_fraction
                    if not self.last_solved(k) else 0.0)
        return level_gtol(gtol, g_start, self.sizes, self.levels[k - 1],
                          self.levels[k], fraction)

    def _solve(self, z, w, start, iters, level_tol, majorised):
        """Truncated Newton (``options.primal_method="newton"``, the default,
        on a loss of known curvature), else L-BFGS, from ``z`` at weight
        ``w``; with a majorised loss, the concave-convex steps, each
        re-linearising before its solve. Returns ``(z, result of the last
        solve, iterations)``."""
        from scipy.optimize import minimize

        problem, n_iter = self.problem, 0
        newton = (self.opts.primal_method == "newton"
                  and problem.curvature is not None)
        for step in range(self.opts.cccp_max_steps if majorised else 1):
            if majorised:
                s_mm = problem.outputs_on
                v, b = self.unpack(z)
                moved = problem.majorize(self.outputs(s_mm, v, b),
                                         self.cur["idx"][s_mm])
                if step > 0 and moved <= self.opts.cccp_tol:
                    break
            budget, fresh = iters, not majorised  # fresh: z is the start's
            if newton:
                res = newton_minimize(self, z, w,
                                      min(iters, self.opts.newton_max_iter),
                                      level_tol)
                z = res.x
                n_iter += int(res.nit)
                budget -= int(res.nit)
                if (res.gnorm <= level_tol or budget <= 0
                        or not self.opts.newton_finish):
                    continue
                # stopped above its tolerance (the cap, or a line search that
                # found no decrease): L-BFGS finishes from Newton's iterate
                fresh = False
            res = minimize(
                # a re-linearised objective, or Newton's iterate, is not the
                # start's
                _first_known(self.objective, z, start) if fresh
                else self.objective,
                z, args=(w,), jac=True, method="L-BFGS-B",
                options={"maxiter": budget, "gtol": level_tol, "ftol": 1e-12},
            )
            z = res.x
            n_iter += int(res.nit)
        return z, res, n_iter

    def _score(self, dst, v, b):
        """Chain ``dst``'s per-row errors on the held-out set, scored as the
        machine would be returned."""
        s_held, score = self.problem.select
        f_held = (self.get(s_held).forward(self.cur["white"].lift(v).astype(self.dtype))
                  + self.returned_intercept(v, b))
        self.scores[dst] = score(f_held, self.cur["idx"][s_held])

    def run(self, max_iter, tol, monitor):
        """Solve every stage of the plan; the :class:`Expansion` returned."""
        problem, state, chains = self.problem, self.state, self.chains
        select, plan = problem.select, self.plan
        z = np.zeros(self.D * self.K + (self.K if state["free"] else 0))
        curve, n_iter, gtol, last = [], 0, None, None
        with one_blas_thread():
            for i, (k, w, src, dst) in enumerate(plan):
                if k != self.cur["level"]:
                    self.enter(k)
                if src in chains and src != last:
                    # switch to another candidate's chain (its stored copy is
                    # not touched again: state's arrays are replaced, never
                    # changed in place)
                    z, kept, gtol = chains[src]
                    state.update(kept)
                    self.recentre()
                if self.anchored and w > 0:
                    z = self._anchor(z)
                # the objective at the start, computed once: it sets the
                # tolerance and is L-BFGS's first evaluation
                start = self.objective(z, w)
                g_start = np.abs(start[1]).max()
                if k == 0:
                    # level 0: each stage's tolerance is relative to its own
                    # starting gradient (as when the problem fits at once)
                    gtol = level_tol = tol * max(g_start, 1e-12)
                else:
                    level_tol = self._level_tol(k, gtol, g_start)
                iters = int(max_iter)
                if k > 0 and self.large(k):
                    iters = min(iters, self.opts.primal_large_level_max_iter)
                majorised = problem.majorize is not None and w > 0
                if majorised:
                    # a majorised loss re-linearises before every solve: the
                    # start's gradient mixes the level's sampling error with
                    # the majorant's move (the rule was not measured there),
                    # so its levels keep the final tolerance
                    level_tol = gtol
                z, res, iters_done = self._solve(z, w, start, iters, level_tol,
                                                 majorised)
                n_iter += iters_done
                # (a majorised loss records its last majorant: the objective
                # up to a constant of the linearisation)
                curve.append(float(res.fun))
                v, b = self.unpack(z)
                check_divergence(v, "C (the problem is too badly scaled)")
                if select is not None:  # a chain is only reloaded by a choice
                    chains[dst] = (z, _copy_state(state), gtol)
                last = dst
                if select is not None and k == self.pick_level:
                    self._score(dst, v, b)
                    if i + 1 == len(plan):
                        dst = one_se_stage([self.scores[j]
                                            for j in range(len(self.stages))])
                        z, kept, gtol = chains[dst]
                        state.update(kept)
                        w = self.stages[dst]
                        v, b = self.unpack(z)
                _set_primal(self.model, v, self.n_blocks, self.norm, self.W,
                            self.second)
                intercept = (self.returned_intercept(v, b) if i + 1 == len(plan)
                             else b - state["mu"] @ v)
                if monitor is not None:
                    monitor(n_iter, self.model, intercept)
            # the returned machine on every row of the set the caller reads
            # (the last level holds them all): one forward pass, only if asked
            v, _ = self.unpack(z)
            fB = (None if problem.outputs_on is None or select is not None else
                  self.get(problem.outputs_on).forward(
                      self.cur["white"].lift(v).astype(self.dtype)) + intercept)
        return self._result(intercept, n_iter, curve, fB, w)

    def _result(self, intercept, n_iter, curve, fB, w):
        stages, scores = self.stages, self.scores
        return Expansion(self.model, intercept, n_iter, curve, balance_outputs=fB,
                         weight=w if self.problem.select is not None else 1.0,
                         stage_errors=[(stages[j], float(np.mean(scores[j])))
                                       for j in sorted(scores)] or None,
                         stage_scores=[(stages[j], scores[j])
                                       for j in sorted(scores)] or None)


def _copy_state(state: dict) -> dict:
    """A copy of the L-BFGS loop's constraint state (arrays copied)."""
    return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in state.items()}


def _first_known(fn, z0: np.ndarray, value):
    """``fn`` that returns the already computed ``value`` (of ``fn(z0, ...)``)
    when first called at ``z0`` (the optimiser's first evaluation), then
    calls ``fn``: the start is evaluated once, the model bit for bit the same."""
    pending = [value]

    def call(z, *args):
        if pending and np.array_equal(z, z0):
            val, grad = pending.pop()
            return val, grad.copy()
        pending.clear()
        return fn(z, *args)

    return call
