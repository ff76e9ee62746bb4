/**
 * llama.cpp built from source for a backend node-llama-cpp has no prebuilt package of: CUDA on
 * arm64 Linux (a Jetson), opt-in with `inference.gpu: "cuda"`. node-llama-cpp 3.22.1 ships
 * llama.cpp's source as a git bundle (`llama/gitRelease.bundle`), so the build needs no network:
 * git, cmake, a C++ compiler and, for CUDA, the toolkit's nvcc. The installer (engine_install.ts)
 * installs node-llama-cpp with the CPU package, clones the bundle into `llama/llama.cpp`, and
 * runs node-llama-cpp's own build (`source build`, under node, as npm is), which leaves the build
 * in `llama/localBuilds/<name>` and names it in `llama/lastBuild.json`; the engine loads it with
 * `getLlama("lastBuild")` (engine_main.ts). One folder per device: the CUDA architectures are
 * part of its name (`node-llama-cpp-3.22.1-linux-arm64-cuda-sm87`).
 *
 * The CUDA architectures: CUDAARCHS (CMake's own variable, e.g. `87` for a Jetson Orin), else
 * what nvidia-smi says of the GPUs (`compute_cap` 8.7 → 87), else CMake's `native` (the GPU the
 * build runs on; also when nvidia-smi takes over 10 s).
 *
 * @module
 */
import type { Backend, LibraryLookup } from "./engine_backend.ts";
import { tracked } from "./install_guard.ts";
import { buildStep, type InstallProgress } from "./install_progress.ts";

/** Where nvcc may be: CUDA_PATH's, the default install's, and PATH. */
function nvccFolders(lookup: LibraryLookup): string[] {
  const cudaPath = lookup.env("CUDA_PATH");
  return [
    ...(cudaPath ? [`${cudaPath}/bin`] : []),
    "/usr/local/cuda/bin",
    ...pathFolders(lookup),
  ];
}

function pathFolders(lookup: LibraryLookup): string[] {
  return (lookup.env("PATH") ?? "").split(":").filter((part) => part.length > 0);
}

async function findIn(lookup: LibraryLookup, folders: string[], names: string[]) {
  for (const folder of folders) {
    for (const name of names) {
      if (await lookup.exists(`${folder}/${name}`)) return `${folder}/${name}`;
    }
  }
  return undefined;
}

/** The tools a source build of `backend` needs that this machine lacks, in words. */
export async function missingBuildTools(
  backend: Backend,
  lookup: LibraryLookup,
): Promise<string[]> {
  const path = pathFolders(lookup);
  const missing: string[] = [];
  if (!await findIn(lookup, path, ["git"])) missing.push("git (not found in PATH)");
  if (!await findIn(lookup, path, ["cmake"])) missing.push("cmake (not found in PATH)");
  if (!await findIn(lookup, path, ["c++", "g++", "clang++"])) {
    missing.push("a C++ compiler (c++, g++ or clang++ not found in PATH)");
  }
  if (!await findIn(lookup, path, ["npm"])) missing.push("npm (not found in PATH)");
  if (backend === "cuda" && !await findIn(lookup, nvccFolders(lookup), ["nvcc"])) {
    missing.push(
      "the CUDA toolkit (nvcc not found in CUDA_PATH/bin, /usr/local/cuda/bin or PATH)",
    );
  }
  return missing;
}

/** The folder holding nvcc, for the build's PATH (undefined when none). */
export async function nvccFolder(lookup: LibraryLookup): Promise<string | undefined> {
  const found = await findIn(lookup, nvccFolders(lookup), ["nvcc"]);
  return found?.slice(0, -"/nvcc".length);
}

/** CMake's architectures from nvidia-smi's `compute_cap` column ("8.7\n8.7" → "87"). */
export function architecturesOfComputeCaps(text: string): string | undefined {
  const caps = text.split("\n").map((line) => line.trim())
    .filter((line) => /^\d+\.\d+$/.test(line))
    .map((line) => line.replace(".", ""));
  return caps.length > 0 ? [...new Set(caps)].join(";") : undefined;
}

/** The CUDA architectures to build for (see the module's description). */
export async function cudaArchitectures(
  env: (name: string) => string | undefined,
  runNvidiaSmi: () => Promise<string | undefined> = () => nvidiaSmiComputeCaps(),
): Promise<string> {
  const set = env("CUDAARCHS")?.trim();
  if (set && /^[\w;-]+$/.test(set)) return set;
  const smi = await runNvidiaSmi();
  return (smi && architecturesOfComputeCaps(smi)) || "native";
}

/** How long nvidia-smi may take (a wedged driver hangs it): then the build says "native". */
export const NVIDIA_SMI_TIMEOUT_MS = 10_000;

