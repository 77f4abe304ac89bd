/* Data sharding for distributed training (ct_dataloader_opts.shard_rank /
 * shard_count, as torch's DistributedSampler), checked in one process by
 * building the loader of every rank; and the ct_dist_* functions outside a
 * job (before init, or in a build without MPI). tests/test_dist.c runs the
 * collectives under mpirun. */
#include "ct_test.h"

/* The sample indices rank `rank` of `w` gets in `epoch`, in order, written
 * to out (at most max); returns the count, or -1 on error. Also counts the
 * batches in *batches. */
static int64_t shard_indices(ct_dataset *d, int64_t w, int64_t rank, bool shuffle, bool drop_last,
                             int64_t batch, int workers, int64_t epoch, int64_t *out, int64_t max,
                             int64_t *batches) {
  *batches = 0;
  ct_dataloader *dl = ct_dataloader_new(d, &(ct_dataloader_opts){.batch_size = batch,
                                                                 .shuffle = shuffle,
                                                                 .seed = 77,
                                                                 .drop_last = drop_last,
                                                                 .num_workers = workers,
                                                                 .shard_rank = rank,
                                                                 .shard_count = w});
  if (!dl) return -1;
  int64_t k = 0;
  ct_batch b;
  if (ct_dataloader_start_epoch(dl, epoch, 0) != CT_OK) k = -1;
  while (k >= 0 && ct_dataloader_next(dl, &b) == CT_OK && b.inputs) {
    const int64_t *v = ct_data_ptr(b.targets);
    for (int64_t i = 0; i < ct_numel(b.targets) && k < max; i++) out[k++] = v[i];
    (*batches)++;
    ct_batch_release(&b);
  }
  if (*batches != ct_dataloader_num_batches(dl)) k = -1;
  ct_dataloader_free(dl);
  return k;
}

CT_TEST(shards_disjoint_covering_equal) {
  enum { MAXN = 64 };
  const int64_t sizes[] = {0, 1, 5, 12, 13, 17};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    int64_t n = sizes[si];
    ct_tensor *x = ct_zeros(CT_SHAPE(n, 2), NULL);
    ct_tensor *y = ct_arange(0, (double)n, 1, &(ct_tensor_opts){.dtype = CT_I64});
    ct_dataset *d = ct_tensor_dataset_new(x, y);
    CHECK_OK(d);
    for (int64_t w = 1; w <= 4; w++)
      for (int mode = 0; mode < 8; mode++) {
        bool shuffle = mode & 1, drop = mode & 2;
        int workers = mode & 4 ? 2 : 0;
        int64_t count[MAXN] = {0}, len0 = -1, nb0 = -1, total = 0;
        int64_t whole[MAXN], whole_nb;
        /* the unsharded order of the same seed and epoch */
        int64_t nw = shard_indices(d, 1, 0, shuffle, false, 3, 0, 2, whole, MAXN, &whole_nb);
        CHECK(nw == n);
        for (int64_t r = 0; r < w; r++) {
          int64_t got[MAXN], nb;
          /* batch size 1 with drop_last: the loader drops no partial batch on top */
          int64_t k =
              shard_indices(d, w, r, shuffle, drop, drop ? 1 : 3, workers, 2, got, MAXN, &nb);
          int64_t want = drop ? n / w : (n + w - 1) / w;
          CHECK_MSG(k == want, "n %lld w %lld rank %lld mode %d: %lld samples, want %lld",
                    (long long)n, (long long)w, (long long)r, mode, (long long)k, (long long)want);
          if (r == 0) len0 = k, nb0 = nb;
          CHECK_MSG(k == len0 && nb == nb0, "ranks differ in length: %lld/%lld vs %lld/%lld",
                    (long long)k, (long long)nb, (long long)len0, (long long)nb0);
          for (int64_t i = 0; i < k && k <= MAXN; i++) {
            /* rank r takes entries r, r + w, ... of the whole order */
            CHECK(n > 0 && got[i] == whole[(r + i * w) % n]);
            if (got[i] >= 0 && got[i] < MAXN) count[got[i]]++;
          }
          total += k;
        }
        /* disjoint and covering: each index once; padding repeats only the
         * first entries of the order; drop_last drops at most w - 1 */
        int64_t pad = drop ? 0 : total - n, dropped = drop ? n - total : 0;
        CHECK(pad >= 0 && pad < w && dropped >= 0 && dropped < w);
        (void)pad;
        for (int64_t i = 0; i < n && n <= MAXN; i++) {
          int64_t pos = 0;
          while (pos < n && whole[pos] != i) pos++;
          int64_t want = drop ? (pos < n - dropped) : (total - 1 - pos) / n + 1;
          CHECK_MSG(count[i] == want,
                    "n %lld w %lld mode %d: index %lld taken %lld times, want %lld", (long long)n,
                    (long long)w, mode, (long long)i, (long long)count[i], (long long)want);
        }
      }
    ct_dataset_free(d);
  }
}

