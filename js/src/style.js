// The widget's stylesheet: uPlot's own CSS (bundled as text by esbuild's text loader) plus ours,
// injected as a <style> inside each view's root so nothing depends on the page's <head>.
// Colours come from JupyterLab's theme variables, with fallbacks for other front ends.

import uplotCss from "uplot/dist/uPlot.min.css";

const OWN = `
.nbgpumon-widget{width:100%;box-sizing:border-box;padding:2px 0;font-family:var(--jp-ui-font-family,system-ui,-apple-system,"Segoe UI",sans-serif);font-size:12px;color:var(--jp-ui-font-color1,#1f2937)}
.nbgpumon-widget *{box-sizing:border-box}
.nbgpumon-widget [hidden]{display:none!important}
.nbgpumon-status{color:var(--jp-ui-font-color2,#6b7280);font-size:11px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;margin-bottom:4px}
.nbgpumon-note{color:var(--jp-warn-color0,#92400e);font-size:11px;margin-bottom:4px}
.nbgpumon-controls{display:flex;flex-wrap:wrap;align-items:center;gap:4px 12px;margin-bottom:2px;font-size:11px}
.nbgpumon-windows{display:inline-flex}
.nbgpumon-windows button{font:inherit;color:inherit;background:var(--jp-layout-color1,transparent);border:1px solid var(--jp-border-color1,#d1d5db);margin:0;padding:0 8px;line-height:18px;cursor:pointer}
.nbgpumon-windows button+button{border-left:none}
.nbgpumon-windows button:first-child{border-radius:3px 0 0 3px}
.nbgpumon-windows button:last-child{border-radius:0 3px 3px 0}
.nbgpumon-windows button.active{background:var(--jp-brand-color1,#2563eb);border-color:var(--jp-brand-color1,#2563eb);color:#fff}
.nbgpumon-shown{color:var(--jp-ui-font-color2,#6b7280)}
.nbgpumon-host{display:inline-flex;align-items:center;gap:3px;color:var(--jp-ui-font-color2,#6b7280)}
.nbgpumon-gpu,.nbgpumon-host-select{font:inherit;color:inherit;background:var(--jp-layout-color1,transparent);border:1px solid var(--jp-border-color1,#d1d5db);border-radius:3px;padding:0 2px}
.nbgpumon-toggles{display:inline-flex;gap:10px}
.nbgpumon-toggles label{display:inline-flex;align-items:center;gap:3px;cursor:pointer}
.nbgpumon-toggles input{margin:0}
.nbgpumon-kinds-legend{font-size:11px;opacity:.85}
.nbgpumon-swatch{display:inline-block;width:9px;height:9px;margin-left:6px;opacity:.7}
.nbgpumon-panel{position:relative}
.nbgpumon-panel-head{display:flex;flex-wrap:wrap;align-items:baseline;gap:0 10px;margin:4px 0 0 4px;font-size:11px;line-height:16px}
.nbgpumon-panel-title{font-weight:600;color:var(--jp-ui-font-color2,#6b7280);white-space:nowrap}
.nbgpumon-widget .uplot{font-family:inherit;width:100%}
.nbgpumon-widget .u-legend{font-size:11px;text-align:left;margin:0;color:var(--jp-ui-font-color1,#1f2937)}
.nbgpumon-widget .u-legend .u-series{padding:0 4px 0 0}
.nbgpumon-widget .u-legend .u-series>*{padding:0 2px;font-weight:normal}
.nbgpumon-widget .u-legend .u-series:first-child{color:var(--jp-ui-font-color2,#6b7280)}
.nbgpumon-widget .u-legend .u-value{font-variant-numeric:tabular-nums}
.nbgpumon-widget .u-legend .u-marker{width:10px;height:3px;margin-right:3px}
.nbgpumon-tip{position:absolute;top:30px;z-index:10;pointer-events:none;white-space:pre;max-width:70%;overflow:hidden;text-overflow:ellipsis;font-size:11px;line-height:1.35;padding:3px 6px;border-radius:3px;background:var(--jp-layout-color0,#fff);color:var(--jp-ui-font-color1,#111);border:1px solid var(--jp-border-color1,#d1d5db);box-shadow:0 1px 4px rgba(0,0,0,.25)}
.nbgpumon-empty{color:var(--jp-ui-font-color2,#6b7280);font-size:11px;padding:8px 4px}
.nbgpumon-table-wrap{max-height:220px;overflow:auto;margin-top:4px;border-top:1px solid var(--jp-border-color2,rgba(128,128,128,.25))}
.nbgpumon-table,.nbgpumon-node-table{width:100%;border-collapse:collapse;font-size:11px;font-variant-numeric:tabular-nums}
.nbgpumon-table th,.nbgpumon-node-table th{position:sticky;top:0;z-index:1;background:var(--jp-layout-color1,#fff);color:var(--jp-ui-font-color2,#6b7280);font-weight:600;text-align:left;padding:2px 6px;border-bottom:1px solid var(--jp-border-color2,rgba(128,128,128,.25))}
.nbgpumon-table td,.nbgpumon-node-table td{padding:1px 6px;white-space:nowrap;border-bottom:1px solid var(--jp-border-color3,rgba(128,128,128,.12))}
.nbgpumon-table tbody td{height:16px;line-height:14px;overflow:hidden}
.nbgpumon-table tr.spacer td{padding:0;border:0}
.nbgpumon-table .num,.nbgpumon-node-table .num{text-align:right}
/* a text cell reads from the left wherever the page aligns table cells (VS Code: right) */
.nbgpumon-widget .nbgpumon-table td,.nbgpumon-widget .nbgpumon-node-table td{text-align:left}
.nbgpumon-widget .nbgpumon-table td.num,.nbgpumon-widget .nbgpumon-node-table td.num{text-align:right}
.nbgpumon-table td.held{max-width:0;width:20%;overflow:hidden;text-overflow:ellipsis}
.nbgpumon-table td.source{max-width:0;width:40%;overflow:hidden;text-overflow:ellipsis;font-family:var(--jp-code-font-family,ui-monospace,monospace)}
.nbgpumon-table tbody tr[data-key]{cursor:pointer}
.nbgpumon-table tbody tr[data-key]:hover{background:var(--jp-layout-color2,rgba(128,128,128,.12))}
.nbgpumon-table tbody tr.selected{background:rgba(245,158,11,.25)}
.nbgpumon-table .status-error{color:var(--jp-error-color1,#dc2626)}
.nbgpumon-table .status-warn{color:var(--jp-warn-color1,#d97706)}
.nbgpumon-table .status-running{color:var(--jp-brand-color1,#2563eb);font-weight:600}
.nbgpumon-table tbody tr.running:not(.selected){background:rgba(59,130,246,.08)}
.nbgpumon-cluster-status,.nbgpumon-node-note{color:var(--jp-ui-font-color2,#6b7280);font-size:11px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;margin:2px 0}
.nbgpumon-node-summary{margin:4px 0}
.nbgpumon-node-summary .nbgpumon-table-wrap{margin-top:0}
.nbgpumon-node-table tbody tr[data-host]{cursor:pointer}
.nbgpumon-node-table tbody tr[data-host]:hover{background:var(--jp-layout-color2,rgba(128,128,128,.12))}
.nbgpumon-node-table td.host,.nbgpumon-node-table td.model,.nbgpumon-node-table td.pod{max-width:0;overflow:hidden;text-overflow:ellipsis}
.nbgpumon-node-table td.host{width:30%}
.nbgpumon-node-table td.model{width:30%}
.nbgpumon-node-table td.pod{width:30%}
.nbgpumon-node-gpus{margin-top:4px}
.nbgpumon-table tr.empty td,.nbgpumon-node-table tr.empty td{color:var(--jp-ui-font-color2,#6b7280);text-align:center}
`;

export const CSS = `${typeof uplotCss === "string" ? uplotCss : ""}\n${OWN}`;

/** A <style> element holding the widget's CSS. */
export function styleElement() {
  const style = document.createElement("style");
  style.textContent = CSS;
  return style;
}
