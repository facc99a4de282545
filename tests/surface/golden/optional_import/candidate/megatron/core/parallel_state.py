def get_tensor_model_parallel_rank():
    return 0
