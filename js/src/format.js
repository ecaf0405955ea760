// Numbers as the widget shows them. Same rules as nbgpumon/text.py so the live table and the
// printed table read alike; negatives use U+2212 (a real minus, same width as "+").

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];
export const MINUS = "\u2212";
export const DASH = "\u2014";

function missing(x) {
  return x === null || x === undefined || typeof x !== "number" || Number.isNaN(x);
}

/** Bytes as "1.0 GiB" / "512 MiB"; `signed` puts "+" on positive values (deltas). */
export function formatBytes(n, signed = false) {
  if (missing(n)) return DASH;
  const sign = n < 0 ? MINUS : signed && n > 0 ? "+" : "";
  let value = Math.abs(n);
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const digits = unit === 0 || value >= 100 ? 0 : 1;
  return `${sign}${value.toFixed(digits)} ${UNITS[unit]}`;
}

/** Seconds as "850 ms", "12.3 s", "2 min 3 s", "1 h 5 min". */
export function formatSeconds(s) {
  if (missing(s)) return DASH;
  if (s < 1) return `${Math.round(s * 1000)} ms`;
  if (s < 60) return `${s.toFixed(1)} s`;
  const total = Math.round(s);
  const minutes = Math.floor(total / 60);
  const seconds = total % 60;
  if (minutes < 60) return `${minutes} min ${seconds} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** Percent as "87%". */
export function formatPercent(p) {
  return missing(p) ? DASH : `${Math.round(p)}%`;
}

/** A compact axis label for a byte value (no decimals when whole). */
export function formatBytesAxis(n) {
  if (missing(n)) return "";
  if (n === 0) return "0";
  let value = Math.abs(n);
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const text = Number.isInteger(value) ? String(value) : value.toFixed(value >= 100 ? 0 : 1);
  return `${n < 0 ? MINUS : ""}${text} ${UNITS[unit]}`;
}

/**
 * One ledger line, like nbgpumon.text.summary_line:
 * "[12] +1.0 GiB alloc · peak 3.2 GiB · kept 1.0 GiB · host +12 MiB · 12.3 s · GPU 87%", and
 * for a cell that started processes "… · children: python train.py ≥3.0 GiB on gpu0, 87%"
 * (the row's `children`, the kernel's words; plain text, as every tip is).
 */
export function ledgerLine(cell) {
  const parts = [];
  if (!missing(cell.alloc)) {
    const inexact = cell.peak_exact === false ? "\u2265" : "";
    parts.push(`${formatBytes(cell.alloc, true)} alloc`);
    parts.push(`peak ${missing(cell.peak) ? DASH : inexact + formatBytes(cell.peak)}`);
    parts.push(`kept ${formatBytes(cell.kept)}`);
  }
  if (!missing(cell.host_delta)) parts.push(`host ${formatBytes(cell.host_delta, true)}`);
  parts.push(formatSeconds(cellDuration(cell)));
  if (!missing(cell.util_mean)) parts.push(`GPU ${formatPercent(cell.util_mean)}`);
  if (typeof cell.children === "string" && cell.children) parts.push(`children: ${cell.children}`);
  const status = typeof cell.status === "string" ? cell.status : "";
  if (status && status !== "ok") parts.push(status === "oom" ? "OOM" : status);
  return `${cell.name ?? ""} ${parts.join(" \u00b7 ")}`;
}

/** A cell's duration in seconds: the `duration` field, else end - start. */
export function cellDuration(cell) {
  if (!missing(cell.duration)) return cell.duration;
  if (!missing(cell.start) && !missing(cell.end)) return cell.end - cell.start;
  return null;
}

/**
 * The running cell's line, for its tip: what it changed so far against its start.
 * "[12] running 35.2 s · allocated +1.0 GiB so far · host +12 MiB"
 */
export function runningLine(cell) {
  const parts = [`running ${formatSeconds(cell.duration)}`];
  if (!missing(cell.allocated_so_far)) {
    parts.push(`allocated ${formatBytes(cell.allocated_so_far, true)} so far`);
  } else if (!missing(cell.gpu_used_so_far) && cell.gpu_used_so_far !== 0) {
    parts.push(`GPU mem ${formatBytes(cell.gpu_used_so_far, true)} so far`);
  }
  if (!missing(cell.host_delta)) parts.push(`host ${formatBytes(cell.host_delta, true)}`);
  return `${cell.name ?? ""} ${parts.join(" \u00b7 ")}`;
}

/** How much time a chart shows, to the second: "8 s", "2 min 5 s", "1 h 5 min". */
export function formatSpan(s) {
  if (missing(s)) return DASH;
  const whole = Math.max(0, Math.round(s));
  return whole < 60 ? `${whole} s` : formatSeconds(whole);
}
