/**
 * Where the inference engine's npm packages live, and how they get there.
 *
 * node-llama-cpp ships llama.cpp prebuilt for each platform in optional npm packages. `deno
 * install` refuses the package (one optional platform package is missing from the registry), so
 * npm installs it, from engine/package.json and its lock file, into
 * `<engine dir>/node-llama-cpp-<version>-<package>`: the library and the one build of llama.cpp
 * the machine can use (engine_backend.ts chooses it first): the CPU's (85 MB on linux-x64, against
 * 725 MB with every GPU variant), or CUDA's or Vulkan's. The install goes to a
 * temporary folder that is renamed into place once complete, so a crash never leaves half an
 * engine that looks installed.
 *
 * Where no package exists for the backend (CUDA on arm64 Linux), it installs the CPU's and
 * builds llama.cpp from node-llama-cpp's bundled source (engine_source_build.ts) in the same
 * temporary folder. Its progress goes to stdout as install_progress.ts lines: the bytes npm has
 * landed, measured every second, then the build's steps.
 *
 * Run as a script (by the node, with the permissions this needs and the node lacks: running
 * npm), it installs into the folder given as its argument:
 * `deno run --no-config --allow-run=npm,git,node --allow-read --allow-write=<dir> --allow-env
 * engine_install.ts <dir> <backend> [--source-build <cuda architectures>]`
 *
 * @module
 */
import lock from "../../engine/package-lock.json" with { type: "json" };
import manifest from "../../engine/package.json" with { type: "json" };
import {
  type Backend,
  type BackendChoice,
  backendPackage,
  chooseBackend,
  cudaDriverMissing,
  cudaNeedsSourceBuild,
  detectComputeLayers,
  type GpuSetting,
  systemLookup,
} from "./engine_backend.ts";
import {
  buildFromSource,
  cudaArchitectures,
  missingBuildTools,
  nvccFolder,
  sourceBuildName,
  type SourceBuildPlan,
} from "./engine_source_build.ts";
import { killInstallChildren, lockFolder, removeDeadPartials, tracked } from "./install_guard.ts";
import {
  expectedInstallBytes,
  folderBytes,
  type InstallProgress,
  measureEverySecond,
  progressLine,
} from "./install_progress.ts";

/** The node-llama-cpp version engine/package.json pins. */
export const ENGINE_VERSION: string = manifest.dependencies["node-llama-cpp"];

/** node-llama-cpp's prebuilt CPU package for this machine, if it has one. */
export function platformPackage(
  os: string = Deno.build.os,
  arch: string = Deno.build.arch,
): string | undefined {
  return backendPackage("cpu", os, arch);
}

/**
 * The folder the engine of this version, platform and backend is installed in, under
 * `engineDir`: one folder per backend (the CPU's keeps its name from before backends), so a
 * machine whose hardware changed installs the package it now can use beside the old one; a
 * source build's folder is named by `sourceBuild` (engine_source_build.ts `sourceBuildName`).
 */
export function installFolder(
  engineDir: string,
  backend: Backend = "cpu",
  sourceBuild?: string,
): string {
  const platform = sourceBuild ?? backendPackage(backend)?.split("/")[1] ??
    `${Deno.build.os}-${Deno.build.arch}${backend === "cpu" ? "" : `-${backend}`}`;
  return `${engineDir}/node-llama-cpp-${ENGINE_VERSION}-${platform}`;
}

/** Whether `folder` holds a complete install (it exists only once complete). */
export async function isInstalled(folder: string): Promise<boolean> {
  try {
    const text = await Deno.readTextFile(`${folder}/node_modules/node-llama-cpp/package.json`);
    return JSON.parse(text).version === ENGINE_VERSION;
  } catch {
    return false;
  }
}

async function npm(args: string[], cwd: string): Promise<void> {
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command("npm", { args, cwd, stdout: "piped", stderr: "piped" }).spawn();
  } catch (error) {
    throw new Error(
      `cannot run npm (${(error as Error).message}): the inference engine is installed with npm; ` +
        "install Node.js and npm, or set inference.engineDir to a folder holding the engine",
    );
  }
  const output = await tracked(child, child.output());
  if (!output.success) {
    const lines = new TextDecoder().decode(output.stderr).trim().split("\n");
    // The first line is what the node's callers read (its host paths scrubbed): npm's first
    // words say what failed (its last, where its log is); the rest goes to the node's log.
    throw new Error(
      `npm ${args[0]} failed (exit ${output.code}): ${lines[0]}\n${lines.slice(-8).join("\n")}`,
    );
  }
}

/** Prints `progress` for the node (a line on stdout). */
function report(progress: InstallProgress): void {
  console.log(progressLine(progress));
}

/**
 * Installs the engine for `backend` into `folder` (see the module's description); with `build`,
 * the CPU's package and llama.cpp built from source for it.
 */
