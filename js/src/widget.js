// nbgpumon's anywidget front end. `initialize` runs once per model and feeds the shared store
// from the kernel; `render` runs once per view and only draws. See docs/widget-protocol.md.

import uPlot from "uplot";
import { connectCells, forgetCellStore } from "./cell-store.js";
import { connectNodes, forgetNodeStore } from "./node-store.js";
import { connectModel, forgetStore } from "./store.js";
import { createView } from "./view.js";

/** The anywidget module with injectable dependencies (tests pass a stub uPlot and frames). */
export function createWidget(deps = {}) {
  const resolved = { UPlot: uPlot, ...deps };
  return {
    initialize({ model }) {
      const disconnect = connectModel(model);
      const disconnectNodes = connectNodes(model);
      const disconnectCells = connectCells(model);
      return () => {
        disconnect();
        disconnectNodes();
        disconnectCells();
        forgetCellStore(model);
        forgetStore(model);
        forgetNodeStore(model);
      };
    },
    render({ model, el }) {
      return createView({ model, el }, resolved);
    },
  };
}

export default createWidget();
