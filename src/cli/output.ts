/**
 * What the client commands print: JSON (`--json`), tables, and a transfer's progress (a redrawn
 * bar on a terminal, plain lines otherwise).
 *
 * @module
 */
import { humanBytes } from "../sdk/human_units.ts";

/** Prints a value as JSON (the `--json` output of every command). */
export function printJson(value: unknown): void {
  console.log(JSON.stringify(value, null, 2));
}

/** Prints rows as a table with a header, columns padded to their widest cell. */
export function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells.map((cell, i) => cell.padEnd(widths[i])).join("  ").trimEnd();
  console.log(line(header));
  for (const row of rows) console.log(line(row));
}

/** Progress of a transfer: a redrawn bar on a terminal, a line every 10% otherwise. */
export class Progress {
  readonly #label: string;
  readonly #terminal = Deno.stderr.isTerminal();
  readonly #started = performance.now();
  #lastTenth = -1;
  #lastDraw = 0;

  /** A transfer's progress, its lines starting with `label`. */
  constructor(label: string) {
    this.#label = label;
  }

  /** Reports `done` of `total` bytes (total unknown: undefined). */
  update(done: number, total: number | undefined): void {
    const seconds = (performance.now() - this.#started) / 1000;
    const rate = seconds > 0 ? done / seconds : 0;
    if (this.#terminal) {
      const now = performance.now();
      if (now - this.#lastDraw < 100 && done !== total) return;
      this.#lastDraw = now;
      const fraction = total ? Math.min(1, done / total) : 0;
      const bar = total ? `[${"#".repeat(Math.round(fraction * 20)).padEnd(20)}] ` : "";
      const eta = total && rate > 0 ? ` ETA ${Math.ceil((total - done) / rate)} s` : "";
      const text =
        `${this.#label} ${bar}${humanBytes(done)}${total ? ` / ${humanBytes(total)}` : ""}` +
        `  ${humanBytes(rate)}/s${eta}`;
      Deno.stderr.writeSync(new TextEncoder().encode(`\r\x1b[2K${text}`));
    } else if (total) {
      const tenth = Math.floor((10 * done) / total);
      if (tenth > this.#lastTenth) {
        this.#lastTenth = tenth;
        console.error(
          `${this.#label} ${tenth * 10}% (${humanBytes(done)} of ${humanBytes(total)})`,
        );
      }
    }
  }

  /** Ends the bar's line. */
  finish(): void {
    if (this.#terminal) Deno.stderr.writeSync(new TextEncoder().encode("\n"));
  }
}
