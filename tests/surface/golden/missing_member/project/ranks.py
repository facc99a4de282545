from megatron.core import parallel_state as mpu
from megatron.core.enums import ModelType


def groups():
    return mpu.get_old_group(), mpu.get_data_parallel_rank()


KIND = ModelType.encoder_and_decoder
