import enum
class ModelType(enum.Enum):
    encoder_or_decoder = 1
    @property
    def encoder_and_decoder(self):
        """Deprecated property - use encoder_or_decoder instead."""
        raise ValueError("deprecated")