export async function installEngine(
  folder: string,
  backend: Backend = "cpu",
  build?: SourceBuildPlan,
  onProgress: (progress: InstallProgress) => void = () => {},
): Promise<void> {
  const platform = backendPackage(build ? "cpu" : backend);
  if (!platform) {
    throw new Error(
      `node-llama-cpp has no prebuilt ${backend} engine for ${Deno.build.os} ${Deno.build.arch}`,
    );
  }
  const partial = `${folder}.partial-${Deno.pid}`;
  // Another node sharing the engine folder may be installing it: once, then it is there.
  const unlock = await lockFolder(folder);
  try {
    if (await isInstalled(folder)) return;
    await removeDeadPartials(folder);
    removeOnStop = () => Deno.remove(partial, { recursive: true }).then(unlock, unlock);
    await Deno.remove(partial, { recursive: true }).catch(() => {});
    await Deno.mkdir(partial, { recursive: true });
    await Deno.writeTextFile(`${partial}/package.json`, JSON.stringify(manifest, null, 2));
    await Deno.writeTextFile(`${partial}/package-lock.json`, JSON.stringify(lock, null, 2));
    // npm says nothing of its bytes: the folder it fills is measured instead, every second.
    const total = expectedInstallBytes(platform);
    const stopMeasuring = measureEverySecond(
      partial,
      (done) => onProgress({ backend, stage: "download", done, total }),
    );
    // The lock pins every package; the backend's build is the one optional package wanted.
    await npm([
      "install",
      "--no-save",
      "--omit=optional",
      "--ignore-scripts",
      "--no-audit",
      "--no-fund",
      "--loglevel=error",
      `${platform}@${ENGINE_VERSION}`,
    ], partial).finally(stopMeasuring);
    onProgress({ backend, stage: "download", done: await folderBytes(partial), total });
    if (!await isInstalled(partial)) throw new Error("npm finished but node-llama-cpp is missing");
    if (build) await buildFromSource(partial, build, onProgress);
    try {
      await Deno.rename(partial, folder);
    } catch (error) {
      // Another node installed it meanwhile: theirs is as good.
      if (!await isInstalled(folder)) throw error;
    }
  } finally {
    removeOnStop = undefined;
    await Deno.remove(partial, { recursive: true }).catch(() => {});
    await unlock();
  }
}

/** Removes the install's temporary folder and lock, while an install runs (on SIGTERM). */
let removeOnStop: (() => Promise<void>) | undefined;

/** What `--detect` prints: the backend chosen, and what the engine needs to find its libraries. */
export type DetectedBackend = BackendChoice & {
  /** {@link GPU_ENV} as this process saw it (the engine runs with no other environment). */
  env: Record<string, string>;
  /** A source build's folder name and CUDA architectures, when the backend needs one. */
  build?: { name: string; architectures?: string };
};

/**
 * The variables passed on to the engine, which otherwise starts with an empty environment: where
 * CUDA is installed, and the standard ways to choose a GPU and its driver (Vulkan's loader reads
 * its driver list from VK_DRIVER_FILES where the driver is not installed in the system's folders,
 * as in containers that mount it, e.g. /usr/local/nvidia; glvnd's EGL vendor likewise).
 */
export const GPU_ENV: readonly string[] = [
  "CUDA_PATH",
  "CUDA_VISIBLE_DEVICES",
  "GGML_VK_VISIBLE_DEVICES",
  "VK_DRIVER_FILES",
  "VK_ICD_FILENAMES",
  "VK_ADD_DRIVER_FILES",
  "__EGL_VENDOR_LIBRARY_FILENAMES",
];

/** Chooses the backend for `setting` on this machine (engine_backend.ts). */
export async function detectBackend(setting: GpuSetting): Promise<DetectedBackend> {
  const lookup = systemLookup();
  const layers = await detectComputeLayers(lookup);
  if (setting === "cuda" && cudaNeedsSourceBuild(Deno.build)) {
    layers.sourceBuildMissing = [
      ...await cudaDriverMissing(lookup),
      ...await missingBuildTools("cuda", lookup),
    ];
  }
  const choice = chooseBackend(setting, layers, Deno.build);
  const env: Record<string, string> = {};
  for (const name of GPU_ENV) {
    const value = lookup.env(name);
    if (value) env[name] = value;
  }
  if (!choice.sourceBuild) return { ...choice, env };
  const architectures = await cudaArchitectures(lookup.env);
  const name = sourceBuildName("cuda", Deno.build.os, Deno.build.arch, architectures);
  return { ...choice, env, build: { name, architectures } };
}

/** inference.gpu as the node passes it on the command line. */
function gpuSetting(text: string | undefined): GpuSetting {
  if (text === "false") return false;
  if (text === "cuda" || text === "vulkan" || text === "metal") return text;
  return "auto";
}

// `engine_install.js <folder> [backend]` installs; `engine_install.js --detect <inference.gpu>`
// prints the backend chosen as JSON (the node reads no system folders itself).
if (import.meta.main) {
  // The node stopping: the current child (npm, a build) ends too, and nothing half-done stays.
  if (Deno.build.os !== "windows") {
    Deno.addSignalListener("SIGTERM", async () => {
      await killInstallChildren();
      await removeOnStop?.();
      Deno.exit(143);
    });
  }
  try {
    if (Deno.args[0] === "--detect") {
      console.log(JSON.stringify(await detectBackend(gpuSetting(Deno.args[1]))));
      Deno.exit(0);
    }
    const [folder, backend = "cpu", flag, architectures] = Deno.args as [
      string,
      Backend,
      ...string[],
    ];
    let build: SourceBuildPlan | undefined;
    if (flag === "--source-build") {
      const lookup = systemLookup();
      const missing = await missingBuildTools(backend, lookup);
      if (missing.length > 0) {
        throw new Error(`llama.cpp cannot be built from source here: ${missing.join("; ")}`);
      }
      const nvcc = backend === "cuda" ? await nvccFolder(lookup) : undefined;
      build = { backend, architectures, nvccFolder: nvcc };
    } else if (!backendPackage(backend)) {
      throw new Error(`no ${backend} package for this machine`);
    }
    await installEngine(folder, backend, build, report);
  } catch (error) {
    console.error((error as Error).message);
    Deno.exit(1);
  }
}
