from megatron.core.ddp import DistributedDataParallel

HOOKS = (DistributedDataParallel.start_grad_sync, DistributedDataParallel.finish_grad_sync)
