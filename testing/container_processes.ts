/**
 * The container processes of a running node, found by their command line (`ps`): cold ones
 * name their container's storage folder; warm spares name only the folders of all storage and
 * all bundles (their host narrows itself to one container's once taken).
 *
 * @module
 */
import { createHash } from "node:crypto";

/** One container process. */
export interface ContainerProcess {
  pid: number;
  /** Started as a warm spare (taken or not). */
  spare: boolean;
  /** Started as a client's process (mcm.containerProcess `per-client`; a spare or taken). */
  group: boolean;
  /** A cold process's container storage folder, from its permissions. */
  storage: string | undefined;
  /** Its command line, arguments joined by spaces. */
  cmdline: string;
}

/** The storage folder of container `id` (src/mcm/images/bundle_files.ts). */
export function storagePathOf(dataDir: string, id: string): string {
  return `${dataDir}/mcm/storage/${createHash("sha256").update(id).digest("hex").slice(0, 32)}`;
}

/** Every process now: pid and command line (`ps`: Deno reads /proc only with --allow-all). */
async function processes(): Promise<{ pid: number; cmdline: string }[]> {
  // A UTF-8 locale: ps shows a data dir's non-ASCII characters as they are, not as "?".
  const output = await new Deno.Command("ps", {
    args: ["-ww", "-eo", "pid=,args="],
    env: { LC_ALL: "C.UTF-8" },
  }).output();
  return new TextDecoder().decode(output.stdout).split("\n").flatMap((line) => {
    const match = /^\s*(\d+) (.*)$/.exec(line);
    return match ? [{ pid: Number(match[1]), cmdline: match[2] }] : [];
  });
}

/** Whether process `pid` exists. */
export async function alive(pid: number): Promise<boolean> {
  return (await processes()).some((process) => process.pid === pid);
}

/** The container processes of the node on `dataDir` now. */
export async function containerProcesses(dataDir: string): Promise<ContainerProcess[]> {
  const found: ContainerProcess[] = [];
  for (const { pid, cmdline } of await processes()) {
    if (!/container_host\.js|__container/.test(cmdline) || !cmdline.includes(`${dataDir}/mcm/`)) {
      continue;
    }
    const spare = / spare( |$)|"spare":true/.test(cmdline);
    const group = / group( |$)|"group":true/.test(cmdline);
    const storage = new RegExp(`${dataDir}/mcm/storage/[0-9a-f]{32}`).exec(cmdline)?.[0];
    found.push({ pid, spare, group, storage, cmdline });
  }
  return found;
}

/** The files process `pid` has open (`ls -l /proc/PID/fd`: Deno reads /proc only with -A). */
export async function openFiles(pid: number): Promise<string[]> {
  const output = await new Deno.Command("ls", { args: ["-l", `/proc/${pid}/fd`] }).output();
  return new TextDecoder().decode(output.stdout).split("\n").flatMap((line) => {
    const target = / -> (\/.*)$/.exec(line)?.[1];
    return target ? [target] : [];
  });
}

/** Waits until the node on `dataDir` has a spare whose pid is not in `taken`; returns it. */
export async function newSpare(
  dataDir: string,
  taken: number[] = [],
  timeoutMs = 10_000,
): Promise<ContainerProcess> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const spare = (await containerProcesses(dataDir)).find((p) =>
      p.spare && !taken.includes(p.pid)
    );
    if (spare) return spare;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no new spare within ${timeoutMs} ms`);
}
