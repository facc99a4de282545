try:
    from megatron.core.old_utils import unwrap_model
except ImportError:
    from megatron.core.utils import unwrap_model

try:
    from megatron.core.utils import unwrap_model as unwrap
except ImportError:
    from megatron.core.old_utils import unwrap_model as unwrap
