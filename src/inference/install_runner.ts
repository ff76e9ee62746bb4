/**
 * The node's side of an engine install: runs the installer (engine_install.ts) in a process
 * allowed to run npm (and, for a source build, git and node), one per engine folder however many
 * engines of the node (the shared one, load probes) need it, reads its progress lines into the
 * engine status (engine_status.ts `installing`, which the dashboard and a load's stream show),
 * and logs a bounded number of lines: the start, each quarter, the end. A failure is kept: a
 * source build's until the node restarts (the backend is unusable), npm's for NPM_RETRY_MS.
 *
 * @module
 */
import { join } from "node:path";
import { Unavailable } from "../errors/mod.ts";
import type { Backend, GpuSetting } from "./engine_backend.ts";
import {
  BLANK_LOADER_ENV,
  engineStatus,
  recordEngineStatus,
  recordInstall,
} from "./engine_status.ts";
import { firstError, scrubbed } from "./engine_errors.ts";
import { readLines } from "./line_reader.ts";
import { progressOfLine, quarterOf } from "./install_progress.ts";
import { describeInstall, type InstallProgress } from "./install_words.ts";

/** One install to run. */
export interface InstallJob {
  /** The folder the engine goes to, under `engineDir` (the installer may write only there). */
  folder: string;
  engineDir: string;
  /** Where engine_install.js is. */
  scripts: string;
  backend: Backend;
  /** inference.gpu, whose status records the progress. */
  setting: GpuSetting;
  /** A source build's CUDA architectures ("native" when unknown); absent: a package install. */
  build?: { architectures?: string };
}

/** How long after a failed npm install the next load tries again (loads answer 503 meanwhile). */
export const NPM_RETRY_MS = 5 * 60_000;

/** An install under way in this node: the engines waiting on it, its installer. */
interface RunningInstall {
  done: Promise<void>;
  child?: Deno.ChildProcess;
  waiting: number;
  /** Every engine waiting on it stopped: the installer was told to stop, no failure kept. */
  stopped: boolean;
}

/**
 * The installs under way, by folder: every engine of the node (the shared one, load probes)
 * joins the one install of its folder rather than starting its own.
 */
const installs = new Map<string, RunningInstall>();
/** npm installs that failed, by folder: not tried again until `until`. */
const failedInstalls = new Map<string, { until: number; message: string }>();
/** How many installs run per inference.gpu: the status's `installing` ends with the last. */
const installsOfSetting = new Map<string, number>();

/** An install joined: its end, and what leaves it (the last to leave stops the installer). */
export interface JoinedInstall {
  done: Promise<void>;
  leave(): void;
}

/**
 * Installs `job.folder` (runInstaller), or joins the install of it under way in this node. An npm
 * install that failed in the last NPM_RETRY_MS fails at once (503, saying when it is tried again).
 */
export function joinInstall(job: InstallJob): JoinedInstall {
  const failed = failedInstalls.get(job.folder);
  if (failed && failed.until > Date.now()) {
    const seconds = Math.ceil((failed.until - Date.now()) / 1000);
    const done = Promise.reject(
      new Unavailable(
        `${failed.message} (tried again by the first load after ${
          new Date(failed.until).toISOString()
        }, in ${Math.ceil(seconds / 60)} min)`,
        { retryAfterSeconds: seconds },
      ),
    );
    return { done, leave: () => {} };
  }
  let install = installs.get(job.folder);
  if (!install) {
    const started: RunningInstall = { done: Promise.resolve(), waiting: 0, stopped: false };
    started.done = runInstaller(job, started).finally(() => installs.delete(job.folder));
    installs.set(job.folder, started);
    install = started;
  }
  const joined = install;
  joined.waiting++;
  let left = false;
  return {
    done: joined.done,
    leave() {
      if (left) return;
      left = true;
      joined.waiting--;
      if (joined.waiting > 0) return;
      joined.stopped = true;
      try {
        joined.child?.kill("SIGTERM");
      } catch { /* ended already */ }
    },
  };
}

/**
 * Runs the installer for `job`; its failure is Unavailable (503) with the installer's first words
 * (no host paths; the rest stays in the node's log). A source build's failure makes the backend
 * unusable until the node restarts (engine status `error`); npm's is tried again after
 * NPM_RETRY_MS. `running` gets the installer's process (to stop it).
 */
export async function runInstaller(
  job: InstallJob,
  running: { child?: Deno.ChildProcess; stopped?: boolean } = {},
): Promise<void> {
  const { folder, engineDir, scripts, backend, setting, build } = job;
  const how = build ? "npm and a source build of llama.cpp" : "npm";
  console.log(`installing the inference engine for ${backend} into ${folder} (${how}, once)`);
  const buildArgs = build ? ["--source-build", build.architectures ?? "native"] : [];
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-config",
      "--no-prompt",
      // What the installer runs: npm, and for a source build git and node (node-llama-cpp's
      // build runs cmake and the compilers from node, whose children Deno does not govern).
      `--allow-run=${build ? "npm,git,node" : "npm"}`,
      "--allow-env",
      "--allow-read",
      `--allow-write=${engineDir}`,
      join(scripts, "engine_install.js"),
      folder,
      backend,
      ...buildArgs,
    ],
    env: BLANK_LOADER_ENV,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  running.child = child;
  const key = String(setting);
  installsOfSetting.set(key, (installsOfSetting.get(key) ?? 0) + 1);
  const logged = new Set<string>();
  let stage: InstallProgress["stage"] | undefined;
  const onLine = (line: string) => {
    const progress = progressOfLine(line);
    if (!progress) return;
    // The backend is the job's: a line says only how far.
    const ours = { ...progress, backend };
    stage = ours.stage;
    recordInstall(setting, ours);
    logQuarter(ours, logged);
  };
  const [status, , stderr] = await Promise.all([
    child.status,
    readLines(child.stdout, onLine),
    new Response(child.stderr).text(),
  ]).finally(() => {
    const left = (installsOfSetting.get(key) ?? 1) - 1;
    if (left > 0) installsOfSetting.set(key, left);
    else {
      installsOfSetting.delete(key);
      recordInstall(setting, undefined);
    }
  });
  if (status.success) {
    failedInstalls.delete(folder);
    console.log(`installed the inference engine for ${backend}`);
    return;
  }
  if (running.stopped) {
    console.log(`the install of the inference engine for ${backend} stopped`);
    throw new Unavailable("the inference engine's install was stopped");
  }
  // The log keeps the installer's words whole; callers get their first line without host paths.
  const words = stderr.trim().split("\n").slice(-12).join("\n");
  console.error(`the inference engine could not be installed:\n${words}`);
  const message = `the inference engine could not be installed: ${scrubbed(firstError(stderr))}`;
  if (build && stage !== "download") {
    // The build (or its tools) failed: the same build would fail again.
    const { installing: _, ...current } = engineStatus(setting);
    recordEngineStatus({ ...current, backend, error: message });
  } else {
    failedInstalls.set(folder, { until: Date.now() + NPM_RETRY_MS, message });
  }
  throw new Unavailable(message);
}

/** Logs `progress` when it reached a quarter not logged before (per stage). */
function logQuarter(progress: InstallProgress, logged: Set<string>): void {
  const quarter = quarterOf(progress);
  if (quarter === undefined || quarter === 0 || quarter === 4) return;
  const key = `${progress.stage} ${quarter}`;
  if (logged.has(key)) return;
  logged.add(key);
  console.log(`inference engine: ${describeInstall(progress)}`);
}
