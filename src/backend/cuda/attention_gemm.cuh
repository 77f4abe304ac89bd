/* The GEMM path of scaled dot-product attention (attention_gemm.cu), called
 * by attention.cu's entry points for the shapes it takes. */
#ifndef CT_CUDA_ATTENTION_GEMM_CUH
#define CT_CUDA_ATTENTION_GEMM_CUH

#include "backend/cuda/common.cuh"

/* Whether the GEMM path takes p's shape in dtype (its scratch bounded). */
bool ct__cuda_sdpa_gemm_fits(const ct_sdpa_params *p, int dtype, bool backward);
ct_status ct__cuda_sdpa_gemm(const ctc_t *out, const ctc_t *lse, const ctc_t *q, const ctc_t *k,
                             const ctc_t *v, const ctc_t *mask, const ct_sdpa_params *p);
ct_status ct__cuda_sdpa_gemm_backward(const ctc_t *gq, const ctc_t *gk, const ctc_t *gv,
                                      const ctc_t *g, const ctc_t *q, const ctc_t *k,
                                      const ctc_t *v, const ctc_t *out, const ctc_t *lse,
                                      const ctc_t *mask, const ct_sdpa_params *p);

#endif /* CT_CUDA_ATTENTION_GEMM_CUH */
