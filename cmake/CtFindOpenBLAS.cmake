# Finds OpenBLAS for ctensor and defines
#   ct::openblas       an imported target carrying cblas.h's include directory
#                      (the library is not linked: the CPU backend loads it on
#                      first use, src/backend/cpu/blas.c)
#   CT_BLAS_NAME       openblas-pthread, openblas-openmp or openblas (ct_build_info)
#   ct::openblas_linked  the same, linking that file: for the test programs
#                      that call cblas themselves (the CUDA emulator's cuBLAS)
#   CT_BLAS_RUNTIME    the shared object to load (its soname's file)
#
# ctensor calls OpenBLAS single-threaded from its own thread pool and loads
# it with OPENBLAS_NUM_THREADS=1, which the pthread build honours at start-up
# (no threads started, no buffer reserved); the OpenMP build reads
# OMP_NUM_THREADS instead and reserves a 128 MiB buffer per CPU when it starts.
# Debian ships each build in a directory of its own (the runtime package
# alone, libopenblas0-pthread, is enough to run: cblas.h is the same in all).
# The pthread build is looked for first, then the OpenMP one, then any
# libopenblas.so.0. Directories: Debian's layout under CMAKE_PREFIX_PATH and
# /usr (this also finds packages unpacked into a prefix with `dpkg -x` on a
# machine without apt access, see scripts/gpu-deps.sh).
if(TARGET ct::openblas)
  return()
endif()

set(_ct_arch "${CMAKE_LIBRARY_ARCHITECTURE}")
if(NOT _ct_arch)
  set(_ct_arch x86_64-linux-gnu)
endif()
set(CT_BLAS_NAME "")
set(_ct_incdirs)
foreach(_ct_flavour pthread openmp serial)
  set(_ct_libdirs)
  foreach(_p ${CMAKE_PREFIX_PATH} /usr)
    list(APPEND _ct_libdirs ${_p}/lib/${_ct_arch}/openblas-${_ct_flavour})
    list(APPEND _ct_incdirs ${_p}/include/${_ct_arch}/openblas-${_ct_flavour})
  endforeach()
  # One cache entry per build: a later configure finds the same file.
  find_file(CT_OPENBLAS_${_ct_flavour}_RUNTIME libopenblas.so.0 PATHS ${_ct_libdirs}
            NO_DEFAULT_PATH)
  if(NOT CT_BLAS_NAME AND NOT _ct_flavour STREQUAL "serial" AND CT_OPENBLAS_${_ct_flavour}_RUNTIME)
    set(CT_BLAS_NAME openblas-${_ct_flavour})
    set(CT_BLAS_RUNTIME "${CT_OPENBLAS_${_ct_flavour}_RUNTIME}")
  endif()
endforeach()

find_path(CT_CBLAS_INCLUDE_DIR cblas.h PATHS ${_ct_incdirs} PATH_SUFFIXES openblas)
if(NOT CT_BLAS_NAME)
  set(CT_BLAS_NAME openblas)
  find_library(CT_OPENBLAS_LIBRARY NAMES openblas PATH_SUFFIXES openblas)
  if(CT_OPENBLAS_LIBRARY)
    get_filename_component(_ct_dir "${CT_OPENBLAS_LIBRARY}" DIRECTORY)
    set(CT_BLAS_RUNTIME "${CT_OPENBLAS_LIBRARY}")
    if(EXISTS "${_ct_dir}/libopenblas.so.0")
      set(CT_BLAS_RUNTIME "${_ct_dir}/libopenblas.so.0")
    endif()
  endif()
endif()
if(NOT CT_BLAS_RUNTIME OR NOT CT_CBLAS_INCLUDE_DIR)
  message(FATAL_ERROR "ctensor: OpenBLAS not found (Debian: apt-get install libopenblas-dev; "
                      "elsewhere: put its prefix in CMAKE_PREFIX_PATH)")
endif()

add_library(ct::openblas INTERFACE IMPORTED)
target_include_directories(ct::openblas INTERFACE "${CT_CBLAS_INCLUDE_DIR}")
add_library(ct::openblas_linked INTERFACE IMPORTED)
target_link_libraries(ct::openblas_linked INTERFACE ct::openblas "${CT_BLAS_RUNTIME}")
message(STATUS "ctensor: BLAS ${CT_BLAS_NAME} ${CT_BLAS_RUNTIME} (loaded at run time)")
