/**
 * A container's log: its recent lines for GET /containers/{id}/logs, and the node's output for
 * warnings, errors and the node's own lines. What a microservice logs is untrusted: a line is
 * cut at 16 KiB, its control characters and line breaks are escaped (no forged lines, no
 * terminal escapes in the node's output), and a container may log 100 lines or 64 KiB a second;
 * past that its lines are dropped and counted.
 *
 * @module
 */

/** One line of spec/mcm.yaml's LogList. */
export interface LogLine {
  time: number;
  level: "debug" | "info" | "warn" | "error" | "node";
  message: string;
}

import { droppedLine, LogRate } from "../sandbox/log_rate.ts";

const KEPT_LINES = 500;
const MAX_LINE_CHARS = 16_384;

/** C0 and C1 controls (but tab), DEL, line and paragraph separators, bidi overrides. */
// deno-lint-ignore no-control-regex
const UNSAFE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const NAMED: Record<string, string> = { "\n": "\\n", "\r": "\\r" };

/** A line made safe to print: escaped and cut. */
export function safeLine(text: string): string {
  const escaped = text.replace(
    UNSAFE,
    (c) => NAMED[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  return escaped.length > MAX_LINE_CHARS
    ? `${escaped.slice(0, MAX_LINE_CHARS)}… (cut at ${MAX_LINE_CHARS} characters)`
    : escaped;
}

/** The log of one container. */
export class ContainerLog {
  readonly #id: string;
  readonly #lines: LogLine[] = [];
  readonly #rate = new LogRate();
  readonly #onLine: ((line: LogLine) => void) | undefined;

  /** The log of container `id`; `onLine` is told each line kept (followers: log_followers.ts). */
  constructor(id: string, onLine?: (line: LogLine) => void) {
    this.#id = id;
    this.#onLine = onLine;
  }

  /** The kept lines, oldest first. */
  lines(): LogLine[] {
    return [...this.#lines];
  }

  /** Adds a line; the node's own lines are never dropped. */
  add(level: string, message: string): void {
    const now = Date.now();
    const admitted = this.#rate.admit(
      Math.min(message.length, MAX_LINE_CHARS),
      (count) => this.#keep(now, "node", droppedLine(count)),
    );
    if (admitted || level === "node") this.#keep(now, level, safeLine(message));
  }

  #keep(time: number, level: string, message: string): void {
    const line = { time, level: level as LogLine["level"], message };
    this.#lines.push(line);
    if (this.#lines.length > KEPT_LINES) this.#lines.shift();
    this.#onLine?.(line);
    if (level === "node" || level === "error" || level === "warn") {
      console.log(`[container ${this.#id}] ${message}`);
    }
  }
}
