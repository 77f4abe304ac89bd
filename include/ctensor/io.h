/* ctensor/io.h: reading and writing tensors in NumPy's .npy format.
 *
 * Every dtype but bf16 maps to a NumPy dtype and round-trips (f16 is '<f2');
 * NumPy has no bf16, so a bf16 tensor is saved as f32, exactly. Loading accepts C and Fortran order and both byte
 * orders. A malformed, truncated or hostile file fails with CT_ERR_FORMAT
 * naming the field at fault; sizes are checked with overflow-safe arithmetic
 * before anything is allocated and the header length is capped.
 *
 *   ct_tensor *x = ct_load_npy("x.npy");           // CPU tensor
 *   ct_save_npy("y.npy", y);                        // any device
 */
#ifndef CTENSOR_IO_H
#define CTENSOR_IO_H

#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Loads a .npy file into a new CPU tensor. */
ct_tensor *ct_load_npy(const char *path);
/* Parses a .npy image held in memory (what ct_load_npy reads). */
ct_tensor *ct_load_npy_buffer(const void *data, size_t size);
/* Saves t (any device, any layout) as a C-order little-endian .npy file. */
ct_status ct_save_npy(const char *path, const ct_tensor *t);

/* safetensors files (what PyTorch's safetensors reads and writes): n named
 * tensors. The writer stores them in order, C-order little-endian, and writes
 * atomically (a temporary file, fsync, rename). */
ct_status ct_save_safetensors(const char *path, ct_tensor *const *tensors, const char *const *names,
                              int n);
/* Reads every tensor of a safetensors file (to the CPU). The header and every
 * offset are validated before anything is allocated: offsets contiguous and
 * non-overlapping, sizes = shape x dtype size, no overflow; anything else is
 * CT_ERR_FORMAT naming the field. On success *tensors and *names are malloc'd
 * arrays of *n entries (names malloc'd too); free them with
 * ct_safetensors_free. */
ct_status ct_load_safetensors(const char *path, ct_tensor ***tensors, char ***names, int *n);
void ct_safetensors_free(ct_tensor **tensors, char **names, int n);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_IO_H */
