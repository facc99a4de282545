from megatron.core.config import TransformerConfig


class Bridge:
    ConfigClass = TransformerConfig

    def _base(self, key=None, **kwargs):
        base = {"num_layers": 2}
        base.update(kwargs)
        return self.ConfigClass(**base)
