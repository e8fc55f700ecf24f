"""The built-in DOS, part: the memory arena: the MCB chain, allocate, free, resize.  A mixin of
:class:`pypc_core.dos.kernel.Dos`; its methods share the Dos instance's state."""



from ..firmware.memio import linear
from .errors import (
    DosError, E_INVALID_BLOCK, E_MCB_DESTROYED, E_NO_MEMORY,
)
from .common import (
    FIRST_MCB, OWNER_FREE
)


class ArenaMixin:
    """The memory arena: the MCB chain, allocate, free, resize."""

    # ------------------------------------------------------------------
    # memory arena
    # ------------------------------------------------------------------
    def write_mcb(self, seg, sig, owner, size, name=None):
        base = linear(seg, 0)
        mem = self.mem
        mem.wb(base, ord(sig))
        mem.ww(base + 1, owner)
        mem.ww(base + 3, size)
        mem.fill(base + 5, 3, 0)
        mem.write(base + 8, (name or "").encode("latin-1")[:8].ljust(8, b"\0"))

    def chain(self):
        """[(mcb segment, signature, owner, size, name)]; DosError 7 if the
        chain is broken."""
        out = []
        seg = FIRST_MCB
        top = min(int(self.machine.ram_kb), 640) * 64
        for _ in range(0x10000):
            base = linear(seg, 0)
            sig = chr(self.mem.rb(base))
            if sig not in "MZ":
                raise DosError(E_MCB_DESTROYED)
            owner = self.mem.rw(base + 1)
            size = self.mem.rw(base + 3)
            name = bytes(self.mem.read(base + 8, 8)).split(b"\0")[0].decode("latin-1", "replace")
            out.append((seg, sig, owner, size, name))
            if sig == "Z":
                return out
            seg = seg + size + 1
            if seg >= top:
                raise DosError(E_MCB_DESTROYED)
        raise DosError(E_MCB_DESTROYED)

    def _merge_free(self):
        blocks = self.chain()
        i = 0
        while i < len(blocks) - 1:
            seg, sig, owner, size, name = blocks[i]
            nseg, nsig, nowner, nsize, _ = blocks[i + 1]
            if owner == OWNER_FREE and nowner == OWNER_FREE:
                size = size + nsize + 1
                self.write_mcb(seg, nsig, OWNER_FREE, size)
                blocks[i] = (seg, nsig, OWNER_FREE, size, "")
                del blocks[i + 1]
            else:
                i += 1

    def largest_free(self):
        self._merge_free()
        return max([size for _s, _g, owner, size, _n in self.chain() if owner == OWNER_FREE],
                   default=0)

    def allocate(self, paras, owner, name=None):
        """Segment of a new block (first fit, or the strategy set by AH=58h);
        DosError(8) with ``largest`` set when nothing fits."""
        self._merge_free()
        fits = [b for b in self.chain() if b[2] == OWNER_FREE and b[3] >= paras]
        if not fits:
            err = DosError(E_NO_MEMORY)
            err.largest = self.largest_free()
            raise err
        strategy = self.strategy & 3
        if strategy == 1:
            block = min(fits, key=lambda b: b[3])
        elif strategy == 2:
            block = fits[-1]
        else:
            block = fits[0]
        seg, sig, _owner, size, _name = block
        if strategy == 2 and size > paras:
            # last fit: take the top of the block
            self.write_mcb(seg, "M", OWNER_FREE, size - paras - 1)
            new = seg + size - paras
            self.write_mcb(new, sig, owner, paras, name)
            return new + 1
        if size > paras:
            self.write_mcb(seg + paras + 1, sig, OWNER_FREE, size - paras - 1)
            sig = "M"
        self.write_mcb(seg, sig, owner, paras, name)
        return seg + 1

    def _block(self, seg):
        for block in self.chain():
            if block[0] + 1 == seg:
                return block
        raise DosError(E_INVALID_BLOCK)

    def free(self, seg):
        mcb, sig, owner, size, _name = self._block(seg)
        if owner == OWNER_FREE:
            raise DosError(E_INVALID_BLOCK)
        self.write_mcb(mcb, sig, OWNER_FREE, size)
        self._merge_free()

    def resize(self, seg, paras):
        """Grow or shrink a block; DosError(8) with ``largest`` if it cannot grow."""
        self._merge_free()
        blocks = self.chain()
        for i, (mcb, sig, owner, size, name) in enumerate(blocks):
            if mcb + 1 == seg:
                break
        else:
            raise DosError(E_INVALID_BLOCK)
        if owner == OWNER_FREE:
            raise DosError(E_INVALID_BLOCK)
        avail = size
        nxt = blocks[i + 1] if i + 1 < len(blocks) else None
        if nxt is not None and nxt[2] == OWNER_FREE:
            avail = size + nxt[3] + 1
        if paras > avail:
            err = DosError(E_NO_MEMORY)
            err.largest = avail
            raise err
        end_sig = nxt[1] if (nxt is not None and nxt[2] == OWNER_FREE) else sig
        keep_name = bytes(self.mem.read(linear(mcb, 8), 8))
        if nxt is not None and nxt[2] == OWNER_FREE:
            total = avail
        else:
            total = size
        if paras < total:
            self.write_mcb(mcb, "M", owner, paras)
            self.write_mcb(mcb + paras + 1, end_sig, OWNER_FREE, total - paras - 1)
        else:
            self.write_mcb(mcb, end_sig, owner, paras)
        self.mem.write(linear(mcb, 8), keep_name)
        self._merge_free()

    def free_owned(self, psp):
        for mcb, sig, owner, size, _name in self.chain():
            if owner == psp:
                self.write_mcb(mcb, sig, OWNER_FREE, size)
        self._merge_free()

    def memory_map(self):
        """The MCB chain as dicts: segment (of the block), size (paragraphs),
        owner (PSP segment; 0 free, 8 DOS), name."""
        return [{"mcb": mcb, "segment": mcb + 1, "size": size, "owner": owner,
                 "name": name if owner not in (OWNER_FREE,) else "",
                 "last": sig == "Z"}
                for mcb, sig, owner, size, name in self.chain()]
