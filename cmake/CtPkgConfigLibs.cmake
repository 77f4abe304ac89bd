# What libctensor.a needs at link time, for the Requires.private and
# Libs.private of ctensor.pc (pkg-config --static --libs ctensor):
#   CT_PC_REQUIRES_PRIVATE  pkg-config modules (zlib; libpng, libjpeg where found)
#   CT_PC_LIBS_PRIVATE      linker arguments: the plugins' libraries by path,
#                           the C++ runtime of the CUDA backend's host code,
#                           libm, libpthread, libdl. The BLAS is not among
#                           them: the CPU backend loads it at run time.
set(CT_PC_REQUIRES_PRIVATE zlib)
# The image-folder dataset's decoders, where the build found them.
if(PNG_FOUND)
  list(APPEND CT_PC_REQUIRES_PRIVATE libpng)
endif()
if(JPEG_FOUND)
  list(APPEND CT_PC_REQUIRES_PRIVATE libjpeg)
endif()
set(_ct_libs)
foreach(p ${CT_PLUGINS})
  foreach(lib ${CT_PLUGIN_${p}_INSTALL_LIBS})
    list(APPEND _ct_libs ${lib})
  endforeach()
endforeach()
if(CT_USE_MPI AND MPI_C_LINK_FLAGS)
  separate_arguments(_ct_mpi_flags UNIX_COMMAND "${MPI_C_LINK_FLAGS}")
  list(APPEND _ct_libs ${_ct_mpi_flags})
endif()
if(CT_USE_CUDA)
  list(APPEND _ct_libs -lstdc++)
endif()
list(APPEND _ct_libs -lm -lpthread ${CMAKE_DL_LIBS})
list(TRANSFORM _ct_libs REPLACE "^dl$" "-ldl")
list(REMOVE_DUPLICATES _ct_libs)
list(JOIN _ct_libs " " CT_PC_LIBS_PRIVATE)
list(JOIN CT_PC_REQUIRES_PRIVATE " " CT_PC_REQUIRES_PRIVATE)
unset(_ct_libs)
