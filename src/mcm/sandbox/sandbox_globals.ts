/**
 * The globals a microservice sees besides the web platform: `console` (its lines go to the
 * node's container log, not to the process's stdout, which carries the channel), `fetch` (relayed
 * by the main thread), `setImmediate`, and the `Duktape` base64/hex helpers that code written for
 * the reference's Duktape engine calls.
 *
 * @module
 */

/** A log level of spec/mcm.yaml's ContainerLog. */
export type LogLevel = "debug" | "info" | "warn" | "error";

const MAX_LINE = 16_384;

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function bytesOf(data: unknown): Uint8Array {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return new TextEncoder().encode(String(data));
}

/** Duktape's enc/dec for 'base64' and 'hex' (dec returns bytes, as Duktape's buffers). */
const duktape = {
  enc(format: string, data: unknown): string {
    const bytes = bytesOf(data);
    if (format === "hex") return hex(bytes);
    if (format === "base64") return btoa(Array.from(bytes, (b) => String.fromCharCode(b)).join(""));
    if (format === "jx" || format === "jc") return JSON.stringify(data);
    throw new TypeError(`Duktape.enc: unsupported format '${format}'`);
  },
  dec(format: string, text: string): unknown {
    if (format === "hex") {
      const pairs = String(text).match(/.{1,2}/g) ?? [];
      return new Uint8Array(pairs.map((pair) => parseInt(pair, 16)));
    }
    if (format === "base64") return Uint8Array.from(atob(String(text)), (c) => c.charCodeAt(0));
    if (format === "jx" || format === "jc") return JSON.parse(String(text));
    throw new TypeError(`Duktape.dec: unsupported format '${format}'`);
  },
};

/** Sets the globals; `log` receives every console line. */
export function installGlobals(
  fetcher: typeof fetch,
  log: (level: LogLevel, line: string) => void,
) {
  const inspect = Deno.inspect;
  const format = (args: unknown[]) =>
    args.map((arg) => typeof arg === "string" ? arg : inspect(arg, { depth: 4, colors: false }))
      .join(" ").slice(0, MAX_LINE);
  const line = (level: LogLevel) => (...args: unknown[]) => log(level, format(args));
  Object.assign(console, {
    log: line("info"),
    info: line("info"),
    debug: line("debug"),
    trace: line("debug"),
    warn: line("warn"),
    error: line("error"),
  });
  Object.assign(globalThis, {
    fetch: fetcher,
    Duktape: duktape,
    setImmediate: (callback: (...args: unknown[]) => void, ...args: unknown[]) =>
      setTimeout(callback, 0, ...args),
    clearImmediate: (id: number) => clearTimeout(id),
  });
  // A callback that throws later (a timer, a promise nobody awaits) is logged; the container
  // goes on serving, as one request's failure must not end the others.
  globalThis.addEventListener("error", (event) => {
    event.preventDefault();
    log("error", `uncaught: ${format([(event as ErrorEvent).error ?? event.message])}`);
  });
  globalThis.addEventListener("unhandledrejection", (event) => {
    event.preventDefault();
    log("error", `unhandled rejection: ${format([event.reason])}`);
  });
}
