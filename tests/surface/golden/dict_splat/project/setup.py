from megatron.core.ops import init_model_parallel


def direct():
    init_model_parallel(**{"tensor_model_parallel_size": 2, "use_sharp": True})


def bound(tp):
    options = {"tensor_model_parallel_size": tp, "use_sharp": False}
    init_model_parallel(**options)
