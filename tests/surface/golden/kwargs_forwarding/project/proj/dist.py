from megatron.core.ops import init_model_parallel


def initialize(tp=1, **kwargs):
    init_model_parallel(tensor_model_parallel_size=tp, **kwargs)
