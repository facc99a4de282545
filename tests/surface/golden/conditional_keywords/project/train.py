from megatron.training.setup import get_model


def provider(pre_process=True, post_process=True, config=None):
    return None


def plain(pre_process=True, post_process=True):
    return None


get_model(provider)
get_model(plain)
