try:
    from pkg import qwen_bridge
except ImportError:
    pass
