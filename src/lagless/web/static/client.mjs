// lagless browser client: joins the demo's arena over a WebSocket link, shows the cars on a
// canvas through the demo's display models, sends the player's keys, and shows the HUD.
//
// Protocol (lagless.web.frames): HELLO first, then input events as MESSAGE frames on the
// reliable channel (the bit-packed InputEvent of lagless.physics.codec, one per key change,
// stamped with the estimated server time), PING every PING_INTERVAL s. The server answers with
// the Welcome (own car id), 20-Hz snapshots on the unreliable channel, and PONGs.
//
// Link: WebTransport when the server offers it (/config.json "webtransport") and the browser
// has it, else WebSocket; ?transport=websocket forces WebSocket, and a WebTransport session
// that cannot open falls back to it. Over WebTransport the reliable frames (HELLO, inputs) go
// on one bidirectional stream, length-prefixed, and PINGs as datagrams; the server sends
// snapshots and PONGs as datagrams.
//
// HUD: RTT, snapshot loss (snapshots missing from the server's 20-Hz grid over the last 2 s),
// kB/s in and out, the display model, the cars shown, the link.
//
// Clock: spec 004 §4.4.2's filter over the PING/PONG samples (the last 32; a sample corrects
// the clock only when its RTT is within the 20th percentile of the window and its offset
// differs by more than 5 ms; the first sample sets it), Cristian's offset from each round
// trip. The HUD's RTT is the smoothed RTT (1/8 gain) of the same samples.
//
// Shutdown: a server that shuts down sends the physics Goodbye (its reason) on the reliable
// channel, then closes a WebSocket with 1001 (going away) and the reason; the HUD's state
// becomes "server closed: <reason>" from whichever comes first and stays so. Over WebTransport
// the page ends its session on the goodbye: the server waits for that (1 s at most) before it
// closes the connection itself.
//
// Decisions: the own car is shown through the display model like every other car (the demo's
// client predicts it with the server's pymunk physics, which is not ported); HUD rates are the
// frames' payload bytes per second (no WebSocket, QUIC, TCP/UDP or IP headers); keys: arrows or
// WASD drive, M cycles the display model.

import {
  decodeFrame,
  decodeMessage,
  encodeInput,
  helloFrame,
  lengthPrefixed,
  messageFrame,
  pingFrame,
  snapshotFields,
  StreamDeframer,
  KEYS,
} from "./codec.mjs";
import { HermiteView } from "./display.mjs";

const PIXELS_PER_METRE = 4;
const CAR_LENGTH = 3.0; // m
const CAR_WIDTH = 1.6; // m
const PING_INTERVAL = 0.1; // s
const CLOCK_WINDOW = 32; // samples (spec 004)
const CLOCK_PERCENTILE = 0.2;
const CLOCK_DEAD_BAND = 0.005; // s
const PATH_INTERVAL = 0.1; // s between path points
const PATH_POINTS = 300; // points kept per car
const MAX_FRAME = 4098; // bytes (lagless.web.frames.MAX_FRAME)
const LOSS_WINDOW = 2.0; // s of snapshot times the loss estimate looks at
const CLOSE_GOING_AWAY = 1001; // WebSocket close code of a server shutting down
const KEY_CODES = {
  ArrowUp: KEYS.UP,
  KeyW: KEYS.UP,
  ArrowDown: KEYS.DOWN,
  KeyS: KEYS.DOWN,
  ArrowLeft: KEYS.LEFT,
  KeyA: KEYS.LEFT,
  ArrowRight: KEYS.RIGHT,
  KeyD: KEYS.RIGHT,
};

const localNow = () => performance.now() / 1000;
const rgb = (c) => `rgb(${c[0]}, ${c[1]}, ${c[2]})`;

class Clock {
  constructor() {
    this.samples = [];
    this.offset = null; // server time - local time, s
    this.rtt = null; // smoothed RTT, s
  }

  get synchronized() {
    return this.offset !== null;
  }

  server(now) {
    return now + (this.offset ?? 0);
  }

  sample(sent, serverTime, received) {
    const rtt = received - sent;
    if (!(rtt >= 0)) return;
    const offset = serverTime + rtt / 2 - received;
    this.rtt = this.rtt === null ? rtt : this.rtt + (rtt - this.rtt) / 8;
    this.samples.push(rtt);
    if (this.samples.length > CLOCK_WINDOW) this.samples.shift();
    if (this.offset === null) {
      this.offset = offset;
      return;
    }
    const sorted = [...this.samples].sort((a, b) => a - b);
    const gate = sorted[Math.ceil(CLOCK_PERCENTILE * sorted.length) - 1];
    if (rtt <= gate && Math.abs(offset - this.offset) > CLOCK_DEAD_BAND) this.offset = offset;
  }
}

