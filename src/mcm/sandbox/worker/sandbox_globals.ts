/**
 * The global scope a microservice sees. The reference runs bundles in an ES5 engine (Duktape),
 * and bundles probe `typeof process`, `typeof Deno`, `typeof window`… to pick a platform, so the
 * worker's scope is cut down to an allowlist (global_allowlist.ts): ECMAScript's own globals, a few web ones kept on
 * purpose (README, "Microservices"), and the reference's additions: `console` (its lines go to
 * the node's container log, not to the process's stdout, which carries the channel), `fetch`
 * (relayed by the process's main thread), `setImmediate`/`clearImmediate`, and the `Duktape`
 * base64/hex helpers. Code generation from strings is kept but cannot reach `import()`.
 *
 * @module
 */
import { fixBuiltins } from "./fixed_builtins.ts";
import { SANDBOX_GLOBALS } from "./global_allowlist.ts";
import {
  ArrayPrototypeJoin,
  ArrayPrototypePush,
  StringPrototypeSlice,
  uncurry,
} from "./intrinsics.ts";

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

/**
 * Code that could load a module: the keyword `import` followed by `(`, `.` or a comment that
 * hides the parenthesis, wherever a string becomes code. Conservative on purpose: such strings
 * are refused even inside a string literal of the evaluated code.
 */
