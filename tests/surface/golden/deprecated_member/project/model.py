from megatron.core.enums import ModelType

KIND = ModelType.encoder_and_decoder
