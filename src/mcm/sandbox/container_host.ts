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
 * gen` after changing anything here. In the single executable it runs in a narrowed worker of
 * the program itself (src/program/).
 *
 * @module
 */
import { answerBuffer, answerSync } from "./context_services.ts";
import { type NetworkClass, NetworkPolicy } from "./network_policy.ts";
import { serveOutbound } from "./outbound_relay.ts";
import { StorageHost } from "./storage_host.ts";
import { activityBuffer, type CpuSample, watchContainer, type WatchdogLimits } from "./watchdog.ts";

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
  /** Ends the container process with this code. */
  exit(code: number): void;
}

/** The node's settings for one container process (its last argument, as JSON). */
export interface HostSettings {
  /** Address classes outbound requests may reach (mcm.outboundNetworks). */
  networks: NetworkClass[];
  /** The node's own addresses. */
  nodeAddresses: string[];
  limits: WatchdogLimits;
}

/** The process's arguments: BUNDLE_FILE STORAGE_DIR STORAGE_MAX_BYTES SETTINGS_JSON. */
export function hostContainer(args: string[], surroundings: HostSurroundings): void {
  // The worker first: it loads on its own thread while this one opens the storage.
  const worker = surroundings.startSandbox();
  const [bundle, storageDir, storageBytes, settingsJson] = args;
  const settings = JSON.parse(settingsJson) as HostSettings;
  const stop = (code: number, why: string) => {
    console.error(`edgenode: ${why}`);
    surroundings.exit(code);
  };
  const activity = activityBuffer();
  const sample = watchContainer(settings.limits, stop, activity);
  const code = Deno.readTextFileSync(bundle);
  const storage = new StorageHost(storageDir, Number(storageBytes));

  const storageChannel = new MessageChannel();
  const storageAnswers = answerBuffer();
  storageChannel.port1.onmessage = async (event) => {
    answerSync(storageAnswers, await storage.run(event.data));
  };
  const outboundChannel = new MessageChannel();
  serveOutbound(
    outboundChannel.port1,
    storage.files,
    new NetworkPolicy(settings.networks, settings.nodeAddresses),
  );
  worker.onmessage = (event: MessageEvent<"exit" | CpuSample>) => {
    if (event.data === "exit") surroundings.exit(0);
    else if (typeof event.data?.micros === "number") sample(event.data);
  };
  worker.postMessage({
    code,
    storagePort: storageChannel.port2,
    storageAnswers,
    outboundPort: outboundChannel.port2,
    activity,
  }, [storageChannel.port2, outboundChannel.port2]);
}
