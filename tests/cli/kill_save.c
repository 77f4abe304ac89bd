/* kill_save.c: checkpoint saves killed (SIGKILL) at random moments.
 *
 *   kill_save DIR TRIALS [SEED]
 *
 * Each trial starts a saver (this program again, --saver), which saves the
 * `ctensor train` checkpoint of an mlp with Adam state to DIR/ck.safetensors
 * over and over with the program's own code (cli_checkpoint_save), save k
 * holding meta.epoch = k and every weight equal to k, and reports each
 * finished save on a pipe. After two saves (which time one) the trial waits
 * a random part of a save's time, kills the saver with SIGKILL inside (or
 * just after) the save under way, and checks:
 *   - the checkpoint loads (cli_checkpoint_load) and is the last save
 *     reported or the one after it (old or new), never a mix: every weight
 *     equals its meta.epoch (cli_checkpoint_restore_model);
 *   - what the next run does first (cli_checkpoint_prepare) leaves no
 *     temporary file: DIR holds the checkpoint alone.
 * It also counts the kills that left a temporary (that landed inside a
 * save): none in all trials would mean the test missed its target. Exit 0
 * when every trial passes. The saver is a fresh process (exec), not a bare
 * fork of one that already ran OpenMP regions. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static cli_ckpt_meta meta_of(int64_t k) {
  return (cli_ckpt_meta){.model = MODEL_MLP,
                         .dataset = DATASET_FASHION_MNIST,
                         .optim = OPTIM_ADAM,
                         .epoch = k,
                         .seed = 1,
                         .step_count = 1,
                         .batch_size = 64,
                         .lr = 1e-3,
                         .schedule = SCHED_NONE,
                         .gamma = 0.1,
                         .amp = AMP_NONE,
                         .amp_scale = 1,
                         .world_size = 1,
                         .accuracy = -1};
}

/* The saver: saves forever, writing each finished save's k to fd. */
static int saver(const char *path, int fd) {
  ct_manual_seed(1);
  ct_module *model = cli_model_new(MODEL_MLP, 1, 28);
  ct_tensor *params[8];
  int n = model ? ct_module_parameters(model, params, NULL, 8) : 0;
  ct_optimizer *opt = n > 0 ? ct_adam_new(params, n, NULL) : NULL;
  if (!opt) return cli_error("building the model"), 1;
  /* One step, so that the checkpoint holds Adam's moments too. */
  ct_tensor *x = ct_rand(CT_SHAPE(2, 1, 28, 28), NULL);
  ct_tensor *loss = ct_mean(ct_module_forward(model, x), NULL);
  if (!loss || ct_backward(loss, NULL, NULL) != CT_OK || ct_optimizer_step(opt) != CT_OK)
    return cli_error("a training step"), 1;
  for (int64_t k = 1;; k++) {
    ct_no_grad_begin();
    for (int i = 0; i < n; i++) ct_fill_(params[i], (double)k);
    ct_no_grad_end();
    cli_ckpt_meta meta = meta_of(k);
    if (cli_checkpoint_save(path, model, opt, NULL, &meta) != CT_OK) return cli_error("saving"), 1;
    if (write(fd, &k, sizeof k) != (ssize_t)sizeof k) return 1;
  }
}

/* Every weight of the checkpoint's model equals its meta.epoch. */
static bool consistent(const cli_ckpt *ck, char *err, size_t errsz) {
  ct_module *model = cli_model_new(MODEL_MLP, 1, 28);
  bool ok = model && cli_checkpoint_restore_model(ck, model, err, errsz);
  ct_tensor *params[8];
  int n = ok ? ct_module_parameters(model, params, NULL, 8) : 0;
  for (int i = 0; i < n && ok; i++) {
    double lo = 0, hi = 0;
    ct_tensor *mn = ct_min(params[i], NULL), *mx = ct_max(params[i], NULL);
    ok = ct_item(mn, &lo) == CT_OK && ct_item(mx, &hi) == CT_OK && lo == (double)ck->meta.epoch &&
         hi == (double)ck->meta.epoch;
    if (!ok)
      snprintf(err, errsz, "parameter %d holds %g..%g, meta.epoch is %lld", i, lo, hi,
               (long long)ck->meta.epoch);
    ct_free(mn);
    ct_free(mx);
  }
  ct_module_free(model);
  return ok;
}

