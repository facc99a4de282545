import importlib
import megatron.core.old_utils
from megatron.core.old_utils import helper
from megatron.core import utils


def load():
    return importlib.import_module("megatron.core.old_utils")
