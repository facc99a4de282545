def get_megatron_optimizer(config, model_chunks, config_overrides=None, use_gloo_process_groups=True):
    pass
