def get_megatron_optimizer(config, model_chunks, no_weight_decay_cond=None, scale_lr_cond=None,
                           use_gloo_process_groups=True):
    pass
