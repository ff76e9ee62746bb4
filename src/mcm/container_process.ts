/**
 * Starting a container process: its Deno permissions, its command line, and the spare's folder.
 *
 * Everything a container process may touch is fixed when it starts (its `deno run` flags, or in
 * the single executable its host worker's permissions and its heap limit): paths to read and
 * write, hosts to reach, refused ranges, memory. Which container it runs comes later, in the
 * node's `take` message. A cold process is started for one container, with that container's
 * bundle and storage folder as its paths. A warm spare (spare_pool.ts) is started before any
 * container is known, so its paths are a folder of its own, empty until the node takes it for
 * a container: then the folder gets a hard link to the bundle and a symbolic link to the
 * container's storage folder. The spare can thus never reach more than one container's files,
 * as a cold process; its other flags (the profile) are the node's, and a container that needs
 * others (its own MCM.MEMORY_MB) gets a cold process.
 *
 * @module
 */
import { join } from "node:path";
import { isExecutable, selfCommand } from "../program/self_program.ts";

/** The flags a container process shares with every other container of the same settings. */
export interface ProcessProfile {
  /** The heap limit (MCM.MEMORY_MB). */
  memoryMb: number;
  /** Hosts outbound HTTP may reach; undefined: any. */
  outboundHosts: string[] | undefined;
  /** IPv4 ranges refused whatever the host's own check says (`--deny-net`). */
  deniedRanges: string[];
}

/** What one container process may touch. */
export interface Launch {
  /** Files and folders it may read besides the sandbox's code (the bundle, the storage). */
  read: string[];
  /** The one folder it may write: the container's storage. */
  write: string;
  profile: ProcessProfile;
}

/** Whether a process started with `a` is the process `b` asks for, up to its paths. */
export function sameProfile(a: ProcessProfile, b: ProcessProfile): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The Deno permission flags of a container process run by `deno run`. */
export function containerPermissions(runtimeDir: string, launch: Launch): string[] {
  const { outboundHosts, deniedRanges, memoryMb } = launch.profile;
  return [
    "--no-prompt",
    "--no-config",
    "--no-npm",
    "--no-remote",
    "--unstable-worker-options",
    `--v8-flags=--max-old-space-size=${memoryMb}`,
    `--allow-read=${[runtimeDir, ...launch.read].join(",")}`,
    `--allow-write=${launch.write}`,
    ...(outboundHosts === undefined
      ? ["--allow-net"]
      : outboundHosts.length > 0
      ? [`--allow-net=${outboundHosts.join(",")}`]
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
 * narrows itself in a worker: src/program/container_process.ts). It waits for its `take`.
 */
export function spawnContainer(
  runtimeDir: string,
  launch: Launch,
  readEnv: (name: string) => string | undefined,
): Deno.ChildProcess {
  const { command, args } = isExecutable()
    ? selfCommand([
      "__container",
      JSON.stringify({ read: launch.read, write: launch.write, net: launch.profile.outboundHosts }),
    ])
    : {
      command: Deno.execPath(),
      args: ["run", ...containerPermissions(runtimeDir, launch), `${runtimeDir}/container_host.js`],
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
        ? [["DENO_V8_FLAGS", `--max-old-space-size=${launch.profile.memoryMb}`]]
        : []),
    ]),
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/**
 * A spare's own folder, `<spares>/<random>/`: all it may read (with the sandbox's code), and
 * `storage` in it all it may write. Empty while the spare waits; once taken, `bundle.js` is a
 * hard link to the container's bundle (bundles never change: their name is their hash) and
 * `storage` a symbolic link to its storage folder. The process cannot make links itself (Deno
 * refuses symlinks to a process without unscoped read and write), and Deno resolves `..` in a
 * path before checking it, so `storage/..` does not lead out of the folder.
 */
export class SpareFolder {
  /** The folder. */
  readonly path: string;

  private constructor(path: string) {
    this.path = path;
  }

  /** Makes a new folder in `dir` (synchronously: a spare starts in one step). */
  static create(dir: string): SpareFolder {
    const path = join(dir, crypto.randomUUID());
    Deno.mkdirSync(path, { recursive: true, mode: 0o700 });
    return new SpareFolder(path);
  }

  /** The bundle's path inside the folder. */
  get bundle(): string {
    return join(this.path, "bundle.js");
  }

  /** The storage folder's path inside the folder. */
  get storage(): string {
    return join(this.path, "storage");
  }

  /** What a process on this folder may touch. */
  launch(profile: ProcessProfile): Launch {
    return { read: [this.path], write: this.storage, profile };
  }

  /** Puts one container's bundle and storage in the folder. */
  async fill(bundlePath: string, storageDir: string): Promise<void> {
    // A copy where hard links are not possible; the bundle is small next to a process.
    await Deno.link(bundlePath, this.bundle).catch(() => Deno.copyFile(bundlePath, this.bundle));
    await Deno.symlink(storageDir, this.storage, { type: "dir" });
  }

  /** Removes the folder: the links, never what they lead to. */
  async remove(): Promise<void> {
    await Deno.remove(this.storage).catch(() => {});
    await Deno.remove(this.path, { recursive: true }).catch(() => {});
  }
}
