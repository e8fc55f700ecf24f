"""The PC speaker: PIT counter 2 gated by port 61h, rendered to audio.

On the XT the speaker is driven by counter 2's output AND port 61h bit 1
(bit 0 is counter 2's gate).  :class:`Speaker` renders that level as 16-bit
mono samples at 44,100 Hz from *emulated* time: sample ``n`` is taken at CPU
cycle ``origin + n * CPU_HZ / rate`` (four sub-samples averaged), so a run
gives the same samples at any host speed.

The machine thread renders: when port 61h bits 0/1 change (the PPI's
``on_speaker_change``), when counter 2 is written (the PIT's
``on_channel2_change``) -- each time up to that cycle with the state that
held before it -- and after every run of the CPU (``machine.run_hooks``).
Between two changes counter 2's output is closed-form (the PIT model's
segment), evaluated here for all sample times at once with numpy.

Sinks are the caller's: the live view's WAV file and host playback
(:mod:`pypc_core.frontends.audio`), a recording's sound track
(:mod:`pypc_core.recording`).
"""


import numpy as np

from .chipset.pit import CYCLES_PER_TICK, PitChannel
from .scheduler import CPU_HZ

RATE = 44_100
AMPLITUDE = 12_000
OVERSAMPLE = 4


def channel_levels(ch, edges):
    """Counter output (bool array) of PitChannel ``ch`` at the ascending PIT
    edges ``edges``, as the chip model would give it with no further writes
    (a pending load takes effect at its edge): ``PitChannel.levels``, the
    PIT's own rule, for each segment; ``ch`` is advanced past a pending
    load it applies."""
    out = np.empty(len(edges), dtype=bool)
    i = 0
    if ch.pend_edge is not None:
        j = int(np.searchsorted(edges, ch.pend_edge))
        out[:j] = ch.levels(edges[:j])
        i = j
        if j < len(edges):
            ch.sync(int(edges[j]))
    out[i:] = ch.levels(edges[i:])
    return out


class Speaker:
    """Renders the speaker of ``machine`` to ``sinks`` (objects with
    ``write(int16 array)`` and ``close()``)."""

    def __init__(self, machine, sinks, rate=RATE):
        self.machine = machine
        self.sinks = list(sinks)
        self.rate = rate
        self.samples = 0                # samples rendered since the origin
        self.origin_cycle = machine.clock()
        self.origin_sample = 0
        self.last_cycle = self.origin_cycle
        self._capture()
        self._attach()
        self.closed = False

    def _capture(self):
        m = self.machine
        ch = PitChannel(2)
        ch.set_state(m.pit.channels[2].get_state())
        self.channel = ch
        self.data = bool(m.ppi.port_b & 2)
        self.epoch = getattr(m, "display_epoch", 0)

    def _ppi_changed(self, state=None):
        self.render()
        self._capture()
        if self._old_ppi_hook is not None:
            self._old_ppi_hook(state)

    def _pit_changed(self):
        self.render()
        self._capture()
        if self._old_pit_hook is not None:
            self._old_pit_hook()

    def render(self):
        """Render every sample due up to the current cycle (machine thread)."""
        if self.closed:
            return
        now = self.machine.clock()
        if now < self.last_cycle or getattr(self.machine, "display_epoch", 0) != self.epoch:
            # a restored snapshot: the sound goes on from its state and cycle
            self.origin_cycle, self.origin_sample = now, self.samples
            self.last_cycle = now
            self._capture()
            return
        self.last_cycle = now
        end = self.origin_sample + ((now - self.origin_cycle) * self.rate) // CPU_HZ
        if end <= self.samples:
            return
        idx = np.arange(self.samples, end, dtype=np.int64) - self.origin_sample
        sub = (idx[:, None] * OVERSAMPLE + np.arange(OVERSAMPLE)[None, :]).ravel()
        cycles = self.origin_cycle + (sub * CPU_HZ) // (self.rate * OVERSAMPLE)
        if self.data:
            levels = channel_levels(self.channel, cycles // CYCLES_PER_TICK)
            level = levels.reshape(-1, OVERSAMPLE).mean(axis=1)
            pcm = np.round(level * AMPLITUDE).astype("<i2")
        else:
            pcm = np.zeros(len(idx), dtype="<i2")
        self.samples = end
        for sink in self.sinks:
            sink.write(pcm)

    def follow(self, machine):
        """Sound ``machine`` from now on (an agent server's session.start
        replaced the machine): what the old one played is rendered, and the
        sound goes on, without a gap or an overlap, from the new one's state."""
        if self.closed or machine is self.machine:
            return
        self.render()
        self._detach()
        self.machine = machine
        self._attach()
        self.origin_cycle, self.origin_sample = machine.clock(), self.samples
        self.last_cycle = self.origin_cycle
        self._capture()

    def _detach(self):
        m = self.machine
        m.ppi.on_speaker_change = self._old_ppi_hook
        m.pit.on_channel2_change = self._old_pit_hook
        if self.render in m.run_hooks:
            m.run_hooks.remove(self.render)

    def _attach(self):
        ppi, pit = self.machine.ppi, self.machine.pit
        self._old_ppi_hook = ppi.on_speaker_change
        self._old_pit_hook = getattr(pit, "on_channel2_change", None)
        ppi.on_speaker_change = self._ppi_changed
        pit.on_channel2_change = self._pit_changed
        self.machine.run_hooks.append(self.render)

    def close(self):
        if self.closed:
            return
        self.render()
        self.closed = True
        self._detach()
        for sink in self.sinks:
            sink.close()
