// The widget's `devices` entries: this machine's GPUs by NVML index, as Python describes them.

/** The kernel's name for GPU `d` as Python words it ("cuda:0", or that this kernel cannot see
 * it: CUDA_VISIBLE_DEVICES hides it), so the chart says what the text views say; "" when a
 * recording or an older kernel did not send one. */
export function cudaLabelOf(d) {
  return d && typeof d.cuda_label === "string" ? d.cuda_label : "";
}
