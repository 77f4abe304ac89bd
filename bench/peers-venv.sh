#!/usr/bin/env bash
# Creates (once) and prints the path of a virtual environment holding the
# current PyPI peers: PyTorch 2.x, NumPy 2.x and JAX (CPU), pinned, cached
# outside the source tree so that a rerun costs nothing. Only the benchmarks
# use it (bench/peers2.sh); the build and the tests never do.
#   bench/peers-venv.sh            -> prints VENV (its python is VENV/bin/python)
# The CPU-only torch wheel comes from download.pytorch.org; where that index
# cannot be reached, PyPI's default wheel is used, which also pulls the CUDA
# runtime packages (about 3 GB): the script checks the disk for that first.
set -euo pipefail
TORCH=2.5.1
NUMPY=2.1.3
JAX=0.4.35
venv=${CT_PEERS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ctensor-bench/venv}
stamp="$venv/.ctensor-peers-torch$TORCH-numpy$NUMPY-jax$JAX"
if [ -f "$stamp" ]; then
  echo "$venv"
  exit 0
fi
log() { echo "peers-venv: $*" >&2; }
mkdir -p "$(dirname "$venv")"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv" >&2
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
"${pip[@]}" "numpy==$NUMPY" "jax[cpu]==$JAX" >&2
if ! "${pip[@]}" --index-url https://download.pytorch.org/whl/cpu "torch==$TORCH+cpu" >&2; then
  free_gb=$(df -Pk "$venv" | awk 'NR==2 {print int($4 / 1048576)}')
  if [ "$free_gb" -lt 8 ]; then
    log "download.pytorch.org is unreachable and PyPI's torch needs about 5 GB with its CUDA packages; $free_gb GB free at $venv"
    exit 1
  fi
  log "download.pytorch.org is unreachable: torch==$TORCH from PyPI (with its CUDA runtime packages)"
  "${pip[@]}" "torch==$TORCH" >&2
fi
# torch.compile's inductor compiles C++ with the system's g++ at run time.
"$venv/bin/python" -c "import torch, numpy, jax; print('torch', torch.__version__, 'numpy', numpy.__version__, 'jax', jax.__version__)" >&2
touch "$stamp"
echo "$venv"
