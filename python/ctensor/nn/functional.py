"""Functional layers and losses (torch.nn.functional), each one call into the C library."""

from .. import _C

relu = _C.relu
gelu = _C.gelu
sigmoid = _C.sigmoid
tanh = _C.tanh
silu = _C.silu
softplus = _C.softplus
leaky_relu = _C.leaky_relu
linear = _C.linear
conv2d = _C.conv2d
max_pool2d = _C.max_pool2d
avg_pool2d = _C.avg_pool2d
batch_norm = _C.batch_norm
layer_norm = _C.layer_norm
embedding = _C.embedding
dropout = _C.dropout
one_hot = _C.one_hot
mse_loss = _C.mse_loss
cross_entropy = _C.cross_entropy
nll_loss = _C.nll_loss
binary_cross_entropy_with_logits = _C.binary_cross_entropy_with_logits
pad = _C.pad
interpolate = _C.interpolate
scaled_dot_product_attention = _C.scaled_dot_product_attention


def softmax(x, dim=-1):
    return _C.softmax(x, dim)


def log_softmax(x, dim=-1):
    return _C.log_softmax(x, dim)


def gelu_tanh(x):
    """gelu(x, approximate='tanh')."""
    return _C.gelu_tanh(x)
