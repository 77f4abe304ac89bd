/* CPU random fills: Philox 4x32-10 blocks transformed per core/philox.h.
 *
 * out is contiguous with n elements; the work is split over Philox blocks
 * (4 elements per block, 2 for wide draws) with ct__parallel_for. Each
 * element depends only on (seed, offset, its index), so the result does not
 * depend on the number of threads. core/philox.h keeps its arithmetic free
 * of FMA contraction even though the library is built with -march=native. */
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_loop.h"
#include "core/philox.h"

typedef struct rng_ctx {
  const ct_random_params *p;
  char *out;
  ct_dtype dtype;
  int64_t n;
  int per;          /* elements per block: 4 or 2 */
  int digits;       /* significand bits of a floating output (uniform) */
  float lo32, span32, mean32, std32;
  const void *probs;
  bool probs_f64;
} rng_ctx;

/* Stores an integer-valued result (INT, Bernoulli) into any dtype. The op
 * layer guarantees the value is representable (exactly, for floats). */
static inline void store_int(char *out, ct_dtype d, int64_t i, int64_t v) {
  switch (d) {
  case CT_F32: ((float *)out)[i] = (float)v; break;
  case CT_F64: ((double *)out)[i] = (double)v; break;
  case CT_F16:
  case CT_BF16: ct__half_store(out + 2 * i, d, (float)v); break;
  case CT_I8: ((int8_t *)out)[i] = (int8_t)v; break;
  case CT_U8: ((uint8_t *)out)[i] = (uint8_t)v; break;
  case CT_I16: ((int16_t *)out)[i] = (int16_t)v; break;
  case CT_I32: ((int32_t *)out)[i] = (int32_t)v; break;
  case CT_I64: ((int64_t *)out)[i] = v; break;
  case CT_BOOL: ((bool *)out)[i] = v != 0; break;
  default: break;
  }
}

static inline void store_f32(char *out, ct_dtype d, int64_t i, float v) {
  if (d == CT_F32) ((float *)out)[i] = v;
  else ct__half_store(out + 2 * i, d, v);
}

static void fill_blocks(int64_t b0, int64_t b1, void *vctx) {
  const rng_ctx *c = vctx;
  const ct_random_params *p = c->p;
  for (int64_t b = b0; b < b1; b++) {
    uint32_t w[4];
    ct_philox_block(p->seed, p->offset, (uint64_t)b, w);
    int64_t i0 = b * c->per;
    int m = c->n - i0 < c->per ? (int)(c->n - i0) : c->per;
    switch (p->kind) {
    case CT_RANDOM_UNIFORM:
    case CT_RANDOM_NORMAL:
      if (c->dtype == CT_F64) {
        double v[2];
        if (p->kind == CT_RANDOM_UNIFORM) ct_rng_uniform_f64x2(w, p->a, p->b - p->a, v);
        else ct_rng_normal_f64x2(w, p->a, p->b, v);
        for (int j = 0; j < m; j++) ((double *)c->out)[i0 + j] = v[j];
      } else {
        float v[4];
        if (p->kind == CT_RANDOM_UNIFORM) ct_rng_uniform_f32x4(w, c->digits, c->lo32, c->span32, v);
        else ct_rng_normal_f32x4(w, c->mean32, c->std32, v);
        for (int j = 0; j < m; j++) store_f32(c->out, c->dtype, i0 + j, v[j]);
      }
      break;
    case CT_RANDOM_INT:
      for (int j = 0; j < m; j++) {
        int64_t v = p->wide ? ct_rng_int_wide(ct_philox_u64(w + 2 * j), p->int_low, p->int_range)
                            : ct_rng_int_narrow(w[j], p->int_low, p->int_range);
        store_int(c->out, c->dtype, i0 + j, v);
      }
      break;
    case CT_RANDOM_BERNOULLI:
      for (int j = 0; j < m; j++) store_int(c->out, c->dtype, i0 + j, ct_rng_bernoulli(w[j], p->a));
      break;
    case CT_RANDOM_BERNOULLI_TENSOR:
      for (int j = 0; j < m; j++) {
        int64_t i = i0 + j;
        double pr = c->probs_f64 ? ((const double *)c->probs)[i] : (double)((const float *)c->probs)[i];
        store_int(c->out, c->dtype, i, ct_rng_bernoulli(w[j], pr));
      }
      break;
    }
  }
}

ct_status ct__cpu_random(ct_tensor *out, const ct_random_params *p, const ct_tensor *probs) {
  CT_ASSERT(ct__is_contiguous(out));
  rng_ctx c = {
      .p = p,
      .out = ct__data(out),
      .dtype = out->dtype,
      .n = out->numel,
      .per = p->wide ? 2 : 4,
      .digits = out->dtype == CT_F16 ? 11 : out->dtype == CT_BF16 ? 8 : 24,
      .lo32 = (float)p->a,
      .span32 = (float)(p->b - p->a),
      .mean32 = (float)p->a,
      .std32 = (float)p->b,
  };
  if (p->kind == CT_RANDOM_BERNOULLI_TENSOR) {
    CT_ASSERT(probs && ct__is_contiguous(probs) && probs->numel == out->numel &&
              (probs->dtype == CT_F32 || probs->dtype == CT_F64));
    c.probs = ct__data(probs);
    c.probs_f64 = probs->dtype == CT_F64;
  }
  int64_t blocks = (c.n + c.per - 1) / c.per;
  /* A block costs about as much as a few elements of a simple kernel. */
  ct__parallel_for(blocks, CT_PARALLEL_GRAIN / 16, fill_blocks, &c);
  return CT_OK;
}
