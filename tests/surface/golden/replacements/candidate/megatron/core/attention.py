class Attention:
    def forward(self, hidden_states, attention_mask, inference_context=None, rotary_pos_cos=None):
        return self.core_attention(hidden_states, attention_mask, rotary_pos_cos=rotary_pos_cos)
    def core_attention(self, hidden_states, attention_mask, rotary_pos_cos=None):
        return hidden_states
