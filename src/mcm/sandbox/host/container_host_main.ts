/**
 * The container process's main module (bundled into bundles/sandbox_sources.ts as
 * container_host.js), in three ways:
 * - `container_host.js` (a cold process, started for one container by `deno run` with its
 *   flags): the host runs on the main thread and starts the sandboxed worker from
 *   sandbox_worker.js beside it.
 * - `container_host.js spare NET` (a warm spare; NET is the JSON of the hosts it may reach, null
 *   for any): the main thread starts the sandboxed worker at once, waits for the node's take
 *   (the worker passes it on) and only then starts this module again as the host, in a worker
 *   narrowed to the bundle and the storage folder the take names (src/mcm/runtime/container_process.ts
 *   says why).
 * - `container_host.js group [SOCKET]` (a client's process, mcm.containerProcess `per-client`):
 *   the main thread hosts the containers the node opens in it, each in a sandboxed worker
 *   (tenant_host.ts), which connects to the node's SOCKET if there is one.
 * - as a worker (the spare's host, or the single executable's: container_workers.ts):
 *   its first message is a port to the sandboxed worker, and the take when it came first; or,
 *   for the single executable's client process, `group` with the sandbox's source.
 *
 * @module
 */
import { getPriority, setPriority } from "node:os";
import { NO_PERMISSIONS, workerPermissions } from "../../../program/permission_set.ts";
import type { TakeMessage } from "../channel_protocol.ts";
import { GROUP_SANDBOX, LINKED_SANDBOX } from "../host_protocol.ts";
import { hostContainer, processExit } from "./container_host.ts";
import { fileUrlPath } from "./file_path.ts";
import { hostTenant } from "./tenant_host.ts";

/** How much lower than the node's a container process's threads run (nice units). */
const MICROSERVICE_NICENESS = 10;

/** The first message of this module run as a worker. */
type WorkerStart =
  | { sandbox: MessagePort; take?: TakeMessage }
  /** A client's process in the single executable: the sandbox's module as text. */
  | { group: string };

/** The worker scope, when this runs in one (lib.deno.worker's, not this file's). */
interface WorkerScope {
  onmessage: ((event: MessageEvent<WorkerStart>) => void) | null;
  postMessage(message: unknown): void;
}

/**
 * The permissions of a client's sandboxed worker: none, or with the node's socket for the
 * process (`group SOCKET`: src/mcm/runtime/channel_socket.ts), that path alone, to connect to
 * it (Deno asks for read, write and `unix:` net access to a socket's path).
 */
function groupSandboxPermissions(socket?: string): Deno.PermissionOptions {
  if (!socket) return "none";
  return workerPermissions({
    ...NO_PERMISSIONS,
    read: [socket],
    write: [socket],
    net: [`unix:${socket}`],
  });
}

/**
 * Hosts a client's containers, whose sandboxes start from `sandboxUrl`, until stdin ends; with
 * `socket`, their workers connect to the node there.
 */
function serveGroup(sandboxUrl: string, exit: (code: number) => void, socket?: string): void {
  const permissions = groupSandboxPermissions(socket);
  hostTenant({
    stdin: Deno.stdin.readable,
    stdout: Deno.stdout.writable,
    socket,
    startSandbox: () =>
      new Worker(sandboxUrl, {
        type: "module",
        name: GROUP_SANDBOX,
        deno: { permissions },
      }),
  }).then(() => exit(0), (error) => {
    console.error(`edgenode: the client's process failed: ${error?.message ?? error}`);
    exit(70);
  });
}

function startSandbox(name: string): Worker {
  const worker = new Worker(new URL("./sandbox_worker.js", import.meta.url).href, {
    type: "module",
    name,
    deno: { permissions: "none" },
  });
  worker.onerror = (event) => {
    event.preventDefault();
    console.error(`the microservice's worker failed: ${event.message}`);
    Deno.exit(70);
  };
  return worker;
}

/** A spare's main thread: the sandbox now, the host narrowed once the take says to what. */
function waitAsSpare(net: string[] | null): void {
  const link = new MessageChannel();
  startSandbox(LINKED_SANDBOX).postMessage({ host: link.port1 }, [link.port1]);
  link.port2.onmessage = (event: MessageEvent<"exit" | TakeMessage>) => {
    if (event.data === "exit" || event.data?.t !== "take") Deno.exit(0);
    const take = event.data as TakeMessage;
    link.port2.onmessage = null;
    const host = new Worker(import.meta.url, {
      type: "module",
      name: "container host",
      deno: {
        // This module itself, beside the bundle and the storage of the container.
        permissions: workerPermissions({
          ...NO_PERMISSIONS,
          read: [fileUrlPath(import.meta.url), take.bundle, take.storageDir],
          write: [take.storageDir],
          net: net ?? true,
          // The machine's addresses now (network_policy.ts).
          sys: ["networkInterfaces"],
        }),
      },
    });
    host.onmessage = (message: MessageEvent<{ exit?: number }>) => {
      if (typeof message.data?.exit === "number") Deno.exit(message.data.exit);
    };
    host.onerror = (error) => {
      error.preventDefault();
      console.error(`the container host failed: ${error.message}`);
      Deno.exit(70);
    };
    host.postMessage({ sandbox: link.port2, take }, [link.port2]);
  };
}

/**
 * Microservices run below the node and its inference engine: this thread's nice value goes up
 * by MICROSERVICE_NICENESS before it starts any worker, and the workers it starts (each
 * microservice's thread) inherit it, so the node's own threads (its API, every client's
 * routing, the key holder's models) win the CPU from microservices' loops. Linux keeps a nice
 * value per thread: the runtime's threads started before this keep theirs.
 */
function yieldToTheNode(): void {
  try {
    setPriority(Math.min(19, getPriority() + MICROSERVICE_NICENESS));
  } catch {
    // Not allowed here (no --allow-sys=setPriority: an older node's flags): as before.
  }
}

if ("WorkerGlobalScope" in globalThis) {
  const scope = self as unknown as WorkerScope;
  scope.onmessage = (event) => {
    scope.onmessage = null;
    const start = event.data;
    if ("group" in start) {
      const url = URL.createObjectURL(new Blob([start.group], { type: "text/javascript" }));
      return serveGroup(url, (code) => scope.postMessage({ exit: code }));
    }
    hostContainer({
      startSandbox: () => start.sandbox,
      exit: processExit((code) => scope.postMessage({ exit: code })),
    }, start.take);
  };
} else if (Deno.args[0] === "group") {
  yieldToTheNode();
  serveGroup(new URL("./sandbox_worker.js", import.meta.url).href, Deno.exit, Deno.args[1]);
} else if (Deno.args[0] === "spare") {
  yieldToTheNode();
  waitAsSpare(JSON.parse(Deno.args[1]));
} else {
  yieldToTheNode();
  hostContainer({ startSandbox: () => startSandbox("microservice"), exit: processExit(Deno.exit) });
}
