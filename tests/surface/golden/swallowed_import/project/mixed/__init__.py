try:
    from mixed import guarded_part
except ImportError:
    pass

from mixed import plain_part
