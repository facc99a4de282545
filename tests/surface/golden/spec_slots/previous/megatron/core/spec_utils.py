class ModuleSpec:
    def __init__(self, module, params=None, submodules=None):
        self.module = module
        self.params = params or {}
        self.submodules = submodules
def build_module(spec, *args, **kwargs):
    return spec.module(*args, **spec.params, **kwargs)
