from megatron.core.transformer_config import TransformerConfig


def make():
    cfg = TransformerConfig(num_layers=2, hidden_size=8,
                            apply_query_key_layer_scaling=True)
    return cfg.apply_query_key_layer_scaling
