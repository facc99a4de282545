MAJOR = 0
MINOR = 1
PATCH = 0
PRE_RELEASE = ''
__version__ = "0.1.0"
