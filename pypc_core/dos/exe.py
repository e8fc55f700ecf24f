"""Program images: ``.COM`` files and MZ ``.EXE`` headers.

As in DOS, a file is an EXE when it starts with ``MZ`` (or ``ZM``), whatever
its extension; anything else is a COM image loaded at PSP:0100h.  A header
that cannot describe a loadable program (truncated, a relocation table or
entry point outside the image) is refused with :class:`LoadError` before
anything is loaded.
"""

import struct

import attrs

from .errors import E_NO_MEMORY, LoadError

MAX_COM_SIZE = 0xFF00 - 0x100    # leaves the PSP and a little stack in 64 KiB


@attrs.define
class Image:
    kind: str                     # "com" | "exe"
    load: bytes                   # the load module
    min_extra: int = 0            # paragraphs beyond the load module (EXE minalloc)
    max_extra: int = 0xFFFF
    relocations: list = attrs.Factory(list)   # [(segment, offset)] within the module
    cs: int = 0
    ip: int = 0x100
    ss: int = 0
    sp: int = 0xFFFE

    @property
    def load_paragraphs(self):
        return (len(self.load) + 15) // 16


def parse(data, name="program"):
    """An :class:`Image` of the bytes of a program file."""
    if data[:2] in (b"MZ", b"ZM"):
        return parse_mz(data, name)
    if not data:
        raise LoadError(f"{name}: empty file, not a program")
    if len(data) > MAX_COM_SIZE:
        raise LoadError(f"{name}: a .COM program must be at most {MAX_COM_SIZE} bytes, "
                        f"not {len(data)}", E_NO_MEMORY)
    return Image("com", bytes(data))


def parse_mz(data, name="program"):
    if len(data) < 0x1C:
        raise LoadError(f"{name}: corrupt MZ header (file shorter than the header)")
    (_magic, last, pages, nrel, hdr_paras, minalloc, maxalloc, ss, sp, _csum,
     ip, cs, rel_off, _overlay) = struct.unpack_from("<2s13H", data, 0)
    if last >= 512:
        raise LoadError(f"{name}: corrupt MZ header (last page size {last} > 511)")
    if pages == 0:
        raise LoadError(f"{name}: corrupt MZ header (no pages)")
    size = pages * 512 - ((512 - last) if last else 0)
    header = hdr_paras * 16
    if header < 0x1C:
        raise LoadError(f"{name}: corrupt MZ header (header of {header} bytes)")
    if header > size:
        raise LoadError(f"{name}: corrupt MZ header (header larger than the image)")
    if size > len(data):
        raise LoadError(f"{name}: corrupt MZ header (image of {size} bytes, "
                        f"file of {len(data)})")
    if nrel and (rel_off < 0x1C or rel_off + 4 * nrel > header):
        raise LoadError(f"{name}: corrupt MZ header (relocation table outside the header)")
    load = bytes(data[header:size])
    span = len(load) + minalloc * 16
    relocations = []
    for i in range(nrel):
        off, seg = struct.unpack_from("<HH", data, rel_off + 4 * i)
        if seg * 16 + off + 2 > span:
            raise LoadError(f"{name}: corrupt MZ header (relocation {i} at "
                            f"{seg:04X}:{off:04X} outside the program)")
        relocations.append((seg, off))
    if cs * 16 + ip >= max(len(load), 1):
        raise LoadError(f"{name}: corrupt MZ header (entry point {cs:04X}:{ip:04X} "
                        f"outside the program)")
    if ss * 16 + sp > span + 0x10000 or (ss * 16 > span and span):
        raise LoadError(f"{name}: corrupt MZ header (stack {ss:04X}:{sp:04X} "
                        f"outside the program)")
    if len(load) + 0x100 > 0xA0000:
        raise LoadError(f"{name}: program too large", E_NO_MEMORY)
    return Image("exe", load, minalloc, maxalloc, relocations, cs, ip, ss, sp)
