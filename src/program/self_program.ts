/**
 * How edgenode starts narrowed parts of itself: the node or hub behind `serve` and `hub`, and
 * the container processes.
 *
 * Run as a script (`deno run src/main.ts`), it starts `deno run <narrow flags> <main module>
 * ARGS` as a child process.
 *
 * As one executable (`deno compile`, or the `deno task bundle` file that stands in for it in CI)
 * its permissions are fixed when it is built, and a child started from it gets the same ones. So
 * it narrows inside instead: the node or hub runs in a Worker of the program's own main module
 * with the narrowed permissions, and a container process is `<itself> __container ...`, whose
 * host runs in such a Worker too. Nothing is loaded from disk at run time: a compiled binary can
 * only load the modules it embeds.
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { permissionFlags, type PermissionSet, workerPermissions } from "./permission_set.ts";

/** What a role worker is told first (src/program/worker_roles.ts). */
export type RoleMessage = { role: "main"; args: string[]; settings: unknown };

/** The executable's own module and how it runs itself again; undefined when run as a script. */
let executable: { entry: string; prefix: string[] } | undefined;

/**
 * Marks this program as the single executable whose main module is `entry`, built with `flags`.
 * Compiled, it runs itself as its own binary; as a bundle under `deno run`, it runs `deno run
 * <flags> <bundle>`, exactly as a binary with those flags baked in would behave.
 */
export function runAsExecutable(entry: string, flags: string[]): void {
  executable = {
    entry,
    prefix: Deno.build.standalone ? [] : ["run", ...flags, "--no-config", fileURLToPath(entry)],
  };
}

/** Whether this is the single executable (narrowing by workers) rather than a script. */
export function isExecutable(): boolean {
  return executable !== undefined;
}

/** The command and arguments that run this executable again with `args`. */
export function selfCommand(args: string[]): { command: string; args: string[] } {
  if (!executable) throw new Error("selfCommand is for the single executable");
  return { command: Deno.execPath(), args: [...executable.prefix, ...args] };
}

/**
 * Starts a worker of this executable's main module in `role`, with `permissions`. The first
 * message tells it its role (with `transfer`, the ports in it); the program's main module hands
 * it to acceptRole.
 */
export function startRoleWorker(
  message: RoleMessage,
  permissions: Deno.PermissionOptions,
  transfer: Transferable[] = [],
): Worker {
  if (!executable) throw new Error("role workers are for the single executable");
  const worker = new Worker(executable.entry, {
    type: "module",
    name: message.role,
    deno: { permissions },
  });
  worker.postMessage(message, transfer);
  return worker;
}

/**
 * `--cpu-prof` flags when EDGENODE_CPU_PROF names a folder (for benchmarks); none when it is unset
 * or when this launcher may not read it (a narrowed `--allow-env` must not stop the node).
 */
function cpuProfileFlags(): string[] {
  const name = "EDGENODE_CPU_PROF";
  if (Deno.permissions.querySync({ name: "env", variable: name }).state !== "granted") return [];
  const dir = Deno.env.get(name);
  return dir ? ["--cpu-prof", `--cpu-prof-dir=${dir}`] : [];
}

/**
 * Runs this program with `args` narrowed to `set` and returns its exit code: a child process
 * when run as a script, a worker in the executable. SIGINT and SIGTERM are passed on. The
 * launcher's `settings` (loaded and checked once, by the launcher) reach it as they are, through
 * its stdin or the worker's first message: never in argv, where other users could read the key.
 */
export async function runNarrowed(
  set: PermissionSet,
  args: string[],
  settings: unknown,
): Promise<number> {
  if (!executable) {
    return await runChild(Deno.execPath(), [
      "run",
      // npm packages from Deno's cache, fetched as the node imports them: deno.json's
      // node_modules is the developers' (dev-only packages included), and may not exist.
      "--node-modules-dir=none",
      // Workers narrowed below the node's own permissions (the file sink: src/storage/).
      "--unstable-worker-options",
      // request.signal aborts only when a client goes away (src/program/executable_flags.ts).
      "--unstable-no-legacy-abort",
      ...cpuProfileFlags(),
      ...permissionFlags(set),
      Deno.mainModule,
      ...args,
    ], settings);
  }
  const worker = startRoleWorker({ role: "main", args, settings }, workerPermissions(set));
  const stop = (signal: Deno.Signal) => () => worker.postMessage({ stop: signal });
  return await withSignals(stop, workerExit(worker, "the node", 1)).finally(() =>
    worker.terminate()
  );
}

/**
 * The exit code a role worker posts (`{exit}`), or `failureCode` if `what` (named in the error
 * line) fails with an uncaught error.
 */
export function workerExit(worker: Worker, what: string, failureCode: number): Promise<number> {
  return new Promise<number>((resolve) => {
    worker.onmessage = (event: MessageEvent<{ exit?: number }>) => {
      if (typeof event.data?.exit === "number") resolve(event.data.exit);
    };
    worker.onerror = (event) => {
      event.preventDefault();
      console.error(`edgenode: ${what} failed: ${event.message}`);
      resolve(failureCode);
    };
  });
}

