from megatron.core.ddp import DistributedDataParallel


def train(config, module):
    ddp = DistributedDataParallel(config, module)
    ddp.start_grad_sync()
    ddp.finish_grad_sync()
    return ddp.buffers, ddp.module
