/**
 * The container process: one per running container, started by the node with permissions of
 * its own (read the sandbox's source, the bundle and its storage folder; write that folder;
 * connect where microservices may) and a heap limit, so that a crash, a runaway loop or memory
 * exhaustion ends this process only. Its main thread runs no user code: it keeps the storage and
 * relays outbound HTTP for the sandboxed worker, which runs the microservice.
 *
 * It also keeps the process's limits (watchdog.ts) and where outbound requests may go
 * (network_policy.ts).
 *
 * Run by `deno run`, it is container_host_main.ts, bundled (bundles/sandbox_sources.ts, written out
 * by the node beside the bundled worker as container_host.js and sandbox_worker.js): `deno task
 * gen` after changing anything here. In the single executable the same bundled module runs in
 * a narrowed worker of the program (container_workers.ts). What it says to the node and to the
 * worker: ../channel_protocol.ts and ../host_protocol.ts.
 *
 * @module
 */
import {
  DEFAULT_OUTBOUND_REQUESTS,
  EXIT_REASON_PREFIX,
  type TakeMessage,
  type WatchdogLimits,
} from "../channel_protocol.ts";
import type { SandboxMessage, SandboxSetup } from "../host_protocol.ts";
import { NetworkPolicy } from "../network_policy.ts";
import { type OutboundRelay, serveOutbound } from "./outbound_relay.ts";
import { answerBuffer, answerSync, StorageHost } from "./storage_host.ts";
import {
  activityBuffer,
  type ContainerWatch,
  type MemoryScope,
  watchContainer,
} from "./watchdog.ts";

/** The host's end of its link to the sandboxed worker: the Worker itself, or a port to it. */
export interface SandboxLink {
  postMessage(message: unknown, transfer: Transferable[]): void;
  onmessage: ((event: MessageEvent) => void) | null;
}

/** What the container process's host needs from where it runs. */
export interface HostSurroundings {
  /**
   * Starts the sandboxed worker, without any permission (or links to it). Whoever starts it
   * ends the process with code 70 if it fails.
   */
  startSandbox(): SandboxLink;
  /** Ends the container with this code; `why` is for the node (ProcessEnded's reason). */
  exit(code: number, why?: string): void;
  /**
   * Whose memory the watchdog counts: the process's (a process of its own, the default) or the
   * worker's (a client's process, tenant_host.ts).
   */
  memory?: MemoryScope;
  /**
   * Hears the container's watch and outbound relay once the take set them up: tenant_host.ts
   * ranks memory by them, charges it its share of the process's CPU time, reports its usage and
   * closes the relay when the container ends.
   */
  onWatch?(watch: ContainerWatch, limits: WatchdogLimits, outbound: OutboundRelay): void;
}

/**
 * `exit` for a container with a process of its own: the reason goes to stderr as the line
 * `edgenode: <why>`, which the node reads (container_process.ts, exitReason), then the code.
 */
export function processExit(exit: (code: number) => void): HostSurroundings["exit"] {
  return (code, why) => {
    if (why) console.error(`${EXIT_REASON_PREFIX}${why}`);
    exit(code);
  };
}

/**
 * Hosts a container: starts the sandboxed worker at once (it loads on its own thread), waits
 * for the node's `take`, which the worker passes on (or is `given` it), then opens the storage,
 * reads the bundle and hands both to the worker.
 */
export function hostContainer(surroundings: HostSurroundings, given?: TakeMessage): void {
  const worker = surroundings.startSandbox();
  let watch: ContainerWatch | undefined;
  // A spare's host starts after the take, which its process's main thread received.
  if (given) watch = take(given, worker, surroundings);
  worker.onmessage = (event: MessageEvent<SandboxMessage>) => {
    const data = event.data;
    if (data === "exit") {
      watch?.stop();
      return surroundings.exit(0);
    }
    if (typeof data !== "object" || data === null) return;
    // Only the first: the worker passes the node's on before any microservice code runs in it.
    if ("t" in data && data.t === "take") watch ??= take(data, worker, surroundings);
    else if ("heap" in data && typeof data.heap === "number") watch?.sample(data);
  };
}

/** Sets up the container `message` names; returns its watch. */
function take(
  message: TakeMessage,
  worker: SandboxLink,
  surroundings: HostSurroundings,
): ContainerWatch {
  const { settings } = message;
  const activity = activityBuffer();
  const code = Deno.readTextFileSync(message.bundle);
  const storage = new StorageHost(message.storageDir, message.storageBytes);

  const storageChannel = new MessageChannel();
  const storageAnswers = answerBuffer();
  storageChannel.port1.onmessage = async (event) => {
    answerSync(storageAnswers, await storage.run(event.data));
  };
  const outboundChannel = new MessageChannel();
  const outbound = serveOutbound(
    outboundChannel.port1,
    storage.files,
    new NetworkPolicy(settings.networks, settings.nodeAddresses),
    {
      requests: settings.limits.outboundRequests ?? DEFAULT_OUTBOUND_REQUESTS,
      // Charged to its memory too (the watchdog's `held`): a quarter of it at most.
      bodyBytes: Math.floor(settings.limits.heapBytes / 4),
      deadlineMs: settings.limits.busySilenceMs,
    },
  );
  const watch = watchContainer(
    settings.limits,
    (code, why) => {
      // Its requests end with it, at once (a client's process goes on).
      outbound.close();
      surroundings.exit(code, why);
    },
    activity,
    surroundings.memory,
    () => outbound.heldBytes(),
  );
  worker.postMessage(
    {
      code,
      storagePort: storageChannel.port2,
      storageAnswers,
      outboundPort: outboundChannel.port2,
      activity,
      // A worker of a client's process does not: its CPU time is the host's estimate.
      measureCpu: surroundings.memory !== "worker",
    } satisfies SandboxSetup,
    [storageChannel.port2, outboundChannel.port2],
  );
  surroundings.onWatch?.(watch, settings.limits, outbound);
  return watch;
}
