#!/bin/sh
# Create the isolated venv of one published peer (pins clash with ours):
#   sh benchmarks/peers/setup_peer_venv.sh qns3vm|pywsl
# The venv lives in benchmarks/.peer-venvs/<peer> (gitignored).  Exit status 0 and
# a ".ok" stamp when the peer imports; otherwise the pip log is kept in
# benchmarks/.peer-venvs/<peer>.log and the harness records the peer as
# "not installable".
set -eu
peer="$1"
here="$(cd "$(dirname "$0")/.." && pwd)"
root="$here/.peer-venvs"
venv="$root/$peer"
log="$root/$peer.log"
PY="${PEER_PYTHON:-python3}"
mkdir -p "$root"
[ -f "$venv/.ok" ] && exit 0
case "$peer" in
  # QN-S3VM (Gieseke et al.) ships in `semisupervised`, which needs numpy < 2.
  # Its metadata requires the deprecated `sklearn` placeholder package, which
  # refuses to build; scikit-learn provides the module, so the package itself
  # is installed with --no-deps after its real dependencies.
  qns3vm) pkgs="numpy<2 scipy scikit-learn<1.6 pandas" ; nodeps="semisupervised" ;
          mod="semisupervised" ;;
  # PNU classification (Sakai et al.) ships in `pywsl`.
  pywsl) pkgs="numpy<2 scipy scikit-learn<1.6 pywsl" ; nodeps="" ; mod="pywsl" ;;
  *) echo "unknown peer $peer" >&2 ; exit 2 ;;
esac
{
  "$PY" -m venv "$venv"
  "$venv/bin/pip" install --quiet --upgrade pip
  "$venv/bin/pip" install $pkgs psutil
  [ -z "$nodeps" ] || "$venv/bin/pip" install --no-deps $nodeps
  "$venv/bin/python" -c "import $mod, sys; print($mod.__file__)"
} >"$log" 2>&1 && touch "$venv/.ok"
