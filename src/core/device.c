/* Device values, the default device, threads, and the CPU side of streams,
 * events and memory statistics (CUDA fills these in through its backend).
 *
 * The default device is the first usable GPU, else the CPU, and the reason
 * for the CPU is kept (ct_cuda_unavailable_reason) so that a program can say
 * it. CT_DEVICE names a device explicitly: when that device cannot be used,
 * ct_resolve_default_device fails with the reason (a program reports it and
 * stops), and ct_default_device, which cannot fail, says it once on stderr
 * and returns the CPU: an explicit request never silently becomes another
 * GPU. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/plugin.h"

ct_device ct_cpu(void) { return (ct_device){CT_DEVICE_CPU, 0}; }
ct_device ct_cuda(int index) { return (ct_device){CT_DEVICE_CUDA, (int8_t)index}; }
bool ct_device_equal(ct_device a, ct_device b) { return a.type == b.type && a.index == b.index; }

const char *ct_device_name(ct_device d) {
  static _Thread_local char bufs[4][CT_DEVICE_NAME_MAX];
  static _Thread_local int next;
  char *b = bufs[next++ & 3];
  if (d.type == CT_DEVICE_CPU)
    snprintf(b, CT_DEVICE_NAME_MAX, "cpu");
  else if (d.type == CT_DEVICE_CUDA)
    snprintf(b, CT_DEVICE_NAME_MAX, "cuda:%d", d.index);
  else
    snprintf(b, CT_DEVICE_NAME_MAX, "device?%d", d.type);
  return b;
}

ct_status ct_device_parse(const char *name, ct_device *out) {
  if (!name || !out) return ct__fail_status(CT_ERR_ARG, "device_parse: NULL argument");
  if (strcmp(name, "cpu") == 0) return *out = ct_cpu(), CT_OK;
  if (strncmp(name, "cuda", 4) == 0) {
    int index;
    if (name[4] == 0) {
      index = ct_cuda_current_device();
    } else if (name[4] == ':') {
      char *end;
      long v = strtol(name + 5, &end, 10);
      if (end == name + 5 || *end || v < 0 || v > 127)
        return ct__fail_status(CT_ERR_DEVICE,
                               "device_parse: '%s' is not a device (expected cpu, cuda or cuda:N)",
                               name);
      index = (int)v;
    } else {
      return ct__fail_status(
          CT_ERR_DEVICE, "device_parse: '%s' is not a device (expected cpu, cuda or cuda:N)", name);
    }
    int count = ct_cuda_device_count();
    if (count == 0)
      return ct__fail_status(CT_ERR_UNAVAILABLE, "device_parse: '%s' requested but %s", name,
                             ct_cuda_unavailable_reason());
    if (index >= count)
      return ct__fail_status(CT_ERR_UNAVAILABLE,
                             "device_parse: '%s' requested but only %d GPU%s visible", name, count,
                             count == 1 ? " is" : "s are");
    return *out = ct_cuda(index), CT_OK;
  }
  return ct__fail_status(CT_ERR_DEVICE,
                         "device_parse: '%s' is not a device (expected cpu, cuda or cuda:N)", name);
}

/* The CUDA backend when it is present, else NULL. */
static const ct_backend *cuda_backend(void) {
  const ct_backend *be = ct__backend(CT_DEVICE_CUDA);
  return be && be->device_count ? be : NULL;
}

bool ct__check_device(const char *op, ct_device d) {
  if (d.type == CT_DEVICE_CPU) {
    if (d.index == 0) return true;
    ct__fail(CT_ERR_DEVICE, "%s: the CPU device has index 0 only, got cpu:%d", op, d.index);
    return false;
  }
  if (d.type != CT_DEVICE_CUDA) {
    ct__fail(CT_ERR_DEVICE, "%s: invalid device type %d (expected CT_DEVICE_CPU or CT_DEVICE_CUDA)",
             op, d.type);
    return false;
  }
  int count = ct_cuda_device_count();
  if (d.index >= 0 && d.index < count) return true;
  if (count == 0)
    ct__fail(CT_ERR_UNAVAILABLE, "%s: cuda:%d requested but %s", op, d.index,
             ct_cuda_unavailable_reason());
  else
    ct__fail(CT_ERR_UNAVAILABLE, "%s: cuda:%d requested but %d GPU%s visible", op, d.index, count,
             count == 1 ? " is" : "s are");
  return false;
}

