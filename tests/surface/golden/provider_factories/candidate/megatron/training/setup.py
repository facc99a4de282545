def get_model(model_provider_func, model_type=None):
    return [model_provider_func(pre_process=True, post_process=True, config=None)]
def pretrain(dataset_provider, model_provider, model_type=None):
    return get_model(model_provider, model_type)
