// lagless browser client: bit unpacking, the physics messages and the WebSocket link frames.
//
// A port of lagless.wire's BitReader/BitWriter (bits LSB first), lagless.physics.codec (input
// events, snapshots, welcomes, goodbyes; spec 004 §5.1.1) and lagless.web.frames (HELLO, MESSAGE, PING,
// PONG). The snapshot ranges come from the server's /config.json (SnapshotFormat), so both ends
// compute the same field widths. tests/web/test_js_codec.py runs this file in node against the
// Python encoder. Decoders return null on bad bytes; they never throw to the caller.

export const TWO_PI = 2 * Math.PI;
export const MAX_CARS = 64;
export const KIND_INPUT = 0;
export const KIND_SNAPSHOT = 1;
export const KIND_WELCOME = 2;
export const KIND_GOODBYE = 3;
export const MAX_GOODBYE_BYTES = 120; // UTF-8 bytes of a goodbye's reason (a 7-bit length)
export const FRAME_HELLO = 1;
export const FRAME_MESSAGE = 2;
export const FRAME_PING = 3;
export const FRAME_PONG = 4;
export const KEYS = { UP: 1, DOWN: 2, LEFT: 4, RIGHT: 8 };
const STEER_RESOLUTION = 1 / 127;

class DecodeError extends Error {}

// lagless.wire.quantize.quantization_steps: the largest code of [lo, hi] at resolution.
export function quantizationSteps(lo, hi, resolution) {
  const x = (hi - lo) / resolution;
  const nearest = Math.round(x);
  if (Math.abs(x - nearest) <= 1e-9 * Math.max(1, x)) return nearest;
  return Math.ceil(x);
}

function bitLength(n) {
  let bits = 0;
  while (2 ** bits <= n) bits += 1;
  return bits;
}

// math.remainder(x, 2π): x minus the nearest multiple of 2π (ties to even).
function remainder2pi(x) {
  const q = x / TWO_PI;
  let n = Math.round(q);
  if (Math.abs(q - Math.trunc(q)) === 0.5 && n % 2 !== 0) n -= 1;
  return x - n * TWO_PI;
}

export class BitReader {
  constructor(bytes) {
    this.bytes = bytes;
    this.pos = 0; // bits read
  }

  get bitsRemaining() {
    return this.bytes.length * 8 - this.pos;
  }

  // An unsigned field of n <= 32 bits, LSB first.
  bits(n) {
    if (n > this.bitsRemaining) throw new DecodeError(`truncated: need ${n} bits`);
    let value = 0;
    let got = 0;
    while (got < n) {
      const offset = this.pos & 7;
      const take = Math.min(8 - offset, n - got);
      const chunk = (this.bytes[this.pos >> 3] >> offset) & ((1 << take) - 1);
      value += chunk * 2 ** got;
      got += take;
      this.pos += take;
    }
    return value;
  }

  f64() {
    const view = new DataView(new ArrayBuffer(8));
    view.setUint32(0, this.bits(32), true);
    view.setUint32(4, this.bits(32), true);
    const value = view.getFloat64(0, true);
    if (!Number.isFinite(value)) throw new DecodeError("time is not finite");
    return value;
  }

  range(lo, hi) {
    const offset = this.bits(bitLength(hi - lo));
    if (offset > hi - lo) throw new DecodeError("value outside its range");
    return lo + offset;
  }

  float(lo, hi, resolution) {
    const n = quantizationSteps(lo, hi, resolution);
    const q = this.bits(bitLength(n));
    if (q > n) throw new DecodeError("quantised code beyond its range");
    const result = lo + q * resolution;
    return result > hi ? hi : result;
  }
}

export class BitWriter {
  constructor() {
    this.out = [];
    this.pos = 0;
  }

  bits(value, n) {
    let rest = value;
    for (let i = 0; i < n; i += 1) {
      const bit = rest % 2;
      rest = Math.floor(rest / 2);
      if ((this.pos & 7) === 0) this.out.push(0);
      this.out[this.pos >> 3] |= bit << (this.pos & 7);
      this.pos += 1;
    }
  }

  f64(value) {
    const view = new DataView(new ArrayBuffer(8));
    view.setFloat64(0, value, true);
    this.bits(view.getUint32(0, true), 32);
    this.bits(view.getUint32(4, true), 32);
  }

  bytes() {
    return new Uint8Array(this.out);
  }
}

// The per-field ranges of a SnapshotFormat (the server's, from /config.json).
export function snapshotFields(fmt) {
  const p = fmt.position_limit;
  const w = fmt.angular_velocity_limit;
  return {
    position: [-p, p, fmt.position_resolution],
    velocity: [fmt.velocity_min, fmt.velocity_max, fmt.velocity_resolution],
    omega: [-w, w, fmt.angular_velocity_resolution],
    headingBits: fmt.heading_bits,
  };
}

