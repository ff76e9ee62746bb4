/**
 * Starting a container process: its Deno permissions and its command line.
 *
 * Everything a container process may touch is fixed when it starts (its `deno run` flags, or in
 * the single executable its host worker's permissions and its heap limit): paths to read and
 * write, hosts to reach, refused ranges, memory. Which container it runs comes in the node's
 * `take` message. A cold process is started for one container, with that container's bundle
 * and storage folder as its paths, and its host runs on its main thread.
 *
 * A warm spare (spare_pool.ts) is started before any container is known. Its process may read
 * the folders of all bundles and all storage and write the latter, but no thread of it touches
 * a file before the take: its main thread only starts the sandboxed worker, waits for the take
 * and then starts the host as a worker narrowed to exactly the cold process's paths (Deno checks
 * permissions per thread, and a worker keeps the process's --deny-net). Giving the spare's
 * process only a folder of its own, linked to the container's files at the take, would need a
 * symbolic link, which Deno lets only an unscoped process make (the node is scoped); moving the
 * storage folder into it breaks a redeploy, whose old process still has it open. Everything else
 * (the heap limit, --allow-net, --deny-net) is the spare's profile, the node's defaults: a
 * container that needs another (its own MCM.MEMORY_MB) gets a cold process.
 *
 * @module
 */
import { isExecutable, selfCommand } from "../../program/self_program.ts";
import {
  EXIT_CPU_BUDGET,
  EXIT_OUT_OF_MEMORY,
  EXIT_REASON_PREFIX,
  type NetworkClass,
} from "../sandbox/channel_protocol.ts";
import { deniedRanges } from "../sandbox/network_policy.ts";

/** The flags a container process shares with every other container of the same settings. */
export interface ProcessProfile {
  /** The heap limit (MCM.MEMORY_MB). */
  memoryMb: number;
  /** Hosts outbound HTTP may reach; undefined: any. */
  outboundHosts: string[] | undefined;
  /** IPv4 ranges refused whatever the host's own check says (`--deny-net`). */
  deniedRanges: string[];
}

/**
 * The profile of a container process: its heap limit (the node's mcm.memoryMb, or the
 * container's own MCM.MEMORY_MB), the node's outbound hosts, and the ranges the node's outbound
 * networks and own addresses refuse. A spare is started with the node's defaults and a
 * container's process with its own: both come from here, so they match when they should.
 */
export function processProfile(
  memoryMb: number,
  outboundHosts: string[] | undefined,
  networks: NetworkClass[],
  nodeAddresses: string[],
): ProcessProfile {
  return { memoryMb, outboundHosts, deniedRanges: deniedRanges(networks, nodeAddresses) };
}

/** What one container process may touch. */
export interface Launch {
  /**
   * Files and folders it may read besides the sandbox's code: the bundle and the storage, or
   * for a spare the folders of every bundle and every storage (see `spare`).
   */
  read: string[];
  /** The folder it may write: the container's storage (a spare: the folder of all storage). */
  write: string;
  /** Its heap limit and network flags (shared by every container of the same settings). */
  profile: ProcessProfile;
  /**
   * A warm spare: its host thread starts only once the node says which container it serves,
   * as a worker narrowed to that container's bundle and storage (container_host_main.ts).
   */
  spare?: boolean;
  /**
   * A client's process, hosting several containers as workers (sandbox/host/tenant_host.ts); its
   * paths are those of a spare.
   */
  group?: boolean;
  /**
   * A client's process: the unix socket its workers connect to (channel_socket.ts), which it
   * may read, write and connect to (that path only); absent: its main thread relays.
   */
  socket?: string;
}

/**
 * What the node's channel to one container runs over: a process of its own (Deno.ChildProcess
 * is one) or a slot of a client's process (tenant_process.ts).
 */
export interface ContainerPipe {
  /** Its input; with `direct`, only closed (the bytes go there). */
  readonly stdin: WritableStream<Uint8Array>;
  /** Its output; with `direct`, unused (the bytes come from there). */
  readonly stdout: ReadableStream<Uint8Array>;
  /**
   * The container's channel without streams around it: its worker's own connection to the node
   * (a slot of a client's process with a socket: tenant_process.ts).
   */
  readonly direct?: DirectLink;
  /** Its error output; the last line `edgenode: <why>` says why it ended. */
  readonly stderr: ReadableStream<Uint8Array>;
  /** How it ended. */
  readonly status: Promise<ExitStatus>;
  /** Ends it at once. */
  kill(signal?: Deno.Signal): void;
}

/** A channel's bytes both ways, as plain calls (ContainerPipe's `direct`). */
export interface DirectLink {
  /** Writes all of `bytes` (once connected); resolves when written, or at once if it is gone. */
  write(bytes: Uint8Array): Promise<void>;
  /**
   * Hands each chunk read to `onChunk` (its own bytes) until the end; resolves then.
   */
  read(onChunk: (bytes: Uint8Array) => void): Promise<void>;
}

/** How a container's process (or its slot of a client's process) ended. */
export interface ExitStatus {
  code: number;
  signal: Deno.Signal | null;
}

/** Whether a process started with `a` is the process `b` asks for, up to its paths. */
export function sameProfile(a: ProcessProfile, b: ProcessProfile): boolean {
  const sameList = (x: string[] | undefined, y: string[] | undefined) =>
    x === undefined || y === undefined
      ? x === y
      : x.length === y.length && x.every((value, i) => value === y[i]);
  return a.memoryMb === b.memoryMb && sameList(a.outboundHosts, b.outboundHosts) &&
    sameList(a.deniedRanges, b.deniedRanges);
}

