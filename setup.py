"""pip's way to the Python package `ctensor`: CMake builds the C library and the extension (the
same build as the README's), and the wheel bundles both with python/ctensor.

    python3 -m venv --system-site-packages venv && venv/bin/pip install --no-build-isolation .

With a CUDA toolkit (nvcc and cuDNN) installed, building the extension builds the CUDA backend
too (ctensor_python depends on libctensor-cuda.so), and the wheel carries it next to the library,
where the library looks for it; without one the package is CPU-only and CMake says why.
ctensor.cuda.unavailable_reason() says why an installed package uses no GPU.

Offline: setuptools and wheel come from Debian (python3-setuptools, python3-wheel), hence
--no-build-isolation. Environment: CTENSOR_CMAKE_ARGS passes CMake options (for example
"-DCTENSOR_CUDA=OFF"); CTENSOR_BUILD_DIR reuses a configured build tree instead of a fresh one
(only the package's targets are built there)."""

import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCE = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.environ.get("CTENSOR_BUILD_DIR") or os.path.join(os.path.abspath(self.build_temp), "cmake")
        build = os.path.abspath(build)
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            subprocess.check_call(
                ["cmake", "-S", SOURCE, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DCTENSOR_PYTHON=ON",
                 "-DCTENSOR_BUILD_TESTS=OFF", "-DCTENSOR_BUILD_EXAMPLES=OFF", "-DCTENSOR_BUILD_BENCH=OFF",
                 f"-DPython3_EXECUTABLE={sys.executable}"] + shlex.split(os.environ.get("CTENSOR_CMAKE_ARGS", "")))
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 2)
        subprocess.check_call(["cmake", "--build", build, "--target", "ctensor_python", "-j", jobs])
        # the extension and the shared library it links (under its soname, which
        # libctensor.so points to), side by side in the package, with the backends
        # the library loads from its own directory (libctensor-cuda.so & co.)
        target = self.get_ext_fullpath(ext.name)
        package = os.path.dirname(target)
        os.makedirs(package, exist_ok=True)
        shutil.copyfile(os.path.join(build, "python", "ctensor", os.path.basename(target)), target)
        soname = os.readlink(os.path.join(build, "libctensor.so"))
        shutil.copyfile(os.path.realpath(os.path.join(build, soname)), os.path.join(package, soname))
        bundled = []
        for plugin in ("cuda", "nccl", "mpi"):
            path = os.path.join(build, f"libctensor-{plugin}.so")
            if os.path.exists(path):
                shutil.copyfile(path, os.path.join(package, os.path.basename(path)))
                bundled.append(os.path.basename(path))
        print(f"ctensor: bundled {', '.join(bundled) if bundled else 'no backend plugin (CPU only)'}")


setup(
    ext_modules=[Extension("ctensor._C", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": "build/setuptools"}, "egg_info": {"egg_base": "build/setuptools"}},
)
