"""``benchmarks/dask_fit.py`` with a record per L-BFGS call of the fit: wall
time, CPU seconds of this process (the client, and the scheduler of a
LocalCluster) and of the Dask workers, objective evaluations and iterations.

The solver (``weakkernels._dsg._fit_primal``) makes one ``scipy.optimize.
minimize`` call per annealing stage on its first sample (three), then one per
larger sample up to every row; this script wraps ``minimize`` to count them.
Arguments after the output path are dask_fit.py's:

    python benchmarks/dask_fit_levels.py OUT.json --mode local --rows 1000000 ...
    python benchmarks/dask_fit_levels.py OUT.json --mode dask  --rows 1000000 ...
"""

from __future__ import annotations

import json
import sys
import time

import scipy.optimize

import dask_fit

RECORDS = []
_minimize = scipy.optimize.minimize


def _workers_cpu() -> float:
    """CPU seconds of every worker of the current client (0 without one)."""
    try:
        from distributed import get_client

        client = get_client()
    except (ImportError, ValueError):
        return 0.0
    return sum(client.run(dask_fit.worker_cpu_s).values())


def minimize(fun, x0, args=(), **kw):
    calls = {"n": 0, "s": 0.0}

    def counted(z, *a):
        t = time.perf_counter()
        out = fun(z, *a)
        calls["n"] += 1
        calls["s"] += time.perf_counter() - t
        return out

    w0, c0, k0 = time.perf_counter(), time.process_time(), _workers_cpu()
    res = _minimize(counted, x0, args=args, **kw)
    w1, c1, k1 = time.perf_counter(), time.process_time(), _workers_cpu()
    RECORDS.append({"wall_s": w1 - w0, "client_cpu_s": c1 - c0,
                    "workers_cpu_s": k1 - k0, "evaluations": calls["n"],
                    "iterations": int(res.nit),
                    "wall_s_per_evaluation": calls["s"] / max(calls["n"], 1),
                    "max_iter": kw.get("options", {}).get("maxiter")})
    print("L-BFGS call", json.dumps(RECORDS[-1]), flush=True)
    return res


scipy.optimize.minimize = minimize

if __name__ == "__main__":
    rc = dask_fit.main(sys.argv[2:])
    with open(sys.argv[1], "w") as fh:
        json.dump(RECORDS, fh, indent=1)
    sys.exit(rc)
