/**
 * What the node and a container process say to each other outside the messages spec/mcm.yaml
 * validates (ContainerCall, ContainerReady, ...): the node's first two messages on the channel
 * (`take`, then `start`), the settings and limits the `take` carries, and the exit codes and
 * stderr line by which a container process says why it ended, and how a refused call to the
 * node fails (CallFailure: a kind, never an HTTP status).
 *
 * This module holds types and constants only: the node (src/mcm/runtime/), the process's host
 * thread (host/) and its sandboxed worker (worker/) import it, and none of them imports the
 * other's implementation (src/mcm/sandbox/worker/worker_boundary_test.ts). The model is
 * src/inference/engine_protocol.ts.
 *
 * @module
 */
import type { ErrorDetails, ErrorKind } from "../../errors/mod.ts";

/** Exit code: the process's memory went over its limit. */
export const EXIT_OUT_OF_MEMORY = 86;
/** Exit code: the microservice used more CPU than its budget, or stopped running. */
export const EXIT_CPU_BUDGET = 87;

/**
 * Starts the last line of a container process's stderr that says why it ended
 * (`edgenode: <why>`, host/container_host.ts processExit; read by runtime/container_process.ts).
 */
export const EXIT_REASON_PREFIX = "edgenode: ";

/** The classes of spec/config.yaml's McmConfig.outboundNetworks (network_policy.ts). */
export type NetworkClass = "public" | "private" | "loopback" | "link-local" | "node";

/** The limits (spec/mcm.yaml, "Limits"), kept by the host's watchdog (host/watchdog.ts). */
export interface WatchdogLimits {
  /** Resident memory of the whole process, bytes (a container with a process of its own). */
  memoryBytes: number;
  /**
   * The microservice's heap and external memory, bytes (MCM.MEMORY_MB: a container in a
   * client's process, where the process's memory is not one container's).
   */
  heapBytes: number;
  /** CPU the microservice may use while serving no request, as a share of one core. */
  idleCpuShare: number;
  /** CPU it may use at once beyond that share (the bucket's size), milliseconds. */
  idleCpuBurstMs: number;
  /**
   * What the bucket holds at the start, milliseconds (default full): a container restarted for
   * its CPU starts nearly empty, so that crashing again and again earns it no fresh burst.
   */
  idleCpuStartMs?: number;
  /** How long the microservice's thread may go without reporting while serving a request. */
  busySilenceMs: number;
  /**
   * How long it may go without reporting while its code loads (past the node's
   * mcm.loadTimeoutSeconds: the node's limit names the setting); absent: 10 s.
   */
  loadSilenceMs?: number;
  /**
   * Outbound requests (and storage file reads) open at once (MCM.MAX_OUTBOUND_REQUESTS);
   * absent: DEFAULT_OUTBOUND_REQUESTS.
   */
  outboundRequests?: number;
}

/** The default of MCM.MAX_OUTBOUND_REQUESTS. */
export const DEFAULT_OUTBOUND_REQUESTS = 32;

/** The node's settings for one container process (part of its `take`). */
export interface HostSettings {
  /** Address classes outbound requests may reach (mcm.outboundNetworks). */
  networks: NetworkClass[];
  /** The node's own addresses. */
  nodeAddresses: string[];
  limits: WatchdogLimits;
}

/**
 * The node's first message to a container process: which container it is. A process is started
 * before it knows (a warm spare, runtime/container_process.ts), so nothing of the container is
 * in its arguments; the paths are ones its permissions already cover.
 */
export interface TakeMessage {
  t: "take";
  /** The container's bundle file (under BundleFiles.bundlesDir). */
  bundle: string;
  /** The container's storage folder (under BundleFiles.storageRoot). */
  storageDir: string;
  /** The most its storage may hold (mcm.storageMb). */
  storageBytes: number;
  /** Where outbound requests may go, and the process's limits. */
  settings: HostSettings;
}

/** `context.info` (the reference's programming model: worker/mimik_context.ts). */
export interface ContextInfo {
  serviceType: string;
  apiRoot: string;
  /** The node's HTTP port, as a string (as the reference's). */
  httpPort: string;
  accountId: string;
  nodeId: string;
}

/** The node's second message (spec/mcm.yaml): the env and info of this container. */
export interface StartMessage {
  t: "start";
  env: Record<string, string>;
  info: ContextInfo;
  maxBodyBytes: number;
  fetchTimeoutMs: number;
}

/**
 * Why the node refused a microservice's call to it (spec/mcm.yaml, ContainerAnswer's `error`):
 * the kind of domain error, or `internal` for the node's own failure (its message then says no
 * more). The sandbox turns the kind into the HTTP-like status the microservice's callbacks get.
 */
export interface CallFailure {
  message: string;
  kind: ErrorKind | "internal";
  details?: ErrorDetails;
}

/**
 * Bytes of a streamed answer's body (a `mesh` call's chunks, decoded) the node sends beyond what
 * the microservice's reader took (ContainerTook): what it does not read stays with the peer.
 */
export const CALL_WINDOW_BYTES = 1024 * 1024;
