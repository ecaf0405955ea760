// A stand-in for anywidget's model: get / on / off / send, Backbone-style change events, and a
// way to deliver custom messages. It counts listeners so tests can check cleanup.

export class FakeModel {
  constructor(state = {}) {
    this.state = {
      columns: [],
      devices: [],
      history: new DataView(new ArrayBuffer(0)),
      cells: [],
      marks: [],
      status: "",
      interval: 0.1,
      ...state,
    };
    this.handlers = new Map();
    this.sent = [];
  }

  get(name) {
    return this.state[name];
  }

  /** Set traits, then fire their change events (all values are set before any event fires). */
  set(values) {
    Object.assign(this.state, values);
    for (const name of Object.keys(values)) this.emit(`change:${name}`);
  }

  on(event, fn) {
    if (!this.handlers.has(event)) this.handlers.set(event, []);
    this.handlers.get(event).push(fn);
  }

  off(event, fn) {
    const list = this.handlers.get(event);
    if (!list) return;
    if (!fn) this.handlers.delete(event);
    else this.handlers.set(event, list.filter((f) => f !== fn));
  }

  send(msg) {
    this.sent.push(msg);
  }

  emit(event, ...args) {
    for (const fn of [...(this.handlers.get(event) ?? [])]) fn(...args);
  }

  /** What the kernel's `widget.send(content, buffers)` does on this side. */
  custom(msg, buffers) {
    this.emit("msg:custom", msg, buffers);
  }

  listenerCount(event) {
    if (event) return (this.handlers.get(event) ?? []).length;
    let n = 0;
    for (const list of this.handlers.values()) n += list.length;
    return n;
  }
}

/** requestAnimationFrame / cancelAnimationFrame under the test's control. */
export function manualFrames() {
  const pending = new Map();
  let next = 0;
  return {
    pending,
    requestFrame(fn) {
      next += 1;
      pending.set(next, fn);
      return next;
    },
    cancelFrame(id) {
      pending.delete(id);
    },
    /** Run the frames requested so far; returns how many ran. */
    flush() {
      const fns = [...pending.values()];
      pending.clear();
      for (const fn of fns) fn();
      return fns.length;
    },
  };
}

/** An IntersectionObserver whose entries the test reports with `report(el, isIntersecting)`. */
export class FakeIntersectionObserver {
  static instances = [];

  constructor(callback) {
    this.callback = callback;
    this.targets = new Set();
    this.disconnected = false;
    FakeIntersectionObserver.instances.push(this);
  }

  observe(el) {
    this.targets.add(el);
  }

  unobserve(el) {
    this.targets.delete(el);
  }

  disconnect() {
    this.targets.clear();
    this.disconnected = true;
  }

  report(el, isIntersecting) {
    if (this.targets.has(el)) this.callback([{ target: el, isIntersecting }]);
  }
}
