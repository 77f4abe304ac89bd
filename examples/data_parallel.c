/* Data-parallel training, as torch's DistributedDataParallel: every rank holds
 * the same model, reads its own shard of each epoch and averages gradients
 * before each step. Run it as several processes:
 *
 *   mpirun -np 2 ./data_parallel                    # 2 CPU processes (MPI)
 *   mpirun -np 2 ./data_parallel --device cuda      # one GPU per rank (NCCL)
 *   ./data_parallel                                 # alone: plain training
 *
 * (as root in a container add --allow-run-as-root; on few cores
 * --oversubscribe). The PyTorch it mirrors:
 *
 *   dist.init_process_group("nccl" if cuda else "mpi")
 *   model = DDP(MLP().to(device))                   # broadcasts rank 0's weights
 *   sampler = DistributedSampler(ds, shuffle=True, seed=1)
 *   loader = DataLoader(ds, batch_size=32, sampler=sampler)
 *   for epoch in range(epochs):
 *       sampler.set_epoch(epoch)
 *       for x, y in loader:
 *           opt.zero_grad(); F.cross_entropy(model(x), y).backward(); opt.step()
 *
 * The data: 4 Gaussian blobs in the plane, one class each. Only rank 0
 * prints. Exits 0 when the accuracy reached 90%, 1 otherwise or on a library
 * error, 2 on bad arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctensor.h>

static int fail(const char *what) {
  fprintf(stderr, "data_parallel (rank %d): %s: %s\n", ct_dist_rank(), what,
          ct_last_error_message());
  ct_dist_finalize();
  return 1;
}

/* n points (n, 2) f32 around 4 centres, labels (n) i64. */
static ct_dataset *blobs(int64_t n) {
  static const float centre[4][2] = {{2, 2}, {-2, 2}, {-2, -2}, {2, -2}};
  ct_generator *gen = ct_generator_new(42);
  ct_tensor_opts opts = {.generator = gen};
  ct_tensor *x = ct_randn(CT_SHAPE(n, 2), &opts);
  ct_tensor_opts opts2 = {.dtype = CT_I64};
  ct_tensor *y = ct_empty(CT_SHAPE(n), &opts2);
  ct_generator_free(gen);
  if (!x || !y) return NULL;
  float *px = (float *)ct_data_ptr(x);
  int64_t *py = (int64_t *)ct_data_ptr(y);
  for (int64_t i = 0; i < n; i++) {
    py[i] = i % 4;
    px[2 * i] += centre[i % 4][0];
    px[2 * i + 1] += centre[i % 4][1];
  }
  ct_dataset *d = ct_tensor_dataset_new(x, y);
  ct_free(x);
  ct_free(y);
  return d;
}

