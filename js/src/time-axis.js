// The chart's time axis for uPlot: tick steps a person counts in (1 s, 2 s, 5 s, 10 s, 15 s,
// 30 s, 1 min, 2, 5, 10, 15, 30 min, 1 h ...) and labels in local clock time, "12:03:05" or
// "12:03" as the locale writes them. uPlot's own stamps write ":35.500" for half-second ticks and
// drop the hour from most labels; a chart of a few seconds then reads as noise.

const MIN = 60;
const HOUR = 3600;
const DAY = 86400;

/** Tick spacings in seconds, smallest first; uPlot takes the first that leaves room for labels. */
export const TIME_INCRS = [
  0.1, 0.2, 0.5, // only for a span under SUBSECOND_SPAN
  1, 2, 5, 10, 15, 30,
  MIN, 2 * MIN, 5 * MIN, 10 * MIN, 15 * MIN, 30 * MIN,
  HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR,
  DAY, 2 * DAY, 7 * DAY, 14 * DAY, 28 * DAY,
];

const WHOLE_INCRS = TIME_INCRS.filter((s) => s >= 1);
export const SUBSECOND_SPAN = 3; // seconds: longer spans get whole-second ticks, however wide

/** The tick spacings uPlot may choose from for a span of `seconds`. */
export function incrsFor(seconds) {
  return seconds < SUBSECOND_SPAN ? TIME_INCRS : WHOLE_INCRS;
}

const LABELS_KEPT = 2000; // tick labels remembered (a few screens' worth of panels and windows)
const CHAR_PX = 7; // a generous average glyph width of the axis font (10px sans-serif)
const GAP_PX = 12; // between two labels

/**
 * Labels for ticks `incr` seconds apart, in `locale` (default: the browser's) and `timeZone`
 * (default: local; tests pass one).
 * @returns {{label: (t: number, incr: number) => string, space: number}} label(t) for a tick at
 *   unix seconds t; space: CSS px uPlot keeps between ticks, wide enough for a seconds label
 */
export function timeLabels({ locale, timeZone } = {}) {
  const zone = timeZone ? { timeZone } : {};
  const seconds = new Intl.DateTimeFormat(locale, { timeStyle: "medium", ...zone });
  const minutes = new Intl.DateTimeFormat(locale, { timeStyle: "short", ...zone });
  const day = new Intl.DateTimeFormat(locale, { month: "short", day: "numeric", ...zone });
  const clock24 = new Intl.DateTimeFormat("en-US", { hour: "2-digit", minute: "2-digit", hourCycle: "h23", ...zone });
  const decimal = new Intl.NumberFormat(locale).formatToParts(0.5).find((p) => p.type === "decimal")?.value ?? ".";

  const withTenths = (date) => {
    // timeStyle cannot be combined with fractionalSecondDigits: put the tenth after the seconds
    const tenth = String(Math.floor((date.getTime() % 1000) / 100));
    return seconds
      .formatToParts(date)
      .map((p) => (p.type === "second" ? `${p.value}${decimal}${tenth}` : p.value))
      .join("");
  };

  const format = (t, incr) => {
    // round to the millisecond: splits like 100.30000000000001 must not read as .2
    const date = new Date(Math.round(t * 1000));
    if (incr < 1) return withTenths(date);
    if (incr < MIN) return seconds.format(date);
    if (incr >= DAY || (incr >= HOUR && clock24.format(date) === "00:00")) return day.format(date);
    return minutes.format(date);
  };
  // Every panel labels the same ticks, frame after frame, and Intl formatting is the dearest
  // part of an axis (about 1 ms a frame for 16 panels): each label is made once.
  const made = new Map();
  const label = (t, incr) => {
    const key = `${t}|${incr}`;
    let text = made.get(key);
    if (text === undefined) {
      if (made.size >= LABELS_KEPT) made.clear();
      text = format(t, incr);
      made.set(key, text);
    }
    return text;
  };

  // The widest seconds label of this locale (a two-digit hour, AM/PM where it has them).
  const sample = [new Date(2000, 0, 1, 12, 59, 59), new Date(2000, 0, 1, 23, 59, 59)];
  const chars = Math.max(...sample.map((d) => seconds.format(d).length));
  return { label, space: chars * CHAR_PX + GAP_PX };
}

/**
 * uPlot options for an x axis on a time scale in unix seconds: `incrs`, `space` and `values`.
 * @param {{locale?: string, timeZone?: string}} [o]
 */
export function timeAxis(o = {}) {
  const { label, space } = timeLabels(o);
  return {
    // a function of the span (uPlot's check of a step's decimals knows 0.1 to 2 from its own
    // number axes; the vitest with the real uPlot fails if it stops accepting them)
    incrs: (u, axisIdx, min, max) => incrsFor(max - min),
    space,
    values: (u, splits, axisIdx, foundSpace, foundIncr) => splits.map((t) => label(t, foundIncr)),
  };
}
