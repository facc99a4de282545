def get_model(model_provider_func, model_type=None):
    if model_type is not None and model_type.virtual:
        return [model_provider_func(pre_process=True, post_process=True, vp_stage=i) for i in range(2)]
    return [model_provider_func(pre_process=True, post_process=True, config=None)]
