class DistributedDataParallel:
    def __init__(self, config, module, disable_bucketing=False):
        self.module = module
        self.config = config
