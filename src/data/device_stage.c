/* Device staging for the data loader: the host-to-GPU copy of the next batch
 * runs on a stream of its own while the GPU computes on the current batch.
 *
 * put: the pinned host batch is copied (non-blocking) on the copy stream into
 *      fresh device tensors, and an event marks the copy's end. The host
 *      tensors stay with the stage until the copy is known to be ordered.
 * take: the caller's current stream waits for that event (GPU-side, the host
 *      does not block), the device tensors are recorded as used on that
 *      stream (they were allocated on the copy stream, so the caching
 *      allocator must not reuse them for the next copy before the caller's
 *      work on them is done), and the host tensors are released (the pinned
 *      allocator reuses their blocks only after the copy stream has passed
 *      the copy, which the non-blocking transfer recorded).
 * drop: an epoch restart discards a staged batch without waiting for its
 *      copy: the allocators already order reuse after it (the device blocks
 *      are reused only on the copy stream, the pinned ones only after the
 *      copy stream passed the event their free records). Waiting here with
 *      ct_event_synchronize would also take and lose a kernel fault of the
 *      caller's (errors found by kernels are reported once, by whatever
 *      synchronizes first), and drop has no status to return.
 *
 * One stage per loader; used only from the thread that calls
 * ct_dataloader_next (the current stream is per thread). */
#include <stdlib.h>

#include "backend/backend.h"
#include "data/data_internal.h"

struct ct__device_stage {
  ct_device device;
  ct_stream *copy_stream;
  ct_event *copied;
  bool full;
  int64_t index;
  ct_tensor *host_inputs, *host_targets; /* pinned, until take/drop */
  ct_tensor *inputs, *targets;           /* on the device */
};

ct__device_stage *ct__device_stage_new(ct_device device) {
  ct__device_stage *s = ct__calloc(1, sizeof *s);
  if (!s) return ct__fail(CT_ERR_OOM, "dataloader: out of host memory");
  s->device = device;
  s->copy_stream = ct_stream_new(device);
  s->copied = s->copy_stream ? ct_event_new(device, false) : NULL;
  if (!s->copied) {
    ct__device_stage_free(s);
    return NULL;
  }
  return s;
}

static void release_all(ct__device_stage *s) {
  ct__release(s->host_inputs);
  ct__release(s->host_targets);
  ct__release(s->inputs);
  ct__release(s->targets);
  s->host_inputs = s->host_targets = s->inputs = s->targets = NULL;
  s->full = false;
}

void ct__device_stage_drop(ct__device_stage *s) {
  if (!s || !s->full) return;
  release_all(s); /* no wait: see the top of this file */
}

void ct__device_stage_free(ct__device_stage *s) {
  if (!s) return;
  ct__device_stage_drop(s);
  ct_event_free(s->copied);
  ct_stream_free(s->copy_stream);
  free(s);
}

/* A device tensor shaped like contiguous host tensor h, filled by an async
 * copy on the current stream (untracked). */
static ct_tensor *copy_to_device(const ct_tensor *h, ct_device device) {
  ct_tensor *d = ct__empty(h->shape, h->ndim, h->dtype, device);
  if (!d) return NULL;
  size_t nbytes = ct_nbytes(h);
  bool pinned = (h->storage->flags & CT_STORAGE_PINNED) != 0;
  if (nbytes && ct__backend_of(d)->copy_from_host(d, ct__data(h), nbytes, pinned) != CT_OK) {
    ct__release(d);
    return NULL;
  }
  return d;
}

ct_status ct__device_stage_put(ct__device_stage *s, ct_tensor *inputs, ct_tensor *targets,
                               int64_t index) {
  ct__device_stage_drop(s);
  s->host_inputs = inputs;
  s->host_targets = targets;
  s->index = index;
  ct_stream *caller = ct_stream_current(s->device);
  ct_status st = ct_stream_set_current(s->device, s->copy_stream);
  if (st == CT_OK) {
    s->inputs = copy_to_device(inputs, s->device);
    s->targets = s->inputs ? copy_to_device(targets, s->device) : NULL;
    st = s->targets ? ct_event_record(s->copied, s->copy_stream) : ct_last_error();
    ct_stream_set_current(s->device, caller);
  }
  s->full = true; /* also on failure: drop releases whatever was set up */
  if (st != CT_OK) ct__device_stage_drop(s);
  return st;
}

bool ct__device_stage_full(const ct__device_stage *s) { return s && s->full; }

ct_status ct__device_stage_take(ct__device_stage *s, ct_batch *out) {
  ct_stream *caller = ct_stream_current(s->device);
  ct_status st = ct_stream_wait_event(caller, s->copied);
  if (st == CT_OK) st = ct_record_stream(s->inputs, caller);
  if (st == CT_OK) st = ct_record_stream(s->targets, caller);
  if (st != CT_OK) {
    ct__device_stage_drop(s);
    return st;
  }
  out->inputs = s->inputs;
  out->targets = s->targets;
  out->index = s->index;
  s->inputs = s->targets = NULL;
  release_all(s); /* the host batch: its pinned blocks are reused once the copy stream passed the copy */
  return CT_OK;
}
