// @vitest-environment jsdom
import { expect, test } from "vitest";
import "./dom-shims.js";
import { missedNote } from "../src/view.js";

test("the note on resent samples counts one as one", () => {
  expect(missedNote({ dropped: 3, filled: 0 })).not.toContain("sent again");
  expect(missedNote({ dropped: 3, filled: 1 })).toContain("; 1 was sent again after the cell, and is drawn:");
  expect(missedNote({ dropped: 3, filled: 1200 })).toContain("; 1,200 were sent again after the cell, and are drawn:");
  expect(missedNote({ dropped: 0, filled: 5 })).toBe("");
});