/* The first GPU this build can run on (compute capability 8.0+), or -1. */
static int first_usable_gpu(void) {
  const ct_backend *be = cuda_backend();
  int n = be ? be->device_count() : 0;
  for (int i = 0; i < n; i++)
    if (be->device_usable(i)) return i;
  return -1;
}

/* Why no GPU can be used, found once (the plugin and the devices it sees
 * do not change while the process runs): the plugin's reason when it is
 * missing or refused, else its backend's (no driver, no device, only GPUs
 * this build has no code for); "" when a GPU can be used. */
static char unavailable[1024];
static pthread_once_t unavailable_once = PTHREAD_ONCE_INIT;

static void find_unavailable_reason(void) {
  const ct_plugin *p = ct__plugin(CT_PLUGIN_CUDA);
  if (!p || !p->backend) {
    snprintf(unavailable, sizeof unavailable, "%s", ct__plugin_error(CT_PLUGIN_CUDA));
    return;
  }
  if (p->unavailable_reason) p->unavailable_reason(unavailable, sizeof unavailable);
  /* the two answers must agree, whatever the plugin says */
  if (first_usable_gpu() >= 0)
    unavailable[0] = '\0';
  else if (!unavailable[0])
    snprintf(unavailable, sizeof unavailable, "no usable CUDA GPU is visible");
}

const char *ct_cuda_unavailable_reason(void) {
  pthread_once(&unavailable_once, find_unavailable_reason);
  return unavailable;
}

ct_status ct_resolve_default_device(ct_device *out) {
  if (!out) return ct__fail_status(CT_ERR_ARG, "resolve_default_device: out is NULL");
  *out = ct_cpu();
  const char *env = getenv("CT_DEVICE");
  if (env && *env && strcmp(env, "auto") != 0) {
    char shown[128];
    ct_escape_name(env, shown, sizeof shown);
    ct_device d;
    ct_status st = ct_device_parse(env, &d);
    if (st != CT_OK) {
      /* the parser's message without its "device_parse: " */
      const char *m = ct_last_error_message(), *c = strstr(m, ": ");
      char why[1024];
      snprintf(why, sizeof why, "%s", c ? c + 2 : m);
      return ct__fail_status(st, "resolve_default_device: CT_DEVICE=%s cannot be used: %s", shown,
                             why);
    }
    return *out = d, CT_OK;
  }
  int gpu = first_usable_gpu();
  if (gpu >= 0) *out = ct_cuda(gpu);
  return CT_OK;
}

ct_device ct_default_device(void) {
  static atomic_bool warned;
  ct_device d;
  if (ct_resolve_default_device(&d) == CT_OK) return d;
  if (!atomic_exchange(&warned, true))
    fprintf(stderr, "ctensor: warning: %s; the default device is the CPU\n",
            ct_last_error_message());
  ct_clear_error();
  return ct_cpu();
}

bool ct_cuda_is_available(void) { return first_usable_gpu() >= 0; }

int ct_cuda_device_count(void) {
  const ct_backend *be = cuda_backend();
  return be ? be->device_count() : 0;
}

static ct_status no_cuda(const char *op) {
  return ct__fail_status(CT_ERR_UNAVAILABLE, "%s: %s", op, ct__backend_error(CT_DEVICE_CUDA));
}

ct_status ct_cuda_set_device(int index) {
  const ct_backend *be = cuda_backend();
  return be ? be->set_device(index) : no_cuda("cuda_set_device");
}

int ct_cuda_current_device(void) {
  const ct_backend *be = cuda_backend();
  return be ? be->current_device() : 0;
}

void ct_cuda_set_allow_tf32(bool allow) {
  const ct_backend *be = cuda_backend();
  if (be && be->set_allow_tf32) be->set_allow_tf32(allow);
}

/* ---- CUDA device information: the CUDA backend's optional slots ---------------- */

