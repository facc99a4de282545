from dataclasses import dataclass, field
@dataclass
class ModelParallelConfig:
    tensor_model_parallel_size: int = 1
@dataclass
class TransformerConfig(ModelParallelConfig):
    num_layers: int = 0
    hidden_size: int = 0
    derived: int = field(init=False, default=0)