/**
 * Runs `command args` as a child, passing signals on; returns its exit code. Its stdin gets
 * `settings` as one JSON line and then stays open: it closes when this process ends.
 */
async function runChild(command: string, args: string[], settings: unknown): Promise<number> {
  const child = new Deno.Command(command, { args, stdin: "piped" }).spawn();
  const writer = child.stdin.getWriter();
  writer.write(new TextEncoder().encode(JSON.stringify(settings) + "\n")).catch(() => {
    // The child is already gone; its exit status says why.
  });
  const forward = (signal: Deno.Signal) => () => {
    try {
      child.kill(signal);
    } catch {
      // Already gone.
    }
  };
  const status = await withSignals(forward, child.status);
  return status.signal ? 128 + (SIGNAL_NUMBERS[status.signal] ?? 0) : status.code;
}

/** The signals that stop edgenode: Windows has no SIGTERM, but Ctrl-Break. */
const STOP_SIGNALS: Deno.Signal[] = Deno.build.os === "windows"
  ? ["SIGINT", "SIGBREAK"]
  : ["SIGINT", "SIGTERM"];

/** Calls `handler(signal)()` on each stop signal until `until` settles. */
async function withSignals<T>(
  handler: (signal: Deno.Signal) => () => void,
  until: Promise<T>,
): Promise<T> {
  const handlers = STOP_SIGNALS.map((signal) => [signal, handler(signal)] as const);
  for (const [signal, listener] of handlers) Deno.addSignalListener(signal, listener);
  try {
    return await until;
  } finally {
    for (const [signal, listener] of handlers) Deno.removeSignalListener(signal, listener);
  }
}

/** Exit code 128 + N for a child ended by signal N, as shells report it. */
const SIGNAL_NUMBERS: Partial<Record<Deno.Signal, number>> = { SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };

/** Resolves when a role worker's parent asks it to stop (see acceptRole). */
let stopFromParent: Promise<string> | undefined;
/** The settings a role worker's parent sent (see acceptRole). */
let settingsFromParent: unknown;

/** Lets stopRequested hear the parent of this role worker, and launcherSettings its settings. */
export function listenForStop(stop: Promise<string>, settings: unknown): void {
  stopFromParent = stop;
  settingsFromParent = settings;
}

/** The launcher's stdin, read once: the settings line, then its end when the launcher exits. */
let launcherPipe: { settings: Promise<string>; closed: Promise<void> } | undefined;

function readLauncherPipe(): NonNullable<typeof launcherPipe> {
  if (launcherPipe) return launcherPipe;
  const line = Promise.withResolvers<string>();
  const closed = (async () => {
    let text: string | undefined = "";
    for await (const chunk of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
      if (text === undefined) continue; // Nothing follows the settings; wait for the end.
      text += chunk;
      const end = text.indexOf("\n");
      if (end >= 0) {
        line.resolve(text.slice(0, end));
        text = undefined;
      }
    }
    if (text !== undefined) {
      line.reject(new Error("the launcher sent no settings: start edgenode with serve or hub"));
    }
  })();
  return launcherPipe = { settings: line.promise, closed };
}

/** The settings the launcher loaded, for the node or hub it runs (see runNarrowed). */
export async function launcherSettings<T>(): Promise<T> {
  if (stopFromParent) return settingsFromParent as T;
  return JSON.parse(await readLauncherPipe().settings) as T;
}

/**
 * Resolves with the reason when the node or hub should stop: SIGINT, SIGTERM or the launcher
 * going away (its stdin pipe closes), or in the executable, the launcher's message.
 */
export function stopRequested(): Promise<string> {
  if (stopFromParent) return stopFromParent;
  const { promise, resolve } = Promise.withResolvers<string>();
  for (const signal of STOP_SIGNALS) Deno.addSignalListener(signal, () => resolve(signal));
  readLauncherPipe().closed.then(() => resolve("launcher exited"));
  return promise;
}

/**
 * Starts the node or hub with `start`, waits until the launcher asks to stop (stopRequested),
 * then runs its `shutdown`. The signals are heard before the start: a SIGTERM that comes while
 * it starts (systemd stopping a slow start, a test that stops at once) waits for the start and
 * then shuts down cleanly, instead of killing the process with its database open. Requests in
 * flight get 10 s; a long transfer must not keep the process up forever.
 */
export async function runUntilStopped(
  start: () => Promise<{ shutdown: () => Promise<void> }>,
): Promise<number> {
  const stop = stopRequested();
  const { shutdown } = await start();
  const reason = await stop;
  console.log(`stopping (${reason})`);
  const grace = new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), 10_000));
  if (await Promise.race([shutdown(), grace]) === "timeout") {
    console.log("stopped with requests still running after 10 s");
  }
  return 0;
}
