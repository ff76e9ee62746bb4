/**
 * The single executable's workers (src/program/self_program.ts) and its container processes:
 * what each part does once it is told its role.
 *
 * @module
 */
import { hostContainer } from "../mcm/sandbox/container_host.ts";
import { serveSandbox } from "../mcm/sandbox/sandbox_worker.ts";
import { serveFileSink } from "../storage/file_sink_worker.ts";
import { NO_PERMISSIONS, workerPermissions } from "./permission_set.ts";
import { listenForStop, type RoleMessage, startRoleWorker, workerExit } from "./self_program.ts";

/** A worker's global scope (lib.deno.worker's, which this file is not type-checked with). */
interface WorkerScope {
  onmessage: ((event: MessageEvent) => void) | null;
  postMessage(message: unknown): void;
}

/** Whether this code runs in a worker rather than a process's main thread. */
export function inWorker(): boolean {
  return "WorkerGlobalScope" in globalThis;
}

/**
 * Waits for this worker's role and plays it: `main` runs the program's `main(args)` (the node or
 * hub) and stops when the launcher says so; `container-host` hosts a container; `sandbox` runs a
 * microservice without any permission; `file-sink` writes the node's transfers to disk.
 */
export function acceptRole(main: (args: string[]) => Promise<number>): void {
  const scope = self as unknown as WorkerScope;
  const exit = (code: number) => scope.postMessage({ exit: code });
  scope.onmessage = (event: MessageEvent<RoleMessage>) => {
    const message = event.data;
    scope.onmessage = null;
    if (message.role === "sandbox") {
      serveSandbox(message.host);
    } else if (message.role === "file-sink") {
      serveFileSink();
    } else if (message.role === "container-host") {
      hostContainer(message.args, { startSandbox: () => message.sandbox, exit });
    } else {
      const stop = Promise.withResolvers<string>();
      scope.onmessage = (event: MessageEvent<{ stop?: string }>) => {
        if (event.data?.stop) stop.resolve(event.data.stop);
      };
      listenForStop(stop.promise, message.settings);
      main(message.args).then(exit, (error) => {
        console.error(error);
        exit(1);
      });
    }
  };
}

/**
 * `edgenode __container BUNDLE STORAGE_DIR STORAGE_MAX_BYTES NET SETTINGS`, the executable's container
 * process: its host runs in a worker that may read the program, the bundle and the storage
 * folder, write that folder and connect to NET (`*`: anywhere; empty: nowhere; else comma-separated hosts).
 */
export async function runContainerProcess(args: string[]): Promise<number> {
  const [bundle, storageDir, storageBytes, net, settings] = args;
  const permissions = workerPermissions({
    ...NO_PERMISSIONS,
    read: [bundle, storageDir],
    write: [storageDir],
    net: net === "*" ? true : net ? net.split(",") : [],
  });
  const link = new MessageChannel();
  // The sandbox first: it loads while the host opens the storage.
  const sandbox = startRoleWorker({ role: "sandbox", host: link.port1 }, "none", [link.port1]);
  const host = startRoleWorker(
    {
      role: "container-host",
      args: [bundle, storageDir, storageBytes, settings],
      sandbox: link.port2,
    },
    permissions,
    [link.port2],
  );
  return await Promise.race([
    workerExit(host, "the container host", 70),
    workerExit(sandbox, "the microservice's worker", 70),
  ]);
}
