try:
    from megatron.core.parallel_state import get_tensor_and_expert_parallel_rank
except ImportError:
    get_tensor_and_expert_parallel_rank = lambda: 0  # noqa: E731

try:
    from megatron.core.utils import get_old_helper
except ImportError:
    get_old_helper = None

try:
    from megatron.core.schedules import get_tensor_shapes
except ImportError:
    get_tensor_shapes = None


def rank():
    return get_tensor_and_expert_parallel_rank()


def helper(model):
    if get_old_helper is not None:
        return get_old_helper(model)
    return model


def shapes(config):
    if get_tensor_shapes is None:
        return []
    return get_tensor_shapes(rank=0, seq_length=1, micro_batch_size=1, config=config)
