"""Large **synthetic** binary data sets for out-of-core scale runs.

The real HEPMASS (10.5M x 28) and SUSY (5M x 18) files cannot be downloaded in
this environment, so scale runs use synthetic sets of the same *shapes*.  Nothing
else about them resembles the physics data; every name, file and table that uses
them says ``synthetic``.

Data model (a learnable, nonlinear teacher)::

    x ~ Uniform[0, 1]^d                      (float32, already min-max scaled)
    f(x) = sum_k a_k cos(w_k . x + b_k),     w_k ~ N(0, gamma^2 I), K = 32
    y = 1[f(x) > median(f)], then a fraction ``label_noise`` of labels flipped

``f`` is a random-Fourier-feature sample of a Gaussian process with an RBF kernel
``exp(-sigma ||x - x'||^2)``, ``sigma = gamma^2 / 2``, so an RBF kernel machine with
a width near :attr:`SyntheticSpec.teacher_sigma` can learn it; the Bayes error is
``label_noise`` (0.02); what an RBF SVC reaches on it: docs/benchmarks/design_notes.md,
"The pipeline".

With ``gap > 0`` (the cluster assumption of paper 004, Sec. 1.5: the decision
boundary lies in a region of low density), rows whose teacher value is among the
fraction ``gap`` nearest the threshold are rejected: ``|f(x) - median| < m`` with
``m`` the ``gap``-quantile of ``|f - median|`` over the uniform cube.  The inputs
then form two classes separated by an empty band around a nonlinear boundary,
which unlabeled rows reveal and labeled ones only sample.  ``gap = 0`` (HEPMASS /
SUSY shapes) draws exactly the rows it drew before the option existed.

Rows are produced in fixed chunks of :data:`CHUNK_ROWS`; chunk ``i`` draws from
``SeedSequence([seed, i])``.  Any row range can therefore be regenerated on its own
(:func:`synthetic_rows`) and a set of ``n`` rows is a *prefix* of every larger set
with the same seed, so one file serves every size of a time-vs-rows sweep.
:func:`write_synthetic` streams the chunks into ``X.npy`` / ``y.npy`` with plain
file writes: memory stays at one chunk whatever the size.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from weakkernels.pipeline.storage import atomic_write_text

__all__ = [
    "CHUNK_ROWS",
    "SYNTHETIC",
    "SyntheticSpec",
    "open_synthetic",
    "synthetic_rows",
    "write_synthetic",
]

CHUNK_ROWS = 1 << 16
_N_TEACHER = 32


@dataclass(frozen=True)
class SyntheticSpec:
    """Shape and seed of one synthetic set (a pure function of these fields)."""

    name: str
    n_rows: int
    n_features: int
    seed: int = 0
    label_noise: float = 0.02
    # teacher frequency scale; None: w . (x - x') has std 1 over the unit cube
    gamma: float | None = None
    # fraction of the uniform cube's mass nearest the teacher's boundary removed
    gap: float = 0.0

    @property
    def teacher_gamma(self) -> float:
        if self.gamma is not None:
            return float(self.gamma)
        return 1.0 / (math.sqrt(1.0 / 6.0) * math.sqrt(self.n_features))

    @property
    def teacher_sigma(self) -> float:
        """RBF width ``exp(-sigma ||x - x'||^2)`` of the teacher's kernel."""
        return self.teacher_gamma**2 / 2.0

    def prefix(self, n_rows: int) -> SyntheticSpec:
        """The first ``n_rows`` rows (same seed, same teacher)."""
        if n_rows > self.n_rows:
            raise ValueError(f"{n_rows} rows > {self.n_rows} rows of {self.name}")
        return SyntheticSpec(self.name, int(n_rows), self.n_features, self.seed,
                             self.label_noise, self.gamma, self.gap)


# Shapes of the real sets (HEPMASS: UCI 347, 7M train + 3.5M test rows x 28;
# SUSY: UCI 279, 5M rows x 18); the content is synthetic.
SYNTHETIC: dict[str, SyntheticSpec] = {
    "synthetic_hepmass": SyntheticSpec("synthetic_hepmass", 10_500_000, 28, seed=347),
    "synthetic_susy": SyntheticSpec("synthetic_susy", 5_000_000, 18, seed=279),
    # HEPMASS's shape again, with a low-density band around the boundary: the
    # set on which unlabeled rows can pay at 10^6-10^7 rows (uniform inputs
    # above give the unlabeled term nothing to find).
    "synthetic_hepmass_gap": SyntheticSpec("synthetic_hepmass_gap", 10_500_000, 28,
                                           seed=347, gap=0.2),
}


def _teacher(spec: SyntheticSpec):
    """Teacher weights, the median threshold and the gap's half-width ``m``
    (from a separate seed stream)."""
    if not 0.0 <= spec.gap < 0.9:
        raise ValueError(f"gap={spec.gap} not in [0, 0.9)")
    rng = np.random.default_rng(np.random.SeedSequence([spec.seed, 2**31 - 1]))
    W = rng.normal(scale=spec.teacher_gamma, size=(spec.n_features, _N_TEACHER))
    b = rng.uniform(0.0, 2.0 * np.pi, size=_N_TEACHER)
    a = rng.normal(size=_N_TEACHER) / math.sqrt(_N_TEACHER)
    calib = rng.uniform(size=(1 << 15, spec.n_features))
    f = np.cos(calib @ W + b) @ a
    thr = float(np.median(f))
    m = float(np.quantile(np.abs(f - thr), spec.gap)) if spec.gap > 0 else 0.0
    return W, b, a, thr, m


def _chunk(spec: SyntheticSpec, i: int, teacher) -> tuple[np.ndarray, np.ndarray]:
    W, b, a, thr, m = teacher
    rng = np.random.default_rng(np.random.SeedSequence([spec.seed, i]))
    Xs, fs, got = [], [], 0
    while got < CHUNK_ROWS:  # one draw when gap == 0: the rows of the old sets
        X = rng.random((CHUNK_ROWS, spec.n_features), dtype=np.float32)
        f = np.cos(X.astype(np.float64) @ W + b) @ a
        if m > 0.0:
            keep = np.abs(f - thr) >= m
            X, f = X[keep], f[keep]
        Xs.append(X)
        fs.append(f)
        got += len(f)
    X = np.concatenate(Xs)[:CHUNK_ROWS] if len(Xs) > 1 else Xs[0]
    f = np.concatenate(fs)[:CHUNK_ROWS] if len(fs) > 1 else fs[0]
    y = (f > thr).astype(np.int8)
    flip = rng.random(CHUNK_ROWS) < spec.label_noise
    y[flip] ^= 1
    return X, y


def synthetic_rows(spec: SyntheticSpec, start: int, stop: int):
    """Rows ``start:stop`` of ``spec`` in memory: ``(X float32, y int8 in {0, 1})``."""
    stop = min(stop, spec.n_rows)
    if not 0 <= start <= stop:
        raise ValueError(f"bad row range {start}:{stop}")
    teacher = _teacher(spec)
    Xs, ys = [], []
    for i in range(start // CHUNK_ROWS, (stop - 1) // CHUNK_ROWS + 1 if stop else 0):
        X, y = _chunk(spec, i, teacher)
        lo = max(start - i * CHUNK_ROWS, 0)
        hi = min(stop - i * CHUNK_ROWS, CHUNK_ROWS)
        Xs.append(X[lo:hi])
        ys.append(y[lo:hi])
    if not Xs:
        return (np.empty((0, spec.n_features), np.float32), np.empty(0, np.int8))
    return np.concatenate(Xs), np.concatenate(ys)


def _write_npy_header(fh, dtype: np.dtype, shape: tuple[int, ...]) -> None:
    np.lib.format.write_array_header_1_0(
        fh, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
             "fortran_order": False, "shape": shape})


def write_synthetic(spec: SyntheticSpec, out_dir: str | os.PathLike) -> Path:
    """Write ``X.npy`` (float32, C order), ``y.npy`` (int8) and ``meta.json``.

    Streams one chunk at a time (peak memory ~ one chunk, independent of
    ``n_rows``).  Files are written under temporary names and renamed at the end,
    so an interrupted run leaves no partial ``X.npy``.  An existing directory with
    the same ``meta.json`` is kept as is.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fields = asdict(spec)
    if not spec.gap:  # files written before ``gap`` existed stay valid
        del fields["gap"]
    meta = {**fields, "kind": "synthetic", "chunk_rows": CHUNK_ROWS,
            "teacher_sigma": spec.teacher_sigma,
            "note": "SYNTHETIC data with the shape of a real set; not physics data"}
    meta_path = out / "meta.json"
    if (meta_path.exists() and (out / "X.npy").exists() and (out / "y.npy").exists()
            and json.loads(meta_path.read_text()) == meta):
        return out
    teacher = _teacher(spec)
    tmp_x, tmp_y = out / ".X.npy.tmp", out / ".y.npy.tmp"
    try:
        with open(tmp_x, "wb") as fx, open(tmp_y, "wb") as fy:
            _write_npy_header(fx, np.float32, (spec.n_rows, spec.n_features))
            _write_npy_header(fy, np.int8, (spec.n_rows,))
            n_chunks = -(-spec.n_rows // CHUNK_ROWS)
            for i in range(n_chunks):
                X, y = _chunk(spec, i, teacher)
                keep = min(CHUNK_ROWS, spec.n_rows - i * CHUNK_ROWS)
                fx.write(X[:keep].tobytes())
                fy.write(y[:keep].tobytes())
        os.replace(tmp_x, out / "X.npy")
        os.replace(tmp_y, out / "y.npy")
    finally:
        tmp_x.unlink(missing_ok=True)
        tmp_y.unlink(missing_ok=True)
    # atomic: a half-written meta.json would make the rerun fail to parse it
    atomic_write_text(meta_path, json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return out


def open_synthetic(out_dir: str | os.PathLike, n_rows: int | None = None):
    """Memory-map a written set read-only: ``(X float32 memmap, y int8 memmap)``,
    optionally its first ``n_rows`` rows (a prefix is a valid smaller set)."""
    out = Path(out_dir)
    X = np.load(out / "X.npy", mmap_mode="r")
    y = np.load(out / "y.npy", mmap_mode="r")
    if n_rows is not None:
        X, y = X[:n_rows], y[:n_rows]
    return X, y


def make_rcv1_like(
    n_samples: int = 50_000,
    n_features: int = 47_000,
    density: float = 0.0016,
    seed: int = 0,
    *,
    n_topics: int = 20,
    topic_terms: int = 300,
    background: float = 0.5,
    n_informative: int = 1000,
    nonlinear: float = 0.3,
    zipf: float = 1.0,
    label_noise: float = 0.0,
    dtype=np.float64,
):
    """SYNTHETIC RCV1-shaped sparse binary classification set.

    Not RCV1 and not derived from it: a generator with RCV1's shape -- about
    47 000 term columns, a density of 0.0016 per document (~75 terms),
    cosine-normalized tf-idf rows -- for scale runs of the sparse paths
    (``benchmarks/sparse_rcv1_scale.py``). Every table made from it must say
    "synthetic RCV1-shaped data".

    * Terms (a topic model, so that documents share vocabulary as text
      does): a background distribution with Zipf popularities ``p_k ~ 1 /
      (rank + 10) ** zipf`` (ranks shuffled over the columns) and
      ``n_topics`` topics, each a Zipf law over its own ``topic_terms``
      columns (drawn with probability ~ ``sqrt(p_k)``). A document has
      topic proportions ``theta ~ Dirichlet(0.1)`` and a Gamma(2, 1/2) length
      factor ``g`` (mean 1); it draws ``Poisson(m g)`` term occurrences, each
      from the background with probability ``background``, else from a topic
      ``~ theta``. ``m`` is set (three fixed-point steps on a 2000-document
      pilot from its own seed stream) so the mean number of *distinct* terms
      per document is ``density * n_features``.
    * Values: ``(1 + log count) * idf`` with ``idf_k = log(1 / p_k)`` (the
      background popularity), each row scaled to unit Euclidean norm
      (RCV1's ltc weighting).
    * Labels from a sparse linear-plus-nonlinear teacher: ``w`` is nonzero on
      ``n_informative`` terms (the most frequent ``n_informative / n_topics``
      of each topic, weight ``c_t (1 + N(0, 1/4))`` with one ``c_t ~ N(0, 1)``
      per topic), ``v`` likewise with other topic coefficients; the score
      ``(1 - nonlinear) z(x.w) + nonlinear z((x.v)^2)`` (``z`` standardizes
      over the rows) is thresholded at its median (balanced classes); then a
      fraction ``label_noise`` of labels is flipped.

    Deterministic in ``seed`` (NumPy PCG64). Returns ``(X, y)``: ``X`` a
    canonical CSR matrix ``(n_samples, n_features)`` of ``dtype``, ``y``
    int64 in {0, 1}.
    """
    if not 0.0 < density < 1.0:
        raise ValueError(f"density must be in (0, 1); got {density}.")
    rng = np.random.Generator(np.random.PCG64(seed))
    d, T = int(n_features), int(n_topics)
    s = min(int(topic_terms), d)
    pop = 1.0 / (np.arange(d) + 10.0) ** float(zipf)
    pop /= pop.sum()
    pop = pop[rng.permutation(d)]
    mid = np.sqrt(pop) / np.sqrt(pop).sum()
    terms = np.stack([rng.choice(d, size=s, replace=False, p=mid) for _ in range(T)])
    q = 1.0 / (np.arange(s) + 5.0)
    q /= q.sum()
    vocabulary = (pop, terms, q, float(background))
    m = _rcv1_draw_rate(vocabulary, density * d, seed)
    X = _rcv1_tfidf(_rcv1_documents(rng, int(n_samples), m, vocabulary), pop)
    y = _rcv1_labels(rng, X, terms, int(n_informative), float(nonlinear))
    if label_noise > 0:
        flip = rng.random(int(n_samples)) < label_noise
        y[flip] = 1 - y[flip]
    return X.astype(dtype), y


def _rcv1_documents(r, n: int, m: float, vocabulary):
    """Term-count CSR of ``n`` documents at ``m`` draws per document
    (:func:`make_rcv1_like`'s topic model; ``vocabulary``: the background
    popularities, the topics' terms, their Zipf law, the background share)."""
    pop, terms, q, background = vocabulary
    T, s = terms.shape
    d = pop.size
    theta = r.dirichlet(np.full(T, 0.1), size=n)
    lengths = r.poisson(m * r.gamma(2.0, 0.5, size=n))
    doc = np.repeat(np.arange(n), lengths)
    cols = r.choice(d, size=doc.size, p=pop)
    topical = r.random(doc.size) >= background
    # topic of each topical draw by inverse CDF on its document's theta
    cum = (np.cumsum(theta, axis=1) + np.arange(n)[:, None]).ravel()
    dt = doc[topical]
    flat = np.searchsorted(cum, dt + r.random(dt.size) * (1 - 1e-12))
    topic = np.minimum(flat - dt * T, T - 1)
    cols[topical] = terms[topic, r.choice(s, size=dt.size, p=q)]
    X = sp.coo_matrix((np.ones(doc.size), (doc, cols)), shape=(n, d)).tocsr()
    X.sum_duplicates()  # one entry per (document, term): its count
    return X


def _rcv1_draw_rate(vocabulary, target: float, seed: int) -> float:
    """Draws per document that give ``target`` distinct terms on average:
    three fixed-point steps on the same 2000 pilot documents (their own seed
    stream)."""
    m = target
    pilot = np.random.Generator(np.random.PCG64([seed, 1]))
    for _ in range(3):
        state = pilot.bit_generator.state
        got = _rcv1_documents(pilot, 2000, m, vocabulary).nnz / 2000
        pilot.bit_generator.state = state  # the same pilot documents each step
        m *= target / max(got, 1e-12)
    return m


def _rcv1_tfidf(counts, pop):
    """``(1 + log count) * idf`` with ``idf = log(1 / pop)``, rows scaled to
    unit Euclidean norm (RCV1's ltc weighting), canonical CSR."""
    idf = np.log(1.0 / pop)
    X = counts.copy()
    X.data = (1.0 + np.log(counts.data)) * idf[counts.indices]
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.csr_matrix(sp.diags(1.0 / np.maximum(norms, 1e-12)) @ X)
    X.sort_indices()
    return X


def _rcv1_labels(rng, X, terms, n_informative: int, nonlinear: float):
    """The sparse linear-plus-nonlinear teacher of :func:`make_rcv1_like`,
    thresholded at its median."""
    T, s = terms.shape
    d = X.shape[1]
    per_topic = max(1, min(s // 2, n_informative // T))
    w = np.zeros(d)
    v = np.zeros(d)
    c, e = rng.standard_normal(T), rng.standard_normal(T)
    for t in range(T):
        w[terms[t, :per_topic]] += c[t] * (1 + 0.5 * rng.standard_normal(per_topic))
        v[terms[t, per_topic:2 * per_topic]] += e[t] * (
            1 + 0.5 * rng.standard_normal(per_topic))

    def z(a):
        return (a - a.mean()) / (a.std() + 1e-12)

    score = (1.0 - nonlinear) * z(X @ w) + nonlinear * z((X @ v) ** 2)
    return (score > np.median(score)).astype(np.int64)
