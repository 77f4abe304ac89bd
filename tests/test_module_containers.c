/* Identity, ModuleList and weight tying: an embedding tied to an output
 * linear is listed once and receives the sum of both uses' gradients,
 * compared with the same computation on two untied copies (f64). */
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

CT_TEST(identity_module) {
  ct_module *id = ct_identity_new();
  CHECK_OK(id);
  if (!id) return;
  CHECK(strcmp(ct_module_type_name(id), "Identity") == 0);
  CHECK(ct_module_parameters(id, NULL, NULL, 0) == 0);
  ct_tensor_opts o = ct_test_opts(CT_F64);
  ct_tensor *x = ct_requires_grad_(ct_arange(0, 6, 1, &o), true);
  ct_tensor *y = ct_module_forward(id, x);
  CHECK(y && y != x && ct_equal(y, x));
  CHECK_STATUS_OK(ct_backward(ct_sum(ct_mul_scalar(y, 3), NULL), NULL, NULL));
  if (ct_grad(x)) CHECK_CLOSE(ct_grad(x), ((double[]){3, 3, 3, 3, 3, 3}), 0, 0);
  ct_module_free(id);
}

CT_TEST(module_list) {
  ct_module_opts mo = {.dtype = CT_F64, .device = ct_test_device()};
  ct_module *list = ct_module_list_new();
  CHECK_OK(list);
  if (!list) return;
  ct_module *a = ct_module_list_append(list, ct_linear_new(3, 4, true, &mo));
  ct_module *b = ct_module_list_append(list, ct_identity_new());
  ct_module *c = ct_module_list_append(list, ct_linear_new(4, 2, false, &mo));
  CHECK(a && b && c);
  CHECK(ct_module_list_len(list) == 3);
  CHECK(ct_module_list_get(list, 0) == a && ct_module_list_get(list, -1) == c);
  CHECK_ERR_MSG(ct_module_list_get(list, 3), CT_ERR_ARG, "index 3");
  CHECK_ERR(ct_module_list_get(list, -4), CT_ERR_ARG);
  const char *names[4];
  CHECK(ct_module_parameters(list, NULL, names, 4) == 3);
  CHECK(strcmp(names[0], "0.weight") == 0 && strcmp(names[1], "0.bias") == 0 &&
        strcmp(names[2], "2.weight") == 0);
  ct_tensor_opts o = ct_test_opts(CT_F64);
  CHECK_ERR_MSG(ct_module_forward(list, ct_zeros(CT_SHAPE(2, 3), &o)), CT_ERR_ARG, "ModuleList");
  /* eval mode reaches the children */
  ct_module_train(list, false);
  CHECK(!ct_module_is_training(a));
  ct_module *seq = ct_sequential_new();
  CHECK(ct_module_list_len(seq) == -1);
  CHECK_ERR(ct_module_list_append(seq, ct_identity_new()), CT_ERR_ARG);
  ct_module_free(seq);
  ct_module_free(list);
}

CT_TEST(weight_tying_embedding_and_linear) {
  ct_module_opts mo = {.dtype = CT_F64, .device = ct_test_device()};
  ct_module *net = ct_module_list_new();
  ct_module *emb = ct_module_list_append(net, ct_embedding_new(5, 4, &mo));
  ct_module *head = ct_module_list_append(net, ct_linear_new(4, 5, false, &mo));
  CHECK(emb && head);
  if (!emb || !head) {
    ct_module_free(net);
    return;
  }
  ct_tensor *w = ct_module_get(emb, "weight");
  CHECK_STATUS_OK(ct_module_tie_parameter(net, "1.weight", w));
  CHECK(ct_module_get(head, "weight") == w);
  /* listed once (torch's parameters()), saved under both names (state_dict) */
  ct_tensor *ps[2];
  const char *names[2];
  CHECK(ct_module_parameters(net, ps, names, 2) == 1);
  CHECK(ps[0] == w && strcmp(names[0], "0.weight") == 0);
  CHECK(ct_module_num_parameters(net, false) == 20);
  CHECK(ct_module_state(net, NULL, NULL, 0) == 2);

  int64_t iv[6] = {4, 0, 2, 2, 1, 3};
  ct_tensor_opts oi = ct_test_opts(CT_I64), od = ct_test_opts(CT_F64);
  ct_tensor *idx = ct_from_data(iv, CT_SHAPE(6), &oi);
  ct_tensor *g = ct_rand(CT_SHAPE(6, 5), &od);
  ct_tensor *logits = ct_module_forward(head, ct_module_forward(emb, idx));
  CHECK_OK(logits);
  CHECK_STATUS_OK(ct_backward(ct_sum(ct_mul(logits, g), NULL), NULL, NULL));
  /* the same on two untied copies: the tied gradient is their sum */
  ct_tensor *w1 = ct_requires_grad_(ct_clone(ct_detach(w)), true);
  ct_tensor *w2 = ct_requires_grad_(ct_clone(ct_detach(w)), true);
  ct_tensor *ref = ct_linear(ct_embedding(idx, w1), w2, NULL);
  CHECK(logits && ref && ct_allclose(logits, ref, 1e-12, 1e-12));
  CHECK_STATUS_OK(ct_backward(ct_sum(ct_mul(ref, g), NULL), NULL, NULL));
  ct_tensor *sum = ct_add(ct_grad(w1), ct_grad(w2));
  CHECK(ct_grad(w) && sum && ct_allclose(ct_grad(w), sum, 1e-12, 1e-12));
  /* an optimizer over the listed parameters updates the shared tensor once */
  ct_tensor *before = ct_clone(ct_detach(w));
  ct_optimizer *opt = ct_sgd_new(ps, 1, &(ct_sgd_opts){.lr = 0.5});
  CHECK_STATUS_OK(ct_optimizer_step(opt));
  ct_optimizer_free(opt);
  CHECK(ct_allclose(w, ct_sub(before, ct_mul_scalar(sum, 0.5)), 1e-12, 1e-12));

  CHECK_ERR_MSG(ct_module_tie_parameter(net, "1.bias", w) == CT_OK, CT_ERR_ARG, "1.bias");
  CHECK_ERR_MSG(ct_module_tie_parameter(net, "1.weight", ct_zeros(CT_SHAPE(4, 5), &od)) == CT_OK,
                CT_ERR_SHAPE, "(4, 5)");
  ct_tensor_opts of = ct_test_opts(CT_F32);
  CHECK_ERR(ct_module_tie_parameter(net, "1.weight", ct_zeros(CT_SHAPE(5, 4), &of)) == CT_OK,
            CT_ERR_DTYPE);
  CHECK_ERR(ct_module_tie_parameter(net, "1.weight", ct_zeros(CT_SHAPE(5, 4), &od)) == CT_OK,
            CT_ERR_ARG);
  ct_module_free(net);
}
