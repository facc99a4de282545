try:
    from other import llama_bridge
except Exception:
    pass
