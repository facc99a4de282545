class Attention:
    def forward(self, hidden_states, attention_mask, inference_context=None):
        return self.core_attention(hidden_states, attention_mask)
    def core_attention(self, hidden_states, attention_mask):
        return hidden_states
