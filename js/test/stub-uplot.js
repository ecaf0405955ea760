// A uPlot stand-in for jsdom (which has no canvas): it keeps the options and data it is given,
// maps values to pixels linearly, and records what the draw hooks paint.

export function recordingContext() {
  const calls = [];
  const ctx = {
    calls,
    font: "10px sans-serif",
    measureText: (text) => ({ width: String(text).length * 6 }),
  };
  for (const name of [
    "save", "restore", "beginPath", "rect", "clip", "fillRect", "moveTo", "lineTo", "stroke",
    "setLineDash", "fillText",
  ]) {
    // (a fill also records its colour, after its arguments)
    ctx[name] =
      name === "fillRect"
        ? (...args) => calls.push([name, ...args, ctx.fillStyle])
        : (...args) => calls.push([name, ...args]);
  }
  return ctx;
}

export class StubUPlot {
  static instances = [];
  static pxRatio = 1;

  constructor(opts, data, target) {
    this.opts = opts;
    this.data = data;
    this.series = opts.series;
    this.root = document.createElement("div");
    this.root.className = "uplot stub";
    this.over = document.createElement("div");
    this.root.append(this.over);
    target.append(this.root);
    this.ctx = recordingContext();
    this.bbox = { left: 50, top: 0, width: opts.width - 50, height: opts.height - 30 };
    this.scales = { x: { min: 0, max: 1 }, y: { min: 0, max: 1 } };
    this.cursor = { left: -10 };
    this.destroyed = false;
    this.setDataCalls = 0;
    this.redraws = 0;
    StubUPlot.instances.push(this);
  }

  setData(data) {
    this.data = data;
    this.setDataCalls += 1;
    const [min, max] = this.opts.scales.x.range(this, null, null, "x");
    this.scales.x = { min, max };
    const ys = data.slice(1).flat().filter((v) => v != null);
    const yr = this.opts.scales.y.range(this, ys.length ? Math.min(...ys) : null, ys.length ? Math.max(...ys) : null, "y");
    this.scales.y = { min: yr[0], max: yr[1] };
  }

  setSize({ width, height }) {
    this.opts.width = width;
    this.opts.height = height;
  }

  redraw() {
    this.redraws += 1;
  }

  valToPos(v, scale) {
    const { min, max } = this.scales[scale];
    const f = (v - min) / (max - min);
    return scale === "x" ? this.bbox.left + f * this.bbox.width : this.bbox.top + (1 - f) * this.bbox.height;
  }

  posToVal(pos, scale) {
    const { min, max } = this.scales[scale];
    return min + (pos / this.bbox.width) * (max - min);
  }

  /** Run the hooks uPlot runs for one paint. */
  paint() {
    for (const fn of this.opts.hooks.drawClear ?? []) fn(this);
    for (const fn of this.opts.hooks.draw ?? []) fn(this);
  }

  /** Move the cursor to CSS px `left` in the plot area and run the setCursor hooks. */
  hover(left) {
    this.cursor.left = left;
    for (const fn of this.opts.hooks.setCursor ?? []) fn(this);
  }

  destroy() {
    this.destroyed = true;
    this.root.remove();
  }
}
