// Other nodes as the cluster view shows them (pure functions, no DOM): the hosts to offer, the
// panels of one host (built from the `node_columns` registry metadata: per panel one line per
// GPU, MIG instances as their own), which hosts get panels in "all nodes" and which only a
// summary row, and the figures of a summary row and of a host's GPU list.

export const MAX_NODE_PANELS = 8; // nodes drawn as panels at once; the rest are summary rows
export const MAX_SUMMARY_ROWS = 500; // the kernel keeps at most 128 remote GPUs; a bound anyway

const PALETTE = ["#3b82f6", "#f59e0b", "#10b981", "#8b5cf6", "#06b6d4", "#ef4444", "#ec4899", "#64748b"];
const TITLE = { memory: "memory", util: "utilization" };

function text(x) {
  return typeof x === "string" ? x : "";
}

/** The well-formed entries of a `nodes` trait value: {host, gpus: [{gpu, model, ...}], last_seen}. */
export function validNodes(value) {
  if (!Array.isArray(value)) return [];
  return value
    .filter((n) => n && typeof n === "object" && typeof n.host === "string" && n.host)
    .map((n) => ({
      host: n.host,
      last_seen: Number.isFinite(n.last_seen) ? n.last_seen : null,
      gpus: (Array.isArray(n.gpus) ? n.gpus : [])
        .filter((g) => g && typeof g === "object" && typeof g.gpu === "string")
        .map((g) => ({
          gpu: g.gpu,
          model: text(g.model),
          uuid: text(g.uuid),
          pod: text(g.pod),
          namespace: text(g.namespace),
          origin: text(g.origin),
          mig_profile: text(g.mig_profile),
        })),
    }));
}

/** The cluster columns (`node_columns` entries) that name a node and a GPU. */
export function validNodeColumns(value) {
  if (!Array.isArray(value)) return [];
  return value.filter((c) => c && typeof c === "object" && typeof c.node === "string" && typeof c.gpu === "string");
}

/** [GPU number, MIG instance (-1: the GPU itself), name]: gpu2 before gpu10, MIG after its GPU. */
function gpuKey(gpu) {
  const m = /^gpu(\d+)(?:-mig(\d+))?$/.exec(gpu);
  if (!m) return [Infinity, -1, gpu];
  return [Number(m[1]), m[2] === undefined ? -1 : Number(m[2]), gpu];
}

/** Sort order of GPU names, as the kernel's (gpu2 before gpu10; a GPU's MIG instances after it). */
export function compareGpus(a, b) {
  const ka = gpuKey(a);
  const kb = gpuKey(b);
  for (let i = 0; i < 2; i++) if (ka[i] !== kb[i]) return ka[i] < kb[i] ? -1 : 1;
  return ka[2] < kb[2] ? -1 : ka[2] > kb[2] ? 1 : 0;
}

/** "gpu0" as "GPU 0", "gpu0-mig3" as "GPU 0 MIG 3"; another name as it is. */
export function gpuLabel(gpu) {
  const m = /^gpu(\d+)(?:-mig(\d+))?$/.exec(gpu);
  if (!m) return gpu;
  return m[2] === undefined ? `GPU ${m[1]}` : `GPU ${m[1]} MIG ${m[2]}`;
}

/** Every host, by name: those the `nodes` trait lists and those with columns. */
export function hostsOf(nodes, columns) {
  const hosts = new Set(nodes.map((n) => n.host));
  for (const c of columns) if (c.node) hosts.add(c.node);
  return [...hosts].sort();
}

/** A host's GPUs by name, in order, each with its columns by metric ({mem_used: name, ...}). */
export function gpusOf(columns, host) {
  const byGpu = new Map();
  for (const c of columns) {
    if (c.node !== host) continue;
    if (!byGpu.has(c.gpu)) byGpu.set(c.gpu, {});
    byGpu.get(c.gpu)[c.metric] = c.name;
  }
  return [...byGpu.keys()].sort(compareGpus).map((gpu) => ({ gpu, columns: byGpu.get(gpu) }));
}

/**
 * A host's panels (memory, utilization: each registry panel with charted node metrics), one
 * line per GPU and charted metric, a GPU keeping its colour across panels; a `limit` metric
 * (total memory) is the ceiling: the largest of the GPUs'.
 * @returns {{id, title, unit, series: {label, column, color}[], totalColumns?: string[]}[]}
 */
