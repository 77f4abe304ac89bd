"""Modules, as torch.nn: a Python Module class that holds parameters, buffers and children
(PyTorch's state_dict names), and the C library's built-in layers wrapped as Modules.

    class SimpleNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(784, 128)
            self.fc2 = nn.Linear(128, 10)
        def forward(self, x):
            return self.fc2(ct.relu(self.fc1(x)))
"""

from collections import OrderedDict

from .. import _C
from . import functional  # noqa: F401

Tensor = _C.Tensor


class Parameter(Tensor):
    """A tensor a Module trains: a leaf that requires grad (sharing the memory of `data`)."""

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.empty((0,))
        return Tensor.__new__(cls, data, requires_grad=requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)


class Module:
    """The base of every module: register parameters, buffers and children as attributes."""

    def __init__(self):
        d = self.__dict__
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_modules"] = OrderedDict()
        d["training"] = True

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("call Module.__init__() before assigning attributes")
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' has no attribute '{name}'")

    def __delattr__(self, name):
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                return
        object.__delattr__(self, name)

    def register_buffer(self, name, tensor):
        """State saved in state_dict but not trained (running statistics...)."""
        self._buffers[name] = tensor

    def register_parameter(self, name, param):
        self._parameters[name] = param

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}.forward is not defined")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ---- walking the tree ----
    def named_children(self):
        return iter(self._modules.items())

    def children(self):
        return iter(self._modules.values())

    def named_modules(self, prefix=""):
        yield prefix, self
        for name, m in self._modules.items():
            yield from m.named_modules(prefix + ("." if prefix else "") + name)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_parameters(self, prefix="", recurse=True):
        for name, p in self._parameters.items():
            yield prefix + name, p
        if recurse:
            for name, m in self._modules.items():
                yield from m.named_parameters(prefix + name + ".")

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix=""):
        for name, b in self._buffers.items():
            yield prefix + name, b
        for name, m in self._modules.items():
            yield from m.named_buffers(prefix + name + ".")

    def buffers(self):
        for _, b in self.named_buffers():
            yield b

    def state_dict(self, prefix=""):
        """Parameters and buffers under PyTorch's names (fc1.weight, ...), in PyTorch's order."""
        out = OrderedDict()
        for name, p in self._parameters.items():
            out[prefix + name] = p.detach()
        for name, b in self._buffers.items():
            out[prefix + name] = b.detach()
        for name, m in self._modules.items():
            out.update(m.state_dict(prefix + name + "."))
        return out

    def load_state_dict(self, state, strict=True):
        """Copies values in (from ctensor tensors, NumPy arrays or torch tensors)."""
        own = self.state_dict()
        if strict:
            missing = [k for k in own if k not in state]
            unexpected = [k for k in state if k not in own]
            if missing or unexpected:
                raise KeyError(f"load_state_dict: missing {missing}, unexpected {unexpected}")
        with _C_no_grad():
            for name, t in own.items():
                if name in state:
                    src = state[name]
                    if not isinstance(src, Tensor):
                        src = _C.asarray(src.detach() if hasattr(src, "detach") else src, device=t.device)
                    if tuple(src.shape) != t.shape:
                        raise _C.ShapeError(f"load_state_dict: {name} has shape {tuple(src.shape)}, "
                                            f"the module's {t.shape}")
                    t.copy_(src)

    # ---- modes and devices ----
    def train(self, mode=True):
        self.__dict__["training"] = mode
        for m in self._modules.values():
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            p.grad = None

    def to(self, device=None, dtype=None):
        """Moves parameters and buffers (the Python ones are replaced, built-in layers keep their
        handles), then the children. Returns self."""
        for table, cls in ((self._parameters, Parameter), (self._buffers, None)):
            for name, t in list(table.items()):
                moved = t.detach().to(device, dtype)
                table[name] = Parameter(moved, requires_grad=t.requires_grad) if cls else moved
        for m in self._modules.values():
            m.to(device, dtype)
        return self

    def cuda(self, index=0):
        return self.to(f"cuda:{index}")

    def cpu(self):
        return self.to("cpu")

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = [f"  ({name}): " + repr(m).replace("\n", "\n  ") for name, m in self._modules.items()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        return head + ("\n" + "\n".join(lines) + "\n)" if lines else ")")


class _C_no_grad:
    def __enter__(self):
        _C._no_grad_begin()

    def __exit__(self, *exc):
        _C._no_grad_end()


class _Builtin(Module):
    """A layer of the C library: forward is one call; the parameters are the C module's own
    tensors (same handles), so moving the module keeps them valid."""

    def __init__(self, cmodule, extra=""):
        super().__init__()
        self.__dict__["_c"] = cmodule
        self.__dict__["_extra"] = extra
        self._refresh()

    def _refresh(self):
        params = self._c.parameters()
        names = {n for n, _ in params}
        self._parameters.clear()
        self._buffers.clear()
        for name, t in params:
            self._parameters[name] = _C._rewrap(t, Parameter)
        for name, t in self._c.state():
            if name not in names:
                self._buffers[name] = t

    def forward(self, x):
        return self._c.forward(x)

    def to(self, device=None, dtype=None):
        if device is not None:
            self._c.to(device)
        if dtype is not None:
            self._c.to(dtype)
        return self

    def train(self, mode=True):
        self.__dict__["training"] = mode
        self._c.train(mode)
        return self

    def extra_repr(self):
        return self._extra


class Linear(_Builtin):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__(_C.linear_module(in_features, out_features, bias, dtype=dtype, device=device),
                         f"in_features={in_features}, out_features={out_features}, bias={bias}")


class Conv2d(_Builtin):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, device=None, dtype=None):
        super().__init__(_C.conv2d_module(in_channels, out_channels, kernel_size, stride, padding, dilation,
                                          groups, bias, dtype=dtype, device=device),
                         f"{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}")