ct_status ct_cuda_get_device_properties(int index, ct_cuda_device_properties *out) {
  if (!out) return ct__fail_status(CT_ERR_ARG, "cuda_get_device_properties: out is NULL");
  memset(out, 0, sizeof *out);
  const ct_backend *be = ct__backend(CT_DEVICE_CUDA);
  if (!be || !be->device_properties) return no_cuda("cuda_get_device_properties");
  ct_status st = be->device_properties(index, out);
  if (st != CT_OK) memset(out, 0, sizeof *out);
  return st;
}

ct_status ct_cuda_driver_version(int *version) {
  if (!version) return ct__fail_status(CT_ERR_ARG, "cuda_driver_version: version is NULL");
  *version = 0;
  const ct_backend *be = ct__backend(CT_DEVICE_CUDA);
  if (!be || !be->driver_version) return no_cuda("cuda_driver_version");
  return be->driver_version(version);
}

ct_status ct_cuda_runtime_version(int *version) {
  if (!version) return ct__fail_status(CT_ERR_ARG, "cuda_runtime_version: version is NULL");
  *version = 0;
  const ct_backend *be = ct__backend(CT_DEVICE_CUDA);
  if (!be || !be->runtime_version) return no_cuda("cuda_runtime_version");
  return be->runtime_version(version);
}

ct_status ct_synchronize(ct_device device) {
  if (!ct__check_device("synchronize", device)) return ct_last_error();
  const ct_backend *be = ct__backend((ct_device_type)device.type);
  if (!be)
    return ct__fail_status(CT_ERR_UNAVAILABLE, "synchronize: no backend for %s: %s",
                           ct_device_name(device), ct__backend_error((ct_device_type)device.type));
  return be->synchronize ? be->synchronize(device.index) : CT_OK;
}

/* ---- Threads ---------------------------------------------------------------- */

static atomic_int num_threads; /* 0: not yet decided */

/* A positive count from the environment variable, else 0 (OMP_NUM_THREADS
 * may be a list: its first entry). */
static int threads_from_env(const char *name) {
  const char *v = getenv(name);
  long n = v ? strtol(v, NULL, 10) : 0;
  return n > 0 && n <= 4096 ? (int)n : 0;
}

/* The CPUs this process may run on (taskset, cpusets), else the online ones. */
static int cpus_available(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

int ct__num_threads(void) {
  int n = atomic_load_explicit(&num_threads, memory_order_relaxed);
  if (n > 0) return n;
  n = threads_from_env("CT_NUM_THREADS");
  if (n <= 0) n = threads_from_env("OMP_NUM_THREADS");
  if (n <= 0) n = cpus_available();
  int unset = 0;
  atomic_compare_exchange_strong(&num_threads, &unset, n);
  return atomic_load(&num_threads);
}

/* The pool takes the new count at its next parallel loop. */
void ct_set_num_threads(int n) { atomic_store(&num_threads, n > 0 ? n : 1); }

int ct_get_num_threads(void) { return ct__num_threads(); }

/* ---- Memory statistics -------------------------------------------------------- */

ct_status ct_memory_stats_get(ct_device device, ct_memory_stats *out) {
  if (!out) return ct__fail_status(CT_ERR_ARG, "memory_stats: out is NULL");
  if (!ct__check_device("memory_stats", device)) return ct_last_error();
  const ct_backend *be = ct__backend((ct_device_type)device.type);
  if (!be || !be->memory_stats)
    return ct__fail_status(CT_ERR_UNAVAILABLE, "memory_stats: no backend for %s: %s",
                           ct_device_name(device), ct__backend_error((ct_device_type)device.type));
  return be->memory_stats(device.index, out);
}

ct_status ct_empty_cache(ct_device device) {
  if (!ct__check_device("empty_cache", device)) return ct_last_error();
  const ct_backend *be = ct__backend((ct_device_type)device.type);
  if (!be || !be->empty_cache)
    return ct__fail_status(CT_ERR_UNAVAILABLE, "empty_cache: no backend for %s: %s",
                           ct_device_name(device), ct__backend_error((ct_device_type)device.type));
  return be->empty_cache(device.index);
}

ct_status ct_cuda_empty_cache(void) {
  if (!ct_cuda_is_available()) return CT_OK; /* nothing cached without a GPU */
  return ct_empty_cache(ct_cuda(ct_cuda_current_device()));
}
