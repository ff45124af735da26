"""The documentation site as a reader sees it.

Builds the site with ``sphinx-build -W`` (the ``make docs`` command: every
warning an error) into pytest's ``tmp_path``. The gallery's fast examples
(``FAST``) are executed as ``make docs`` executes all of them; the others get
their pages without running (``WK_GALLERY_FILTER``, read by ``docs/conf.py``),
which keeps the test to about a minute. Then it opens the built pages in
headless Chromium (Debian's ``chromium`` driven by Playwright, as
``tests/test_mlflow_ui.py`` does): the index, a user-guide page, an API page
and a gallery page render their headings and their figures. Every internal
link and image of every built page must point to a file of the build, and
every ``#anchor`` to an id on its page.

The gallery's examples and the API pages are generated into ``docs/``
(``docs/auto_examples/``, ``docs/api/generated/``, both gitignored), as by
``make docs``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
MIRROR = ROOT.parent / "shared" / "data" / "raw"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"]
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("plot_*.py"))
# executed by the test's build (seconds each); make docs executes every example
FAST = ("plot_moons_decision_boundary", "plot_cccp_vs_ramp", "plot_s2auc_roc")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not MIRROR.exists() and "WEAKKERNELS_DATA" not in os.environ,
                       reason="the sparse-text example needs ../shared/data/raw"),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The built site's folder (``index.html`` at its top)."""
    pytest.importorskip("sphinx_gallery", reason="requirements.txt: sphinx-gallery")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "MPLBACKEND": "Agg",
           "WK_GALLERY_FILTER": "/(" + "|".join(FAST) + r")\.py$"}
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".numba_cache"))
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(out / "doctrees"), str(ROOT / "docs"), str(out / "html")],
        cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return out / "html"


class _Links(HTMLParser):
    """The ids of a page and the targets of its links and images."""

    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()
        self.targets: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        for key in ("href", "src"):
            if a.get(key) and tag in ("a", "img", "link", "script"):
                self.targets.append(a[key])


def _parse(path: Path) -> _Links:
    p = _Links()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def test_every_example_is_a_gallery_page(site):
    """Every example has its page; the executed ones show their figure."""
    assert len(EXAMPLES) >= 8 and set(FAST) <= set(EXAMPLES)
    for name in EXAMPLES:
        page = site / "auto_examples" / f"{name}.html"
        assert page.exists(), name
        imgs = [t for t in _parse(page).targets if "/sphx_glr_" in t and
                t.endswith(".png") and "thumb" not in t]
        assert imgs or name not in FAST, f"{name}: no figure on its page"
        assert "sphx-glr-download-python" in page.read_text(), name


def test_every_public_name_has_an_api_page(site):
    import weakkernels
    from weakkernels import class_prior, model_selection
    from weakkernels.baselines import auc, su

    gen = site / "api" / "generated"
    names = [f"weakkernels.{n}" for n in weakkernels.__all__ if n != "__version__"]
    names += [f"weakkernels.baselines.su.{n}" for n in ("SUSL", "CUU")]
    names += [f"weakkernels.baselines.auc.{n}" for n in
              ("PNUAUC", "ExactS2AUC", "SupervisedKernelAUC")]
    names += [f"weakkernels.model_selection.{n}" for n in model_selection.__all__]
    names += [f"weakkernels.class_prior.{n}" for n in
              ("estimate_class_prior", "prior_from_mixture_proportion")]
    assert auc and su and class_prior  # the modules named above import
    missing = [n for n in names if not (gen / f"{n}.html").exists()]
    assert not missing


def test_no_internal_link_is_broken(site):
    # the theme's own template fragments under _static/ are not pages
    pages = sorted(p for p in site.rglob("*.html")
                   if "_static" not in p.relative_to(site).parts)
    assert len(pages) > 30
    ids = {p: _parse(p).ids for p in pages}
    broken = []
    for page in pages:
        for target in _parse(page).targets:
            url = urlparse(target)
            if url.scheme or url.netloc or target.startswith(("mailto:", "data:")):
                continue
            path, frag = url.path, url.fragment
            dest = (page.parent / unquote(path)).resolve() if path else page
            if dest.is_dir():
                dest = dest / "index.html"
            if not dest.exists():
                broken.append(f"{page.relative_to(site)} -> {target}")
            elif frag and dest.suffix == ".html" and unquote(frag) not in ids.get(
                    dest, _parse(dest).ids):
                broken.append(f"{page.relative_to(site)} -> {target} (no such id)")
    assert not broken, "\n".join(broken[:40])


def test_no_page_loads_anything_remote(site):
    """Offline: no script, stylesheet or image is fetched from the network."""
    remote = []
    for page in site.rglob("*.html"):
        if "_static" in page.relative_to(site).parts:
            continue
        p = _Links()
        text = page.read_text(encoding="utf-8")
        p.feed(text)
        remote += [f"{page.name}: {t}" for t in p.targets
                   if t.startswith(("http://", "https://", "//"))
                   and any(t.split("?")[0].endswith(s) for s in
                           (".js", ".css", ".png", ".svg", ".woff2"))]
    assert not remote, remote[:10]


@pytest.fixture(scope="module")
def browser(site):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no {CHROMIUM}: install Debian's chromium (apt-get install "
                    "chromium; .ci/run does this as root)")
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (requirements.txt)")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = b.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(30_000)
        yield page
        b.close()


def _open(page, path: Path, shot: Path):
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    page.screenshot(path=str(shot), full_page=False)
    return page


def _loaded_images(page) -> list[int]:
    """Natural widths of the images in the article (0: not loaded)."""
    return page.eval_on_selector_all(
        "article img", "els => els.map(e => e.complete ? e.naturalWidth : 0)")


@pytest.mark.parametrize("rel, heading, min_images", [
    ("index.html", "weakkernels", 0),
    ("user_guide/tsgs3vm.html", "TSGS3VM and FRS3VM", 0),
    ("api/generated/weakkernels.TSGS3VM.html", "weakkernels.TSGS3VM", 0),
    ("auto_examples/plot_moons_decision_boundary.html", "Two moons", 1),
    ("benchmarks/scaling.html", "Time against rows", 1),
])
def test_page_renders(site, browser, tmp_path, rel, heading, min_images):
    page = _open(browser, site / rel, tmp_path / "page.png")
    h1 = page.locator("article h1").first.inner_text()
    assert heading in h1
    # the theme's navigation bar and the page's own content are both there
    assert page.locator("nav").count() > 0
    assert len(page.locator("article").inner_text()) > 200
    widths = _loaded_images(page)
    assert len(widths) >= min_images and all(w > 0 for w in widths), widths


def test_api_page_shows_parameters_and_example(site, browser, tmp_path):
    page = _open(browser, site / "api/generated/weakkernels.TSGS3VM.html",
                 tmp_path / "api.png")
    text = page.locator("article").inner_text()
    for section in ("Parameters", "Attributes", "Examples", "See also"):
        assert section in text, section
    assert "y == -1" in text


def test_user_guide_links_reach_the_gallery(site, browser, tmp_path):
    page = _open(browser, site / "user_guide/tsgs3vm.html", tmp_path / "ug.png")
    page.locator("article a[href*='auto_examples/plot_moons']").first.click()
    page.wait_for_load_state("load")
    assert page.url.endswith("plot_moons_decision_boundary.html")
    assert all(w > 0 for w in _loaded_images(page))
