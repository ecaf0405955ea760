// The widget's `columns` as the kernel sends them: each column with its metric's registry
// metadata. registry.json is the Python registry written out (tests/test_registry.py checks it
// still is), so these fixtures can't drift from what the kernel sends.
import registry from "./registry.json";

/** Metadata for each timeline column name (`gpu0.nvml.mem_used`, `host.rss`); unknown: name only. */
export function columns(...names) {
  return names.map((name) => {
    const parts = name.split(".");
    const host = parts.length === 2 && parts[0] === "host";
    const [source, metric] = host ? ["host", parts[1]] : [parts[1], parts[2]];
    const m = registry.find((r) => r.source === source && r.name === metric);
    if (!m) return { name, device: null, unit: "", panel: "" };
    return { ...m, name, metric: m.name, device: host ? null : Number(parts[0].slice(3)) };
  });
}
