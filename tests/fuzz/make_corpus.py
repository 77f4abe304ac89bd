#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/):
small valid files of each format and a few broken ones near the checks.
Python's standard library only; run from anywhere:
    python3 tests/fuzz/make_corpus.py
The files are committed; libFuzzer's own finds stay in the build folder."""
import gzip
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- .npy -------------------------------------------------------------------------

def npy(descr, shape, data, fortran=False, major=1):
    shape_s = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
    h = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape_s)
    pre = 10 if major == 1 else 12
    h += " " * ((64 - (pre + len(h) + 1) % 64) % 64) + "\n"
    size = struct.pack("<H", len(h)) if major == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes([major, 0]) + size + h.encode() + data


put("npy", "f4_2x3", npy("<f4", (2, 3), struct.pack("<6f", *range(6))))
put("npy", "f8_scalar", npy("<f8", (), struct.pack("<d", 1.5)))
put("npy", "i8_big_endian_empty", npy(">i8", (0, 3), b""))
put("npy", "f2_fortran", npy("<f2", (2, 3), bytes(12), fortran=True))
put("npy", "bool", npy("|b1", (3,), b"\x00\x01\x07"))
put("npy", "u1_v2", npy("|u1", (4,), b"abcd", major=2))
put("npy", "empty_overflowing_strides", npy("<f8", (0, 4294967296, 4294967296), b""))
put("npy", "truncated", npy("<i4", (3,), b"\x01\x00\x00\x00"))

# ---- safetensors (the four files of corpus/safetensors came first) ---------------------


def safetensors(header, data=b""):
    h = json.dumps(header, ensure_ascii=False).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


put("safetensors", "metadata_and_i64", safetensors(
    {"__metadata__": {"format": "pt"}, "x": {"dtype": "I64", "shape": [2], "data_offsets": [0, 16]}},
    struct.pack("<2q", 7, -1)))
put("safetensors", "unicode_name", safetensors(
    {"caf\u00e9.\u20ac": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}, b"\x05"))
put("safetensors", "empty_name", safetensors(
    {"": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}, b"\x05"))
put("safetensors", "empty_overflowing_strides", safetensors(
    {"a": {"dtype": "F32", "shape": [0, 4294967296, 4294967296], "data_offsets": [0, 0]}}))
put("safetensors", "bf16_f16", safetensors(
    {"h": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]},
     "b": {"dtype": "BF16", "shape": [1, 2], "data_offsets": [4, 8]}}, bytes(8)))

# ---- IDX: the first byte picks labels (bit 0) and the file reader (bit 1) -------------

img = struct.pack(">IIII", 0x803, 2, 3, 4) + bytes(range(24))
lbl = struct.pack(">II", 0x801, 3) + bytes([1, 2, 3])
# mtime=0: the same bytes at every run, so rerunning the script changes no file.
img_gz, lbl_gz = gzip.compress(img, mtime=0), gzip.compress(lbl, mtime=0)
for i, (mode, body) in enumerate([(0, img), (1, lbl), (2, img), (3, lbl), (2, img_gz), (3, lbl_gz),
                                  (2, img[:20]), (3, lbl_gz[:-4]),
                                  (3, gzip.compress(lbl + b"x", mtime=0))]):
    put("idx", "seed%d" % i, bytes([mode]) + body)

# ---- CIFAR-10: the first byte picks 1 + b % 4 records of 3073 bytes -------------------


def cifar(labels):
    return b"".join(bytes([l]) + bytes((l * 7 + k) % 256 for k in range(3072)) for l in labels)


put("cifar", "one", bytes([0]) + cifar([3]))
put("cifar", "two", bytes([1]) + cifar([0, 9]))
put("cifar", "bad_label", bytes([1]) + cifar([2, 10]))
put("cifar", "cut", bytes([2]) + cifar([1, 2, 3])[:-5])

# ---- Checkpoints: the meta.* tensors of `ctensor train`, and a few small others -------

META_I64 = {"format": 1, "model": 1, "dataset": 1, "optimizer": 2, "epoch": 1, "batch": 0,
            "seed": 1, "rng_seed": 1, "rng_offset": 4096, "step_count": 8, "batch_size": 64,
            "limit_train": 0, "limit_test": 0, "epoch_samples": 0, "lr_schedule": 3,
            "lr_step_size": 0, "augment": 0, "amp": 0, "amp_growth_tracker": 0, "world_size": 1}
META_F64 = {"lr": 2e-3, "momentum": 0.0, "weight_decay": 0.0, "epoch_loss_sum": 0.0,
            "epoch_seconds": 1.0, "epoch_wait_seconds": 0.0, "accuracy": 0.5, "lr_gamma": 0.1,
            "label_smoothing": 0.0, "amp_scale": 1.0}


def checkpoint(extra=None, drop=(), i64=None):
    header, data = {}, b""

    def add(name, dtype, shape, blob):
        nonlocal data
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob

    for k, v in {**META_I64, **(i64 or {})}.items():
        if "meta." + k not in drop:
            add("meta." + k, "I64", [], struct.pack("<q", v))
    for k, v in META_F64.items():
        if "meta." + k not in drop:
            add("meta." + k, "F64", [], struct.pack("<d", v))
    add("meta.model_name", "U8", [3], b"mlp")
    add("meta.dataset_name", "U8", [13], b"fashion-mnist")
    for name, dtype, shape, blob in extra or []:
        add(name, dtype, shape, blob)
    return safetensors(header, data)


put("checkpoint", "meta_only", checkpoint())
put("checkpoint", "small_model_tensors", checkpoint(extra=[
    ("fc2.bias", "F32", [10], bytes(40)), ("fc1.bias", "F32", [2], bytes(8)),
    ("optim.0.exp_avg", "F32", [2], bytes(8)), ("optim.0.step", "I64", [], bytes(8))]))
put("checkpoint", "unknown_tensor", checkpoint(extra=[("conv9.weight", "F32", [1], bytes(4))]))
put("checkpoint", "no_format", checkpoint(drop=("meta.format",)))
put("checkpoint", "bad_model_code", checkpoint(i64={"model": 77}))
put("checkpoint", "cnn_mid_epoch", checkpoint(i64={"model": 2, "batch": 5, "epoch_samples": 320}))
put("checkpoint", "truncated", checkpoint()[:-3])
# The models with more parameter tensors than the small ones (the restore of
# every one of them into a model and its optimizer runs).
put("checkpoint", "resnet_meta", checkpoint(i64={"model": 4}))
put("checkpoint", "vit_meta", checkpoint(i64={"model": 5, "optimizer": 3}))
put("checkpoint", "gpt_meta", checkpoint(i64={"model": 6, "dataset": 4, "optimizer": 3}))

# CSV files: byte 0 picks the options (fuzz_csv.c: bit 0 ';', bits 1-2 the
# header mode, bit 3 regression, bit 4 normalize).
put("csv", "labels", b"\x00x1,x2,y\n1,2,a\n3,4,b\n")
put("csv", "regression_semicolon", b"\x09a;b;t\n1;2;0.5\n\"3\";4;1e3\n")
put("csv", "ragged", b"\x10\"q \"\"x\"\"\",b,c\n1,2,3\n4,5\n")
put("csv", "no_header_crlf", b"\x04\n\n1,2,3\r\n4,5,6\r\n")
put("csv", "unclosed", b"\x00a,b\n1,\"open\n")
