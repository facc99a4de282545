class TransformerConfig:
    def __init__(self, num_layers, hidden_size=1, async_allreduce=False):
        self.num_layers = num_layers
