def kept(size):
    return size
