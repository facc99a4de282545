from megatron.core.spec_utils import build_module
class LayerSubmodules:
    def __init__(self, self_attention=None, mlp=None):
        self.self_attention = self_attention
        self.mlp = mlp
class Layer:
    def __init__(self, config, submodules, layer_number=1):
        self.self_attention = build_module(submodules.self_attention, config=config, model_comm_pgs=None)
        self.mlp = build_module(submodules.mlp, config=config)
    def forward(self, x):
        return self.mlp(self.self_attention(x))