class Rates {
  constructor() {
    this.bytesIn = 0;
    this.bytesOut = 0;
    this.windowStart = localNow();
    this.windowIn = 0;
    this.windowOut = 0;
    this.kbpsIn = 0;
    this.kbpsOut = 0;
  }

  count(inBytes, outBytes) {
    this.bytesIn += inBytes;
    this.bytesOut += outBytes;
    this.windowIn += inBytes;
    this.windowOut += outBytes;
    const now = localNow();
    const span = now - this.windowStart;
    if (span >= 1) {
      this.kbpsIn = this.windowIn / span / 1000;
      this.kbpsOut = this.windowOut / span / 1000;
      this.windowStart = now;
      this.windowIn = 0;
      this.windowOut = 0;
    }
  }
}

export class ArenaClient {
  constructor(config, canvas, hudElement) {
    this.config = config;
    this.canvas = canvas;
    this.ctx = canvas.getContext("2d");
    this.hud = hudElement;
    this.fields = snapshotFields(config.snapshot_format);
    this.modelNames = Object.keys(config.display_models);
    this.model = this.modelNames[0];
    this.views = Object.fromEntries(this.modelNames.map((name) => [name, new Map()]));
    this.clock = new Clock();
    this.rates = new Rates();
    this.carId = null;
    this.keys = 0;
    this.sentKeys = 0;
    this.seq = 0;
    this.snapshots = 0;
    this.inputsSent = 0;
    this.newest = -Infinity;
    this.recent = []; // server times of the snapshots of the last LOSS_WINDOW s
    this.paths = new Map();
    this.nextPath = 0;
    this.shown = 0;
    this.state = "connecting";
    this.transport = "none";
    this.link = null;
    this.pinger = null;
    this.goodbye = null; // the server's reason, once it said goodbye
  }

  connect() {
    const offer = this.config.webtransport;
    const wanted = new URLSearchParams(location.search).get("transport");
    if (offer && typeof WebTransport === "function" && wanted !== "websocket") {
      this.connectWebTransport(offer).catch((error) => {
        console.warn("WebTransport failed, using WebSocket:", error);
        this.connectWebSocket();
      });
    } else {
      this.connectWebSocket();
    }
  }

  opened(name) {
    this.transport = name;
    this.send(helloFrame(this.config.protocol_id, this.config.link_version), true);
    this.ping();
    this.pinger = setInterval(() => this.ping(), PING_INTERVAL * 1000);
  }

  closed(why) {
    clearInterval(this.pinger);
    this.link = null;
    if (this.goodbye === null) this.state = `closed (${why})`;
  }

  // The server said why it drops us (a Goodbye message or a WebSocket close 1001 with a reason).
  serverClosed(reason) {
    if (this.goodbye !== null) return;
    this.goodbye = reason;
    this.state = `server closed: ${reason}`;
  }

  websocketClosed(code, reason) {
    if (code === CLOSE_GOING_AWAY && reason) this.serverClosed(reason);
    this.closed(`${code}${reason ? " " + reason : ""}`);
  }

