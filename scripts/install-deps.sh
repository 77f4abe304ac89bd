#!/usr/bin/env bash
# Installs what ctensor needs to build, test and train, from Debian's packages,
# only where something is missing. Used by the README's two commands and CI.
#   scripts/install-deps.sh [--tests] [--data]
set -euo pipefail

want_tests=0
want_data=0
for arg in "$@"; do
  case "$arg" in
    --tests) want_tests=1 ;;
    --data) want_data=1 ;;
    *) echo "usage: $0 [--tests] [--data]" >&2; exit 2 ;;
  esac
done

# package:probe pairs; a probe is a file (a glob pattern: any match) or a
# command that shows it is there.
need=(
  "cmake:cmake" "gcc:gcc" "g++:g++" "make:make" "pkg-config:pkg-config"
  "libopenblas-dev:/usr/share/doc/libopenblas-dev"
  "libopenblas0-pthread:/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0"
  "zlib1g-dev:/usr/include/zlib.h"
  "libdlpack-dev:/usr/include/dlpack/dlpack.h"
  # PNG and JPEG decoding of the image-folder dataset (optional at build time).
  "libpng-dev:/usr/include/png.h" "libjpeg62-turbo-dev:/usr/include/jpeglib.h"
  # oneDNN for the CPU convolutions: its header at build time, libdnnl.so.2
  # loaded at run time (both optional: without them ctensor's own kernels run).
  "libdnnl-dev:/usr/include/oneapi/dnnl/dnnl_version.h"
)
if [ "$want_tests" = 1 ]; then
  # PyTorch and NumPy serve as oracles in the tests.
  need+=("python3-numpy:/usr/lib/python3/dist-packages/numpy" "python3-torch:/usr/lib/python3/dist-packages/torch")
  # Open MPI: builds src/dist against MPI and runs test_dist as 2 ranks (mpiexec).
  need+=("libopenmpi-dev:/usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h" "openmpi-bin:/usr/bin/mpiexec.openmpi")
  # The Python package (python/): built against Debian's python3, tested with pytest, and
  # installed by pip offline in a venv (setuptools and wheel from Debian, no build isolation).
  need+=("python3-dev:/usr/include/python3.11/Python.h" "python3-pytest:/usr/lib/python3/dist-packages/pytest"
         "python3-setuptools:/usr/lib/python3/dist-packages/setuptools" "python3-wheel:/usr/lib/python3/dist-packages/wheel"
         "python3-venv:/usr/lib/python3.11/ensurepip" "python3-pip:/usr/lib/python3/dist-packages/pip")
  # git: tests/apitests/run.sh clones the array API suite (its Python packages come from PyPI).
  need+=("git:git")
  # clang with libFuzzer (libclang-rt) and its OpenMP: the readers' fuzz targets (tests/fuzz).
  need+=("clang:clang" "libclang-rt-dev:/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a"
         "libomp-dev:/usr/lib/llvm-*/lib/libomp.so")
  # The Debian packages (cpack: dpkg-shlibdeps, file) installed into a clean
  # root made by debootstrap (tests/packages).
  need+=("dpkg-dev:dpkg-shlibdeps" "file:file" "debootstrap:debootstrap")
fi
if [ "$want_data" = 1 ]; then
  need+=("dataset-fashion-mnist:/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")
  # The text of `ctensor train --model gpt` (--dataset fortunes).
  need+=("fortunes:/usr/share/games/fortunes/fortunes")
fi

missing=()
for pair in "${need[@]}"; do
  pkg=${pair%%:*}
  probe=${pair#*:}
  if [[ "$probe" == /* ]]; then
    compgen -G "$probe" >/dev/null || missing+=("$pkg")
  else
    command -v "$probe" >/dev/null 2>&1 || missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
