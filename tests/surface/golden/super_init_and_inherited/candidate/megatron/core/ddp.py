class DistributedDataParallel:
    def __init__(self, config, ddp_config, module, disable_bucketing=False):
        self.module = module
        self.ddp_config = ddp_config
