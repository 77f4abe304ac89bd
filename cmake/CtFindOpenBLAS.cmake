# Finds OpenBLAS for ctensor and defines the imported target ct::openblas, plus
#   CT_BLAS_NAME       openblas-openmp or openblas (reported by ct_build_info)
#   CT_BLAS_LIBDIR     the library's directory (for rpaths; empty when found by pkg-config)
#
# The OpenMP build of OpenBLAS shares ctensor's OpenMP thread pool. The pthread
# build keeps a pool of its own, and on a machine with few cores the two pools
# spin against each other between a GEMM and an elementwise op (measured: a
# 784-128-10 training step 60x slower in the median). Debian ships both; the
# OpenMP one lives in its own directory, found first and through an rpath.
#
# Order: Debian's OpenMP layout under CMAKE_PREFIX_PATH and /usr (this also
# finds packages unpacked into a prefix with `dpkg -x` on a machine without
# apt access, see scripts/gpu-deps.sh); then pkg-config; then any libopenblas.
# Used by the build and by the installed ctensorConfig.cmake.
if(TARGET ct::openblas)
  return()
endif()

set(_ct_arch "${CMAKE_LIBRARY_ARCHITECTURE}")
if(NOT _ct_arch)
  set(_ct_arch x86_64-linux-gnu)
endif()
set(_ct_omp_libdirs)
set(_ct_omp_incdirs)
foreach(_p ${CMAKE_PREFIX_PATH} /usr)
  list(APPEND _ct_omp_libdirs ${_p}/lib/${_ct_arch}/openblas-openmp)
  list(APPEND _ct_omp_incdirs ${_p}/include/${_ct_arch}/openblas-openmp)
endforeach()

find_library(CT_OPENBLAS_LIBRARY NAMES openblas PATHS ${_ct_omp_libdirs} NO_DEFAULT_PATH)
find_path(CT_CBLAS_INCLUDE_DIR cblas.h PATHS ${_ct_omp_incdirs} NO_DEFAULT_PATH)

if(CT_OPENBLAS_LIBRARY AND CT_CBLAS_INCLUDE_DIR)
  set(CT_BLAS_NAME openblas-openmp)
else()
  unset(CT_OPENBLAS_LIBRARY CACHE)
  unset(CT_CBLAS_INCLUDE_DIR CACHE)
  set(CT_BLAS_NAME openblas)
  message(WARNING "ctensor: the OpenMP build of OpenBLAS (Debian: libopenblas-openmp-dev) was not "
                  "found; the pthread build's thread pool competes with OpenMP's")
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(OPENBLAS QUIET IMPORTED_TARGET openblas)
  endif()
  if(NOT TARGET PkgConfig::OPENBLAS)
    find_library(CT_OPENBLAS_LIBRARY NAMES openblas PATH_SUFFIXES openblas-pthread openblas)
    find_path(CT_CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas-pthread openblas)
    if(NOT CT_OPENBLAS_LIBRARY OR NOT CT_CBLAS_INCLUDE_DIR)
      message(FATAL_ERROR "ctensor: OpenBLAS not found (Debian: apt-get install libopenblas-openmp-dev; "
                          "elsewhere: put its prefix in CMAKE_PREFIX_PATH)")
    endif()
  endif()
endif()

add_library(ct::openblas INTERFACE IMPORTED)
if(TARGET PkgConfig::OPENBLAS)
  set(CT_BLAS_LIBDIR "")
  target_link_libraries(ct::openblas INTERFACE PkgConfig::OPENBLAS)
else()
  get_filename_component(CT_BLAS_LIBDIR "${CT_OPENBLAS_LIBRARY}" DIRECTORY)
  target_include_directories(ct::openblas INTERFACE "${CT_CBLAS_INCLUDE_DIR}")
  target_link_libraries(ct::openblas INTERFACE "${CT_OPENBLAS_LIBRARY}")
endif()
message(STATUS "ctensor: BLAS ${CT_BLAS_NAME} ${CT_OPENBLAS_LIBRARY}")
