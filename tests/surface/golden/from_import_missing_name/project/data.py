from megatron.core.utils import get_batch_on_this_cp_rank_old, unwrap_model


def batch(b, model):
    return get_batch_on_this_cp_rank_old(b), unwrap_model(model)
