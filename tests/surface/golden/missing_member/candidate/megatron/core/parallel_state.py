def get_data_parallel_rank(with_context_parallel=False):
    return 0
