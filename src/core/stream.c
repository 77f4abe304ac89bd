/* Streams and events. A handle wraps the backend's native object; on the CPU,
 * where work runs synchronously, a stream is only a handle and an event holds
 * the host time at which it was recorded. */
#include <stdlib.h>
#include <time.h>

#include "backend/backend.h"
#include "ctensor/dlpack.h" /* ct_stream_native_handle */

struct ct_stream {
  ct_device device;
  void *native; /* NULL on the CPU */
};

struct ct_event {
  ct_device device;
  bool timing;
  bool recorded;
  double host_ms; /* CPU: time of the record */
  void *native;
};

static _Thread_local ct_stream *tls_current[2][64]; /* [type][index] */

static const ct_backend *backend_for(const char *op, ct_device d) {
  if (!ct__check_device(op, d)) return NULL;
  const ct_backend *be = ct__backend((ct_device_type)d.type);
  if (!be)
    ct__fail(CT_ERR_UNAVAILABLE, "%s: no backend for %s: %s", op, ct_device_name(d),
             ct__backend_error((ct_device_type)d.type));
  return be;
}

ct_stream *ct_stream_new(ct_device device) {
  const ct_backend *be = backend_for("stream_new", device);
  if (!be) return NULL;
  ct_stream *s = ct__calloc(1, sizeof *s);
  if (!s) return ct__fail(CT_ERR_OOM, "stream_new: out of host memory");
  s->device = device;
  if (be->stream_new && !(s->native = be->stream_new(device.index))) {
    free(s);
    return NULL;
  }
  return s;
}

void ct_stream_free(ct_stream *s) {
  if (!s) return;
  const ct_backend *be = ct__backend((ct_device_type)s->device.type);
  if (tls_current[s->device.type][s->device.index & 63] == s) ct_stream_set_current(s->device, NULL);
  if (be && be->stream_free && s->native) be->stream_free(s->device.index, s->native);
  free(s);
}

ct_status ct_stream_set_current(ct_device device, ct_stream *s) {
  const ct_backend *be = backend_for("stream_set_current", device);
  if (!be) return ct_last_error();
  if (s && !ct_device_equal(s->device, device))
    return ct__fail_status(CT_ERR_DEVICE, "stream_set_current: stream belongs to %s, not %s",
                           ct_device_name(s->device), ct_device_name(device));
  if (be->stream_set_current) {
    ct_status st = be->stream_set_current(device.index, s ? s->native : NULL);
    if (st != CT_OK) return st;
  }
  tls_current[device.type][device.index & 63] = s;
  return CT_OK;
}

ct_stream *ct_stream_current(ct_device device) {
  if ((unsigned)device.type > 1) return NULL;
  return tls_current[device.type][device.index & 63];
}

void *ct_stream_native_handle(const ct_stream *s) { return s ? s->native : NULL; }

