"""The parameter and attribute texts TSGS3VM and FRS3VM share, inserted into
their class docstrings by :func:`fill_doc` (one text, two estimators).
"""

from __future__ import annotations

_SHARED_PARAMS_DOC = """C : float, default=1.0
        Weight of the *sum* of the labeled losses, as ``C`` of scikit-learn's
        ``SVC``: ``1/2 ||f||^2 + C sum_L l(y f(x)) + C* sum_U u(f(x))``. Paper
        000 Eq. (1) weighs the *mean* by its ``C``: ``C_paper = C * n_l``.
    C_star : float or None, default=None
        Weight of the sum of the unlabeled losses; None uses paper 004's rule
        ``C * n_l / n_u`` (the unlabeled term weighs as much as the labeled
        one; with Eq. (1)'s means this is ``C*_paper = C_paper``). The value
        used is ``C_star_``.
    kernel : {"rbf", "laplacian", "poly"}, default="rbf"
    sigma : float or "scale", default="scale"
        Kernel width, ``exp(-sigma ||x - x'||^2)`` (scikit-learn's ``gamma``);
        ``"scale"`` is ``1 / (d Var X)`` as ``SVC(gamma="scale")``. The value
        used is ``sigma_``.
    degree, coef0 : polynomial kernel ``(sigma <x, x'> + coef0) ** degree``.
    loss : {"squared_hinge", "smooth_hinge", "hinge"}, default="squared_hinge"
        Labeled loss (:func:`labeled_loss`). The hinge of Eq. (1) is not
        differentiable, which L-BFGS needs; the squared hinge (L2-SVM,
        ``LinearSVC``'s default) and the smooth hinge are. The squared hinge
        weighs a margin error more than the hinge at the same ``C`` (a larger
        effective C where errors are large), the smooth hinge stays within
        0.25 of the hinge (``SVC``'s scale of ``C``) but underfits at scale
        (docs/fidelity.md, paper 000's departure 3).
        Use "hinge" with ``solver="sgd"`` for the paper as printed.
    unlabeled_loss : {"auto", "da", "shg", "sshg", "ramp", "ramp_cccp"}, \
default="auto"
        Table 2 of paper 000 (see :func:`unlabeled_loss`); "da" is smooth.
        ``"auto"``: ``"da"`` for a binary problem, ``"shg"`` for one-vs-rest
        (with ``balance="auto"``; the pair measured on MNIST, SSL-book COIL
        and COIL-20, docs/fidelity.md). The value used is
        ``unlabeled_loss_``. ``"ramp_cccp"`` (``solver="lbfgs"``, not on Dask
        inputs): paper 004's symmetric ramp with smoothed hinges, minimised
        as CCCP-TSVM minimises it -- concave-convex steps (Algorithm 1.3),
        each an L-BFGS solve of the convex majorant from the previous
        solution, no annealing (``anneal`` is ignored): from the
        supervised machine with an anchored balance (``"clipped"``,
        ``"supervised"``), from the constant ``mean_L y`` with ``"mean"``.
        On the SSL-book sets g241c / g241n it follows CCCP-TSVM where paper
        004's C* rule with ``"da"`` falls to chance.
    s : float, default=-0.3
        Ramp parameter (``unlabeled_loss="ramp"`` and ``"ramp_cccp"``).
    solver : {"lbfgs", "sgd"}, default="lbfgs"
        ``"sgd"`` is paper 000's Algorithm 1: triply stochastic functional
        gradient steps (labeled minibatch, unlabeled minibatch, fresh block
        of random features). ``"lbfgs"`` minimises the same objective over a
        fixed expansion in its primal over every row (by truncated Newton,
        or by L-BFGS with ``SolverOptions(primal_method="lbfgs")``; annealed on
        every row at once while the features are held, else on nested
        seeded samples from 4096 rows per set up to all,
        :func:`weakkernels._dsg.primal_levels`; the basis is ``features``):
        the SGD reaches the exact SVM's accuracy only with far more
        iterations than a default can afford when ``C`` is large
        (docs/fidelity.md, paper 000's departure 1).
    tol : float, default=1e-5
        ``solver="lbfgs"``: stop a stage when the largest gradient entry falls
        below ``tol`` times its value at the stage's start.
    batch_size : int, default=256
        ``solver="sgd"``: labeled and unlabeled minibatch size (paper: 256).
    n_passes : float
        ``solver="sgd"``: iterations ``T = ceil(n_passes * n_u / batch_size)``.
    max_iter : int or None, default=None
        ``solver="sgd"``: overrides ``n_passes``; ``solver="lbfgs"``:
        iterations of the primal minimiser per annealing stage (None: 500;
        Newton takes at most ``SolverOptions.newton_max_iter``).
    learning_rate : {"decay", "constant", "fixed"}, default="decay"
        ``solver="sgd"``: ``"decay"`` is ``eta0 / (eta0 + t)``, ``"constant"``
        ``eta0 / T^(3/4)`` (paper 000 Theorem 1), ``"fixed"`` ``eta0`` (paper
        000 Sec. 6's ``gamma = 1/eta``). ``"decay"``'s first step is 1 for any
        ``eta0``: with the squared hinge and a large ``C`` (C = 10 on 30
        labels) it lands where the loss is 10^4 times that of ``f = 0`` and
        the run does not recover (a ``ConvergenceWarning`` says so); use the
        hinge, as the papers do, or ``"constant"``.
    eta0 : float, default=1.0
    balance : {"auto", "clipped", "mean", "supervised", "quantile", "none"} \
default="auto"
        Balancing constraint on the bias (see :func:`balancing_bias`).
        ``"auto"``: ``"clipped"`` for a binary problem, ``"mean"`` for
        one-vs-rest (see ``unlabeled_loss``); the value used is ``balance_``.
        ``"clipped"`` (binary default): ``mean_U clip(f, -1, 1) = mean_L y`` --
        paper 004's Eq. (1.13) with the outputs clipped to the margin. With
        ``solver="lbfgs"`` the first annealing stage (C* = 0, the supervised
        machine) runs with a free bias, every later stage holds ``mean_U f``
        where the clipped constraint puts it for the outputs the stage starts
        from, and the returned machine holds it exactly; ``solver="sgd"``
        sets the bias from each unlabeled minibatch, as for ``"mean"``. With
        small outputs it is ``"mean"``; with saturated ones it fixes the class
        fraction, so it does not pull the bias on imbalanced sets as ``"mean"``
        does (docs/fidelity.md, paper 000's departures).
        ``"mean"`` is paper 004 Eq. (1.13), ``mean_U f = mean_L y``;
        with ``solver="lbfgs"`` it holds exactly (features centred on the
        unlabeled rows); it assumes ``|f| ~ 1``. ``"quantile"`` fixes the
        fraction of unlabeled points predicted positive to the labeled one
        (Joachims' TSVM); with ``solver="lbfgs"`` it replaces the mean-balanced
        bias after the solve. ``"supervised"`` (``solver="lbfgs"`` only) holds
        ``mean_U f`` where the supervised first stage put it (it collapses
        with that machine at small C). ``"none"``: no constraint
        (``solver="lbfgs"`` then learns a free bias, ``solver="sgd"`` has
        none, as printed). True and False, the names' former aliases, are
        deprecated (a FutureWarning) and are removed in 0.3. With
        ``solver="lbfgs"`` a machine at C* = 0 (given, or kept by
        ``selection``) has no unlabeled term and a free bias whatever
        ``balance`` says (``balance_`` is ``"none"``): the supervised machine.
    anneal : float in [0, 1), default=0.5
        Raise C* from 0, as S3VMlight and nabla-TSVM anneal the unlabeled
        weight: the labeled points first place the boundary that the
        non-convex unlabeled loss then refines. ``solver="sgd"``: linearly over
        this fraction of the steps; ``solver="lbfgs"``: any value > 0 solves
        the C*-fractions 0, .1, 1 in turn, each from the previous solution
        (on to 3 and 10 with ``selection``).
    selection : {"auto", "holdout", "cv"} or None, default="auto"
        ``solver="lbfgs"``: choose C* as paper 004 does, on labeled
        validation rows, among the multiples 0, .1, 1, 3, 10 of the given C*
        (0 and 1 with ``anneal=0``;
        :data:`weakkernels._selection.SELECT_STAGES`), fitted as one
        annealing path, each candidate
        warm-started from the last. ``"holdout"``: a seeded, stratified
        ``validation_fraction`` of the labels is held out while the
        candidates are fitted (carried to every larger sample level whose
        features are held); the one kept is the supervised machine (C* = 0)
        unless another makes fewer errors on the held-out rows by more than
        one standard error of the paired difference
        (:func:`weakkernels._selection.one_se_stage`). ``"cv"``: ``cv``-fold
        cross-validation over the labels (stratified, seeded), for labels too
        few to spare: the candidates' errors pooled over the folds (every
        label scored once) decide by the same one-SE rule against the
        supervised machine (C* = 0); with ``unlabeled_loss="auto"``
        on a binary problem ``"ramp_cccp"`` at the given C* is one more
        candidate (``unlabeled_loss_`` says which loss was kept). Either way
        the machine returned is the fit on every label at the C* kept, bit
        for bit the one ``C_star=C_star_, selection=None`` gives. None: C* as
        given (paper 004's rule by default). ``"auto"`` picks by the
        problem's size (:func:`weakkernels._selection.resolve_selection`):
        ``"holdout"`` from
        :data:`~weakkernels._selection.AUTO_VALIDATION_MIN_LABELS` labels on;
        ``"cv"`` on a NumPy input of
        at most :data:`~weakkernels._selection.AUTO_CV_MAX_ROWS` rows with
        ``cv`` labels of each class; ``"holdout"`` between the two; None only
        where the labels cannot be split or ``C_star=0``. What ran is
        ``selection_``. A separate ``*CV`` estimator would refit every
        candidate from scratch; inside the fit they share the features and
        the warm starts.
    validation_fraction : float in (0, 1) or "auto", default="auto"
        The fraction of the labels ``selection="holdout"`` holds out (as
        scikit-learn's ``early_stopping`` estimators). ``"auto"``:
        :data:`~weakkernels._selection.AUTO_VALIDATION_FRACTION` from
        ``AUTO_VALIDATION_MIN_LABELS`` labels on, else
        :data:`~weakkernels._selection.AUTO_HELD_FRACTION`. Deprecated
        (a FutureWarning; removed in 0.3): an int ``k`` for
        ``selection="cv", cv=k`` and None for ``selection=None``.
    cv : int >= 2, default=5
        The folds of ``selection="cv"``.
    features : {"auto", "fourier", "nystroem"}
        The basis of the fixed expansion (TSGS3VM's default ``"auto"``,
        FRS3VM's ``"fourier"``: the paper's fixed-feature baseline).
        ``"fourier"``: seeded random Fourier features (the papers'; the model
        file holds seeds and coefficients only). ``"nystroem"``
        (``solver="lbfgs"``, RBF kernel): Nyström features on landmarks drawn
        from the training rows (the labeled ones first), whitened
        (:class:`weakkernels.random_features.NystromSpec`); the model file
        stores the landmarks. Landmark count: ``max_features`` /
        ``n_components`` if given, else every row up to 4096 rows (the exact
        kernel machine) and :func:`weakkernels._dsg.nystroem_size` beyond. ``"auto"``:
        Nyström where it applies (L-BFGS, RBF, at most 2^26 landmark entries,
        features within ``SolverOptions.held_feature_bytes`` or narrow rows,
        streamed),
        else Fourier. Why Nyström by default: at equal or lower cost it is as
        accurate or more (docs/fidelity.md, paper 000's departures). The basis
        used is ``features_``.
    dtype : {"float32", "float64"}, default="float32"
        Compute precision of the features.
    random_state : int, RandomState instance or None
        Seeds the minibatch stream, the samples and the feature blocks.
    callback : callable or None
        ``callback(estimator, n_iter)`` every ``callback_every`` SGD iterations
        or after each L-BFGS stage, with the estimator usable for
        ``decision_function`` (Optuna pruning, curves).
    callback_every : int, default=10
    solver_options : SolverOptions or None, default=None
        The solvers' tunables (:class:`weakkernels.SolverOptions`: sample
        levels, feature-count rules, caches, caps); None: the defaults."""