  connectWebSocket() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const ws = new WebSocket(`${scheme}://${location.host}${this.config.ws_path}`);
    ws.binaryType = "arraybuffer";
    ws.onopen = () => {
      // the server closes the WebSocket itself right after its goodbye
      this.link = { send: (frame) => ws.send(frame), acknowledgeGoodbye: () => {} };
      this.opened("websocket");
    };
    ws.onmessage = (event) => this.receive(new Uint8Array(event.data));
    ws.onclose = (event) => this.websocketClosed(event.code, event.reason);
  }

  async connectWebTransport(offer) {
    // "localhost" may resolve to ::1 first, and the server's QUIC socket is IPv4 when it is
    // bound to 0.0.0.0 or 127.0.0.1: name the IPv4 loopback itself
    const host = location.hostname === "localhost" ? "127.0.0.1" : location.hostname;
    const session = new WebTransport(`https://${host}:${offer.port}${offer.path}`, {
      serverCertificateHashes: [
        { algorithm: "sha-256", value: new Uint8Array(offer.cert_sha256) },
      ],
    });
    await session.ready;
    const stream = await session.createBidirectionalStream();
    const reliable = stream.writable.getWriter();
    const datagrams = session.datagrams.writable.getWriter();
    this.link = {
      send: (frame, isReliable) =>
        (isReliable ? reliable.write(lengthPrefixed(frame)) : datagrams.write(frame)).catch(
          () => {},
        ),
      acknowledgeGoodbye: () => {
        try {
          session.close({ closeCode: 0, reason: "goodbye received" });
        } catch {
          // already closed
        }
      },
    };
    this.opened("webtransport");
    session.closed.then(
      () => this.closed("webtransport closed"),
      (error) => this.closed(`webtransport: ${error}`),
    );
    const pump = async (reader, split) => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        for (const frame of split(value)) this.receive(frame);
      }
    };
    const deframer = new StreamDeframer(MAX_FRAME);
    pump(session.datagrams.readable.getReader(), (datagram) => [datagram]).catch(() => {});
    pump(stream.readable.getReader(), (chunk) => deframer.feed(chunk)).catch(() => {});
  }

  send(frame, reliable) {
    if (this.link === null) return;
    this.link.send(frame, reliable);
    this.rates.count(0, frame.length);
  }

  ping() {
    this.send(pingFrame(localNow()), false);
  }

  receive(bytes) {
    this.rates.count(bytes.length, 0);
    const now = localNow();
    const frame = decodeFrame(bytes);
    if (frame === null) return;
    if (frame.kind === "pong") {
      this.clock.sample(frame.clientTime, frame.serverTime, now);
      this.flushKeys();
      return;
    }
    const message = decodeMessage(frame.payload, this.fields);
    if (message === null) return;
    if (message.kind === "welcome" && this.carId === null) {
      this.carId = message.carId;
      this.state = "connected";
      this.flushKeys();
    } else if (message.kind === "snapshot" && this.clock.synchronized) {
      this.snapshot(message, now);
    } else if (message.kind === "goodbye") {
      this.serverClosed(message.reason);
      this.link?.acknowledgeGoodbye();
    }
  }

  snapshot(snapshot, now) {
    const serverNow = this.clock.server(now);
    const newest = snapshot.t > this.newest;
    this.newest = Math.max(this.newest, snapshot.t);
    const present = new Set(snapshot.cars.map((car) => car.id));
    for (const name of this.modelNames) {
      const views = this.views[name];
      if (newest) {
        for (const id of [...views.keys()]) if (!present.has(id)) views.delete(id);
      }
      for (const car of snapshot.cars) {
        let view = views.get(car.id);
        if (view === undefined) {
          view = new HermiteView(this.config.display_models[name]);
          views.set(car.id, view);
        }
        view.rtt = this.clock.rtt ?? 0;
        view.apply({ t: snapshot.t, ...car }, now, serverNow);
      }
    }
    this.snapshots += 1;
    this.recent.push(snapshot.t);
    while (this.recent.length && this.recent[0] < this.newest - LOSS_WINDOW) this.recent.shift();
  }

  // Fraction of the server's snapshots of the last LOSS_WINDOW s that never arrived (their
  // times are on the snapshot_rate grid): 0 over WebSocket, datagrams lost over WebTransport.
  loss() {
    if (this.recent.length < 2) return 0;
    const expected = Math.round((this.newest - this.recent[0]) * this.config.snapshot_rate) + 1;
    return Math.max(0, 1 - this.recent.length / expected);
  }

  setKeys(keys) {
    this.keys = keys;
    this.flushKeys();
  }

  flushKeys() {
    if (this.carId === null || !this.clock.synchronized || this.keys === this.sentKeys) return;
    this.seq = (this.seq + 1) & 0xffff;
    const event = encodeInput(this.seq, this.keys, this.clock.server(localNow()));
    this.send(messageFrame(this.config.channels.reliable, event), true);
    this.sentKeys = this.keys;
    this.inputsSent += 1;
  }

  setModel(name) {
    if (name in this.config.display_models) this.model = name;
  }

  cycleModel() {
    const next = (this.modelNames.indexOf(this.model) + 1) % this.modelNames.length;
    this.model = this.modelNames[next];
  }

  cars(now) {
    const out = new Map();
    for (const [id, view] of this.views[this.model]) {
      const shown = view.display(now);
      if (shown !== null) out.set(id, shown);
    }
    return out;
  }

  hudLines() {
    const rtt = this.clock.rtt === null ? 0 : this.clock.rtt * 1000;
    return [
      `RTT ${rtt.toFixed(0)} ms   loss ${(100 * this.loss()).toFixed(1)} %   ` +
        `in ${this.rates.kbpsIn.toFixed(2)} kB/s   ` +
        `out ${this.rates.kbpsOut.toFixed(2)} kB/s   (payload)`,
      `model ${this.model}   own car as the model   cars ${this.shown}   ` +
        `${this.state} via ${this.transport}`,
      "arrows/WASD drive   M model",
    ];
  }

  toScreen(x, y) {
    return [x * PIXELS_PER_METRE, (this.config.arena.height - y) * PIXELS_PER_METRE];
  }

  samplePaths(cars, now) {
    if (now < this.nextPath) return;
    this.nextPath = now + PATH_INTERVAL;
    for (const [id, car] of cars) {
      let trail = this.paths.get(id);
      if (trail === undefined) {
        trail = [];
        this.paths.set(id, trail);
      }
      trail.push([car.x, car.y]);
      if (trail.length > PATH_POINTS) trail.shift();
    }
    for (const id of [...this.paths.keys()]) if (!cars.has(id)) this.paths.delete(id);
  }

  draw() {
    this.rates.count(0, 0);
    const now = localNow();
    const cars = this.cars(now);
    this.shown = cars.size;
    this.samplePaths(cars, now);
    const { ctx, canvas } = this;
    const colours = this.config.colours;
    ctx.fillStyle = rgb(colours.background);
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.strokeStyle = rgb(colours.wall);
    ctx.lineWidth = 3;
    ctx.strokeRect(1.5, 1.5, canvas.width - 3, canvas.height - 3);
    ctx.lineWidth = 1;
    for (const [id, trail] of this.paths) {
      if (trail.length < 2) continue;
      ctx.strokeStyle = rgb(id === this.carId ? colours.player_path : colours.path);
      ctx.beginPath();
      trail.forEach(([x, y], i) => {
        const [sx, sy] = this.toScreen(x, y);
        if (i === 0) ctx.moveTo(sx, sy);
        else ctx.lineTo(sx, sy);
      });
      ctx.stroke();
    }
    for (const [id, car] of cars) this.drawCar(car, id === this.carId ? colours.player : colours.car);
    const lines = this.hudLines();
    ctx.font = "14px sans-serif";
    const width = Math.max(...lines.map((line) => ctx.measureText(line).width)) + 12;
    ctx.fillStyle = "rgba(0, 0, 0, 0.75)";
    ctx.fillRect(6, 6, width, lines.length * 18 + 10);
    ctx.fillStyle = "rgb(235, 235, 235)";
    lines.forEach((line, i) => ctx.fillText(line, 12, 26 + i * 18));
    this.hud.textContent = lines.join("\n");
  }

  drawCar(car, colour) {
    const [cx, cy] = this.toScreen(car.x, car.y);
    const c = Math.cos(car.heading);
    const s = Math.sin(car.heading);
    const hl = (CAR_LENGTH * PIXELS_PER_METRE) / 2;
    const hw = (CAR_WIDTH * PIXELS_PER_METRE) / 2;
    const ctx = this.ctx;
    ctx.fillStyle = rgb(colour);
    ctx.beginPath();
    [
      [hl, hw],
      [hl, -hw],
      [-hl, -hw],
      [-hl, hw],
    ].forEach(([u, v], i) => {
      // screen y points down: a world rotation by +heading is -heading on screen
      const px = cx + u * c - v * s;
      const py = cy - (u * s + v * c);
      if (i === 0) ctx.moveTo(px, py);
      else ctx.lineTo(px, py);
    });
    ctx.closePath();
    ctx.fill();
  }

  // What a test (or the console) can read: window.lagless.status().
  status() {
    return {
      state: this.state,
      goodbye: this.goodbye,
      transport: this.transport,
      carId: this.carId,
      snapshots: this.snapshots,
      inputsSent: this.inputsSent,
      carsShown: this.shown,
      model: this.model,
      rttMs: this.clock.rtt === null ? null : this.clock.rtt * 1000,
      loss: this.loss(),
      kbpsIn: this.rates.kbpsIn,
      kbpsOut: this.rates.kbpsOut,
      bytesIn: this.rates.bytesIn,
      bytesOut: this.rates.bytesOut,
    };
  }
}

export async function start() {
  const config = await (await fetch("config.json", { cache: "no-store" })).json();
  const canvas = document.getElementById("arena");
  canvas.width = config.arena.width * PIXELS_PER_METRE;
  canvas.height = config.arena.height * PIXELS_PER_METRE;
  const client = new ArenaClient(config, canvas, document.getElementById("hud"));
  window.lagless = client;
  const held = new Set();
  const keysOf = () => [...held].reduce((keys, code) => keys | KEY_CODES[code], 0);
  window.addEventListener("keydown", (event) => {
    if (event.code in KEY_CODES) {
      held.add(event.code);
      client.setKeys(keysOf());
      event.preventDefault();
    } else if (event.code === "KeyM" && !event.repeat) {
      client.cycleModel();
    }
  });
  window.addEventListener("keyup", (event) => {
    if (event.code in KEY_CODES) {
      held.delete(event.code);
      client.setKeys(keysOf());
      event.preventDefault();
    }
  });
  window.addEventListener("blur", () => {
    held.clear();
    client.setKeys(0);
  });
  client.connect();
  const frame = () => {
    client.draw();
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
}
