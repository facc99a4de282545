from megatron.core.transformer_config import TransformerConfig


def scale(config: TransformerConfig):
    if config.apply_query_key_layer_scaling:
        return config.num_layers
    return config.never_a_field
