# Debian packages of the build (cpack -G DEB in the build directory), one per
# install component (CMakeLists.txt):
#   libctensor<soversion>        lib      libctensor.so: needs no CUDA, NCCL or MPI
#   libctensor-dev               dev      headers, libctensor.a, CMake and pkg-config files
#   libctensor<soversion>-cuda   cuda     libctensor-cuda.so, the CUDA backend
#   libctensor<soversion>-nccl   nccl     libctensor-nccl.so, the NCCL engine
#   libctensor<soversion>-mpi    mpi      libctensor-mpi.so, the MPI engine
#   libctensor-<p>-dev           <p>dev   libctensor-<p>.a and its CMake and
#                                         pkg-config files: plugin <p> for
#                                         static programs (needs its -dev libs)
#   ctensor                      program  the ctensor program
# Dependencies: dpkg-shlibdeps for the libraries Debian packages (libc, libgomp,
# OpenBLAS, zlib, Open MPI), CPack's component dependencies between these
# packages (exact version: a plugin loads only into its own core), and
# CTENSOR_DEB_CUDA_DEPENDS / CTENSOR_DEB_NCCL_DEPENDS for the NVIDIA libraries
# when no Debian package owns them (a toolkit from a runfile or a tarball).
# tests/packages/ installs the CPU packages into a clean Debian root.

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ctensor)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_CONTACT "ctensor maintainers <ctensor@invalid>")
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The plugins and the program need libctensor.so, which another component
# packages: dpkg-shlibdeps finds it in the build tree (its package dependency
# comes from the component dependencies below).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_BINARY_DIR})
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://invalid/ctensor")
# Packages install under /usr: the system's library path finds libctensor and
# its plugins, and the ctensor program needs no rpath of its own.
set(CPACK_SET_DESTDIR OFF)

set(CPACK_COMPONENTS_ALL lib dev program ${CT_PLUGINS})
foreach(p ${CT_PLUGINS})
  list(APPEND CPACK_COMPONENTS_ALL ${p}dev)
endforeach()
set(CPACK_DEBIAN_LIB_PACKAGE_NAME libctensor${CT_SOVERSION})
set(CPACK_COMPONENT_LIB_DESCRIPTION
    "ctensor: tensors and neural-network training in C (shared library)\n The core library: CPU backend (OpenBLAS), autograd, modules,\n optimizers, data loading. The CUDA backend and the MPI and NCCL engines are\n separate packages, loaded at run time when present.")
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
# The BLAS is loaded at run time (src/backend/cpu/blas.c), so shlibdeps does
# not see it: name the build whose file the library loads.
if(CT_BLAS_NAME MATCHES "^openblas-(pthread|openmp)$")
  set(CPACK_DEBIAN_LIB_PACKAGE_DEPENDS "libopenblas0-${CMAKE_MATCH_1}")
else()
  set(CPACK_DEBIAN_LIB_PACKAGE_DEPENDS "libopenblas0")
endif()

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libctensor-dev)
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "ctensor: development files\n Headers, the static library, CMake (find_package(ctensor)) and pkg-config\n files. The static libctensor.a is the core alone (CPU backend): it needs\n no MPI, NCCL or CUDA library. The libctensor-<p>-dev packages add the\n CUDA backend and the MPI and NCCL engines for static programs.")
set(CPACK_COMPONENT_DEV_DEPENDS lib)
# ctensor.pc and ctensor-static.pc name zlib, and libpng / libjpeg where built
# with them; libctensor.a needs nothing else beyond libc (libm, libpthread, libdl).
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "zlib1g-dev")
if(PNG_FOUND)
  string(APPEND CPACK_DEBIAN_DEV_PACKAGE_DEPENDS ", libpng-dev")
endif()
if(JPEG_FOUND)
  string(APPEND CPACK_DEBIAN_DEV_PACKAGE_DEPENDS ", libjpeg62-turbo-dev")
endif()
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)

set(CPACK_DEBIAN_PROGRAM_PACKAGE_NAME ctensor)
set(CPACK_COMPONENT_PROGRAM_DESCRIPTION
    "ctensor: train and evaluate neural networks from the command line\n ctensor info, train, eval: models mlp, cnn, simplecnn on Fashion-MNIST,\n MNIST or CIFAR-10, on the CPU or a GPU (with libctensor-cuda).")
set(CPACK_COMPONENT_PROGRAM_DEPENDS lib)
set(CPACK_DEBIAN_PROGRAM_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PROGRAM_PACKAGE_SUGGESTS "dataset-fashion-mnist")

# The NVIDIA libraries: none when a Debian package owns `library` (shlibdeps
# then finds it), else the names of NVIDIA's CUDA repository for this toolkit.
function(ct_nvidia_depends var library default)
  execute_process(COMMAND dpkg -S ${library} RESULT_VARIABLE owned OUTPUT_QUIET ERROR_QUIET)
  if(owned EQUAL 0)
    set(default "")
  endif()
  set(CTENSOR_DEB_${var}_DEPENDS "${default}" CACHE STRING
      "Debian dependencies of the ${var} plugin package on NVIDIA's libraries")
