try:
    from megatron.core.utils import build_fused_kernel
except ImportError or ModuleNotFoundError:
    build_fused_kernel = None

try:
    from megatron.core.utils import build_other_kernel
except ValueError or ImportError:
    build_other_kernel = None


def kernel(size):
    if build_fused_kernel is not None:
        return build_fused_kernel(size)
    return size
