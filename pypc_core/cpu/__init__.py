"""The Intel 8088 core: state layout, numba core, Python handle."""
from .cpu import Cpu
from . import state

__all__ = ["Cpu", "state"]
