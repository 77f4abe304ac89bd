"""Optimizers and learning-rate schedules (torch.optim), running in the C library: the update
formulas and their order are torch.optim's; on a GPU one fused kernel updates many parameters."""

from . import _C


class _Group(dict):
    """A param_groups entry: setting 'lr' sets the optimizer's learning rate."""

    def __init__(self, opt, params):
        super().__init__(params=params, lr=opt._c.lr)
        self._opt = opt

    def __getitem__(self, key):
        if key == "lr":
            return self._opt._c.lr
        return super().__getitem__(key)

    def __setitem__(self, key, value):
        if key == "lr":
            self._opt._c.lr = value
        super().__setitem__(key, value)


class Optimizer:
    def __init__(self, cobj, params):
        self._c = cobj
        self._params = params
        self.param_groups = [_Group(self, params)]

    def step(self):
        """One update of every parameter that has a gradient."""
        self._c.step()

    def zero_grad(self, set_to_none=True):
        """Clears the gradients (they become None)."""
        self._c.zero_grad()

    @property
    def lr(self):
        return self._c.lr

    @lr.setter
    def lr(self, value):
        self._c.lr = value

    def state_dict(self):
        """The state tensors ('<index>.momentum_buffer', '<index>.exp_avg', ...) and the step count."""
        return {"state": self._c.state(), "steps": self._c.steps}


def _params(params):
    params = list(params)
    if params and isinstance(params[0], dict):
        raise NotImplementedError("parameter groups with their own options are not supported yet")
    return params


class SGD(Optimizer):
    def __init__(self, params, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
        params = _params(params)
        super().__init__(_C.sgd(params, lr, momentum, dampening, weight_decay, nesterov), params)


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False):
        params = _params(params)
        super().__init__(_C.adam(params, lr, betas[0], betas[1], eps, weight_decay, amsgrad), params)


class AdamW(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, amsgrad=False):
        params = _params(params)
        super().__init__(_C.adamw(params, lr, betas[0], betas[1], eps, weight_decay, amsgrad), params)


class _Scheduler:
    def __init__(self, optimizer, cobj):
        self.optimizer = optimizer
        self._c = cobj

    def step(self):
        """Advances one epoch and sets the optimizer's learning rate."""
        self._c.step()

    def get_last_lr(self):
        return [self.optimizer.lr]

    @property
    def last_epoch(self):
        return self._c.epoch


class _LRSchedulerModule:
    class StepLR(_Scheduler):
        """lr = base_lr * gamma ** (epoch // step_size)."""

        def __init__(self, optimizer, step_size, gamma=0.1):
            super().__init__(optimizer, _C.step_lr(optimizer._c, step_size, gamma))

    class CosineAnnealingLR(_Scheduler):
        """Cosine annealing from base_lr to eta_min over T_max epochs."""

        def __init__(self, optimizer, T_max, eta_min=0.0):
            super().__init__(optimizer, _C.cosine_lr(optimizer._c, T_max, eta_min))


lr_scheduler = _LRSchedulerModule
