// pypc's browser view: the screen from /ws into the canvas, keys back to it,
// and the read-only debugger panes.  The protocol is described in
// pypc_core/frontends/web/__init__.py.  window.pypcView is the page's state
// (what the tests and benchmarks/benchmark_web_view.py read); its "drawn"
// holds the last 64 updates drawn: seq, rectangles and when (ms since the
// epoch, the host's clock).
"use strict";

const view = window.pypcView = {
  connected: false, viewOnly: true, seq: 0, updates: 0, width: 0, height: 0,
  mode: "", debug: null, debugUpdates: 0, keysSent: 0, closed: false, drawn: [],
};
const canvas = document.getElementById("screen");
const ctx = canvas.getContext("2d", { alpha: false });
const statusLine = document.getElementById("status");
const hex4 = (v) => v.toString(16).toUpperCase().padStart(4, "0");

function showStatus() {
  if (view.closed) {
    statusLine.textContent = "disconnected (pypc ended, or the page was refused)";
    return;
  }
  const size = view.width ? `${view.width}x${view.height}` : "";
  statusLine.textContent = `${view.mode} ${size} \u2014 ${view.input || ""}`;
}

const ws = new WebSocket(`ws://${location.host}/ws`);
ws.binaryType = "arraybuffer";
let drawing = Promise.resolve();

ws.onopen = () => { view.connected = true; };
ws.onclose = () => { view.connected = false; view.closed = true; showStatus(); releaseAll(); };
ws.onmessage = (event) => {
  if (typeof event.data === "string") {
    const msg = JSON.parse(event.data);
    if (msg.type === "hello") {
      view.viewOnly = msg.view_only;
      view.input = msg.input;
      showStatus();
    } else if (msg.type === "debug") {
      showDebug(msg);
    }
    return;
  }
  const data = event.data;        // updates are drawn in order, one at a time
  drawing = drawing.then(() => drawUpdate(data)).catch((err) => {
    statusLine.textContent = `could not draw an update: ${err}`;
  });
};

async function drawUpdate(data) {
  const bytes = new Uint8Array(data);
  const headerLength = new DataView(data).getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + headerLength)));
  let pos = 4 + headerLength;
  const pictures = [];
  for (const [x, y, w, h, n] of header.rects) {
    const blob = new Blob([bytes.subarray(pos, pos + n)], { type: "image/png" });
    pos += n;
    pictures.push(createImageBitmap(blob, { colorSpaceConversion: "none",
                                            premultiplyAlpha: "none" })
      .then((bitmap) => [x, y, bitmap]));
  }
  const drawn = await Promise.all(pictures);
  if (canvas.width !== header.width || canvas.height !== header.height) {
    canvas.width = header.width;      // a new mode: its native size
    canvas.height = header.height;
  }
  ctx.imageSmoothingEnabled = false;
  for (const [x, y, bitmap] of drawn) {
    ctx.drawImage(bitmap, x, y);
    bitmap.close();
  }
  view.seq = header.seq;
  view.updates += 1;
  view.drawn.push({ seq: header.seq, rects: header.rects.map((r) => r.slice(0, 4)),
                    t: performance.timeOrigin + performance.now() });
  if (view.drawn.length > 64) view.drawn.shift();
  view.width = header.width;
  view.height = header.height;
  view.mode = `${header.adapter} ${header.mode}`;
  showStatus();
  ws.send(JSON.stringify({ type: "ack", seq: header.seq }));
}

// -- the debugger panes -------------------------------------------------------

function showDebug(d) {
  view.debug = d;
  view.debugUpdates += 1;
  const r = d.registers;
  const row = (names) => names.map((n) => `${n.toUpperCase()}=${hex4(r[n])}`).join(" ");
  const flags = [["O", 11], ["D", 10], ["I", 9], ["T", 8], ["S", 7], ["Z", 6],
                 ["A", 4], ["P", 2], ["C", 0]]
    .map(([n, bit]) => ((r.flags >> bit) & 1 ? n : "-")).join("");
  document.getElementById("registers").textContent = [
    row(["ax", "bx", "cx", "dx"]), row(["si", "di", "bp", "sp"]),
    row(["cs", "ds", "es", "ss"]), `IP=${hex4(r.ip)} FLAGS=${hex4(r.flags)} ${flags}`,
    `cycle ${d.cycles}`].join("\n");

  const dis = document.getElementById("disassembly");
  dis.textContent = "";
  d.disassembly.forEach((insn, i) => {
    const line = document.createElement("div");
    if (i === 0) line.className = "here";
    line.textContent = `${hex4(insn.cs)}:${hex4(insn.ip)}  ${insn.bytes.padEnd(12)} ${insn.text}`;
    dis.appendChild(line);
  });

  const s = d.last_stop;
  document.getElementById("last-stop").textContent = s
    ? `${s.kind} at ${hex4(s.cs)}:${hex4(s.ip)}, cycle ${s.cycles}` +
      (s.breakpoint !== undefined ? `, breakpoint ${s.breakpoint}` : "") +
      (s.access ? `\n${JSON.stringify(s.access)}` : "") +
      (s.interrupt ? `\n${JSON.stringify(s.interrupt)}` : "") +
      (s.detail ? `\n${JSON.stringify(s.detail)}` : "")
    : "none";

  document.getElementById("breakpoints").textContent = d.breakpoints.length
    ? d.breakpoints.map((b) => {
        let where = "";
        if (b.segment !== undefined) where = `${hex4(b.segment)}:${hex4(b.offset)}`;
        else if (b.address !== undefined) where = b.address.toString(16).toUpperCase() + "h";
        else if (b.port !== undefined) where = `port ${hex4(b.port)}h`;
        else if (b.number !== undefined) where = b.number.toString(16).toUpperCase() + "h";
        return `#${b.id} ${b.kind} ${where}` + (b.enabled ? "" : " (disabled)") +
          ` hits ${b.hits}` + (b.condition ? ` if ${b.condition}` : "");
      }).join("\n")
    : "none";
}

// -- keys: KeyboardEvent.code to the server, which maps it to XT scan codes ---

const held = new Set();

function sendKey(code, down) {
  if (ws.readyState !== WebSocket.OPEN) return;
  ws.send(JSON.stringify({ type: "key", code, down }));
  view.keysSent += 1;
}

function releaseAll() {
  for (const code of held) sendKey(code, false);
  held.clear();
}

function onKey(event, down) {
  if (view.viewOnly || !event.code) return;   // view-only: the browser keeps its keys
  event.preventDefault();                     // Tab, Backspace, F5 ... go to the guest
  if (down) held.add(event.code); else held.delete(event.code);
  sendKey(event.code, down);
}

document.addEventListener("keydown", (e) => onKey(e, true));
document.addEventListener("keyup", (e) => onKey(e, false));
window.addEventListener("blur", releaseAll);
canvas.focus();
