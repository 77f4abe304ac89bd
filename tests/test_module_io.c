/* Module utilities: parameter counts, the printed summary, state_dict saved
 * and loaded in one call (round trip, strict and non-strict key mismatches,
 * shape and dtype errors that change nothing), and a torch state_dict
 * loaded into the same architecture giving torch's outputs (skipped without
 * python3 + torch). */
#include <unistd.h>

#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

/* Modules on the device under test; successive draws of the default
 * generator make each model's initial weights differ. */
static ct_module_opts mopts(void) { return (ct_module_opts){.device = ct_test_device()}; }

/* Linear(4, 3) -> ReLU -> Linear(3, 2) [-> BatchNorm over 2 features]. */
static ct_module *mlp(bool with_norm) {
  ct_module_opts o = mopts();
  ct_module *net = ct_sequential_new();
  ct_sequential_add(net, ct_linear_new(4, 3, true, &o));
  ct_sequential_add(net, ct_relu_new());
  ct_sequential_add(net, ct_linear_new(3, 2, true, &o));
  if (with_norm) ct_sequential_add(net, ct_batch_norm2d_new(2, 1e-5, 0.1, &o));
  return net;
}

static ct_tensor *identity_forward(ct_module *m, void *self, const ct_tensor *x) {
  (void)m, (void)self;
  return ct_clone(x);
}
static const ct_module_vtable tie_vt = {"Tied", identity_forward, NULL};

/* A temporary path (removed by the caller). */
static void temp_path(char *buf, size_t cap, const char *tag) {
  snprintf(buf, cap, "/tmp/ct_module_io_%s_%d.safetensors", tag, (int)getpid());
}

CT_TEST(num_parameters_and_summary) {
  ct_module *net = mlp(true);
  CHECK(ct_module_num_parameters(net, false) == 4 * 3 + 3 + 3 * 2 + 2 + 2 + 2);
  CHECK(ct_module_num_parameters(net, true) == 27);
  ct_requires_grad_(ct_module_get(net, "0.weight"), false); /* frozen */
  CHECK(ct_module_num_parameters(net, true) == 27 - 12 &&
        ct_module_num_parameters(net, false) == 27);
  CHECK(ct_module_num_parameters(NULL, false) == -1);
  /* a tensor registered twice (tied weights) is listed and counted once, as
   * torch's parameters() */
  ct_module *tied = ct_module_new(&tie_vt, NULL);
  ct_tensor *w = ct_ones(CT_SHAPE(3, 3), NULL);
  ct_module_register_parameter(tied, "a", ct_retain(w));
  ct_module_register_parameter(tied, "b", w);
  CHECK(ct_module_parameters(tied, NULL, NULL, 0) == 1 &&
        ct_module_num_parameters(tied, false) == 9);
  ct_module_free(tied);

  char path[128];
  temp_path(path, sizeof path, "summary");
  FILE *f = fopen(path, "w+");
  CHECK(f != NULL);
  if (f) {
    CHECK_STATUS_OK(ct_module_print_summary(net, f));
    rewind(f);
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    CHECK_MSG(strstr(text, "Sequential") && strstr(text, "0.weight") && strstr(text, "(3, 4)") &&
                  strstr(text, "3.running_var") && strstr(text, "(buffer)") &&
                  strstr(text, "(frozen)"),
              "summary:\n%s", text);
    CHECK_MSG(strstr(text, "parameters: 27 (trainable 15, frozen 12); buffers: 3 (5 elements)"),
              "summary:\n%s", text);
  }
  remove(path);
  ct_module_free(net);
}

CT_TEST(save_load_round_trip) {
  char path[128];
  temp_path(path, sizeof path, "rt");
  ct_module *src = mlp(true), *dst = mlp(true);
  /* buffers differ from their initial values too */
  CHECK_OK(ct_fill_(ct_module_get(src, "3.running_mean"), 0.25));
  CHECK_OK(ct_fill_(ct_module_get(src, "3.num_batches_tracked"), 7));
  CHECK_STATUS_OK(ct_module_save(src, path));
  ct_tensor *w_before = ct_module_get(dst, "0.weight");
  ct_load_report r;
  CHECK_STATUS_OK(ct_module_load(dst, path, true, &r));
  CHECK(r.n_missing == 0 && r.n_unexpected == 0);
  ct_load_report_free(&r);
  CHECK(ct_module_get(dst, "0.weight") == w_before); /* same handles: optimizers stay valid */
  const char *names[16];
  ct_tensor *ts[16], *td[16];
  int n = ct_module_state(src, ts, names, 16);
  CHECK(ct_module_state(dst, td, NULL, 16) == n);
  for (int i = 0; i < n; i++) {
    CHECK_MSG(ct_equal(ts[i], td[i]), "%s differs after the round trip", names[i]);
    CHECK(ct_device_equal(ct_device_of(td[i]), ct_test_device()));
  }
  CHECK(ct_requires_grad(ct_module_get(dst, "0.weight")) &&
        ct_is_leaf(ct_module_get(dst, "0.weight")));
  remove(path);
  ct_module_free(src);
  ct_module_free(dst);
}

