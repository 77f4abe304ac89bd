/* The MPI engine (libctensor-mpi.so; linked into libctensor.a): process group
 * setup and host-memory collectives on a duplicate of MPI_COMM_WORLD (so the
 * library's messages never match the program's own). MPI counts are int:
 * larger buffers go in chunks.
 *
 * A blocking collective waits forever for a rank that is stopped (SIGSTOP, a
 * debugger) or hung: a dead rank ends the job through the launcher, a stopped
 * one does not. So collectives are nonblocking, polled against a deadline
 * (ct_dist_opts.timeout_s, CT_DIST_TIMEOUT, 300 s). Past it, the rank asks
 * every other one whether it is there, on a second communicator, and waits a
 * little for the answers (a rank answers while it waits in a collective);
 * then it names the ranks that did not answer and ends the job (MPI_Abort):
 * a collective cannot be abandoned on one rank and go on elsewhere. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/plugin.h"

static MPI_Comm comm = MPI_COMM_NULL;
static MPI_Comm probe_comm = MPI_COMM_NULL; /* "are you there" after a timeout, and answers */
static double timeout_s;
enum { TAG_PING = 1, TAG_PONG = 2 };
/* Polling: spin this long, then sleep between polls (a long wait for a slow
 * rank should not take a core from it on a shared machine). */
#define CT_MPI_SPIN_S 1e-3
#define CT_MPI_NAP_NS 50000

/* At most this many elements per MPI call (int counts; 2^30 keeps byte
 * counts of 8-byte types below 2^33 too, which some transports prefer). */
#define CT_MPI_CHUNK ((int64_t)1 << 30)

static ct_status mpi_fail(const char *op, const char *call, int rc) {
  char msg[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", rc);
  return ct__fail_status(CT_ERR_UNAVAILABLE, "%s: %s failed: %s", op, call, msg);
}
#define MPI_CHECK(op, call)                                  \
  do {                                                       \
    int rc_ = (call);                                        \
    if (rc_ != MPI_SUCCESS) return mpi_fail(op, #call, rc_); \
  } while (0)

static ct_status mpi_init(int *rank, int *world_size, int *local_rank, bool *owns_mpi,
                          double timeout) {
  int inited = 0, finalized = 0;
  MPI_CHECK("dist_init", MPI_Initialized(&inited));
  MPI_CHECK("dist_init", MPI_Finalized(&finalized));
  if (finalized)
    return ct__fail_status(CT_ERR_STATE,
                           "dist_init: MPI was already finalized in this process (MPI can be "
                           "initialized only once)");
  *owns_mpi = !inited;
  if (!inited) {
    int provided = 0;
    MPI_CHECK("dist_init", MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided));
  }
  /* Errors come back as codes (reported as ct errors), not as aborts; a
   * program that initialized MPI itself keeps its own handler on its world. */
  if (!inited) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_CHECK("dist_init", MPI_Comm_dup(MPI_COMM_WORLD, &comm));
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_CHECK("dist_init", MPI_Comm_dup(comm, &probe_comm));
  timeout_s = timeout;
  MPI_CHECK("dist_init", MPI_Comm_rank(comm, rank));
  MPI_CHECK("dist_init", MPI_Comm_size(comm, world_size));
  MPI_Comm node = MPI_COMM_NULL;
  MPI_CHECK("dist_init",
            MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, *rank, MPI_INFO_NULL, &node));
  int rc = MPI_Comm_rank(node, local_rank);
  MPI_Comm_free(&node);
  if (rc != MPI_SUCCESS) return mpi_fail("dist_init", "MPI_Comm_rank", rc);
  return CT_OK;
}

static ct_status mpi_finalize(bool owns_mpi) {
  if (probe_comm != MPI_COMM_NULL) MPI_Comm_free(&probe_comm);
  if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  comm = probe_comm = MPI_COMM_NULL;
  if (owns_mpi) MPI_CHECK("dist_finalize", MPI_Finalize());
  return CT_OK;
}

/* ---- Waiting with a deadline ---- */

static void nap(void) { nanosleep(&(struct timespec){0, CT_MPI_NAP_NS}, NULL); }

