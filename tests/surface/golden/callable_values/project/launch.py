import functools

from megatron.core.ops import init_model_parallel

init_tp2 = functools.partial(init_model_parallel, 2, use_sharp=True)
init_tp4 = functools.partial(init_model_parallel, tensor_model_parallel_size=4)


def run():
    init_tp4(use_sharp=False)
