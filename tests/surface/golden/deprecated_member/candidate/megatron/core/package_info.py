MAJOR = 0
MINOR = 2
PATCH = 0
PRE_RELEASE = ''
__version__ = "0.2.0"
