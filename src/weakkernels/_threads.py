"""BLAS on one thread: the one helper every solver uses (threadpoolctl).

Our parallelism is our own threads (numba ``prange``, the thread pools of the
chunked objective and of the kernel-cache fill, ``n_jobs``), so BLAS is held
to one thread while they run. Two measured reasons:

* speed: OpenBLAS worker threads keep spinning after a GEMM returns; on a
  2-core machine they fought numba's threads and a small-batch step of the
  random-feature solver ran many times slower;
* bits: OpenBLAS splits a product differently for different thread counts
  (entries of a CCCP kernel cache moved by a few ulp between one and two
  BLAS threads), so results computed on one BLAS thread are the same whoever
  computes them and whatever the machine's BLAS setting.

The measurements: docs/benchmarks/design_notes.md, "The exact-kernel solver".
"""

from __future__ import annotations

from threadpoolctl import ThreadpoolController, threadpool_limits


def one_blas_thread():
    """Context in which BLAS runs on one thread (the reasons: module doc)."""
    return threadpool_limits(limits=1, user_api="blas")


# One controller per process for the Dask tasks: ``threadpool_limits``
# inspects every loaded library at each call -- 3.8 ms of CPU measured in a
# process that imported scikit-learn, more than a small chunk task's own
# arithmetic -- while a controller made once sets the same limit in 0.02 ms.
# A controller sees only the libraries loaded when it was made: the task
# functions import numpy, scipy and scikit-learn (through weakkernels) before
# their first call, so every BLAS the tasks use is loaded by then.
_CONTROLLER: list = []


def one_blas_thread_cached():
    """:func:`one_blas_thread` through a controller made once per process
    (for Dask tasks, where the per-call inspection costs more than the task)."""
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=1, user_api="blas")