int main(int argc, char **argv) {
  ct_device device = ct_cpu();
  int epochs = 5;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      if (ct_device_parse(argv[++i], &device) != CT_OK) {
        fprintf(stderr, "data_parallel: --device: %s\n", ct_last_error_message());
        return 2;
      }
    } else if (strcmp(argv[i], "--epochs") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
      epochs = atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: %s [--device cpu|cuda] [--epochs N]   (under mpirun -np N)\n",
              argv[0]);
      return 2;
    }
  }
  /* Started by a launcher: join the job. A CUDA device means one GPU per
   * rank (cuda:local_rank) and NCCL when it is built in. */
  bool dist = ct_dist_env_world_size() > 1;
  ct_dist_opts dist_opts = {.device = device,
                            .device_from_local_rank = device.type == CT_DEVICE_CUDA};
  if (dist && ct_dist_init(&dist_opts) != CT_OK) return fail("dist_init");
  if (dist) device = ct_dist_device();
  int rank = ct_dist_rank(), world = ct_dist_world_size();
  if (rank == 0)
    printf("data_parallel: %d rank(s), %s, backend %s\n", world, ct_device_name(device),
           dist ? ct_dist_backend_name(ct_dist_get_backend()) : "none");

  ct_dataset *ds = blobs(1024);
  /* every rank starts from the same weights: rank 0's (as DDP's constructor) */
  ct_manual_seed(100 + (uint64_t)rank);
  ct_module *model = ct_sequential_new();
  ct_sequential_add(model, ct_linear_new(2, 32, true, NULL));
  ct_sequential_add(model, ct_relu_new());
  ct_sequential_add(model, ct_linear_new(32, 4, true, NULL));
  if (!ds || !model || ct_module_to(model, device) != CT_OK) return fail("setup");
  if (dist && ct_dist_broadcast_module_(model, 0) != CT_OK) return fail("broadcast_module");
  ct_tensor *params[8];
  int n = ct_module_parameters(model, params, NULL, 8);
  ct_sgd_opts sgd = {.lr = 0.1, .momentum = 0.9};
  ct_optimizer *opt = ct_sgd_new(params, n, &sgd);
  /* 32 samples per rank and step; each rank reads 1/world of every epoch */
  ct_dataloader_opts loader = {.batch_size = 32,
                               .shuffle = true,
                               .seed = 1,
                               .shard_rank = rank,
                               .shard_count = world,
                               .device = device};
  ct_dataloader *dl = ct_dataloader_new(ds, &loader);
  if (!opt || !dl) return fail("setup");

  double accuracy = 0;
  for (int epoch = 0; epoch < epochs; epoch++) {
    if (ct_dataloader_start_epoch(dl, epoch, 0) != CT_OK) return fail("start_epoch");
    /* sums over this rank's batches: loss, correct, seen (averaged over ranks below) */
    ct_tensor_opts opts3 = {.dtype = CT_F64, .device = device};
    ct_tensor *stats = ct_zeros(CT_SHAPE(3), &opts3);
    ct_batch b;
    ct_status st;
    while ((st = ct_dataloader_next(dl, &b)) == CT_OK && b.inputs) {
      ct_scope_begin();
      ct_optimizer_zero_grad(opt);
      ct_tensor *logits = ct_module_forward(model, b.inputs);
      ct_tensor *loss = ct_cross_entropy(logits, b.targets, NULL);
      st = ct_backward(loss, NULL, NULL);
      if (st == CT_OK && dist) st = ct_dist_average_gradients(model); /* the DDP step */
      if (st == CT_OK) st = ct_optimizer_step(opt);
      ct_no_grad_begin();
      ct_tensor *right = ct_sum(ct_eq(ct_argmax(logits, 1, false), b.targets), NULL);
      ct_tensor_opts opts4 = {.dtype = CT_F64, .device = device};
      ct_tensor *parts[] = {ct_cast(loss, CT_F64), ct_cast(right, CT_F64),
                            ct_full_like(right, (double)ct_size(b.targets, 0), &opts4)};
      ct_tensor *row = ct_stack(parts, 3, 0);
      if (!row || !ct_add_(stats, row)) st = ct_last_error();
      ct_no_grad_end();
      ct_scope_end();
      ct_batch_release(&b);
      if (st != CT_OK) break;
    }
    if (st != CT_OK) return fail("training");
    /* the job's totals, on every rank */
    if (dist && ct_dist_all_reduce_(stats, CT_DIST_SUM) != CT_OK) return fail("all_reduce");
    double s[3];
    if (ct_copy_to_host(stats, s, sizeof s) != CT_OK) return fail("stats");
    ct_free(stats);
    int64_t batches = ct_dataloader_num_batches(dl) * world;
    accuracy = s[1] / s[2];
    if (rank == 0)
      printf("epoch %d  loss %.4f  accuracy %.3f  (%.0f samples, %lld batches over %d rank(s))\n",
             epoch + 1, s[0] / (double)batches, accuracy, s[2], (long long)batches, world);
  }
  ct_dataloader_free(dl);
  ct_optimizer_free(opt);
  ct_module_free(model);
  ct_dataset_free(ds);
  if (dist && ct_dist_finalize() != CT_OK) return fail("finalize");
  if (accuracy < 0.9) {
    fprintf(stderr, "data_parallel: accuracy %.3f is below 0.9\n", accuracy);
    return 1;
  }
  return 0;
}
