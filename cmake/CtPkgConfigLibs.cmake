# What the static archives need at link time, for the .pc files:
#   CT_PC_REQUIRES_PRIVATE  pkg-config modules of libctensor.a (zlib; libpng,
#                           libjpeg where found: the image-folder dataset)
#   CT_PC_LIBS_PRIVATE      its linker arguments: libm, libpthread, libdl.
#                           No MPI, NCCL or CUDA (those are plugins) and no
#                           BLAS (the CPU backend loads it at run time).
#   CT_PC_<p>_LIBS          what libctensor-<p>.a needs (ctensor-<p>.pc):
#                           its libraries by path, the C++ runtime of the
#                           CUDA backend's host code, MPI's link flags
#   CT_PC_<p>_REQUIRES      the .pc modules it builds on
set(CT_PC_REQUIRES_PRIVATE zlib)
if(PNG_FOUND)
  list(APPEND CT_PC_REQUIRES_PRIVATE libpng)
endif()
if(JPEG_FOUND)
  list(APPEND CT_PC_REQUIRES_PRIVATE libjpeg)
endif()
set(_ct_libs -lm -lpthread ${CMAKE_DL_LIBS})
list(TRANSFORM _ct_libs REPLACE "^dl$" "-ldl")
list(REMOVE_DUPLICATES _ct_libs)
list(JOIN _ct_libs " " CT_PC_LIBS_PRIVATE)
list(JOIN CT_PC_REQUIRES_PRIVATE " " CT_PC_REQUIRES_PRIVATE)
foreach(p ${CT_PLUGINS})
  set(_ct_libs ${CT_PLUGIN_${p}_INSTALL_LIBS})
  if(p STREQUAL "mpi" AND MPI_C_LINK_FLAGS)
    separate_arguments(_ct_mpi_flags UNIX_COMMAND "${MPI_C_LINK_FLAGS}")
    list(APPEND _ct_libs ${_ct_mpi_flags})
  endif()
  list(TRANSFORM _ct_libs REPLACE "^stdc\\+\\+$" "-lstdc++")
  list(REMOVE_DUPLICATES _ct_libs)
  list(JOIN _ct_libs " " CT_PC_${p}_LIBS)
  set(_ct_req ctensor-static)
  foreach(need ${CT_PLUGIN_${p}_NEEDS})
    list(APPEND _ct_req ctensor-${need})
  endforeach()
  list(JOIN _ct_req " " CT_PC_${p}_REQUIRES)
endforeach()
unset(_ct_libs)
unset(_ct_req)
