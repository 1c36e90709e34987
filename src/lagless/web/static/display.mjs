// lagless browser client: the display models of the demo (spec 004 §5.2), ported from
// lagless.smoothing.hermite.HermiteReceiver.
//
// One HermiteView per car keeps a time-ordered node list in server time and draws the car at
// render_time = server_now - (render_delay + rtt_factor x RTT) on the cubic Hermite spline
// through the nodes (velocities as tangents). Each snapshot runs the 8-step algorithm: drop
// stale updates, evaluate the old curve at t(P3) (P5), replace the extrapolated node by P5,
// blend P5 into P3 over correction_time, append P4 = dead reckoning of P3 over
// extrapolation_time (order 1: constant velocity, order 2: constant acceleration from the last
// two updates). The demo's four models are settings of this one view (/config.json):
// "dr+0.15rtt" (the default), "snap", "delay100" (interpolation 100 ms back) and "dr".
// tests/web/test_js_codec.py checks it against the Python receiver.

const TWO_PI = 2 * Math.PI;
const MAX_NODES = 64;

export function wrapAngle(angle) {
  let wrapped = angle - TWO_PI * Math.round(angle / TWO_PI);
  if (wrapped <= -Math.PI) wrapped += TWO_PI;
  if (wrapped > Math.PI) wrapped -= TWO_PI;
  return wrapped;
}

export function blendHeading(start, end, f) {
  return wrapAngle(start + wrapAngle(end - start) * f);
}

// lagless.smoothing.convergence.hermite: position and its time derivative.
export function hermite(s, delta, p0, v0, p1, v1) {
  const s2 = s * s;
  const s3 = s2 * s;
  const p =
    (2 * s3 - 3 * s2 + 1) * p0 +
    (s3 - 2 * s2 + s) * delta * v0 +
    (-2 * s3 + 3 * s2) * p1 +
    (s3 - s2) * delta * v1;
  const dp =
    ((6 * s2 - 6 * s) * p0 +
      (3 * s2 - 4 * s + 1) * delta * v0 +
      (-6 * s2 + 6 * s) * p1 +
      (3 * s2 - 2 * s) * delta * v1) /
    delta;
  return [p, dp];
}

class Node {
  constructor(t, values, predicted) {
    this.t = t;
    this.values = values; // [x, y, vx, vy, heading]
    this.predicted = predicted;
    this.blend = null; // [start, duration, target]
  }

  blendTo(target, start, duration) {
    this.blend = [start, duration, target];
  }

  at(now) {
    if (this.blend === null) return this.values;
    const [start, duration, target] = this.blend;
    const f = duration <= 0 ? 1 : (now - start) / duration;
    if (f >= 1) {
      this.values = target;
      this.blend = null;
      return target;
    }
    const g = Math.max(0, f);
    const [x0, y0, vx0, vy0, h0] = this.values;
    const [x1, y1, vx1, vy1, h1] = target;
    return [
      x0 + (x1 - x0) * g,
      y0 + (y1 - y0) * g,
      vx0 + (vx1 - vx0) * g,
      vy0 + (vy1 - vy0) * g,
      blendHeading(h0, h1, g),
    ];
  }
}

export class HermiteView {
  // model: {render_delay, rtt_factor, extrapolation_time, correction_time, dr_order} (seconds).
  constructor(model) {
    this.model = model;
    this.nodes = [];
    this.offset = 0; // server time - local time at the last update, s
    this.last = null; // the newest real update {t, x, y, vx, vy, heading}
    this.rtt = 0;
  }

  renderDelay() {
    return this.model.render_delay + this.model.rtt_factor * this.rtt;
  }

  curve(t, now) {
    const nodes = this.nodes;
    let i = 0;
    while (i < nodes.length && nodes[i].t <= t) i += 1;
    if (i === 0 || i === nodes.length) {
      const [x, y, , , h] = nodes[i === 0 ? 0 : nodes.length - 1].at(now);
      return { x, y, vx: 0, vy: 0, heading: h };
    }
    const a = nodes[i - 1];
    const b = nodes[i];
    const [xa, ya, vxa, vya, ha] = a.at(now);
    const [xb, yb, vxb, vyb, hb] = b.at(now);
    const delta = b.t - a.t;
    const s = (t - a.t) / delta;
    const [x, vx] = hermite(s, delta, xa, vxa, xb, vxb);
    const [y, vy] = hermite(s, delta, ya, vya, yb, vyb);
    return { x, y, vx, vy, heading: blendHeading(ha, hb, s) };
  }

  // A car's state from a snapshot stamped t (server time), received at local time now.
  apply(state, now, serverNow) {
    const m = this.model;
    const last = this.last;
    if (last !== null && state.t <= last.t) return false;
    this.offset = serverNow - now;
    let ax = 0;
    let ay = 0;
    if (m.dr_order === 2 && last !== null) {
      const span = state.t - last.t;
      ax = (state.vx - last.vx) / span;
      ay = (state.vy - last.vy) / span;
    }
    this.last = state;
    const target = [state.x, state.y, state.vx, state.vy, state.heading];
    const nodes = this.nodes;
    const tail = nodes.length ? nodes[nodes.length - 1] : null;
    if (tail !== null && tail.predicted && m.correction_time > 0) {
      const p5 = this.curve(state.t, now);
      nodes.pop();
      const node = new Node(state.t, [p5.x, p5.y, p5.vx, p5.vy, p5.heading], false);
      node.blendTo(target, now, m.correction_time);
      nodes.push(node);
    } else {
      if (tail !== null && tail.predicted) nodes.pop();
      nodes.push(new Node(state.t, target, false));
    }
    if (m.extrapolation_time > 0) {
      const e = m.extrapolation_time;
      nodes.push(
        new Node(
          state.t + e,
          [
            state.x + state.vx * e + 0.5 * ax * e * e,
            state.y + state.vy * e + 0.5 * ay * e * e,
            state.vx + ax * e,
            state.vy + ay * e,
            state.heading,
          ],
          true,
        ),
      );
    }
    if (nodes.length > MAX_NODES) nodes.splice(0, nodes.length - MAX_NODES);
    return true;
  }

  // Where to draw the car at local time now, or null before any snapshot.
  display(now) {
    const nodes = this.nodes;
    if (!nodes.length) return null;
    const render = now + this.offset - this.renderDelay();
    while (nodes.length >= 2 && nodes[1].t <= render) {
      nodes[0].at(now);
      nodes.shift();
    }
    return this.curve(render, now);
  }
}