/** nvidia-smi's `compute_cap` column; undefined when it fails or takes over `timeoutMs`. */
export async function nvidiaSmiComputeCaps(
  timeoutMs = NVIDIA_SMI_TIMEOUT_MS,
): Promise<string | undefined> {
  try {
    const output = await new Deno.Command("nvidia-smi", {
      args: ["--query-gpu=compute_cap", "--format=csv,noheader"],
      stdout: "piped",
      stderr: "null",
      signal: AbortSignal.timeout(timeoutMs),
    }).output();
    return output.success ? new TextDecoder().decode(output.stdout) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The platform part of a source build's folder name: `linux-arm64-cuda-sm87` (CUDA, per
 * architecture set), `linux-x64-cpu-source` (the CPU's, which only tests build).
 */
export function sourceBuildName(
  backend: Backend,
  os: string,
  arch: string,
  architectures?: string,
): string {
  const cpu = arch === "x86_64" ? "x64" : arch === "aarch64" ? "arm64" : arch;
  const platform = `${os}-${cpu}`;
  if (backend !== "cuda") return `${platform}-${backend}-source`;
  const sm = architectures === undefined || architectures === "native"
    ? "native"
    : architectures.split(";").map((value) => `sm${value.replace(/[^\w]/g, "")}`).join("-");
  return `${platform}-cuda-${sm}`;
}

/** What a source build needs to know. */
export interface SourceBuildPlan {
  backend: Backend;
  /** CMake's CUDA architectures (CUDA only). */
  architectures?: string;
  /** The folder holding nvcc, put first in the build's PATH (CUDA only). */
  nvccFolder?: string;
}

/**
 * Builds llama.cpp for `plan` inside `folder`, where node-llama-cpp is installed: clones its
 * bundled source, then runs its `source build` under node; `onProgress` gets the build's steps.
 */
export async function buildFromSource(
  folder: string,
  plan: SourceBuildPlan,
  onProgress: (progress: InstallProgress) => void,
): Promise<void> {
  const library = `${folder}/node_modules/node-llama-cpp`;
  await run("git", [
    "clone",
    "--quiet",
    `${library}/llama/gitRelease.bundle`,
    `${library}/llama/llama.cpp`,
  ], folder);
  // CI must be a boolean to node-llama-cpp; "false" keeps its build for this machine (GGML_NATIVE).
  const env: Record<string, string> = { CI: "false" };
  if (plan.backend === "cuda" && plan.architectures) {
    env.NODE_LLAMA_CPP_CMAKE_OPTION_CMAKE_CUDA_ARCHITECTURES = plan.architectures;
  }
  if (plan.nvccFolder) {
    env.PATH = `${plan.nvccFolder}:${Deno.env.get("PATH") ?? ""}`;
    env.CUDACXX = `${plan.nvccFolder}/nvcc`;
  }
  onProgress({ backend: plan.backend, stage: "build", done: 0 });
  await run(
    "node",
    [
      `${library}/dist/cli/cli.js`,
      "source",
      "build",
      "--gpu",
      plan.backend === "cpu" ? "false" : plan.backend,
      "--noUsageExample",
    ],
    folder,
    env,
    (line) => {
      const step = buildStep(line);
      if (step) onProgress({ backend: plan.backend, stage: "build", ...step });
    },
  );
  try {
    await Deno.stat(`${library}/llama/lastBuild.json`);
  } catch {
    throw new Error("the source build finished but left no build (llama/lastBuild.json)");
  }
  // The engine loads the build alone: the source tree (209 MB) goes, a device's disk is small.
  await Deno.remove(`${library}/llama/llama.cpp`, { recursive: true });
}

/** Runs `command`; its output's lines go to `onLine`, its last lines into the error. */
async function run(
  command: string,
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
  onLine: (line: string) => void = () => {},
): Promise<void> {
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(command, { args, cwd, env, stdout: "piped", stderr: "piped" })
      .spawn();
  } catch (error) {
    throw new Error(`cannot run ${command} for the source build: ${(error as Error).message}`);
  }
  const tail: string[] = [];
  const read = async (stream: ReadableStream<Uint8Array>) => {
    let buffered = "";
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      buffered += chunk;
      const lines = buffered.split(/\r?\n|\r/);
      buffered = lines.pop() ?? "";
      for (const line of lines) {
        onLine(line);
        tail.push(line);
        if (tail.length > 12) tail.shift();
      }
    }
    if (buffered) tail.push(buffered);
  };
  const [status] = await tracked(
    child,
    Promise.all([child.status, read(child.stdout), read(child.stderr)]),
  );
  if (!status.success) {
    throw new Error(
      `${command} ${args[0]} failed (exit ${status.code}) in the source build:\n${tail.join("\n")}`,
    );
  }
}
