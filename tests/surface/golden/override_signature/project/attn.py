from megatron.core.attention import Attention


class MyAttention(Attention):
    def core_attention(self, hidden_states, attention_mask):
        return hidden_states * 2


class WideAttention(Attention):
    def core_attention(self, hidden_states, attention_mask, **kwargs):
        return hidden_states
