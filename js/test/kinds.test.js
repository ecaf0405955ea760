import { describe, expect, test } from "vitest";
import { legendKinds } from "../src/controls.js";
import { KIND_COLORS, OTHER_COLOR, kindColor, kindGroup } from "../src/kinds.js";

const ARRAYS = "arrays held by variables";

describe("the by-kind bands' colours and legend", () => {
  test("each framework's arrays held by variables are drawn as the arrays' kind, in its green", () => {
    for (const label of ["torch", "JAX", "CuPy", "numpy"]) {
      const kind = `${ARRAYS} (${label})`;
      expect(kindGroup(kind)).toBe(ARRAYS);
      expect(kindColor(kind)).toBe(KIND_COLORS[ARRAYS]);
    }
    expect(kindGroup("parameters")).toBe("parameters");
    expect(kindColor("torch cache (reserved, unused)")).toBe(OTHER_COLOR);
  });

  test("the legend lists the arrays once however many frameworks hold some, and the rest as other", () => {
    const kinds = new Set([`${ARRAYS} (torch)`, `${ARRAYS} (JAX)`, "parameters", "torch cache (reserved, unused)"]);
    expect(legendKinds(kinds)).toEqual([
      ["parameters", KIND_COLORS.parameters],
      [ARRAYS, KIND_COLORS[ARRAYS]],
      ["other", OTHER_COLOR],
    ]);
  });
});
