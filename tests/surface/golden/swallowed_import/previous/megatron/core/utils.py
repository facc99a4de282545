def unwrap_model(model):
    return model
def get_old_helper(model):
    return model
