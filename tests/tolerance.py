"""Float tolerances derived from the dtype, never tighter than it allows.

The CPUs that run these tests differ (AMD EPYC with AVX2, Intel Xeon with AVX-512 and AMX).
Their vectorised math libraries round transcendental functions differently by an ulp or two,
and their kernels sum in a different order (vector width, blocking that depends on the batch
shape). A tolerance below a few ulps of the dtype therefore fails on one CPU and passes on
another, as ``1 / log(e)`` in float32 did (1.19e-07 = one ulp at 1.0 on Xeon, exact on EPYC).

- ``FEW_OPS``: a float32 value computed in a handful of elementwise operations, compared with
  a hand-written reference: 16 ulps relative (about 1.9e-6), and the same absolute near zero.
- ``KERNEL``: a float32 value that went through matmuls, softmax or other reductions, or
  through a different kernel path (a padded batch against one document, fused against
  explicit attention): 1e-5 relative and absolute, about 84 ulps at 1.0. Real defects in
  these tests (a missing mask, a wrong equation) move values by 1e-3 or more.
- ``BF16``: the same under bf16 autocast (used where the CPU has native bf16): one bf16 eps,
  7.8e-3, absolute. A missing mask moves a sentence vector by 0.1 or more.
"""

import pytest
import torch

EPS32 = torch.finfo(torch.float32).eps
FEW_OPS = {"rtol": 16 * EPS32, "atol": 16 * EPS32}
KERNEL = {"rtol": 1e-5, "atol": 1e-5}
# A value computed under bf16 autocast (8 bits of mantissa), where a padded batch and one
# document take different kernel paths: one bf16 eps (2**-7) absolute, for values of at most
# about 1 (probabilities, unit vectors).
BF16 = {"rtol": 0.0, "atol": float(torch.finfo(torch.bfloat16).eps)}


def approx32(expected, *, kernel: bool = False):
    """``pytest.approx`` with the float32 tolerance above (``kernel``: after reductions)."""
    tol = KERNEL if kernel else FEW_OPS
    return pytest.approx(expected, rel=tol["rtol"], abs=tol["atol"])
