"""Moved to ``textcls.recipe`` (and ``textcls.validate``); this shim goes once every model imports them there."""

from ..recipe import *  # noqa: F401,F403
from ..recipe import get_auto_rule, get_lr_lambda, register_auto_rule, register_lr_lambda  # noqa: F401
from ..validate import range_check  # noqa: F401