ct_status ct_stream_synchronize(ct_stream *s) {
  if (!s) return ct__fail_status(CT_ERR_ARG, "stream_synchronize: stream is NULL");
  const ct_backend *be = ct__backend((ct_device_type)s->device.type);
  return be && be->stream_synchronize ? be->stream_synchronize(s->device.index, s->native) : CT_OK;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

ct_event *ct_event_new(ct_device device, bool enable_timing) {
  const ct_backend *be = backend_for("event_new", device);
  if (!be) return NULL;
  ct_event *e = ct__calloc(1, sizeof *e);
  if (!e) return ct__fail(CT_ERR_OOM, "event_new: out of host memory");
  e->device = device;
  e->timing = enable_timing;
  if (be->event_new && !(e->native = be->event_new(device.index, enable_timing))) {
    free(e);
    return NULL;
  }
  return e;
}

void ct_event_free(ct_event *e) {
  if (!e) return;
  const ct_backend *be = ct__backend((ct_device_type)e->device.type);
  if (be && be->event_free && e->native) be->event_free(e->device.index, e->native);
  free(e);
}

ct_status ct_event_record(ct_event *e, ct_stream *s) {
  if (!e) return ct__fail_status(CT_ERR_ARG, "event_record: event is NULL");
  if (s && !ct_device_equal(s->device, e->device))
    return ct__fail_status(CT_ERR_DEVICE, "event_record: event on %s, stream on %s",
                           ct_device_name(e->device), ct_device_name(s->device));
  const ct_backend *be = ct__backend((ct_device_type)e->device.type);
  if (!s) s = ct_stream_current(e->device);
  if (be->event_record) {
    ct_status st = be->event_record(e->device.index, e->native, s ? s->native : NULL);
    e->recorded = e->recorded || st == CT_OK; /* a failed record leaves it as it was */
    return st;
  }
  e->recorded = true;
  e->host_ms = now_ms();
  return CT_OK;
}

ct_status ct_event_synchronize(ct_event *e) {
  if (!e) return ct__fail_status(CT_ERR_ARG, "event_synchronize: event is NULL");
  const ct_backend *be = ct__backend((ct_device_type)e->device.type);
  return be->event_synchronize ? be->event_synchronize(e->device.index, e->native) : CT_OK;
}

ct_status ct_stream_wait_event(ct_stream *s, ct_event *e) {
  if (!e) return ct__fail_status(CT_ERR_ARG, "stream_wait_event: event is NULL");
  if (s && !ct_device_equal(s->device, e->device))
    return ct__fail_status(CT_ERR_DEVICE, "stream_wait_event: event on %s, stream on %s",
                           ct_device_name(e->device), ct_device_name(s->device));
  const ct_backend *be = ct__backend((ct_device_type)e->device.type);
  if (!s) s = ct_stream_current(e->device);
  return be->stream_wait_event ? be->stream_wait_event(e->device.index, s ? s->native : NULL, e->native)
                               : CT_OK;
}

ct_status ct_event_elapsed_ms(ct_event *start, ct_event *end, float *ms) {
  if (!start || !end || !ms) return ct__fail_status(CT_ERR_ARG, "event_elapsed_ms: NULL argument");
  if (!start->timing || !end->timing)
    return ct__fail_status(CT_ERR_STATE, "event_elapsed_ms: both events need enable_timing");
  if (!start->recorded || !end->recorded)
    return ct__fail_status(CT_ERR_STATE, "event_elapsed_ms: both events must be recorded first");
  if (!ct_device_equal(start->device, end->device))
    return ct__fail_status(CT_ERR_DEVICE, "event_elapsed_ms: events on %s and %s",
                           ct_device_name(start->device), ct_device_name(end->device));
  const ct_backend *be = ct__backend((ct_device_type)start->device.type);
  if (be->event_elapsed_ms) return be->event_elapsed_ms(start->device.index, start->native, end->native, ms);
  *ms = (float)(end->host_ms - start->host_ms);
  return CT_OK;
}

/* ---- record_stream ------------------------------------------------------------ */

ct_status ct_record_stream(ct_tensor *t, ct_stream *s) {
  if (!t) return ct__fail_status(CT_ERR_ARG, "record_stream: tensor is NULL");
  ct_storage *st = t->storage;
  if (st->flags & CT_STORAGE_EXTERNAL) return CT_OK; /* not our allocator's memory */
  bool pinned = (st->flags & CT_STORAGE_PINNED) != 0;
  if (pinned) {
    /* host memory: only a CUDA stream's transfers can still be reading it */
    if (!s || s->device.type != CT_DEVICE_CUDA) return CT_OK;
  } else if (st->device.type == CT_DEVICE_CPU) {
    return CT_OK; /* CPU work is synchronous: nothing pending */
  } else {
    if (!s) s = ct_stream_current(st->device);
    if (s && !ct_device_equal(s->device, st->device))
      return ct__fail_status(CT_ERR_DEVICE, "record_stream: the tensor is on %s, the stream on %s",
                             ct_device_name(st->device), ct_device_name(s->device));
  }
  const ct_backend *be = ct__backend(CT_DEVICE_CUDA);
  if (!be || !be->record_stream) return CT_OK; /* unreachable: CUDA memory needs the backend */
  int dev = s ? s->device.index : st->device.index;
  return be->record_stream(dev, st->data, pinned, s ? s->native : NULL);
}
