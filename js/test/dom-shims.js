// What jsdom lacks and uPlot touches when it is imported: matchMedia.
if (typeof window !== "undefined" && !window.matchMedia) {
  window.matchMedia = (query) => ({
    matches: false,
    media: query,
    addListener() {},
    removeListener() {},
    addEventListener() {},
    removeEventListener() {},
  });
  globalThis.matchMedia = window.matchMedia;
}

// jsdom has no canvas: a 2D context that accepts every call and remembers what was set is
// enough for uPlot to lay out and "draw". Texts passed to fillText are kept for assertions.
export const canvasTexts = [];

function fakeContext(canvas) {
  const state = {
    canvas,
    measureText: (text) => ({ width: String(text).length * 6 }),
    getLineDash: () => [],
    fillText: (text) => canvasTexts.push(String(text)),
    createLinearGradient: () => ({ addColorStop() {} }),
  };
  return new Proxy(state, {
    get(target, key) {
      if (key in target) return target[key];
      return () => {};
    },
    set(target, key, value) {
      target[key] = value;
      return true;
    },
  });
}

if (typeof HTMLCanvasElement !== "undefined") {
  HTMLCanvasElement.prototype.getContext = function getContext() {
    if (!this._fakeContext) this._fakeContext = fakeContext(this);
    return this._fakeContext;
  };
}

if (typeof globalThis.Path2D === "undefined") {
  globalThis.Path2D = class Path2D {
    moveTo() {}
    lineTo() {}
    rect() {}
    arc() {}
    closePath() {}
    addPath() {}
    bezierCurveTo() {}
    quadraticCurveTo() {}
  };
}
