"""
A fit on a Dask array
=====================

The random-feature estimators fit on a row-chunked ``dask.array``: each L-BFGS
evaluation sends the coefficients to one task per chunk and adds the partial
sums in a fixed order, so the model is the in-memory fit's bit for bit,
whatever the chunking. Here a ``LocalCluster`` of two single-threaded workers
(threads of this process) fits the same problem in two chunks, beside the
in-memory fit.
"""

import dask.array as da
import matplotlib.pyplot as plt
import numpy as np
from distributed import Client, LocalCluster

from weakkernels import TSGS3VM

rng = np.random.default_rng(0)
n = 6_000
X = rng.normal(size=(n, 8))
truth = (np.sin(2 * X[:, 0]) + X[:, 1] > 0).astype(int)
y = np.full(n, -1)
y[:300] = truth[:300]                               # 300 labeled rows

params = dict(C=10, selection=None, random_state=0)
local = TSGS3VM(**params).fit(X, y)
f_local = local.decision_function(X)

chunks = [3_000]
max_diff = []
with LocalCluster(n_workers=2, threads_per_worker=1, processes=False) as cluster, \
        Client(cluster):
    for rows in chunks:
        Xd = da.from_array(X, chunks=(rows, 8))
        est = TSGS3VM(**params).fit(Xd, da.from_array(y, chunks=rows))
        f = est.decision_function(Xd).compute()
        max_diff.append(float(np.max(np.abs(f - f_local))))
print("largest |f_dask - f_local|:", max_diff[0])
print(f"accuracy on the unlabeled rows: {local.score(X[300:], truth[300:]):.3f}")

# %%
fig, ax = plt.subplots(figsize=(5.5, 3.6))
ax.scatter(f_local[:2000], f[:2000], s=3)
ax.plot([-3, 3], [-3, 3], c="0.6", lw=0.8)
ax.set_xlabel("decision function, in-memory fit")
ax.set_ylabel(f"decision function, Dask fit ({chunks[-1]}-row chunks)")
ax.set_title(f"largest difference: {max(max_diff):g}",
             fontsize=9)
fig.tight_layout()
plt.show()
