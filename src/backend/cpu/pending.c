/* TEMPORARY during bring-up: kernels not yet written report so. Each family's
 * file removes its entries here; this file must be gone before release. */
#include "backend/cpu/cpu_kernels.h"
#define PENDING(op) return ct__fail_status(CT_ERR_UNAVAILABLE, "%s: not implemented yet", op)
