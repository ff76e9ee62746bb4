/**
 * The engine's and its installer's failures as callers may read them: their messages name host
 * paths (the data directory, the engine's install folder) and native frames, which stay in the
 * node's log; an engine error event becomes the domain error of its kind.
 *
 * @module
 */
import {
  type DomainError,
  type ErrorDetails,
  errorOfKind,
  isErrorKind,
  Unavailable,
} from "../errors/mod.ts";
import type { EngineError } from "./engine_protocol.ts";

/** `message`'s first line, without host paths, at most 500 characters. */
export function scrubbed(message: string): string {
  const line = message.split("\n")[0].trim().slice(0, 500);
  return line.replace(/(?:[A-Za-z]:)?(?:[\\/][\w.@+~-]+){2,}[\\/]?/g, "<path>");
}

/**
 * A child's own first line in its stderr (the installer's, detection's): Deno's notes come before it (`Info Failed to
 * resolve 'git' for allow-run` where git is not installed).
 */
export function firstError(stderr: string): string {
  // Deno colours its notes (ANSI escapes) unless NO_COLOR is set.
  // deno-lint-ignore no-control-regex
  const lines = stderr.split("\n").map((line) => line.replace(/\x1b\[[0-9;]*m/g, "").trim());
  return lines.find((line) => line && !/^(?:Info|Warning)\b/.test(line)) ?? "";
}

/** The error an engine error event stands for: its kind's, or the engine's own failure. */
export function engineError(event: EngineError): DomainError {
  const message = scrubbed(event.message);
  if (isErrorKind(event.kind)) return errorOfKind(event.kind, message, engineDetails(event));
  return new Unavailable(`the inference engine failed: ${message}`);
}

/**
 * The details an engine sends, and only those, as strings: the edges turn others into headers
 * (`allow`, `scheme`), and a message from another process is data, not trusted shapes.
 */
function engineDetails({ details }: EngineError): ErrorDetails {
  const kept: ErrorDetails = {};
  for (const name of ["field", "resource", "id", "exceeded"] as const) {
    const value = details?.[name];
    if (typeof value === "string") kept[name] = value.slice(0, 200);
  }
  return kept;
}
