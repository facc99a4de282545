def parse_args():
    pass