class MaxPool2d(_Builtin):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False):
        super().__init__(_C.max_pool2d_module(kernel_size, stride, padding, ceil_mode),
                         f"kernel_size={kernel_size}, stride={stride or kernel_size}")


class AvgPool2d(_Builtin):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__(_C.avg_pool2d_module(kernel_size, stride, padding, ceil_mode, count_include_pad),
                         f"kernel_size={kernel_size}, stride={stride or kernel_size}")


class ReLU(_Builtin):
    def __init__(self):
        super().__init__(_C.relu_module())


class GELU(_Builtin):
    def __init__(self):
        super().__init__(_C.gelu_module())


class Sigmoid(_Builtin):
    def __init__(self):
        super().__init__(_C.sigmoid_module())


class Tanh(_Builtin):
    def __init__(self):
        super().__init__(_C.tanh_module())


class SiLU(_Builtin):
    def __init__(self):
        super().__init__(_C.silu_module())


class Dropout(_Builtin):
    def __init__(self, p=0.5):
        super().__init__(_C.dropout_module(p), f"p={p}")


class BatchNorm2d(_Builtin):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, device=None, dtype=None):
        super().__init__(_C.batch_norm2d_module(num_features, eps, momentum, dtype=dtype, device=device),
                         f"{num_features}, eps={eps}, momentum={momentum}")


class LayerNorm(_Builtin):
    def __init__(self, normalized_shape, eps=1e-5, device=None, dtype=None):
        super().__init__(_C.layer_norm_module(normalized_shape, eps, dtype=dtype, device=device),
                         f"{normalized_shape}, eps={eps}")


class Flatten(_Builtin):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__(_C.flatten_module(start_dim, end_dim), f"start_dim={start_dim}, end_dim={end_dim}")


class Embedding(_Builtin):
    def __init__(self, num_embeddings, embedding_dim, device=None, dtype=None):
        super().__init__(_C.embedding_module(num_embeddings, embedding_dim, dtype=dtype, device=device),
                         f"{num_embeddings}, {embedding_dim}")


class Identity(Module):
    def forward(self, x):
        return x


class Upsample(Module):
    """torch.nn.Upsample: functional.interpolate with the options fixed at construction (modes
    'nearest', 'nearest-exact', 'linear', 'bilinear')."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, x):
        return _C.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners,
                              self.recompute_scale_factor)

    def extra_repr(self):
        what = f"size={self.size}" if self.scale_factor is None else f"scale_factor={self.scale_factor}"
        return f"{what}, mode='{self.mode}'"


class Sequential(Module):
    """Children "0", "1", ... applied in order."""

    def __init__(self, *modules):
        super().__init__()
        for i, m in enumerate(modules):
            self._modules[str(i)] = m

    def append(self, module):
        self._modules[str(len(self._modules))] = module
        return self

    def __len__(self):
        return len(self._modules)

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def __iter__(self):
        return iter(self._modules.values())

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x


class _Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction


class MSELoss(_Loss):
    def forward(self, input, target):
        return _C.mse_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        self.weight, self.ignore_index, self.label_smoothing = weight, ignore_index, label_smoothing

    def forward(self, input, target):
        return _C.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                                reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_Loss):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, input, target):
        return _C.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                           reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, reduction="mean", pos_weight=None):
        super().__init__(reduction)
        self.pos_weight = pos_weight

    def forward(self, input, target):
        return _C.binary_cross_entropy_with_logits(input, target, reduction=self.reduction,
                                                   pos_weight=self.pos_weight)
