/* Autocast regions: a per-thread state saying, for each device type, whether
 * ops autocast and to which half dtype; begin pushes it, end pops it. */
#include "amp/amp_internal.h"

#include "autograd/autograd_internal.h"
#include "ctensor/amp.h"
#include "ops/ops_internal.h"

/* The state packs one nibble per device type: bit 0 enabled, bit 1 bf16. */
#define SLOT_BITS 4u
#define SLOT_ENABLED 1u
#define SLOT_BF16 2u
#define N_DEVICE_TYPES 2

static _Thread_local unsigned tls_state;
static _Thread_local unsigned tls_saved[CT_AUTOCAST_MAX_DEPTH];
static _Thread_local int tls_depth;

static unsigned slot(unsigned state, ct_device_type type) {
  return (state >> (SLOT_BITS * (unsigned)type)) & ((1u << SLOT_BITS) - 1);
}

ct_status ct_autocast_begin(ct_device_type device_type, ct_dtype dtype, bool enabled) {
  if ((unsigned)device_type >= N_DEVICE_TYPES)
    return ct__fail_status(CT_ERR_ARG, "autocast_begin: unknown device type %d", (int)device_type);
  if (enabled && dtype != CT_F16 && dtype != CT_BF16)
    return ct__fail_status(
        CT_ERR_DTYPE, "autocast_begin: expected f16 or bf16, got %s",
        (unsigned)dtype < CT_DTYPE_COUNT ? ct_dtype_name(dtype) : "an invalid dtype");
  if (tls_depth == CT_AUTOCAST_MAX_DEPTH)
    return ct__fail_status(
        CT_ERR_STATE, "autocast_begin: more than %d nested regions (a missing ct_autocast_end?)",
        CT_AUTOCAST_MAX_DEPTH);
  tls_saved[tls_depth++] = tls_state;
  unsigned shift = SLOT_BITS * (unsigned)device_type;
  unsigned bits = enabled ? SLOT_ENABLED | (dtype == CT_BF16 ? SLOT_BF16 : 0) : 0;
  tls_state = (tls_state & ~(((1u << SLOT_BITS) - 1) << shift)) | (bits << shift);
  return CT_OK;
}

void ct_autocast_end(void) {
  if (tls_depth > 0) tls_state = tls_saved[--tls_depth];
}

bool ct_autocast_is_enabled(ct_device_type device_type) {
  return (unsigned)device_type < N_DEVICE_TYPES && (slot(tls_state, device_type) & SLOT_ENABLED);
}

ct_dtype ct_autocast_dtype(ct_device_type device_type) {
  if ((unsigned)device_type < N_DEVICE_TYPES && (slot(tls_state, device_type) & SLOT_ENABLED))
    return slot(tls_state, device_type) & SLOT_BF16 ? CT_BF16 : CT_F16;
  return device_type == CT_DEVICE_CPU ? CT_BF16 : CT_F16; /* what a region would default to */
}

unsigned ct__autocast_suspend(void) {
  unsigned s = tls_state;
  tls_state = 0;
  return s;
}

void ct__autocast_resume(unsigned saved) { tls_state = saved; }

/* PyTorch casts floating inputs other than f64 and leaves the rest alone. */
static bool eligible(const ct_tensor *t, ct_dtype target) {
  return t && t->dtype != target && t->dtype != CT_F64 && ct_dtype_is_floating(t->dtype);
}

bool ct__autocast(ct__autocast_args *a, ct__autocast_list list, const ct_tensor *x0,
                  const ct_tensor *x1, const ct_tensor *x2) {
  if (!tls_state) return false; /* the common case: no region anywhere */
  const ct_tensor *in[CT__AUTOCAST_MAX_ARGS] = {x0, x1, x2};
  const ct_tensor *first = x0 ? x0 : x1 ? x1 : x2;
  if (!first) return false;
  unsigned s = slot(tls_state, (ct_device_type)ct__device(first).type);
  if (!(s & SLOT_ENABLED)) return false;
  ct_dtype target = list == CT__AUTOCAST_F32 ? CT_F32 : s & SLOT_BF16 ? CT_BF16 : CT_F16;
  bool any = false;
  for (int i = 0; i < CT__AUTOCAST_MAX_ARGS; i++) any |= eligible(in[i], target);
  if (!any) return false;
  for (int i = 0; i < CT__AUTOCAST_MAX_ARGS; i++) a->t[i] = in[i], a->owned[i] = NULL;
  for (int i = 0; i < CT__AUTOCAST_MAX_ARGS; i++) {
    if (!eligible(in[i], target)) continue;
    a->owned[i] = ct__ag_identity(ct__cast(in[i], target), in[i], "ToCopyBackward");
    a->t[i] = a->owned[i];
    if (!a->t[i]) { /* the op sees a NULL input and keeps this error */
      for (int j = 0; j < CT__AUTOCAST_MAX_ARGS; j++) a->t[j] = NULL;
      break;
    }
  }
  return true;
}

void ct__autocast_done(ct__autocast_args *a) {
  for (int i = 0; i < CT__AUTOCAST_MAX_ARGS; i++) ct__release(a->owned[i]);
}
