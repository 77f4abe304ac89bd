#!/usr/bin/env python3
"""peers_jax.py: bench_train.c's training steps in JAX, each step one jax.jit'ed
function (forward, cross-entropy, grad, SGD with momentum 0.9, lr 0.01), timed
with the same method and JSON lines as the other peers (impl "jax_jit"; the
compilation happens in the warm-up, untimed). Informational: JAX has no eager
training loop to compare with. Needs jax (bench/peers-venv.sh installs it).
Threads: XLA's CPU client takes its thread count from the process's CPU
affinity, so peers2.sh runs this under taskset with --threads CPUs.
  VENV/bin/python bench/peers_jax.py [--threads N] [--budget S] [--only NAME]
"""
import json

from peers_util import emit, init, scaled, want

ARGS = init(__doc__.splitlines()[0])
import jax  # noqa: E402  (after init: it sets the thread variables)
import jax.numpy as jnp  # noqa: E402


def dense(key, n_in, n_out):
    k1, k2 = jax.random.split(key)
    bound = 1.0 / n_in ** 0.5
    return {"w": jax.random.uniform(k1, (n_in, n_out), minval=-bound, maxval=bound),
            "b": jax.random.uniform(k2, (n_out,), minval=-bound, maxval=bound)}


def conv(key, c_in, c_out, k):
    k1, k2 = jax.random.split(key)
    bound = 1.0 / (c_in * k * k) ** 0.5
    return {"w": jax.random.uniform(k1, (c_out, c_in, k, k), minval=-bound, maxval=bound),
            "b": jax.random.uniform(k2, (c_out,), minval=-bound, maxval=bound)}


def conv_relu_pool(p, x):
    y = jax.lax.conv_general_dilated(x, p["w"], (1, 1), "VALID",
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
    y = jax.nn.relu(y + p["b"][None, :, None, None])
    return jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def mlp(key):
    k = jax.random.split(key, 2)
    params = [dense(k[0], 784, 128), dense(k[1], 128, 10)]

    def apply(ps, x):
        return jax.nn.relu(x @ ps[0]["w"] + ps[0]["b"]) @ ps[1]["w"] + ps[1]["b"]
    return params, apply


def cnn(key):
    k = jax.random.split(key, 5)
    params = [conv(k[0], 3, 6, 5), conv(k[1], 6, 16, 5), dense(k[2], 400, 120),
              dense(k[3], 120, 84), dense(k[4], 84, 10)]

    def apply(ps, x):
        x = conv_relu_pool(ps[1], conv_relu_pool(ps[0], x)).reshape(x.shape[0], -1)
        x = jax.nn.relu(x @ ps[2]["w"] + ps[2]["b"])
        x = jax.nn.relu(x @ ps[3]["w"] + ps[3]["b"])
        return x @ ps[4]["w"] + ps[4]["b"]
    return params, apply


def fashion_cnn(key):
    k = jax.random.split(key, 4)
    params = [conv(k[0], 1, 32, 3), conv(k[1], 32, 64, 3), dense(k[2], 1600, 128),
              dense(k[3], 128, 10)]

    def apply(ps, x):
        x = conv_relu_pool(ps[1], conv_relu_pool(ps[0], x)).reshape(x.shape[0], -1)
        return jax.nn.relu(x @ ps[2]["w"] + ps[2]["b"]) @ ps[3]["w"] + ps[3]["b"]
    return params, apply


def bench_step(name, make, shape):
    key = jax.random.PRNGKey(0)
    params, apply = make(key)
    x = jax.random.normal(key, shape)
    labels = jax.random.randint(key, (shape[0],), 0, 10)

    def loss_fn(ps):
        logits = apply(ps, x)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], 1))

    @jax.jit
    def step(ps, mom):
        g = jax.grad(loss_fn)(ps)
        mom = jax.tree_util.tree_map(lambda m, gi: 0.9 * m + gi, mom, g)
        return jax.tree_util.tree_map(lambda p, m: p - 0.01 * m, ps, mom), mom

    state = [params, jax.tree_util.tree_map(jnp.zeros_like, params)]

    def run():
        state[0], state[1] = step(state[0], state[1])
        jax.block_until_ready(state[0])
    emit(name, "jax_jit", run, "ms_per_step", scaled(1e3))


def main():
    print(json.dumps({"meta": "peers_jax", "threads": ARGS.threads, "jax": jax.__version__,
                      "devices": str(jax.devices())}), flush=True)
    if want("train_mlp_step"):
        bench_step("train_mlp_step", mlp, (64, 784))
    if want("train_cnn_step"):
        bench_step("train_cnn_step", cnn, (64, 3, 32, 32))
    if want("train_fashion_cnn_step"):
        bench_step("train_fashion_cnn_step", fashion_cnn, (64, 1, 28, 28))


if __name__ == "__main__":
    main()
