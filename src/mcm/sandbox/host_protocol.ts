/**
 * What a container process's host thread (host/) and its sandboxed worker (worker/), which runs
 * the microservice's code, say to each other over their ports and shared memory: the worker's
 * names, the setup the host hands the worker once the node said which container, the worker's
 * reports, the storage and outbound calls it makes and the slots of the counters both read.
 *
 * This module holds types and constants only: both sides import it, and neither imports the
 * other's implementation (src/mcm/sandbox/worker/worker_boundary_test.ts).
 *
 * @module
 */
import type { TakeMessage } from "./channel_protocol.ts";

/**
 * The worker name under which the sandbox expects a port to its host as its first message
 * (the single executable, where host and sandbox are siblings: host/container_workers.ts; a
 * warm spare: host/container_host_main.ts).
 */
export const LINKED_SANDBOX = "microservice (linked)";

/**
 * The worker name under which the sandbox expects a port to its host and a port for its
 * channel's bytes as its first message (a client's process: host/tenant_host.ts).
 */
export const GROUP_SANDBOX = "microservice (in a client's process)";

/** What the host hands the worker once the node said which container (the `take`). */
export interface SandboxSetup {
  /** The microservice's bundle. */
  code: string;
  /** Where storage calls go (StorageCall), answered in `storageAnswers`. */
  storagePort: MessagePort;
  /** The answer buffer of storage calls (ANSWER_HEADER_BYTES, then the answer's JSON). */
  storageAnswers: SharedArrayBuffer;
  /** Where outbound calls go (OutboundCall), answered on the same port (OutboundAnswer). */
  outboundPort: MessagePort;
  /** Shared with the host's watchdog: requests in flight, and requests begun (REQUESTS_*). */
  activity: SharedArrayBuffer;
  /** Whether the worker measures its own CPU time (worker/host_globals.ts). */
  measureCpu: boolean;
}

/** A report of the microservice's thread, every SAMPLE_MS. */
export interface CpuSample {
  /**
   * Microseconds of CPU its thread used since it started; absent where the worker does not
   * measure it (a client's process: worker/host_globals.ts).
   */
  micros?: number;
  /** Bytes of its heap in use plus external memory (ArrayBuffers, WebAssembly memories). */
  heap: number;
  /**
   * How late this report came, milliseconds (its thread was busy when it was due): without
   * its own CPU time, the host shares the process's CPU time out by it (host/tenant_host.ts).
   */
  lagMs?: number;
}

/**
 * What the worker posts to its host: the node's `take` (passed on before any microservice code
 * runs), its reports, and "exit" when the node closed the channel.
 */
export type SandboxMessage = "exit" | CpuSample | TakeMessage;

/** How often the worker reports (CpuSample), milliseconds. */
export const SAMPLE_MS = 250;

/**
 * Slot of the activity counters (an Int32Array the worker shares with the watchdog): requests
 * in flight.
 */
export const REQUESTS_IN_FLIGHT = 0;
/** Slot of the activity counters: requests begun since the worker started. */
export const REQUESTS_BEGUN = 1;

/** A storage call from the worker. */
export type StorageCall =
  | { op: "get"; key: string }
  | { op: "set"; key: string; value: string; tag?: string }
  | { op: "remove"; key: string }
  | { op: "page"; after: string | null; tag: string | null; limit: number }
  | { op: "removeTag"; tag: string }
  | { op: "saveFile"; name: string; base64: string }
  | { op: "deleteFile"; name: string };

/** The answer: a value, or the message of an error to throw in the worker. */
export type StorageAnswer = { value: unknown } | { error: string };

/**
 * Where a synchronous answer is passed from the host to the worker: a growable shared buffer
 * holding a state word, the answer's length and its JSON bytes. (node:worker_threads'
 * receiveMessageOnPort would do, but loading it costs a container 12 ms at every start.)
 */
export const ANSWER_HEADER_BYTES = 8;

/** What the worker sends on the outbound port. */
export type OutboundCall =
  | {
    t: "fetch";
    id: number;
    url: string;
    method: string;
    headers: [string, string][];
    body: Uint8Array | null;
    timeoutMs: number;
    saveTo?: string;
    connectMs?: number;
    idleMs?: number;
  }
  | { t: "file"; id: number; name: string }
  | { t: "pull"; id: number }
  | { t: "cancel"; id: number };

/** What the host answers on the outbound port. */
export type OutboundAnswer =
  | {
    t: "head";
    id: number;
    status: number;
    statusText: string;
    headers: [string, string][];
    url: string;
  }
  | { t: "chunk"; id: number; bytes: Uint8Array }
  | { t: "done"; id: number }
  | { t: "error"; id: number; message: string };
