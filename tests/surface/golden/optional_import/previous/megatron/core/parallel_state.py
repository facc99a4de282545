def get_tensor_model_parallel_rank():
    return 0
def get_tensor_and_expert_parallel_rank():
    return 0
