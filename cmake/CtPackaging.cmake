# Debian packages of the build (cpack -G DEB in the build directory), one per
# install component (CMakeLists.txt):
#   libctensor<soversion>        lib      libctensor.so: needs no CUDA, NCCL or MPI
#   libctensor-dev               dev      headers, libctensor.a, CMake and pkg-config files
#   libctensor<soversion>-cuda   cuda     libctensor-cuda.so, the CUDA backend
#   libctensor<soversion>-nccl   nccl     libctensor-nccl.so, the NCCL engine
#   libctensor<soversion>-mpi    mpi      libctensor-mpi.so, the MPI engine
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
    "ctensor: development files\n Headers, the static library, CMake (find_package(ctensor)) and pkg-config\n files. Static linking needs the libraries of the backends built into\n libctensor.a (pkg-config --static --libs ctensor lists them).")
set(CPACK_COMPONENT_DEV_DEPENDS lib)
# ctensor.pc names zlib (Requires.private), and libpng / libjpeg where built with them.
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
set(CPACK_COMPONENT_CUDA_DESCRIPTION
    "ctensor: the CUDA backend\n libctensor-cuda.so: tensors on NVIDIA GPUs (CUDA runtime, cuBLAS, cuDNN),\n loaded by libctensor when a GPU is asked for.")
set(CPACK_COMPONENT_NCCL_DESCRIPTION
    "ctensor: the NCCL engine\n libctensor-nccl.so: data-parallel training across GPUs (with the MPI engine).")
set(CPACK_COMPONENT_NCCL_DEPENDS lib cuda mpi)
set(CPACK_COMPONENT_MPI_DESCRIPTION
    "ctensor: the MPI engine\n libctensor-mpi.so: data-parallel training across processes (mpirun).")

include(CPack)