/* Answers the other ranks' "are you there" (they timed out waiting). */
static void answer_probes(void) {
  static int answer = 1;
  for (;;) {
    int flag = 0, ping = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_PING, probe_comm, &flag, &st) != MPI_SUCCESS || !flag)
      return;
    MPI_Recv(&ping, 1, MPI_INT, st.MPI_SOURCE, TAG_PING, probe_comm, MPI_STATUS_IGNORE);
    MPI_Request r;
    if (MPI_Isend(&answer, 1, MPI_INT, st.MPI_SOURCE, TAG_PONG, probe_comm, &r) == MPI_SUCCESS)
      MPI_Request_free(&r);
  }
}

/* After a timeout in `op`: asks every rank whether it is there, waits up to
 * `grace` seconds for the answers, names the ranks that gave none and ends
 * the job. */
static _Noreturn void timed_out(const char *op, double waited, double grace) {
  int me = 0, world = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &world);
  int *answer = ct__calloc((size_t)world, sizeof *answer);
  MPI_Request *req = ct__calloc(2 * (size_t)world, sizeof *req);
  static int ping = 1;
  int missing = world - 1;
  if (answer && req) {
    for (int r = 0; r < 2 * world; r++) req[r] = MPI_REQUEST_NULL;
    for (int r = 0; r < world; r++)
      if (r != me) {
        MPI_Irecv(&answer[r], 1, MPI_INT, r, TAG_PONG, probe_comm, &req[r]);
        MPI_Isend(&ping, 1, MPI_INT, r, TAG_PING, probe_comm, &req[world + r]);
      }
    for (double t0 = MPI_Wtime(); missing > 0 && MPI_Wtime() - t0 < grace; nap()) {
      answer_probes(); /* the others may be asking too */
      missing = 0;
      for (int r = 0; r < world; r++) {
        int done = 1;
        if (r != me && req[r] != MPI_REQUEST_NULL) MPI_Test(&req[r], &done, MPI_STATUS_IGNORE);
        missing += r != me && !done;
      }
    }
  }
  char ranks[256] = "";
  size_t len = 0;
  for (int r = 0; r < world && answer && req && len < sizeof ranks - 16; r++)
    if (r != me && req[r] != MPI_REQUEST_NULL)
      len += (size_t)snprintf(ranks + len, sizeof ranks - len, "%s%d", len ? ", " : "", r);
  if (!answer || !req)
    fprintf(stderr,
            "%s: timed out on rank %d after %.0f s waiting for the other ranks (of %d); "
            "ending the job\n",
            op, me, waited, world);
  else if (missing > 0)
    fprintf(stderr,
            "%s: timed out on rank %d after %.0f s waiting for rank%s %s (of %d), which did not "
            "answer within %.0f s more: stopped, hung or not calling collectives (the limit is "
            "ct_dist_opts.timeout_s or CT_DIST_TIMEOUT); ending the job\n",
            op, me, waited, missing > 1 ? "s" : "", ranks, world, grace);
  else
    fprintf(stderr,
            "%s: timed out on rank %d after %.0f s, though every rank (of %d) answered: the "
            "ranks are not calling the same collectives in the same order; ending the job\n",
            op, me, waited, world);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  abort(); /* MPI_Abort does not return */
}

/* Waits for req, answering the other ranks' probes meanwhile, at most
 * timeout_s seconds; then ends the job naming who it waited for. */
static ct_status wait_for(const char *op, MPI_Request *req) {
  double start = MPI_Wtime();
  for (;;) {
    int done = 0;
    int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_fail(op, "MPI_Test", rc);
    if (done) return CT_OK;
    double waited = MPI_Wtime() - start;
    if (waited > CT_MPI_SPIN_S) {
      answer_probes();
      if (waited > timeout_s) {
        double grace = timeout_s < 10 ? timeout_s : 10;
        timed_out(op, waited, grace < 1 ? 1 : grace);
      }
      nap();
    }
  }
}
#define MPI_WAIT(op, call)               \
  do {                                   \
    MPI_Request req_;                    \
    MPI_CHECK(op, (call));               \
    ct_status st_ = wait_for(op, &req_); \
    if (st_ != CT_OK) return st_;        \
  } while (0)