const MODULE_LOADING = /(^|[^.\w$])import\s*[(./]/;

function refuseModuleLoading(source: string): string {
  if (MODULE_LOADING.test(source)) {
    throw new EvalError(
      "import() is not available to microservices: bundle every dependency into index.js",
    );
  }
  return source;
}

/**
 * `eval`, `Function` and its async and generator kin, checked: a string that loads a module is
 * refused. The constructors stay reachable through every function's `constructor`, so those
 * are replaced too; `instanceof Function` still holds. `eval` becomes indirect (global scope).
 */
function tameCodeGeneration(global: Record<string, unknown>): void {
  const nativeEval = global.eval as (source: string) => unknown;
  global.eval = function evaluate(source: unknown) {
    return typeof source === "string" ? nativeEval(refuseModuleLoading(source)) : source;
  };
  const kinds = [
    Function,
    Object.getPrototypeOf(async function () {}).constructor,
    Object.getPrototypeOf(function* () {}).constructor,
    Object.getPrototypeOf(async function* () {}).constructor,
  ] as ((...args: string[]) => unknown)[];
  for (const native of kinds) {
    const tamed = function (...args: unknown[]) {
      return native(...args.map((arg) => refuseModuleLoading(String(arg))));
    };
    Object.defineProperty(tamed, "prototype", { value: native.prototype });
    Object.defineProperty(native.prototype, "constructor", {
      value: tamed,
      writable: true,
      configurable: true,
    });
    if (native === Function) global.Function = tamed;
  }
}

/**
 * Deno's timers (Node's) on first use: reading the globals loads Node's timers module into the
 * worker, 1.5 MiB of a microservice that never sets a timer, so their getters are kept, not
 * called. The module loads with the globals as the microservice left them, which changes only
 * what its own timers do: the channel and the watchdog's reports use none (host_globals.ts).
 */
function nativeTimers(global: Record<string, unknown>) {
  type Timers = {
    setTimeout: typeof setTimeout;
    setInterval: typeof setInterval;
    clearTimeout: typeof clearTimeout;
  };
  const getters = Object.fromEntries(
    (["setTimeout", "setInterval", "clearTimeout"] as const).map((name) => {
      const descriptor = Object.getOwnPropertyDescriptor(global, name);
      const value = descriptor?.value;
      return [name, descriptor?.get?.bind(global) ?? (() => value)];
    }),
  ) as { [name in keyof Timers]: () => Timers[name] };
  let timers: Timers | undefined;
  return {
    get: (): Timers =>
      timers ??= {
        setTimeout: getters.setTimeout(),
        setInterval: getters.setInterval(),
        clearTimeout: getters.clearTimeout(),
      },
    /** Whether a timer may have been set (clearing before that is nothing to do). */
    loaded: () => timers !== undefined,
  };
}

/** Timers that take functions only (a string would be evaluated past tameCodeGeneration). */
function functionTimers(global: Record<string, unknown>, native: ReturnType<typeof nativeTimers>) {
  const checked = (callback: unknown) => {
    if (typeof callback !== "function") {
      throw new TypeError("timers take a function, not a string of code");
    }
    return callback as (...args: unknown[]) => void;
  };
  global.setTimeout = (callback: unknown, ms?: number, ...args: unknown[]) =>
    native.get().setTimeout(checked(callback), ms, ...args);
  global.setInterval = (callback: unknown, ms?: number, ...args: unknown[]) =>
    native.get().setInterval(checked(callback), ms, ...args);
  // The runtime's own: bundles that replace setTimeout with one built on setImmediate (the
  // reference's language-model microservice does) must not make it call itself.
  global.setImmediate = (callback: unknown, ...args: unknown[]) =>
    native.get().setTimeout(checked(callback), 0, ...args);
  const clear = (id: number) => {
    if (native.loaded()) native.get().clearTimeout(id);
  };
  global.clearTimeout = clear;
  global.clearInterval = clear;
  global.clearImmediate = clear;
}

/** Deletes every global outside SANDBOX_GLOBALS, on the global object and its scope classes. */
function removeHostGlobals(global: Record<string, unknown>): void {
  for (
    let scope: object | null = global;
    scope && scope !== EventTarget.prototype && scope !== Object.prototype;
    scope = Object.getPrototypeOf(scope)
  ) {
    for (const name of Object.getOwnPropertyNames(scope)) {
      if (SANDBOX_GLOBALS.has(name) || name === "constructor") continue;
      if (Object.getOwnPropertyDescriptor(scope, name)?.configurable === false) {
        // V8's `gc` (--expose-gc) cannot be deleted, only emptied; the sandbox took it
        // (host_globals.ts). One that cannot be emptied either throws: the code does not load.
        (scope as Record<string, unknown>)[name] = undefined;
        continue;
      }
      delete (scope as Record<string, unknown>)[name];
    }
  }
  // EventTarget's methods are shared with every event target; hide them on the global only.
  // Not dispatchEvent: Deno reports an uncaught error or rejection by dispatching it on the
  // global (`globalThis.dispatchEvent`), and without it the report itself throws, which ends
  // the worker (the first time the report fails quietly, and the next error is fatal).
  for (const name of ["addEventListener", "removeEventListener"]) {
    Object.defineProperty(global, name, { value: undefined, writable: true, configurable: true });
  }
}

/**
 * Makes the worker's scope the microservice's. `log` receives every console line. Call it once,
 * after the sandbox took what it needs of the host's globals (Deno's stdio, postMessage).
 */
export function installGlobals(
  fetcher: typeof fetch,
  log: (level: LogLevel, line: string) => void,
  inspect: (value: unknown) => string,
) {
  const global = globalThis as unknown as Record<string, unknown>;
  // Intrinsics (intrinsics.ts): logging runs after the microservice replaced what it likes.
  const format = (args: unknown[]) => {
    const parts: string[] = [];
    for (let i = 0; i < args.length; i++) {
      ArrayPrototypePush(parts, typeof args[i] === "string" ? args[i] as string : inspect(args[i]));
    }
    return StringPrototypeSlice(ArrayPrototypeJoin(parts, " "), 0, MAX_LINE);
  };
  const line = (level: LogLevel) => (...args: unknown[]) => log(level, format(args));
  Object.assign(console, {
    log: line("info"),
    info: line("info"),
    debug: line("debug"),
    trace: line("debug"),
    warn: line("warn"),
    error: line("error"),
  });
  // A callback that throws later (a timer, a promise nobody awaits) is logged; the container
  // goes on serving, as one request's failure must not end the others.
  const preventDefault = uncurry(Event.prototype.preventDefault);
  const errorOf = uncurry(
    Object.getOwnPropertyDescriptor(ErrorEvent.prototype, "error")!.get! as (
      this: ErrorEvent,
    ) => unknown,
  );
  const reasonOf = uncurry(
    Object.getOwnPropertyDescriptor(PromiseRejectionEvent.prototype, "reason")!.get! as (
      this: PromiseRejectionEvent,
    ) => unknown,
  );
  globalThis.addEventListener("error", (event) => {
    preventDefault(event);
    log("error", `uncaught: ${format([errorOf(event)])}`);
  });
  globalThis.addEventListener("unhandledrejection", (event) => {
    preventDefault(event);
    log("error", `unhandled rejection: ${format([reasonOf(event)])}`);
  });
  // Before the globals go: the timers' getters are on the global object.
  const timers = nativeTimers(global);
  removeHostGlobals(global);
  functionTimers(global, timers);
  tameCodeGeneration(global);
  fixBuiltins();
  Object.assign(global, { fetch: fetcher, Duktape: duktape });
}
