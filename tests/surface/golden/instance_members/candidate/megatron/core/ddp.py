class DistributedDataParallel:
    def __init__(self, config, module):
        self.module = module
    def finish_grad_sync(self):
        pass
