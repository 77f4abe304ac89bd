/* Whether CPU autocast pays (ctensor/amp.h): the programs use it to keep
 * f32 under --amp auto, and to warn under an explicit --amp, on CPUs where
 * the half products would be slower than f32 ones. */
#include "backend/cpu/gemm_bf16.h"
#include "ctensor/amp.h"

bool ct_autocast_cpu_is_fast(ct_dtype dtype, const char **why) {
  const char *no = NULL;
  if (dtype == CT_F16)
    no = "the CPU has no f16 products: they run on f32 copies, so f16 autocast is slower than f32";
  else if (dtype != CT_BF16)
    no = "autocast takes f16 or bf16";
  else if (!ct__gemm_bf16_available())
    no = "this CPU (or build) has no AVX512-BF16 products, or CTENSOR_CPU_BF16_GEMM=0: bf16 "
         "products would run on f32 copies, slower than f32";
  if (why) *why = no;
  return no == NULL;
}
