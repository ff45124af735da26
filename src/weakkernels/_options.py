"""Every tunable of the random-feature solvers, in one options object.

The estimators take ``solver_options=SolverOptions(...)`` (None: the defaults
below), as Falkon's estimators take ``options=FalkonOptions(...)``; the solver
reads every knob from the :class:`SolverOptions` its problem carries, never
from a module global. Tests and benchmarks that exercise a code path at a
size it would not reach on small data pass options, nothing is patched.

Each field's default is the value the solver was tuned to; why it is that
value, with the measurements, is in the documentation's solver-defaults page
(``docs/benchmarks/solver_defaults.md``). None of them is read from the
machine: models are the same bits wherever they are fitted, except where a
field says memory.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class SolverOptions:
    """Tunables of the random-feature solvers (``solver="lbfgs"`` and ``"sgd"``).

    Parameters
    ----------
    primal_start_rows : int, default=4096
        Rows per point set of the first sample level of the L-BFGS primal;
        every row is used from the last level on.
    primal_growth : int, default=4
        Each next sample level holds this many times more rows.
    primal_merge_fraction : float, default=0.5
        A sampled level holding more than this fraction of the next level's
        rows is skipped (the next level starts from the previous one).
    primal_anneal_every_row : bool, default=True
        An annealed fit whose features fit ``held_feature_bytes`` runs one
        level, every row, instead of annealing on a sample.
    primal_chunk_rows : int, default=2048
        Rows per chunk of the chunked objective. A constant, so partial sums
        are added in the same order for any thread count.
    primal_cache_fraction : float, default=0.25
        Fraction of the available memory a level's feature matrix may take
        to be held rather than regenerated at every product (memory-dependent:
        changes speed, never the model).
    primal_cache_max_bytes : int, default=2**31
        Upper bound of that cache, in bytes.
    primal_large_level_max_iter : int, default=4
        L-BFGS iterations on a level past level 0 whose features exceed
        ``held_feature_bytes`` (such a level streams its features).
    primal_level_noise_fraction : float, default=0.5
        A sample level between the first and the last stops when its gradient
        falls to this fraction of its estimated sampling noise
        (:func:`weakkernels._dsg.level_gtol`); 0 solves every level to ``tol``.
    primal_fold_min_rows : int or None, default=None
        Nyström levels of at least this many rows fold the whitening into the
        coefficients instead of streaming whitened rows (None: never).
    primal_method : {"newton", "lbfgs"}, default="newton"
        The minimiser of each primal solve: truncated Newton with a
        sub-sampled Hessian (:mod:`weakkernels._dsg.newton`), or scipy's
        L-BFGS. Newton is the default (the side by side run is on
        docs/benchmarks/solvers.md).
        It needs the loss's curvature (``Problem.curvature``, given by
        TSGS3VM and FRS3VM); the other losses (TSGSU, QSG-S2AUC) use L-BFGS.
    newton_max_iter : int, default=20
        Newton iterations per solve (at most ``lbfgs_max_iter`` too). On a
        non-convex stage (the clipped curvature of ``"da"``, the flat
        curvature of ``"shg"``) Newton converges linearly and a solve can
        stop here above its gradient tolerance: the iteration cap is then
        part of the machine, as early stopping is (the same bits every
        run); the model selection's candidates have a cap of their own
        (``selection_newton_max_iter``).
    newton_finish : bool, default=False
        Finish a Newton solve that stops above its gradient tolerance (at
        ``newton_max_iter``, or where its line search finds no decrease)
        by L-BFGS from its iterate, within the solve's iteration budget:
        every solve then ends where L-BFGS alone would stop (its gradient
        tolerance, or no further relative decrease). Off by default: where
        the stages are not convex the lower objective it reaches is not a
        lower error, and it changes the error within the seeds' spread
        (docs/benchmarks/solvers.md, "The L-BFGS finish").
    selection_newton_max_iter : int or None, default=6
        Newton iterations per solve of a model-selection candidate (the
        folds' and the held-out part's fits), without the L-BFGS finish;
        None: the candidates are solved as the machine returned is
        (``newton_max_iter``, ``newton_finish``), so the choice scores the
        machines it returns. The cap makes the choice cheaper; a candidate
        stopped earlier can stay near the supervised solution where the
        full solve leaves it (the collapse it was once blamed for, and the
        side by side runs that chose the cap: docs/benchmarks/solvers.md,
        "The candidates' iteration cap").
    newton_cg_max_iter : int, default=100
        Conjugate-gradient steps per Newton system.
    newton_cg_tol : float, default=0.1
        A Newton system is solved to this fraction of its gradient's norm.
    newton_hessian_rows : int, default=4096
        Rows of a point set on which the Hessian is estimated (a seeded
        sample of the level's rows when it has more).
    cccp_tol : float, default=1e-3
        A concave-convex stage (paper 004 Algorithm 1.3) ends when at most this
        fraction of the concave part's slopes move ...
    cccp_max_steps : int, default=20
        ... or after this many convex solves.
    anneal_stages : tuple of float, default=(0.0, 0.1, 1.0)
        Fractions of C* solved in turn, each from the previous solution, when
        the unlabeled term is annealed.
    lbfgs_max_iter : int, default=500
        L-BFGS iterations per stage when ``max_iter`` is None.
    lbfgs_features, lbfgs_max_features : int, default=1024, 4096
        Fourier features of a fixed expansion: as many as keep the feature
        matrix near ``primal_budget`` entries, within these bounds ...
    lbfgs_large_features : int, default=8192
        ... and up to ``16 sqrt(n)`` of at most this many on large problems.
    streamed_features : int, default=2048
        Features (of either basis) where the feature matrix outgrows
        ``held_feature_bytes`` and is streamed.
    held_feature_bytes : int, default=2**31
        The float32 feature matrix a level may hold by the feature-count and
        level rules (a constant, not the machine's memory).
    primal_budget : int, default=2**22
        Feature-matrix entries the default Fourier feature count aims at.
    frequency_budget : int, default=2**24
        Entries of the Fourier frequency matrix (``d x D``) at most.
    nystroem_all_rows : int, default=4096
        ``features="nystroem"`` takes every training row as a landmark up to
        this many rows ...
    nystroem_sqrt_factor : int, default=24
        ... and about this many times ``sqrt(n)`` landmarks beyond.
    nystroem_max_entries : int, default=2**26
        ``features="auto"`` uses Nyström up to this many landmark entries
        (``m x d``).
    nystroem_streamed : int, default=2048
        Landmarks where the ``n x m`` matrix outgrows ``held_feature_bytes``.
    sgd_max_steps : int, default=2**22
        ``solver="sgd"``: the most steps a fit takes, whatever ``n_passes``,
        ``max_iter`` or ``min_iter`` ask (a ConvergenceWarning says when it
        binds).
    sgd_diverged_factor : float, default=10.0
        An SGD run whose final loss exceeds this many times its starting loss
        is reported as diverged.
    fused_block_bytes : int, default=2**23
        Bytes of a chunk's features per block of the fused forward-backward
        pass (the second read of a block finds it in the cache).

    Examples
    --------
    >>> from weakkernels._options import SolverOptions
    >>> SolverOptions(primal_start_rows=128).primal_growth
    4
    """

    primal_start_rows: int = 4096
    primal_growth: int = 4
    primal_merge_fraction: float = 0.5
    primal_anneal_every_row: bool = True
    primal_chunk_rows: int = 2048
    primal_cache_fraction: float = 0.25
    primal_cache_max_bytes: int = 1 << 31
    primal_large_level_max_iter: int = 4
    primal_level_noise_fraction: float = 0.5
    primal_fold_min_rows: int | None = None
    primal_method: str = "newton"
    newton_max_iter: int = 20
    newton_finish: bool = False
    selection_newton_max_iter: int | None = 6
    newton_cg_max_iter: int = 100
    newton_cg_tol: float = 0.1
    newton_hessian_rows: int = 4096
    cccp_tol: float = 1e-3
    cccp_max_steps: int = 20
    anneal_stages: tuple = (0.0, 0.1, 1.0)
    lbfgs_max_iter: int = 500
    lbfgs_features: int = 1024
    lbfgs_max_features: int = 4096
    lbfgs_large_features: int = 8192
    streamed_features: int = 2048
    held_feature_bytes: int = 1 << 31
    primal_budget: int = 1 << 22
    frequency_budget: int = 1 << 24
    nystroem_all_rows: int = 4096
    nystroem_sqrt_factor: int = 24
    nystroem_max_entries: int = 1 << 26
    nystroem_streamed: int = 2048
    sgd_max_steps: int = 1 << 22
    sgd_diverged_factor: float = 10.0
    fused_block_bytes: int = 1 << 23

    # fields below these would stall or empty the solver (a growth of 1 never
    # reaches every row, a zero step count solves nothing)
    _MINIMA = {"primal_start_rows": 1, "primal_growth": 2, "primal_chunk_rows": 1,
               "cccp_max_steps": 1, "lbfgs_max_iter": 1, "lbfgs_features": 1,
               "lbfgs_max_features": 1, "lbfgs_large_features": 1,
               "streamed_features": 1, "nystroem_all_rows": 1,
               "newton_max_iter": 1, "newton_cg_max_iter": 1,
               "selection_newton_max_iter": 1,
               "newton_hessian_rows": 1,
               "nystroem_sqrt_factor": 1, "nystroem_streamed": 1, "sgd_max_steps": 1}

    # fields that may be None (their docs say what None means)
    _OPTIONAL = ("primal_fold_min_rows", "selection_newton_max_iter")

    # fields that name a method
    _CHOICES = {"primal_method": ("newton", "lbfgs")}

    def __post_init__(self):
        object.__setattr__(self, "anneal_stages",
                           tuple(float(w) for w in self.anneal_stages))
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name in self._OPTIONAL and value is None:
                continue
            if field.name in self._CHOICES:
                if value not in self._CHOICES[field.name]:
                    raise ValueError(f"SolverOptions.{field.name}={value!r}: "
                                     f"one of {self._CHOICES[field.name]}")
                continue
            if isinstance(value, bool) != (field.type == "bool") or (
                    not isinstance(value, (int, float, tuple))):
                raise TypeError(f"SolverOptions.{field.name}={value!r}: "
                                f"expected {field.type}")
            if field.type in ("int", "int | None") and not isinstance(value, int):
                raise TypeError(f"SolverOptions.{field.name}={value!r}: "
                                "expected an int")
            low = self._MINIMA.get(field.name, 0)
            if not isinstance(value, tuple) and value < low:
                raise ValueError(f"SolverOptions.{field.name}={value!r} "
                                 f"must be >= {low}")

    def to_dict(self) -> dict:
        """The fields as plain JSON values (a model file's ``params``)."""
        out = dataclasses.asdict(self)
        out["anneal_stages"] = list(self.anneal_stages)
        return out

    @classmethod
    def from_dict(cls, values: dict) -> SolverOptions:
        """Inverse of :meth:`to_dict`; an unknown field is a ``TypeError``."""
        return cls(**values)


#: The defaults, shared by every fit that passes ``solver_options=None``.
DEFAULT_OPTIONS = SolverOptions()


def options_of(est) -> SolverOptions:
    """The solver options of an estimator (its ``solver_options``, or the
    defaults when it has none or None)."""
    opts = getattr(est, "solver_options", None)
    return DEFAULT_OPTIONS if opts is None else opts