function readCar(r, fields) {
  const id = r.bits(8);
  const x = r.float(...fields.position);
  const y = r.float(...fields.position);
  const code = r.bits(fields.headingBits);
  const heading = remainder2pi((code * TWO_PI) / 2 ** fields.headingBits);
  const vx = r.float(...fields.velocity);
  const vy = r.float(...fields.velocity);
  const omega = r.float(...fields.omega);
  const steer = r.float(-1, 1, STEER_RESOLUTION);
  const keys = r.bits(4);
  const inputSeq = r.bits(16);
  return { id, x, y, heading, vx, vy, omega, steer, keys, inputSeq };
}

// lagless.physics.codec.decode_message: {kind: "input"|"snapshot"|"welcome"|"goodbye", ...}
// or null (a goodbye's reason that is not UTF-8 is null too).
export function decodeMessage(bytes, fields) {
  try {
    const r = new BitReader(bytes);
    const kind = r.bits(2);
    let message;
    if (kind === KIND_INPUT) {
      const seq = r.bits(16);
      const keys = r.bits(4);
      message = { kind: "input", seq, keys, t: r.f64() };
    } else if (kind === KIND_SNAPSHOT) {
      const t = r.f64();
      const count = r.range(0, MAX_CARS);
      const cars = [];
      for (let i = 0; i < count; i += 1) cars.push(readCar(r, fields));
      message = { kind: "snapshot", t, cars };
    } else if (kind === KIND_WELCOME) {
      message = { kind: "welcome", carId: r.bits(8) };
    } else {
      const text = new Uint8Array(r.range(0, MAX_GOODBYE_BYTES));
      for (let i = 0; i < text.length; i += 1) text[i] = r.bits(8);
      message = { kind: "goodbye", reason: utf8(text) };
      if (message.reason === null) return null;
    }
    const left = r.bitsRemaining;
    if (left >= 8 || r.bits(left) !== 0) return null;
    return message;
  } catch (error) {
    if (error instanceof DecodeError) return null;
    throw error;
  }
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

function utf8(bytes) {
  try {
    return UTF8.decode(bytes);
  } catch {
    return null;
  }
}

// lagless.physics.codec.encode_message of an InputEvent: 86 bits, 11 bytes.
export function encodeInput(seq, keys, t) {
  const w = new BitWriter();
  w.bits(KIND_INPUT, 2);
  w.bits(seq & 0xffff, 16);
  w.bits(keys & 15, 4);
  w.f64(t);
  return w.bytes();
}

// lagless.web.frames: the link frames.
export function helloFrame(protocolId, version) {
  const view = new DataView(new ArrayBuffer(6));
  view.setUint8(0, FRAME_HELLO);
  view.setUint32(1, protocolId, true);
  view.setUint8(5, version);
  return new Uint8Array(view.buffer);
}

export function messageFrame(channel, payload) {
  const out = new Uint8Array(payload.length + 2);
  out[0] = FRAME_MESSAGE;
  out[1] = channel;
  out.set(payload, 2);
  return out;
}

export function pingFrame(clientTime) {
  const view = new DataView(new ArrayBuffer(9));
  view.setUint8(0, FRAME_PING);
  view.setFloat64(1, clientTime, true);
  return new Uint8Array(view.buffer);
}

// {kind: "message", channel, payload} | {kind: "pong", clientTime, serverTime} | null.
export function decodeFrame(bytes) {
  if (bytes.length === 0) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes[0] === FRAME_MESSAGE && bytes.length >= 3) {
    return { kind: "message", channel: bytes[1], payload: bytes.subarray(2) };
  }
  if (bytes[0] === FRAME_PONG && bytes.length === 17) {
    const clientTime = view.getFloat64(1, true);
    const serverTime = view.getFloat64(9, true);
    if (!Number.isFinite(clientTime) || !Number.isFinite(serverTime)) return null;
    return { kind: "pong", clientTime, serverTime };
  }
  return null;
}

// WebTransport's reliable stream (lagless.io.webtransport.StreamDeframer): each frame is a u16
// little-endian length and the frame.
export function lengthPrefixed(frame) {
  const out = new Uint8Array(frame.length + 2);
  out[0] = frame.length & 0xff;
  out[1] = frame.length >> 8;
  out.set(frame, 2);
  return out;
}

export class StreamDeframer {
  constructor(maxFrame) {
    this.maxFrame = maxFrame;
    this.buffer = new Uint8Array(0);
    this.broken = false;
  }

  // Take more bytes; return the frames they complete.
  feed(chunk) {
    if (this.broken) return [];
    const joined = new Uint8Array(this.buffer.length + chunk.length);
    joined.set(this.buffer);
    joined.set(chunk, this.buffer.length);
    let buffer = joined;
    const frames = [];
    while (buffer.length >= 2) {
      const size = buffer[0] | (buffer[1] << 8);
      if (size < 1 || size > this.maxFrame) {
        this.broken = true;
        this.buffer = new Uint8Array(0);
        return frames;
      }
      if (buffer.length < 2 + size) break;
      frames.push(buffer.slice(2, 2 + size));
      buffer = buffer.subarray(2 + size);
    }
    this.buffer = buffer.slice();
    return frames;
  }
}