CT_TEST(load_key_mismatches) {
  char path[128];
  temp_path(path, sizeof path, "keys");
  ct_module *big = mlp(true), *small = mlp(false);
  CHECK_STATUS_OK(ct_module_save(big, path));
  ct_tensor *before = ct_clone(ct_module_get(small, "0.weight"));
  /* strict: the unexpected 3.* keys are an error naming them; nothing changes */
  ct_load_report r;
  CHECK_ERR_MSG(ct_module_load(small, path, true, &r) == CT_OK, CT_ERR_ARG,
                "unexpected key(s) 3.weight, 3.bias");
  CHECK(r.n_missing == 0 && r.n_unexpected == 5);
  CHECK(r.n_unexpected == 5 && !strcmp(r.unexpected[0], "3.weight") &&
        !strcmp(r.unexpected[4], "3.num_batches_tracked"));
  ct_load_report_free(&r);
  CHECK(ct_equal(ct_module_get(small, "0.weight"), before));
  /* not strict: the common keys load, the rest is reported */
  CHECK_STATUS_OK(ct_module_load(small, path, false, &r));
  CHECK(r.n_missing == 0 && r.n_unexpected == 5);
  ct_load_report_free(&r);
  CHECK(ct_equal(ct_module_get(small, "0.weight"), ct_module_get(big, "0.weight")));
  /* the other way: keys missing from the file */
  ct_module *big2 = mlp(true);
  ct_tensor *bn_w = ct_clone(ct_module_get(big2, "3.weight"));
  CHECK_STATUS_OK(ct_module_save(small, path));
  CHECK_ERR_MSG(ct_module_load(big2, path, true, NULL) == CT_OK, CT_ERR_ARG,
                "missing key(s) 3.weight");
  CHECK_STATUS_OK(ct_module_load(big2, path, false, &r));
  CHECK(r.n_missing == 5 && r.n_unexpected == 0 && !strcmp(r.missing[1], "3.bias"));
  ct_load_report_free(&r);
  CHECK(ct_equal(ct_module_get(big2, "3.weight"), bn_w));
  CHECK(ct_equal(ct_module_get(big2, "2.bias"), ct_module_get(small, "2.bias")));
  /* a shape or dtype mismatch names the key, in both modes, and changes nothing */
  ct_module *wide = ct_sequential_new();
  ct_module_opts o = mopts();
  ct_sequential_add(wide, ct_linear_new(4, 3, true, &o));
  ct_sequential_add(wide, ct_relu_new());
  ct_sequential_add(wide, ct_linear_new(3, 5, true, &o));
  ct_tensor *w0 = ct_clone(ct_module_get(wide, "0.weight"));
  CHECK_ERR_MSG(ct_module_load(wide, path, false, &r) == CT_OK, CT_ERR_SHAPE,
                "2.weight is f32 (2, 3)");
  CHECK(r.n_missing == 0 && r.n_unexpected == 0);
  CHECK(ct_equal(ct_module_get(wide, "0.weight"), w0));
  ct_module *dbl = mlp(false);
  CHECK_STATUS_OK(ct_module_to_dtype(dbl, CT_F64));
  CHECK_ERR_MSG(ct_module_load(dbl, path, true, NULL) == CT_OK, CT_ERR_DTYPE,
                "0.weight is f32 (3, 4)");
  /* files that are not there or not safetensors */
  CHECK_ERR(ct_module_load(dbl, "/nonexistent/ct_module_io.safetensors", false, NULL) == CT_OK,
            CT_ERR_IO);
  CHECK_ERR(ct_module_load(NULL, path, false, NULL) == CT_OK, CT_ERR_ARG);
  CHECK_ERR(ct_module_load(dbl, NULL, false, NULL) == CT_OK, CT_ERR_ARG);
  CHECK_ERR(ct_module_save(NULL, path) == CT_OK, CT_ERR_ARG);
  ct_load_report_free(NULL);
  remove(path);
  ct_module_free(big), ct_module_free(small), ct_module_free(big2), ct_module_free(wide),
      ct_module_free(dbl);
}

/* torch's state_dict written as safetensors by hand (json header + raw
 * little-endian data), and the model's output on a fixed input. */
static const char *TORCH_SCRIPT =
    "import sys, json, struct, numpy as np, torch\n"
    "d = sys.argv[1]; torch.manual_seed(3)\n"
    "net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))\n"
    "header, blobs, off = {}, [], 0\n"
    "for k, v in net.state_dict().items():\n"
    "    b = v.numpy().astype('<f4').tobytes(); header[k] = dict(dtype='F32', "
    "shape=list(v.shape),\n"
    "        data_offsets=[off, off + len(b)]); off += len(b); blobs.append(b)\n"
    "h = json.dumps(header).encode(); h += b' ' * (-len(h) % 8)\n"
    "open(f'{d}/net.safetensors', 'wb').write(struct.pack('<Q', len(h)) + h + b''.join(blobs))\n"
    "x = torch.randn(5, 4); np.save(f'{d}/x.npy', x.double().numpy())\n"
    "np.save(f'{d}/y.npy', net(x).detach().double().numpy())\n";

CT_TEST(load_torch_state_dict) {
  const char *dir = ct_test_torch_outputs("module_io", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  char path[512];
  snprintf(path, sizeof path, "%s/net.safetensors", dir);
  ct_module *net = mlp(false);
  CHECK_STATUS_OK(ct_module_load(net, path, true, NULL));
  ct_tensor *y = ct_module_forward(net, ct_cast(ct_test_load_output(dir, "x"), CT_F32));
  CHECK_LIKE_TORCH(dir, "forward after loading torch's state_dict", y, "y", 1e-5, 1e-6);
  ct_module_free(net);
}
