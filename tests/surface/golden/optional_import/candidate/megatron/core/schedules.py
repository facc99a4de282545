def get_tensor_shapes(*, seq_length, micro_batch_size, config):
    return []
