def is_torch_min_version(v):
    return True
