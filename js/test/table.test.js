// @vitest-environment jsdom
// The ledger table with 10,000 cells: only the rows scrolled to are in the DOM; scrolling to the
// bottom shows the oldest cell; a band clicked in the chart scrolls its row into view.
import { beforeEach, describe, expect, test } from "vitest";
import "./dom-shims.js";
import { createWidget } from "../src/widget.js";
import { CellTable, ROW_HEIGHT } from "../src/table.js";
import { FakeModel, manualFrames } from "./fake-model.js";
import { cells } from "./protocol.js";
import { StubUPlot } from "./stub-uplot.js";

const MANY = 10_000;
const XSS = "<img src=x onerror=alert(1)>";

function ledger(n) {
  return Array.from({ length: n }, (_, k) => ({
    index: k, name: `[${k + 1}]`, count: k + 1, kind: "cell", label: `step(${k}) ${XSS}`,
    start: 1000 + k, end: 1000 + k + 0.5, duration: 0.5, status: "ok",
  }));
}

const shownRows = (el) => [...el.querySelectorAll(".nbgpumon-table tbody tr")];

let frames;
let widget;
let el;

beforeEach(() => {
  frames = manualFrames();
  StubUPlot.instances = [];
  widget = createWidget({ UPlot: StubUPlot, requestFrame: frames.requestFrame, cancelFrame: frames.cancelFrame });
  el = document.createElement("div");
  document.body.append(el);
});

function scrollTo(wrap, top) {
  wrap.scrollTop = top;
  wrap.dispatchEvent(new Event("scroll"));
  frames.flush();
}

describe("the ledger table with 10,000 cells", () => {
  test("holds only the rows on screen, newest first, and the oldest at the bottom", () => {
    const model = new FakeModel({ cells: ledger(MANY) });
    widget.initialize({ model });
    widget.render({ model, el });
    const rows = shownRows(el);
    expect(rows.length).toBeLessThan(40);
    expect(rows[0].dataset.cell).toBe(String(MANY)); // newest first
    expect(rows[0].querySelector("td.source").textContent).toBe(`step(${MANY - 1}) ${XSS}`); // as text
    expect(el.querySelector("img")).toBeNull();

    const wrap = el.querySelector(".nbgpumon-cells");
    const below = el.querySelector(".nbgpumon-table tfoot tr.spacer td");
    expect(parseFloat(below.style.height)).toBe((MANY - rows.length) * ROW_HEIGHT); // the scroll bar's length
    scrollTo(wrap, MANY * ROW_HEIGHT); // the bottom
    const last = shownRows(el);
    expect(last.length).toBeLessThan(40);
    expect(last[last.length - 1].dataset.cell).toBe("1"); // the oldest cell
    scrollTo(wrap, 5000 * ROW_HEIGHT);
    const middle = shownRows(el).map((tr) => Number(tr.dataset.cell));
    expect(middle).toContain(MANY - 5000);
    expect(middle).toEqual([...middle].sort((a, b) => b - a)); // still newest first
  });

  test("a new cell's row joins at the top without the others being made again", () => {
    const model = new FakeModel({ cells: ledger(MANY) });
    widget.initialize({ model });
    widget.render({ model, el });
    const second = shownRows(el)[1];
    const [next] = ledger(MANY + 1).slice(-1);
    model.emit("msg:custom", ...cells(1, [next]));
    frames.flush();
    const rows = shownRows(el);
    expect(rows[0].dataset.cell).toBe(String(MANY + 1));
    expect(rows[2]).toBe(second); // the same <tr>, moved down one
  });

  test("a band clicked far down the ledger scrolls the table to its row", () => {
    const table = new CellTable({ onSelect: () => {} });
    document.body.append(table.el);
    const cells = ledger(MANY);
    table.update(cells, 1, null);
    table.reveal("cell@1100"); // cell [101]: row 9,899 from the top
    expect(table.el.scrollTop).toBeGreaterThan(9000 * ROW_HEIGHT);
    expect(shownRows(table.el).map((tr) => tr.dataset.cell)).toContain("101");
    table.destroy();
  });

  test("with a running cell above them, the rows shift down by one and it stays first", () => {
    const table = new CellTable({ onSelect: () => {} });
    document.body.append(table.el);
    const running = { name: "[10001]", count: MANY + 1, kind: "cell", start: 20000, status: "running", running: true, duration: 1 };
    table.update(ledger(MANY), 1, null, running);
    const rows = shownRows(table.el);
    expect(rows[0].classList.contains("running")).toBe(true);
    expect(rows[1].dataset.cell).toBe(String(MANY));
    table.update(ledger(MANY), 1, null, { ...running, duration: 2.5 });
    expect(shownRows(table.el)[0].querySelectorAll("td")[2].textContent).toBe("2.5 s");
    table.destroy();
  });
});

describe("the ledger table's headers", () => {
  test("alloc says on hover that it counts what was handed out, freed or not", () => {
    const table = new CellTable({ onSelect: () => {} });
    const heads = Object.fromEntries([...table.el.querySelectorAll("th")].map((th) => [th.textContent, th.title]));
    expect(heads.alloc).toMatch(/handed out during the cell, freed or not/);
    expect(heads.peak).toMatch(/most allocated at once/);
    expect(heads.cell).toBe(""); // a header that needs no words has no tip
    table.destroy();
  });
});
