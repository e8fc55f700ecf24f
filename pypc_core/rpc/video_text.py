"""The display's text as the contract shapes it, for every method group that
returns it (``video.text``, ``state.observe``, ``video.snapshot``)."""

from . import params as P
from .errors import device_absent, invalid


def adapter(ctl, method):
    video = ctl.machine.video
    if video is None:
        raise device_absent(f"{method}: no video adapter is plugged in", device="video")
    return video


def parse_selection(params, where="params"):
    """``(page, display_address)`` of a video.text-style selection; both
    keys together are refused even if equal or null."""
    if "page" in params and "display_address" in params:
        raise invalid(f"{where}: page and display_address are mutually exclusive",
                      field=where)
    page = params.get("page")
    addr = params.get("display_address")
    if page is not None:
        page = P.number(page, "page", 0, 0xFFFF)
    if addr is not None:
        addr = P.number(addr, "display_address", 0, 0xFFFF)
    return page, addr


def text_result(ctl, selection, method="video.text"):
    video = adapter(ctl, method)
    page, addr = selection
    try:
        out = video.text_page(page=page, display_address=addr)
    except ValueError as exc:
        raise invalid(f"{method}: {exc}", field="page" if page is not None
                      else "display_address") from None
    out = dict(out)
    contract_cells = getattr(video, "contract_cells", None)
    if contract_cells is not None:          # a card whose cells the contract reads its own way
        out["cells"] = contract_cells(out["cells"])
    out["state_revision"] = ctl.revision
    return out


def text_backing(video):
    """``(physical address, bytes)`` of the adapter's text backing store."""
    return video.declaration.memory[0].base, video.vram_bytes()