CT_TEST(shard_epochs_and_resume) {
  ct_tensor *x = ct_zeros(CT_SHAPE(20, 1), NULL);
  ct_tensor *y = ct_arange(0, 20, 1, &(ct_tensor_opts){.dtype = CT_I64});
  ct_dataset *d = ct_tensor_dataset_new(x, y);
  int64_t a[32], b[32], nb;
  /* another epoch, another order; same epoch, same order */
  CHECK(shard_indices(d, 3, 1, true, false, 4, 0, 0, a, 32, &nb) == 7);
  CHECK(shard_indices(d, 3, 1, true, false, 4, 0, 1, b, 32, &nb) == 7);
  CHECK(memcmp(a, b, sizeof(int64_t) * 7) != 0);
  CHECK(shard_indices(d, 3, 1, true, false, 4, 2, 0, b, 32, &nb) == 7);
  CHECK(memcmp(a, b, sizeof(int64_t) * 7) == 0);
  /* resuming part way through an epoch gives the rest of the same shard */
  ct_dataloader *dl = ct_dataloader_new(
      d, &(ct_dataloader_opts){
             .batch_size = 4, .shuffle = true, .seed = 77, .shard_rank = 1, .shard_count = 3});
  CHECK(ct_dataloader_num_batches(dl) == 2);
  CHECK_STATUS_OK(ct_dataloader_start_epoch(dl, 0, 1));
  ct_batch bt;
  CHECK_STATUS_OK(ct_dataloader_next(dl, &bt));
  CHECK(bt.index == 1 && ct_numel(bt.targets) == 3);
  if (bt.targets) CHECK(memcmp(ct_data_ptr(bt.targets), a + 4, sizeof(int64_t) * 3) == 0);
  ct_batch_release(&bt);
  ct_dataloader_free(dl);
  /* bad shard options */
  CHECK_ERR_MSG(ct_dataloader_new(d, &(ct_dataloader_opts){.shard_rank = 2, .shard_count = 2}),
                CT_ERR_ARG, "shard_rank 2");
  CHECK_ERR(ct_dataloader_new(d, &(ct_dataloader_opts){.shard_rank = -1, .shard_count = 2}),
            CT_ERR_ARG);
  CHECK_ERR(ct_dataloader_new(d, &(ct_dataloader_opts){.shard_count = -3}), CT_ERR_ARG);
  CHECK_ERR(ct_dataloader_new(d, &(ct_dataloader_opts){.shard_rank = 1}), CT_ERR_ARG);
  ct_dataset_free(d);
}

/* Outside a job: rank 0 of 1, and collectives refuse to run. */
CT_TEST(dist_outside_a_job) {
  CHECK(!ct_dist_is_initialized());
  CHECK(ct_dist_rank() == 0 && ct_dist_world_size() == 1 && ct_dist_local_rank() == 0);
  CHECK(ct_dist_get_backend() == CT_DIST_BACKEND_AUTO);
  CHECK(strcmp(ct_dist_backend_name(CT_DIST_BACKEND_NCCL), "nccl") == 0);
  CHECK(ct_dist_finalize() == CT_OK); /* no-op */
  ct_status want = ct_dist_is_available() ? CT_ERR_STATE : CT_ERR_UNAVAILABLE;
  const char *needle = ct_dist_is_available() ? "not initialized" : "without MPI";
  ct_tensor *t = ct_ones(CT_SHAPE(3), NULL);
  CHECK_ERR_MSG(ct_dist_all_reduce_(t, CT_DIST_SUM) == CT_OK, want, needle);
  CHECK_ERR_MSG(ct_dist_broadcast_(t, 0) == CT_OK, want, "dist_broadcast_");
  CHECK_ERR_MSG(ct_dist_barrier() == CT_OK, want, "dist_barrier");
  CHECK_ERR(ct_dist_all_reduce_coalesced_(&t, 1, CT_DIST_AVG) == CT_OK, want);
  ct_module *lin = ct_linear_new(2, 2, true, NULL);
  CHECK_ERR(ct_dist_average_gradients(lin) == CT_OK, want);
  CHECK_ERR(ct_dist_broadcast_module_(lin, 0) == CT_OK, want);
  ct_module_free(lin);
  /* options checked before MPI is touched */
  CHECK_ERR_MSG(ct_dist_init(&(ct_dist_opts){.backend = CT_DIST_BACKEND_NCCL}) == CT_OK,
                CT_ERR_DEVICE, "needs a CUDA device");
  CHECK_ERR(ct_dist_init(&(ct_dist_opts){.backend = (ct_dist_backend)9}) == CT_OK, CT_ERR_ARG);
  if (!ct_dist_is_available())
    CHECK_ERR_MSG(ct_dist_init(NULL) == CT_OK, CT_ERR_UNAVAILABLE, "libopenmpi-dev");
  if (!ct_dist_is_nccl_available())
    CHECK_ERR_MSG(ct_dist_init(&(ct_dist_opts){.backend = CT_DIST_BACKEND_NCCL,
                                               .device = {CT_DEVICE_CUDA, 0}}) == CT_OK,
                  CT_ERR_UNAVAILABLE, "without NCCL");
  CHECK(!ct_dist_is_initialized());
}

CT_TEST(dist_env_world_size) {
  const char *old = getenv("OMPI_COMM_WORLD_SIZE");
  char *saved = old ? strdup(old) : NULL;
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  CHECK(ct_dist_env_world_size() == 4);
  setenv("OMPI_COMM_WORLD_SIZE", "junk", 1);
  unsetenv("PMI_SIZE");
  unsetenv("PMIX_SIZE");
  unsetenv("MV2_COMM_WORLD_SIZE");
  CHECK(ct_dist_env_world_size() == 1);
  if (saved)
    setenv("OMPI_COMM_WORLD_SIZE", saved, 1);
  else
    unsetenv("OMPI_COMM_WORLD_SIZE");
  free(saved);
}
