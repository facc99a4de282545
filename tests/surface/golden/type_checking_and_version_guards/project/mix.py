from typing import TYPE_CHECKING

import megatron.core
from megatron.core import package_info, parallel_state
from packaging.version import Version

if TYPE_CHECKING:
    from megatron.core.old_types import Batch


def group():
    if Version(megatron.core.__version__) < Version("0.2.0"):
        return parallel_state.get_old_group()
    return parallel_state.get_data_parallel_rank()


def group_by_package_info():
    if Version(package_info.__version__) < Version("0.2.0"):
        return parallel_state.get_old_group()
    return parallel_state.get_data_parallel_rank()


MCORE_GE_0_2 = Version(megatron.core.__version__) >= Version("0.2.0")


def group_by_flag():
    if not MCORE_GE_0_2:
        return parallel_state.get_old_group()
    return parallel_state.get_data_parallel_rank()
