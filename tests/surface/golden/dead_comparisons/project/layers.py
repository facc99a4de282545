from megatron.core import parallel_state as mpu
from megatron.core.enums import ModelType


def num_layers(model_type):
    if model_type == ModelType.encoder_and_decoder:
        return mpu.is_pipeline_stage_before_split()
    if model_type == ModelType.encoder_or_decoder:
        return mpu.gone_everywhere()
    return mpu.get_pipeline_model_parallel_world_size()
