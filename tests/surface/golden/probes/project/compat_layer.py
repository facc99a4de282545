import inspect

from megatron.core import parallel_state
from megatron.core.ops import init_model_parallel


def group():
    if hasattr(parallel_state, "get_old_group"):
        return parallel_state.get_old_group()
    return getattr(parallel_state, "get_old_group", None)


def init():
    if "use_sharp" in inspect.signature(init_model_parallel).parameters:
        init_model_parallel(2, use_sharp=True)
    else:
        init_model_parallel(2)


def rank_or_group():
    if hasattr(parallel_state, "get_data_parallel_rank"):
        return parallel_state.get_data_parallel_rank()
    return parallel_state.get_old_group()
