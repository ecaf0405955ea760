// The widget's `devices` entries: this machine's GPUs by NVML index, as Python describes them.

/** The kernel's name for GPU `d` as Python words it ("cuda:0", or that this kernel cannot see
 * it: CUDA_VISIBLE_DEVICES hides it), so the chart says what the text views say; "" when a
 * recording or an older kernel did not send one. */
export function cudaLabelOf(d) {
  return d && typeof d.cuda_label === "string" ? d.cuda_label : "";
}

/** What the chart's panels call GPU `d`: "GPU" when it is the only one, "GPU 1" among several;
 * a MIG device is its GPU's index and its profile, "GPU 0 MIG 1g.18gb" (the profile is text
 * from NVML: it goes into a title's textContent). */
export function panelNameOf(d, many) {
  const gpu = many || (d && typeof d.mig_profile === "string") ? `GPU ${d.index}` : "GPU";
  return d && typeof d.mig_profile === "string" ? `${gpu} MIG ${d.mig_profile}`.trimEnd() : gpu;
}

/** The metrics NVML cannot give for GPU `d` (["gpu_util", "mem_util"] on a MIG device), which
 * the chart draws no line for; [] when none, or from a kernel that does not say. */
export function unavailableOf(d) {
  return d && Array.isArray(d.unavailable) ? d.unavailable.filter((m) => typeof m === "string") : [];
}
