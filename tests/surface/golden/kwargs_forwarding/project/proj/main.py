from megatron.core.config import TransformerConfig
from megatron.core.ops import init_model_parallel

from proj.bridge import Bridge
from proj.dist import initialize


def main():
    initialize(2, use_sharp=True)
    initialize(4)
    return init_model_parallel


class Qwen(Bridge):
    def config(self):
        return self._base(async_allreduce=True), TransformerConfig