_ATTRIBUTES_DOC = """classes_ : ndarray, the real classes (never -1).
    coef_ : ndarray of shape (n_outputs, ``n_features_model_``)
    intercept_ : ndarray (n_outputs,)
    spec_ : FeatureSpec, the seeds and layout that regenerate the features.
    C_star_, sigma_, unlabeled_loss_, balance_ : the values used (resolved
        defaults; ``C_star_`` the one kept by ``selection``).
    selection_ : "holdout", "cv" or None, how C* was chosen;
        ``validation_fraction_`` the fraction held out, ``n_folds_`` the
        folds (None where they did not apply).
    validation_errors_ : ndarray (n_candidates, 2), with a
        ``selection_`` only: each candidate's C* and error on the
        held-out labels (pooled over the folds with cross-validation).
    validation_losses_ : tuple of str, each candidate's unlabeled loss.
    features_ : str, the basis used ("nystroem" or "fourier").
    n_iter_ : SGD steps, or the primal minimiser's (Newton or L-BFGS)
        iterations summed over the stages.
    objective_curve_ : minibatch loss estimate per SGD step, or the objective
        at the end of each primal stage.
    n_blocks_, seed_, platt_"""


def fill_doc(cls):
    """Insert the parameter and attribute texts the two estimators share."""
    cls.__doc__ = cls.__doc__.replace("{shared}", _SHARED_PARAMS_DOC).replace(
        "{attributes}", _ATTRIBUTES_DOC
    )
    return cls
