/**
 * Stack traces without the node's paths. The sandbox's own module lies in the node's data
 * directory (the bundled sandbox_worker.js), and its frames (the request serving path, the
 * bundle's evaluation) appear under every microservice's error: in its log, in a `fatal`
 * message and so in the container's lastError, and in whatever the microservice does with
 * `error.stack`. So the worker formats stack traces itself (V8's `Error.prepareStackTrace`,
 * which Deno honours), naming the directory of its module `edgenode:/`; a hook the
 * microservice sets (libraries do) is kept, behind the accessor, and gets call sites whose file
 * names are neutral too. The bundle itself is evaluated under `microservice:/<serviceType>/index.js`
 * (sandbox_worker.ts; the service type is `<clientId>-<container name>`).
 *
 * @module
 */
import {
  ArrayPrototypeJoin,
  ArrayPrototypePush,
  ErrorPrototypeToString,
  ObjectDefineProperty,
  ReflectApply,
  SafeProxy,
  StringPrototypeReplaceAll,
} from "./intrinsics.ts";

/** What the sandbox's own directory is called in stack traces. */
export const NEUTRAL_DIRECTORY = "edgenode:/";

/** The CallSite methods that answer a file name (or text with one). */
const NAMING: Record<string, boolean> = {
  __proto__: null,
  getFileName: true,
  getScriptNameOrSourceURL: true,
  getEvalOrigin: true,
  toString: true,
} as unknown as Record<string, boolean>;

type CallSite = Record<string, (...args: unknown[]) => unknown>;
type Hook = (error: Error, sites: CallSite[]) => unknown;

/**
 * Text with `moduleUrl`'s directory (as a URL and as a path) named NEUTRAL_DIRECTORY.
 */
export function neutralPaths(moduleUrl: string): (text: string) => string {
  const url = new URL(moduleUrl);
  // A file's directory, as a URL and as a path; a blob: or data: URL (the single executable's
  // workers) is no path, named as a whole.
  const forms: [string, string][] = url.protocol === "file:"
    ? [
      [new URL(".", url).href, NEUTRAL_DIRECTORY],
      [decodeURIComponent(new URL(".", url).pathname), NEUTRAL_DIRECTORY],
      [new URL(".", url).pathname, NEUTRAL_DIRECTORY],
    ]
    : [[moduleUrl, `${NEUTRAL_DIRECTORY}sandbox_worker.js`]];
  return (text) => {
    for (let i = 0; i < forms.length; i++) {
      text = StringPrototypeReplaceAll(text, forms[i][0], forms[i][1]);
    }
    return text;
  };
}

/**
 * Makes the worker's stack traces name its own directory neutrally (`scrub`: neutralPaths).
 * Call once, before the microservice's code.
 */
export function neutralStacks(scrub: (text: string) => string): void {
  let theirs: Hook | undefined;
  const site = (callSite: CallSite): CallSite =>
    new SafeProxy(callSite, {
      get(target, name) {
        const value = target[name as string];
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          const answer = ReflectApply(value, target, args);
          return typeof answer === "string" && NAMING[name as string] === true
            ? scrub(answer)
            : answer;
        };
      },
    });
  const ours: Hook = (error, sites) => {
    const neutral: CallSite[] = [];
    for (let i = 0; i < sites.length; i++) ArrayPrototypePush(neutral, site(sites[i]));
    if (theirs) return theirs(error, neutral);
    let head: string;
    try {
      head = ErrorPrototypeToString(error);
    } catch {
      head = "Error";
    }
    const lines = [scrub(head)];
    for (let i = 0; i < neutral.length; i++) {
      ArrayPrototypePush(lines, `    at ${neutral[i].toString()}`);
    }
    return ArrayPrototypeJoin(lines, "\n");
  };
  ObjectDefineProperty(Error, "prepareStackTrace", {
    get: () => ours,
    set: (hook: unknown) => {
      // A library that sets it back to what it read hands ours back: that means "none".
      theirs = typeof hook === "function" && hook !== ours ? hook as Hook : undefined;
    },
    configurable: false,
  });
}