static ct_status mpi_barrier(const char *op) {
  MPI_WAIT(op, MPI_Ibarrier(comm, &req_));
  return CT_OK;
}

/* The MPI type of a ctensor dtype (bool as bytes: its ops become max/min). */
static MPI_Datatype mpi_type(ct_dtype d) {
  switch (d) {
    case CT_F32:
      return MPI_FLOAT;
    case CT_F64:
      return MPI_DOUBLE;
    case CT_I8:
      return MPI_INT8_T;
    case CT_U8:
      return MPI_UINT8_T;
    case CT_I16:
      return MPI_INT16_T;
    case CT_I32:
      return MPI_INT32_T;
    case CT_I64:
      return MPI_INT64_T;
    case CT_BOOL:
      return MPI_UINT8_T;
    default:
      return MPI_DATATYPE_NULL; /* f16, bf16: reduced in f32 by the caller */
  }
}

static MPI_Op mpi_op(ct_dist_op op, ct_dtype d) {
  if (d == CT_BOOL) return op == CT_DIST_MIN ? MPI_MIN : MPI_MAX; /* and / or of 0-1 bytes */
  switch (op) {
    case CT_DIST_MAX:
      return MPI_MAX;
    case CT_DIST_MIN:
      return MPI_MIN;
    default:
      return MPI_SUM;
  }
}

static ct_status mpi_all_reduce(const char *op, void *buf, int64_t count, ct_dtype dtype,
                                ct_dist_op rop) {
  MPI_Datatype t = mpi_type(dtype);
  if (t == MPI_DATATYPE_NULL)
    return ct__fail_status(CT_ERR_INTERNAL, "%s: no MPI type for %s", op, ct_dtype_name(dtype));
  MPI_Op o = mpi_op(rop, dtype);
  size_t el = ct__elsize(dtype);
  for (int64_t at = 0; at < count; at += CT_MPI_CHUNK) {
    int64_t k = count - at < CT_MPI_CHUNK ? count - at : CT_MPI_CHUNK;
    MPI_WAIT(
        op, MPI_Iallreduce(MPI_IN_PLACE, (char *)buf + (size_t)at * el, (int)k, t, o, comm, &req_));
  }
  return CT_OK;
}

static ct_status mpi_broadcast(const char *op, void *buf, int64_t nbytes, int root) {
  for (int64_t at = 0; at < nbytes; at += CT_MPI_CHUNK) {
    int64_t k = nbytes - at < CT_MPI_CHUNK ? nbytes - at : CT_MPI_CHUNK;
    MPI_WAIT(op, MPI_Ibcast((char *)buf + at, (int)k, MPI_BYTE, root, comm, &req_));
  }
  return CT_OK;
}

static ct_status mpi_max_min_i64(const char *op, const int64_t *in, int64_t *max, int64_t *min,
                                 int n) {
  MPI_WAIT(op, MPI_Iallreduce(in, max, n, MPI_INT64_T, MPI_MAX, comm, &req_));
  MPI_WAIT(op, MPI_Iallreduce(in, min, n, MPI_INT64_T, MPI_MIN, comm, &req_));
  return CT_OK;
}

/* "Open MPI v4.1.4, ..." (the first line of the library's own words). */
static void mpi_library_versions(char *buf, size_t size) {
  char v[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  if (MPI_Get_library_version(v, &len) != MPI_SUCCESS) snprintf(v, sizeof v, "unknown MPI");
  v[strcspn(v, "\n")] = '\0';
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  snprintf(buf, size, "%s (MPI %d.%d)", v, major, minor);
}

static const ct_mpi_engine mpi_engine = {
    .init = mpi_init,
    .finalize = mpi_finalize,
    .barrier = mpi_barrier,
    .all_reduce = mpi_all_reduce,
    .broadcast = mpi_broadcast,
    .max_min_i64 = mpi_max_min_i64,
};

const ct_plugin *ct__mpi_plugin(void) {
  static const ct_plugin plugin = {
      CT_PLUGIN_HEADER,
      .name = "mpi",
      .library_versions = mpi_library_versions,
      .mpi = &mpi_engine,
  };
  return &plugin;
}
