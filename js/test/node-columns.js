// The widget's `node_columns` as the kernel sends them (describe_columns of the cluster
// timeline's columns, `node:{host}.{gpu}.{metric}`): the registry's node-scoped metrics, as
// nbgpumon/_foundation/metrics.py describes them.

export const NODE_METRICS = {
  mem_used: { unit: "bytes", panel: "memory", label: "used", chart: "series", order: 25 },
  mem_total: { unit: "bytes", panel: "memory", label: "total", chart: "limit", order: 26 },
  gpu_util: { unit: "percent", panel: "util", label: "GPU", chart: "series", order: 27 },
  power: { unit: "watts", panel: "power", label: "power", chart: "", order: 28 },
  temperature: { unit: "celsius", panel: "temperature", label: "temperature", chart: "", order: 29 },
  allocated: { unit: "bytes", panel: "memory", label: "allocated (nbgpumon)", chart: "", order: 30 },
};

/** One column's metadata. */
export function nodeColumn(host, gpu, metric) {
  return {
    source: "cluster", name: `node:${host}.${gpu}.${metric}`, ...NODE_METRICS[metric], kind: "gauge",
    scope: "node", export: "", metric, device: null, node: host, gpu,
  };
}

/** Columns of `hosts` x `gpus` x `metrics`, sorted by name (as the kernel adds them). */
export function nodeColumns(hosts, gpus, metrics = ["mem_used", "mem_total", "gpu_util"]) {
  const out = [];
  for (const h of hosts) for (const g of gpus) for (const m of metrics) out.push(nodeColumn(h, g, m));
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** A `nodes` trait entry. */
export function node(host, gpus, lastSeen, extra = {}) {
  return {
    host,
    last_seen: lastSeen,
    gpus: gpus.map((gpu) => ({
      gpu, model: "NVIDIA H100 80GB HBM3", uuid: `GPU-${host}-${gpu}`, pod: "", namespace: "", origin: "dcgm",
      mig_profile: gpu.includes("-mig") ? "1g.10gb" : "", ...(extra[gpu] ?? {}),
    })),
  };
}
