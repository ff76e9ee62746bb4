/**
 * What a node's inference engines compute on: the backend detected for inference.gpu (once per
 * node process, in a process of its own that may read the system's library folders, which the
 * node may not: `engine_install.js --detect`), then what the engine said when it started, or why
 * it cannot run. Every engine of the node (the shared one, load probes, src/inference/
 * load_probe.ts) shares it: a probe's detection or failed start is the shared engine's too.
 *
 * @module
 */
import { join } from "node:path";
import { Unavailable } from "../errors/mod.ts";
import type { Backend, GpuSetting } from "./engine_backend.ts";
import type { DetectedBackend } from "./engine_install.ts";
import { firstError, scrubbed } from "./engine_errors.ts";
import type { InstallProgress } from "./install_progress.ts";

/** What the engine computes on, as the dashboard's status shows it. */
export interface EngineStatus {
  /** inference.gpu. */
  setting: GpuSetting;
  /** The backend chosen, once detected; the engine's own once it started. */
  backend?: string;
  /** Why that backend (e.g. why not a GPU). */
  reason?: string;
  /** The GPUs' names, VRAM total and free at the engine's start (none on the CPU). */
  devices?: string[];
  vramTotal?: number;
  vramFree?: number;
  /** Why the backend named cannot run: every load answers 503 with it. */
  error?: string;
  /** How far the engine's install (or source build) is, while it runs. */
  installing?: InstallProgress;
}

/** The backend chosen for a setting, and what the engine needs to find its libraries. */
export interface UsableBackend {
  backend: Backend;
  reason: string;
  env: Record<string, string>;
  /** A source build's folder name and CUDA architectures, when the backend needs one. */
  build?: { name: string; architectures?: string };
}

/**
 * Loader variables blanked in the processes the node starts: Deno refuses to start a process
 * that inherits one (LD_LIBRARY_PATH and the like) unless it may run anything, which the node may
 * not. So detection does not see LD_LIBRARY_PATH (node-llama-cpp's does): CUDA's libraries are
 * found in the system's folders, CUDA_PATH, /usr/local/cuda*, or PATH.
 */
export const BLANK_LOADER_ENV: Record<string, string> = {
  LD_LIBRARY_PATH: "",
  LD_PRELOAD: "",
  DYLD_LIBRARY_PATH: "",
  DYLD_FALLBACK_LIBRARY_PATH: "",
  DYLD_INSERT_LIBRARIES: "",
};

const detections = new Map<string, Promise<DetectedBackend>>();
const statuses = new Map<string, EngineStatus>();
/** The choice last logged: the fallback to the CPU is said once, not at each engine start. */
let loggedChoice = "";

const installWatchers = new Set<(progress: InstallProgress) => void>();

/**
 * Calls `watcher` with each install progress recorded (a model load's stream shows them) until
 * the function returned is called.
 */
export function watchInstall(watcher: (progress: InstallProgress) => void): () => void {
  installWatchers.add(watcher);
  return () => installWatchers.delete(watcher);
}

/** Records how far the install of `setting`'s engine is (undefined: it ended). */
export function recordInstall(setting: GpuSetting, progress: InstallProgress | undefined): void {
  const { installing: _, ...status } = engineStatus(setting);
  recordEngineStatus(progress ? { ...status, installing: progress } : status);
  if (progress) { for (const watcher of installWatchers) watcher(progress); }
}

/** What the engines of `setting` compute on, as far as known. */
export function engineStatus(setting: GpuSetting): EngineStatus {
  return statuses.get(String(setting)) ?? { setting };
}

/** Records what the engines of `status.setting` compute on. */
export function recordEngineStatus(status: EngineStatus): void {
  statuses.set(String(status.setting), status);
}

/**
 * The backend for `setting`, detected with the installer in `scripts` unless it was already;
 * a backend named that cannot run is an error (Unavailable, 503) naming what is missing. The
 * choice is logged once.
 */
export async function detectBackendOnce(
  scripts: string,
  setting: GpuSetting,
  timeoutMs = DETECTION_TIMEOUT_MS,
): Promise<UsableBackend> {
  const key = String(setting);
  let pending = detections.get(key);
  if (!pending) {
    pending = runDetection(scripts, setting, timeoutMs);
    detections.set(key, pending);
    pending.catch(() => detections.delete(key));
  }
  const detected = await pending;
  if (detected.error !== undefined) {
    recordEngineStatus({ setting, error: detected.error });
    throw new Unavailable(detected.error);
  }
  const { backend, reason, env, build } = detected;
  if (engineStatus(setting).backend === undefined) {
    recordEngineStatus({ setting, backend, reason });
  }
  const line = backend === "cpu"
    ? `${reason}: running on the CPU`
    : `running on ${backend} (${reason})`;
  if (line !== loggedChoice) console.log(`inference engine: ${line}`);
  loggedChoice = line;
  return { backend, reason, env, build };
}

/**
 * How long detection may take (a wedged GPU driver can hang it); then loads answer 503. It starts
 * a Deno process, which takes seconds on a slow device and over 10 s under emulation on a busy
 * machine (seen in the arm64 test); nvidia-smi has its own 10 s inside it.
 */
export const DETECTION_TIMEOUT_MS = 60_000;

async function runDetection(
  scripts: string,
  setting: GpuSetting,
  timeoutMs = DETECTION_TIMEOUT_MS,
): Promise<DetectedBackend> {
  const signal = AbortSignal.timeout(timeoutMs);
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-config",
      "--no-prompt",
      "--allow-read",
      "--allow-env",
      // The GPU's CUDA architectures, for a source build's folder (engine_source_build.ts).
      "--allow-run=nvidia-smi",
      join(scripts, "engine_install.js"),
      "--detect",
      String(setting),
    ],
    env: BLANK_LOADER_ENV,
    stdout: "piped",
    stderr: "piped",
    signal,
  }).output().catch((error) => {
    if (!signal.aborted) throw error;
    return undefined;
  });
  if (!output || signal.aborted) {
    // Not kept: the next load detects again (detectBackendOnce forgets a failure).
    throw new Unavailable(
      `the inference engine's backend could not be detected: it took over ${
        timeoutMs / 1000
      } s (a GPU driver not answering?); the next load tries again`,
    );
  }
  const text = new TextDecoder().decode(output.stdout).trim().split("\n").at(-1) ?? "";
  if (!output.success || !text.startsWith("{")) {
    // Its words whole in the node's log; callers get the first line without host paths.
    const stderr = new TextDecoder().decode(output.stderr).trim();
    console.error(`the inference engine's backend could not be detected:\n${stderr}`);
    throw new Unavailable(
      `the inference engine's backend could not be detected: ${scrubbed(firstError(stderr))}`,
    );
  }
  return JSON.parse(text) as DetectedBackend;
}
