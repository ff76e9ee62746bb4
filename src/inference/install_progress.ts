/**
 * How far an engine install is: the installer (engine_install.ts) prints it on its stdout as
 * `PROGRESS_PREFIX` lines, the node (engine_process.ts) records it in the engine status
 * (engine_status.ts `installing`), which the dashboard's status, a model load's event stream and
 * the CLI show as one line ("installing the cuda engine 48/143 MB"), and logs it at each quarter.
 *
 * An npm install says nothing of its bytes, so the installer measures the folder npm fills
 * against the unpacked sizes of node-llama-cpp 3.22.1's packages, pinned below (measured); a
 * source build (engine_source_build.ts) counts the build's steps (`[n/m]` of ninja, `[ NN%]` of
 * make).
 *
 * @module
 */
import type { InstallProgress } from "./install_words.ts";

export type { InstallProgress };

/** What starts a progress line of the installer (the rest is the progress as JSON). */
export const PROGRESS_PREFIX = "@@engine-install ";

const MB = 1_000_000;
/**
 * Bytes of node-llama-cpp 3.22.1's install without its platform package (node-llama-cpp itself,
 * 40 MB of which 34 MB is llama.cpp's source bundle, and its dependencies), measured as the
 * installer measures them (the files' sizes).
 */
const BASE_BYTES = 48_539_451;
/** Bytes of the platform packages: measured, but CUDA's (the size npm gives, 143 MB). */
const PACKAGE_BYTES: Record<string, number> = {
  "@node-llama-cpp/linux-x64": 30_358_713,
  "@node-llama-cpp/linux-x64-vulkan": 73_750_139,
  "@node-llama-cpp/linux-x64-cuda": 143 * MB,
  "@node-llama-cpp/linux-arm64": 19_984_550,
};

/** The bytes an install of `platformPackage` lands, when known. */
export function expectedInstallBytes(platformPackage: string): number | undefined {
  const size = PACKAGE_BYTES[platformPackage];
  return size === undefined ? undefined : Math.round(BASE_BYTES + size);
}

/** The bytes of the files under `folder` (links not followed; what cannot be read counts 0). */
export async function folderBytes(folder: string): Promise<number> {
  let total = 0;
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(folder));
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const path = `${folder}/${entry.name}`;
    if (entry.isDirectory) total += await folderBytes(path);
    else if (entry.isFile) total += await Deno.lstat(path).then((info) => info.size, () => 0);
  }
  return total;
}

/**
 * Measures the bytes under `folder` for `onBytes`, `intervalMs` after each measure ends (so two
 * never overlap), until the function returned is called; that resolves once the measure under
 * way (if any) has reported, so nothing is reported after it.
 */
export function measureEverySecond(
  folder: string,
  onBytes: (bytes: number) => void,
  intervalMs = 1000,
): () => Promise<void> {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> = Promise.resolve();
  const measure = async () => {
    const bytes = await folderBytes(folder);
    if (stopped) return;
    onBytes(bytes);
    timer = setTimeout(() => (running = measure()), intervalMs);
  };
  running = measure();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  };
}

/** A build step in a line of cmake's build output: ninja's `[12/345]` or make's `[ 37%]`. */
export function buildStep(line: string): { done: number; total: number } | undefined {
  const ninja = /^\s*\[(\d+)\/(\d+)\]/.exec(line);
  if (ninja) return { done: Number(ninja[1]), total: Number(ninja[2]) };
  const make = /^\s*\[\s*(\d+)%\]/.exec(line);
  if (make) return { done: Number(make[1]), total: 100 };
  return undefined;
}

/** The progress in a line of the installer's output, if it is one. */
export function progressOfLine(line: string): InstallProgress | undefined {
  if (!line.startsWith(PROGRESS_PREFIX)) return undefined;
  try {
    const value = JSON.parse(line.slice(PROGRESS_PREFIX.length));
    if (typeof value?.backend !== "string" || !isCount(value.done)) return undefined;
    if (value.stage !== "download" && value.stage !== "build") return undefined;
    const total = isCount(value.total) && value.total > 0 ? value.total : undefined;
    return { backend: value.backend.slice(0, 40), stage: value.stage, done: value.done, total };
  } catch {
    return undefined;
  }
}

/** A byte or step count: a whole number, not negative, exact (no 1e300 nor NaN). */
function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

/** The line the installer prints for `progress`. */
export function progressLine(progress: InstallProgress): string {
  return PROGRESS_PREFIX + JSON.stringify(progress);
}

/** The quarter (0..4) `progress` has reached; undefined while the total is unknown. */
export function quarterOf({ done, total }: InstallProgress): number | undefined {
  if (!total) return undefined;
  return Math.min(4, Math.floor((done / total) * 4));
}
