from megatron.training.arguments import parse_args
from megatron.training.tokenizer import build_tokenizer
from megatron.training.old_checkpointing import load_checkpoint
