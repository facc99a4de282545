from megatron.core.package_info import __version__
