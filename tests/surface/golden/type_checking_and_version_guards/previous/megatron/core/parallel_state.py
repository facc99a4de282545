def get_data_parallel_rank(with_context_parallel=False):
    return 0
def get_old_group():
    return None
