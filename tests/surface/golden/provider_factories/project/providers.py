import functools

from megatron.training.setup import get_model, pretrain


def model_provider(pre_process=True, post_process=True):
    return None


def build(cfg, pre_process=True, post_process=True):
    return None


def flexible(pre_process=True, post_process=True, **kwargs):
    return None


def make_provider(args):
    if args.custom:
        def custom_provider(pre_process=True, post_process=True):
            return None
        return custom_provider
    return functools.partial(build, args)


class Builder:
    def provide(self, pre_process=True, post_process=True):
        return None


def bound_provider():
    builder = Builder()
    return builder.provide


def main(args):
    pretrain(None, model_provider)
    get_model(make_provider(args))
    get_model(bound_provider())
    get_model(flexible)
