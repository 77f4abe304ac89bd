/* ctensor/io.h: reading and writing tensors in NumPy's .npy format and in
 * safetensors files.
 *
 * Every dtype but bf16 maps to a NumPy dtype and round-trips (f16 is '<f2');
 * NumPy has no bf16, so a bf16 tensor is saved as f32, exactly. Loading accepts C and Fortran order
 * and both byte orders. A malformed, truncated or hostile file fails with CT_ERR_FORMAT naming the
 * field at fault; sizes are checked with overflow-safe arithmetic before anything is allocated and
 * the header length is capped.
 *
 *   ct_tensor *x = ct_load_npy("x.npy");           // CPU tensor
 *   ct_save_npy("y.npy", y);                        // any device
 */
#ifndef CTENSOR_IO_H
#define CTENSOR_IO_H

#include "ctensor/api.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Loads a .npy file (format 1.0, 2.0 or 3.0; dtypes f2 f4 f8 i1 i2 i4 i8 u1
 * b1 in either byte order) into a new contiguous CPU tensor. Bytes after the
 * data are ignored, as NumPy does. A file that can't be opened or read is
 * CT_ERR_IO naming the path and the system's reason. */
CT_API ct_tensor *ct_load_npy(const char *path);
/* Parses a .npy image held in memory (what ct_load_npy reads). */
CT_API ct_tensor *ct_load_npy_buffer(const void *data, size_t size);
/* Saves t (any device, any layout) as a C-order little-endian .npy file in
 * format 1.0, byte for byte what numpy.save writes. Open/write/close failures
 * are CT_ERR_IO (a partial file may remain). */
CT_API ct_status ct_save_npy(const char *path, const ct_tensor *t);

/* safetensors files (what PyTorch's safetensors reads and writes): n named
 * tensors (any device, layout and dtype; names unique, non-empty). The writer
 * stores them in order, C-order little-endian, pads the header with spaces to
 * a multiple of 8, and writes atomically ("<path>.tmp.<pid>", fsync, rename;
 * the temporary is removed on failure). */
CT_API ct_status ct_save_safetensors(const char *path, ct_tensor *const *tensors,
                                     const char *const *names, int n);
/* Reads every tensor of a safetensors file (to the CPU), in the header's
 * order. The header (at most 100 MB, strict JSON, no duplicate names, known
 * dtypes, at most CT_MAX_DIMS dims) and every offset are validated before any
 * tensor is allocated: offsets contiguous and non-overlapping and covering the
 * data exactly, sizes = shape x dtype size, no overflow; bool bytes are 0 or
 * 1; "__metadata__" (string values) is accepted and ignored. Anything else is
 * CT_ERR_FORMAT naming the field and the file; an unreadable file CT_ERR_IO.
 * On success *tensors and *names are malloc'd arrays of *n entries (names
 * malloc'd too; the tensors belong to no scope); free them with
 * ct_safetensors_free. On failure they are NULL and 0. */
CT_API ct_status ct_load_safetensors(const char *path, ct_tensor ***tensors, char ***names, int *n);
CT_API void ct_safetensors_free(ct_tensor **tensors, char **names, int n);

/* Removes what a ct_save_safetensors(path, ...) killed before its rename left
 * behind: the regular files "<path>.tmp.<pid>" of processes that no longer
 * run (a live process's temporary, a symbolic link or any other name is left
 * alone). *removed (if not NULL) receives the count. Call it before saving to
 * a path a crashed or killed run may have used. CT_ERR_IO if the folder
 * cannot be read or a file cannot be removed. */
CT_API ct_status ct_safetensors_remove_stale(const char *path, int *removed);

/* A name (a path, a tensor name from a file) as messages show it: well-formed
 * UTF-8 text as it is; control characters, bytes that are not UTF-8 and the
 * backslash as \xNN (\\ for the backslash), so that a hostile or mangled name
 * can neither garble a terminal nor hide what it is. Writes into buf (cap
 * bytes; a longer result ends in "...") and returns buf; every message of the
 * readers shows names this way. */
CT_API const char *ct_escape_name(const char *s, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_IO_H */
