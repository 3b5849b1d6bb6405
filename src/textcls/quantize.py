"""int8 dynamic quantisation of a neural model, in a form a run folder can hold.

``torch.ao.quantization.quantize_dynamic`` replaces ``nn.Linear`` (and ``nn.LSTM`` / ``nn.GRU``)
by modules that keep int8 weights packed for fbgemm/qnnpack, quantise activations on the fly
and compute in int8. Those packed parameters are not tensors (a state dict holds a
``torch.dtype`` and tuples of quantised tensors), and safetensors holds tensors only, which is
why ``save_pretrained`` used to fail with ``'torch.dtype' object has no attribute 'detach'``.

So a quantised run is stored as float tensors plus ``"quantize": "int8"`` in config.json:
``float_copy`` turns every dynamically quantised module back into its float module with the
int8 weights dequantised (``q * scale``), and ``from_pretrained`` quantises again on load.
Quantising a dequantised weight gives back the same int8 values and scale (a per-tensor
symmetric scale is ``max|w| / 127.5``, and ``max|w|`` survives), so the reloaded model predicts
as the saved one did. The embedding tables and convolutions stay float: dynamic quantisation
covers the matrix products whose activations can be quantised per batch.

``torch.ao.quantization`` is marked deprecated in favour of torchao; it is what ships with
PyTorch today, and this module is the one place that calls it.
"""

from __future__ import annotations

import copy
import warnings

import torch
from torch import nn

from .errors import ConfigError

__all__ = ["QUANTIZE_CHOICES", "quantize_model", "is_quantized", "float_copy"]

QUANTIZE_CHOICES = ("int8",)
# The module types quantize_dynamic's default configuration covers (LSTMCell & co. are unused here).
QUANTIZED_TYPES = {nn.Linear, nn.LSTM, nn.GRU}


def check_mode(mode) -> str:
    if mode not in QUANTIZE_CHOICES:
        raise ConfigError(f"parameter 'quantize' = {mode!r} is not one of {', '.join(QUANTIZE_CHOICES)}")
    return mode


def quantize_model(model: nn.Module, mode: str = "int8") -> nn.Module:
    """A dynamically quantised copy of ``model`` (int8 weights for Linear, LSTM and GRU), in eval mode."""
    check_mode(mode)
    with warnings.catch_warnings():
        # torch.ao.quantization's deprecation notices (see the module docstring), once per call.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        from torch.ao.quantization import quantize_dynamic

        quantized = quantize_dynamic(model.cpu().eval(), QUANTIZED_TYPES, dtype=torch.qint8)
    return quantized.eval()


def _is_dynamic_quantized(module: nn.Module) -> bool:
    return type(module).__module__.startswith("torch.ao.nn.quantized.dynamic")


def is_quantized(model: nn.Module) -> bool:
    """Whether ``model`` holds dynamically quantised modules (by ``quantize_model`` or by hand)."""
    return any(_is_dynamic_quantized(m) for m in model.modules())


def float_copy(model: nn.Module) -> nn.Module:
    """A copy of ``model`` with every dynamically quantised module replaced by its float
    module, weights dequantised; the model itself is left as it is."""
    copied = copy.deepcopy(model)
    replaced: list[str] = []
    for name, module in list(copied.named_modules()):
        if any(name.startswith(done + ".") for done in replaced):
            continue  # inside a module already replaced (an LSTM's packed weights)
        if name and _is_dynamic_quantized(module):
            replaced.append(name)
            parent_name, _, child = name.rpartition(".")
            parent = copied.get_submodule(parent_name) if parent_name else copied
            setattr(parent, child, _dequantized(module, name))
    return copied


def _dequantized(module: nn.Module, name: str) -> nn.Module:
    from torch.ao.nn.quantized import dynamic as qd

    if isinstance(module, qd.Linear):
        weight, bias = module.weight().dequantize(), module.bias()
        dense = nn.Linear(module.in_features, module.out_features, bias=bias is not None)
        with torch.no_grad():
            dense.weight.copy_(weight)
            if bias is not None:
                dense.bias.copy_(bias)
        return dense
    if isinstance(module, (qd.LSTM, qd.GRU)):
        cls = nn.LSTM if isinstance(module, qd.LSTM) else nn.GRU
        dense = cls(module.input_size, module.hidden_size, num_layers=module.num_layers, bias=module.bias,
                    batch_first=module.batch_first, dropout=float(module.dropout),
                    bidirectional=module.bidirectional)
        tensors = {**{k: w.dequantize() for k, w in module.get_weight().items()}, **module.get_bias()}
        dense.load_state_dict(tensors, strict=True)
        return dense
    raise ConfigError(f"module '{name}' is a {type(module).__name__}, which textcls cannot store; quantise with "
                      "Classifier.quantize('int8') (Linear, LSTM and GRU layers)")
