"""Named access to the register array, for Python code (BIOS services,
debugger, RPC).  The jitted core works on the arrays directly."""

from . import state as S

_R8 = {"al": 0, "ah": 1, "cl": 2, "ch": 3, "dl": 4, "dh": 5, "bl": 6, "bh": 7}
_FLAG_BITS = {"cf": S.F_CF, "pf": S.F_PF, "af": S.F_AF, "zf": S.F_ZF,
              "sf": S.F_SF, "tf": S.F_TF, "if_": S.F_IF, "df": S.F_DF,
              "of": S.F_OF}


class Registers:
    """``r.ax``, ``r.al = 5``, ``r.cf = True``, ``r.flags`` ... over ``regs``."""

    __slots__ = ("regs", "regs8")

    def __init__(self, regs):
        object.__setattr__(self, "regs", regs)
        object.__setattr__(self, "regs8", regs.view("u1"))

    def __getattr__(self, name):
        i = S.REG_INDEX.get(name)
        if i is not None:
            return int(self.regs[i])
        i = _R8.get(name)
        if i is not None:
            return int(self.regs8[i])
        bit = _FLAG_BITS.get(name)
        if bit is not None:
            return bool(self.regs[S.FLAGS] & bit)
        raise AttributeError(name)

    def __setattr__(self, name, value):
        i = S.REG_INDEX.get(name)
        if i is not None:
            value = int(value) & 0xFFFF
            if i == S.FLAGS:
                value = (value & S.FLAGS_WRITABLE) | S.FLAGS_FIXED_ONES
            self.regs[i] = value
            return
        i = _R8.get(name)
        if i is not None:
            self.regs8[i] = int(value) & 0xFF
            return
        bit = _FLAG_BITS.get(name)
        if bit is not None:
            if value:
                self.regs[S.FLAGS] |= bit
            else:
                self.regs[S.FLAGS] &= ~bit & 0xFFFF
            return
        raise AttributeError(name)

    def as_dict(self):
        return {name: int(self.regs[i]) for name, i in S.REG_INDEX.items()}
