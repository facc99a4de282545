from megatron.core.utils import get_old_helper


def bridge(model):
    return get_old_helper(model)
