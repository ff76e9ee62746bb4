/**
 * The node's side of an engine install: runs the installer (engine_install.ts) in a process
 * allowed to run npm (and, for a source build, git, cmake and the compilers), reads its progress
 * lines into the engine status (engine_status.ts `installing`, which the dashboard and a load's
 * stream show), and logs a bounded number of lines: the start, each quarter, the end.
 *
 * @module
 */
import { join } from "node:path";
import { Unavailable } from "../errors/mod.ts";
import type { Backend, GpuSetting } from "./engine_backend.ts";
import { BLANK_LOADER_ENV, recordInstall } from "./engine_status.ts";
import {
  describeInstall,
  type InstallProgress,
  progressOfLine,
  quarterOf,
} from "./install_progress.ts";

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

/** Runs the installer for `job`; its failure is Unavailable (503) with the installer's words. */
export async function runInstaller(job: InstallJob): Promise<void> {
  const { folder, engineDir, scripts, backend, setting, build } = job;
  const how = build ? "npm and a source build of llama.cpp" : "npm";
  console.log(`installing the inference engine for ${backend} into ${folder} (${how}, once)`);
  const buildArgs = build ? ["--source-build", build.architectures ?? "native"] : [];
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-config",
      "--no-prompt",
      "--allow-run",
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
  const logged = new Set<string>();
  const onLine = (line: string) => {
    const progress = progressOfLine(line);
    if (!progress) return;
    recordInstall(setting, progress);
    logQuarter(progress, logged);
  };
  const [status, , stderr] = await Promise.all([
    child.status,
    readLines(child.stdout, onLine),
    new Response(child.stderr).text(),
  ]).finally(() => recordInstall(setting, undefined));
  if (!status.success) {
    // The log keeps the installer's words whole; callers get them without host paths.
    const words = stderr.trim().split("\n").slice(-12).join("\n");
    console.error(`the inference engine could not be installed:\n${words}`);
    const said = words.replace(/(?:[\\/][\w.@+~-]+){2,}[\\/]?/g, "<path>");
    throw new Unavailable(`the inference engine could not be installed: ${said}`);
  }
  console.log(`installed the inference engine for ${backend}`);
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

async function readLines(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void) {
  let buffered = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    buffered += chunk;
    let end;
    while ((end = buffered.indexOf("\n")) >= 0) {
      onLine(buffered.slice(0, end));
      buffered = buffered.slice(end + 1);
    }
  }
}
