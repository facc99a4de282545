def init_model_parallel(tensor_model_parallel_size=1):
    pass
