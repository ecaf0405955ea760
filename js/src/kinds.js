// Each cell's memory by kind (the `kinds` of its ledger entry: its end's, then what its peak
// held beyond, per GPU), as the chart's "by kind" bands and their legend draw it.

// Each kind of memory's colour in the "by kind" bands: the same as %gpumon explain's bars
// (CATEGORY_COLORS in _views/palette.py; tests/test_palette.py holds them equal); a framework's
// unused reserve and any other kind in grey.
export const KIND_COLORS = {
  parameters: "#2563eb",
  gradients: "#60a5fa",
  "optimizer state": "#f59e0b",
  buffers: "#a855f7",
  "arrays held by variables": "#10b981",
  "outputs and tracebacks": "#ec4899",
  unexplained: "#ef4444",
  "activations and temporaries": "#f97316",
};
export const OTHER_COLOR = "#94a3b8";
// Each framework's arrays held by variables ("arrays held by variables (X)") are one kind in
// the bands, its green, and one legend entry: the tips name each framework's.
const ARRAYS = "arrays held by variables";
/** The kind `kind` is drawn as: each framework's arrays as the arrays' kind. */
export function kindGroup(kind) {
  return kind.startsWith(`${ARRAYS} (`) ? ARRAYS : kind;
}
/** The colour of memory of kind `kind`. */
export function kindColor(kind) {
  return KIND_COLORS[kindGroup(kind)] ?? OTHER_COLOR;
}

/** Cell `c`'s memory on GPU `device` by kind, [kind, bytes] in its order (well-formed only). */
export function kindsOn(c, device) {
  if (!Array.isArray(c.kinds)) return [];
  return c.kinds
    .filter((k) => k && k.gpu === device && typeof k.kind === "string" && Number.isFinite(k.bytes) && k.bytes > 0)
    .map((k) => [k.kind, k.bytes]);
}