endfunction()
set(_ct_cuda_mm "${CUDAToolkit_VERSION_MAJOR}-${CUDAToolkit_VERSION_MINOR}")
if(CT_USE_CUDA)
  ct_nvidia_depends(CUDA ${CUDA_cudart_LIBRARY}
    "cuda-cudart-${_ct_cuda_mm}, libcublas-${_ct_cuda_mm}, libcusolver-${_ct_cuda_mm}, libcudnn9-cuda-${CUDAToolkit_VERSION_MAJOR}")
endif()
if(CT_USE_NCCL)
  ct_nvidia_depends(NCCL ${NCCL_LIBRARY} "cuda-cudart-${_ct_cuda_mm}, libnccl2")
endif()

foreach(p ${CT_PLUGINS})
  string(TOUPPER ${p} P)
  set(CPACK_DEBIAN_${P}_PACKAGE_NAME libctensor${CT_SOVERSION}-${p})
  set(CPACK_COMPONENT_${P}_DEPENDS lib)
  set(CPACK_DEBIAN_${P}_PACKAGE_SECTION libs)
  if(DEFINED CTENSOR_DEB_${P}_DEPENDS AND CTENSOR_DEB_${P}_DEPENDS)
    set(CPACK_DEBIAN_${P}_PACKAGE_DEPENDS "${CTENSOR_DEB_${P}_DEPENDS}")
  endif()
endforeach()
# The plugins' static archives: their libraries are linked by path, from the
# -dev packages that own them (dpkg -S at configure time), else the names of
# NVIDIA's repository or Debian's defaults.
function(ct_dev_depends var file default)
  set(owner "")
  if(file)
    execute_process(COMMAND dpkg -S ${file} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_QUIET
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(rc EQUAL 0)
      string(REGEX REPLACE ":.*" "" owner "${out}")
      string(REGEX REPLACE ":[a-z0-9]+$" "" owner "${owner}")
    endif()
  endif()
  if(owner)
    set(default "${owner}")
  endif()
  string(TOUPPER ${var} V)
  set(CTENSOR_DEB_${V}DEV_DEPENDS "${default}" CACHE STRING
      "Debian dependencies of libctensor-${var}-dev (the libraries libctensor-${var}.a links)")
endfunction()
if(CT_USE_MPI)
  list(GET MPI_C_LIBRARIES 0 _ct_mpi_lib)
  ct_dev_depends(mpi "${_ct_mpi_lib}" "libopenmpi-dev")
endif()
if(CT_USE_CUDA)
  ct_dev_depends(cuda "" "cuda-cudart-dev-${_ct_cuda_mm}, libcublas-dev-${_ct_cuda_mm}, libcusolver-dev-${_ct_cuda_mm}, libcudnn9-dev-cuda-${CUDAToolkit_VERSION_MAJOR}")
endif()
if(CT_USE_NCCL)
  ct_dev_depends(nccl "" "libnccl-dev")
endif()
foreach(p ${CT_PLUGINS})
  string(TOUPPER ${p} P)
  set(CPACK_DEBIAN_${P}DEV_PACKAGE_NAME libctensor-${p}-dev)
  set(CPACK_DEBIAN_${P}DEV_PACKAGE_SECTION libdevel)
  set(CPACK_COMPONENT_${P}DEV_DEPENDS dev)
  foreach(need ${CT_PLUGIN_${p}_NEEDS})
    list(APPEND CPACK_COMPONENT_${P}DEV_DEPENDS ${need}dev)
  endforeach()
  set(CPACK_DEBIAN_${P}DEV_PACKAGE_DEPENDS "${CTENSOR_DEB_${P}DEV_DEPENDS}")
  set(CPACK_COMPONENT_${P}DEV_DESCRIPTION
      "ctensor: ${CT_PLUGIN_${p}_WHAT} for static programs\n libctensor-${p}.a, CMake's ctensor::${p}_static and pkg-config's ctensor-${p}:\n ${CT_PLUGIN_${p}_WHAT} linked into a program on the static libctensor.a.")
endforeach()
set(CPACK_COMPONENT_CUDA_DESCRIPTION
    "ctensor: the CUDA backend\n libctensor-cuda.so: tensors on NVIDIA GPUs (CUDA runtime, cuBLAS, cuDNN),\n loaded by libctensor when a GPU is asked for.")
set(CPACK_COMPONENT_NCCL_DESCRIPTION
    "ctensor: the NCCL engine\n libctensor-nccl.so: data-parallel training across GPUs (with the MPI engine).")
set(CPACK_COMPONENT_NCCL_DEPENDS lib cuda mpi)
set(CPACK_COMPONENT_MPI_DESCRIPTION
    "ctensor: the MPI engine\n libctensor-mpi.so: data-parallel training across processes (mpirun).")

include(CPack)
