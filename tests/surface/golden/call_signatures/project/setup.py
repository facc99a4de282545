from megatron.core.ops import build, get_batch, init_model_parallel


def setup(cfg, batch):
    init_model_parallel(2, use_sharp=True)
    get_batch(batch)
    return build(cfg, None)