/* Files in dir other than "ck.safetensors"; their names into list. */
static int others_in(const char *dir, char *list, size_t size) {
  DIR *d = opendir(dir);
  int count = 0;
  list[0] = '\0';
  for (struct dirent *e; d && (e = readdir(d));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, "ck.safetensors"))
      continue;
    count++;
    size_t len = strlen(list);
    snprintf(list + len, size - len, " %s", e->d_name);
  }
  if (d) closedir(d);
  return count;
}

/* One trial; false after printing what failed. *left_temp: the kill left a temporary. */
static bool trial(const char *self, const char *dir, const char *path, int t, unsigned *rng,
                  bool *left_temp) {
  unlink(path);
  int p[2];
  if (pipe(p) != 0) return perror("pipe"), false;
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    char fd[16];
    snprintf(fd, sizeof fd, "%d", p[1]);
    execl(self, self, "--saver", path, fd, (char *)NULL);
    _exit(127);
  }
  close(p[1]);
  /* Two saves: an old checkpoint exists, and the time of one save is known. */
  int64_t done = 0, k;
  double t1 = 0;
  for (int i = 0; i < 2; i++) {
    if (read(p[0], &done, sizeof done) != (ssize_t)sizeof done) {
      fprintf(stderr, "trial %d: the saver died before its save %d\n", t, i + 1);
      kill(pid, SIGKILL), waitpid(pid, NULL, 0), close(p[0]);
      return false;
    }
    if (i == 0) t1 = cli_now();
  }
  /* A moment within the save now under way (or just after it). */
  double save = cli_now() - t1;
  *rng = *rng * 1103515245u + 12345u;
  double wait_s = save * (double)((*rng >> 8) % 1100) / 1000;
  struct timespec wait = {(time_t)wait_s, (long)((wait_s - (double)(time_t)wait_s) * 1e9)};
  nanosleep(&wait, NULL);
  kill(pid, SIGKILL);
  int status;
  waitpid(pid, &status, 0);
  while (read(p[0], &k, sizeof k) == (ssize_t)sizeof k) done = k;
  close(p[0]);
  if (!WIFSIGNALED(status)) {
    fprintf(stderr, "trial %d: the saver exited (status %d) before the kill\n", t, status);
    return false;
  }
  char list[1024], err[1024];
  *left_temp = others_in(dir, list, sizeof list) > 0;
  cli_ckpt ck;
  if (!cli_checkpoint_load(path, &ck, err, sizeof err)) {
    fprintf(stderr, "trial %d: the checkpoint does not load after the kill: %s\n", t, err);
    return false;
  }
  bool ok = ck.meta.epoch == done || ck.meta.epoch == done + 1;
  if (!ok)
    fprintf(stderr, "trial %d: the checkpoint is save %lld, the last finished was %lld\n", t,
            (long long)ck.meta.epoch, (long long)done);
  if (ok && !(ok = consistent(&ck, err, sizeof err)))
    fprintf(stderr, "trial %d: torn checkpoint: %s\n", t, err);
  cli_checkpoint_free(&ck);
  if (ok && cli_checkpoint_prepare("kill_save", path, true) != CLI_OK) ok = false;
  if (ok && others_in(dir, list, sizeof list) > 0) {
    fprintf(stderr, "trial %d: left after the next run's start:%s\n", t, list);
    ok = false;
  }
  return ok;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--saver")) return saver(argv[2], atoi(argv[3]));
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: kill_save DIR TRIALS [SEED]\n");
    return 2;
  }
  const char *dir = argv[1];
  int trials = atoi(argv[2]);
  unsigned rng = argc == 4 ? (unsigned)atoi(argv[3]) : (unsigned)time(NULL);
  char self[4096], path[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return perror("readlink /proc/self/exe"), 1;
  self[n] = '\0';
  snprintf(path, sizeof path, "%s/ck.safetensors", dir);
  printf("kill_save: %d trials, seed %u\n", trials, rng);
  int failed = 0, temps = 0;
  for (int t = 0; t < trials; t++) {
    bool left = false;
    failed += !trial(self, dir, path, t, &rng, &left);
    temps += left;
  }
  printf("kill_save: %d of %d trials failed; %d kills landed inside a save (left a temporary)\n",
         failed, trials, temps);
  if (!failed && temps == 0) {
    printf("kill_save: no kill landed inside a save: the test missed what it tests\n");
    return 1;
  }
  return failed ? 1 : 0;
}
