def unwrap_model(model):
    return model