/** A container process that ended before its code loaded, and why. */
export class ProcessEnded extends Error {
  /** Whether the container's own code ended it (its memory or its CPU time). */
  readonly byCode: boolean;

  constructor(reason: string, byCode: boolean) {
    super(`the process ended while starting (${reason})`);
    this.byCode = byCode;
  }
}

/** Why a container process ended, in a user's words; whether its own code's limits did it. */
export function exitReason(
  status: ExitStatus,
  stderr: string,
  memoryMb: number,
): { reason: string; byCode: boolean } {
  const lines = stderr.trim().split("\n");
  const own = lines.findLast((line) => line.startsWith(EXIT_REASON_PREFIX))
    ?.slice(EXIT_REASON_PREFIX.length);
  // V8 ends a process whose heap cannot grow with SIGTRAP and a C stack trace, after the line
  // that says so may have scrolled out of the tail kept.
  if (
    status.code === EXIT_OUT_OF_MEMORY || status.signal === "SIGTRAP" ||
    /out of memory|heap limit|C stack trace/i.test(stderr)
  ) {
    return {
      reason: `out of memory (MCM.MEMORY_MB ${memoryMb} MB)${own ? `: ${own}` : ""}`,
      byCode: true,
    };
  }
  if (status.code === EXIT_CPU_BUDGET && own) return { reason: own, byCode: true };
  const tail = lines.slice(-3).join(" | ");
  const how = status.signal ? `killed by ${status.signal}` : `exit code ${status.code}`;
  return { reason: tail ? `${how}: ${tail}` : how, byCode: false };
}

/**
 * V8's `gc` in a client's process: its workers compact their heaps once their code loaded and
 * when they go quiet (sandbox/worker/heap_compaction.ts; the code finds `gc` undefined), 1.5 MiB of a
 * container's 7. Not in a process of its own: any V8 flag beyond the heap limit costs a process
 * about 20 ms more to start (measured, not explained), which a container's first start would
 * pay there, for 1.5 MiB of its 22.
 */
function groupV8Flags(launch: Launch): string {
  return launch.group ? ",--expose-gc" : "";
}

/** The Deno permission flags of a container process run by `deno run`. */
export function containerPermissions(runtimeDir: string, launch: Launch): string[] {
  const { outboundHosts, deniedRanges, memoryMb } = launch.profile;
  const socket = launch.socket ? [launch.socket] : [];
  const net = outboundHosts === undefined ? undefined : [
    ...outboundHosts,
    ...socket.map((path) => `unix:${path}`),
  ];
  return [
    "--no-prompt",
    "--no-config",
    "--no-npm",
    "--no-remote",
    "--unstable-worker-options",
    `--v8-flags=--max-old-space-size=${memoryMb}${groupV8Flags(launch)}`,
    `--allow-read=${[runtimeDir, ...launch.read, ...socket].join(",")}`,
    `--allow-write=${[launch.write, ...socket].join(",")}`,
    // The host reads the machine's addresses at each request (network_policy.ts): one that
    // appeared after the start is the node's too. It lowers its own priority below the
    // node's before starting a microservice (container_host_main.ts).
    "--allow-sys=networkInterfaces,getPriority,setPriority",
    ...(net === undefined
      ? ["--allow-net"]
      : net.length > 0
      ? [`--allow-net=${net.join(",")}`]
      : []),
    // Deno checks these against every address a name resolves to (IPv4 ranges; IPv6 only as
    // single addresses): a second wall behind the host's own check.
    ...(deniedRanges.length > 0 ? [`--deny-net=${deniedRanges.join(",")}`] : []),
  ];
}

/** Variables the container process gets: where Deno keeps its cache. Nothing else. */
const PASSED_ENV = ["HOME", "DENO_DIR", "XDG_CACHE_HOME"];

/**
 * Starts a container process: `deno run` with the flags above and the bundled host (written
 * out in runtimeDir), or in the single executable `<itself> __container LAUNCH` (its host
 * narrows itself in a worker: src/mcm/sandbox/host/container_workers.ts). It waits for its `take`.
 */
export function spawnContainer(
  runtimeDir: string,
  launch: Launch,
  readEnv: (name: string) => string | undefined,
): Deno.ChildProcess {
  const { command, args } = isExecutable()
    ? selfCommand([
      "__container",
      JSON.stringify({
        read: launch.read,
        write: launch.write,
        net: launch.profile.outboundHosts,
        spare: launch.spare,
        group: launch.group,
      }),
    ])
    : {
      command: Deno.execPath(),
      args: [
        "run",
        ...containerPermissions(runtimeDir, launch),
        `${runtimeDir}/container_host.js`,
        ...(launch.group
          ? ["group", ...(launch.socket ? [launch.socket] : [])]
          : launch.spare
          ? ["spare", JSON.stringify(launch.profile.outboundHosts ?? null)]
          : []),
      ],
    };
  const passed = PASSED_ENV.flatMap((name) => readEnv(name) ? [[name, readEnv(name)!]] : []);
  return new Deno.Command(command, {
    args,
    clearEnv: true,
    env: Object.fromEntries([
      ...passed,
      ["NO_COLOR", "1"],
      // The executable's flags are baked in: the heap limit comes through the environment.
      ...(isExecutable()
        ? [[
          "DENO_V8_FLAGS",
          `--max-old-space-size=${launch.profile.memoryMb}${groupV8Flags(launch)}`,
        ]]
        : []),
    ]),
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}