export function nodePanelSpecs(columns, host) {
  const mine = columns.filter((c) => c.node === host && c.chart && typeof c.panel === "string");
  const rank = (c) => (Number.isFinite(c.order) ? c.order : Infinity);
  const gpus = [...new Set(mine.map((c) => c.gpu))].sort(compareGpus);
  const panels = new Map();
  for (const c of [...mine].sort((a, b) => rank(a) - rank(b))) {
    if (!panels.has(c.panel)) panels.set(c.panel, { unit: c.unit, series: [], totals: [] });
    const p = panels.get(c.panel);
    if (c.chart === "limit") p.totals.push(c);
    else if (c.chart === "series") p.series.push(c);
  }
  const out = [];
  for (const [panel, p] of panels) {
    if (!p.series.length) continue;
    const metrics = new Set(p.series.map((c) => c.metric));
    const byGpu = (a, b) => compareGpus(a.gpu, b.gpu) || rank(a) - rank(b);
    out.push({
      id: `node:${host}:${panel}`,
      title: `${host} ${TITLE[panel] ?? panel}`,
      sparse: true, // a row per Prometheus answer: the chart marks the points while few
      unit: p.series[0].unit,
      series: [...p.series].sort(byGpu).map((c) => ({
        label: metrics.size > 1 ? `${gpuLabel(c.gpu)} ${String(c.label ?? c.metric)}` : gpuLabel(c.gpu),
        column: c.name,
        color: PALETTE[gpus.indexOf(c.gpu) % PALETTE.length],
      })),
      ...(p.totals.length ? { totalColumns: p.totals.sort(byGpu).map((c) => c.name) } : {}),
    });
  }
  return out;
}

/** "All nodes": the first MAX_NODE_PANELS hosts get panels, the rest a summary row. */
export function nodesLayout(hosts, limit = MAX_NODE_PANELS) {
  return { panels: hosts.slice(0, limit), summary: hosts.slice(limit, limit + MAX_SUMMARY_ROWS) };
}

/** The GPUs a summary adds up: a GPU split into MIG instances counts through its instances. */
function leaves(gpus) {
  const split = new Set(gpus.map((g) => /^(gpu\d+)-mig\d+$/.exec(g.gpu)?.[1]).filter(Boolean));
  return gpus.filter((g) => !split.has(g.gpu));
}

/**
 * One summary row: the host, its GPUs ("4", "2 · 3 MIG"), memory used and total (bytes, summed
 * over what it reports now), mean and max utilization now (percent), and the age of its last
 * answer (seconds before `now`, unix seconds; null without one).
 * @param {(column: string) => number|null} latest the newest value of a cluster column
 */
export function nodeSummary(host, node, columns, latest, now) {
  const gpus = gpusOf(columns, host);
  const counted = leaves(gpus);
  const value = (g, metric) => (g.columns[metric] ? latest(g.columns[metric]) : null);
  const sum = (metric) => {
    const vs = counted.map((g) => value(g, metric)).filter((v) => v !== null && Number.isFinite(v));
    return vs.length ? vs.reduce((a, b) => a + b, 0) : null;
  };
  const utils = counted.map((g) => value(g, "gpu_util")).filter((v) => v !== null && Number.isFinite(v));
  const physical = new Set(gpus.map((g) => g.gpu.replace(/-mig\d+$/, ""))).size;
  const mig = gpus.filter((g) => /-mig\d+$/.test(g.gpu)).length;
  const seen = node && Number.isFinite(node.last_seen) ? node.last_seen : null;
  return {
    host,
    gpus: mig ? `${physical} \u00b7 ${mig} MIG` : String(physical),
    used: sum("mem_used"),
    total: sum("mem_total"),
    utilMean: utils.length ? utils.reduce((a, b) => a + b, 0) / utils.length : null,
    utilMax: utils.length ? Math.max(...utils) : null,
    age: seen !== null && Number.isFinite(now) ? Math.max(0, now - seen) : null,
  };
}

/**
 * A host's GPU list: per GPU (columns order, MIG instances included) its label, model (with
 * the MIG profile), memory used and total and utilization now, and where it is given
 * ("namespace/pod", "" outside Kubernetes).
 */
export function gpuRows(host, node, columns, latest) {
  const labels = new Map((node ? node.gpus : []).map((g) => [g.gpu, g]));
  const names = new Set([...gpusOf(columns, host).map((g) => g.gpu), ...labels.keys()]);
  const byGpu = new Map(gpusOf(columns, host).map((g) => [g.gpu, g.columns]));
  return [...names].sort(compareGpus).map((gpu) => {
    const l = labels.get(gpu) ?? {};
    const cols = byGpu.get(gpu) ?? {};
    const value = (metric) => (cols[metric] ? latest(cols[metric]) : null);
    const pod = text(l.pod);
    const ns = text(l.namespace);
    return {
      gpu,
      label: gpuLabel(gpu),
      model: [text(l.model), text(l.mig_profile)].filter(Boolean).join(" "),
      used: value("mem_used"),
      total: value("mem_total"),
      util: value("gpu_util"),
      pod: pod && ns ? `${ns}/${pod}` : pod || ns,
    };
  });
}
