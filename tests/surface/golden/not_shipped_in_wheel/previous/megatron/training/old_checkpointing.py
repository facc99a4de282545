def load_checkpoint():
    pass
