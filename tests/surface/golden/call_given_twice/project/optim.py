from megatron.core.optimizer import get_megatron_optimizer


def make(cfg, model, no_wd, scale_lr):
    return get_megatron_optimizer(cfg, model, no_wd, scale_lr,
                                  use_gloo_process_groups=False)
