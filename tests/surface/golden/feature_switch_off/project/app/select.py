from app.backend import megatron_available


def backend_name():
    return "megatron" if megatron_available else "native"
