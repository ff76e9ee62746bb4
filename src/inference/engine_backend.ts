/**
 * What the inference engine computes on, chosen before anything is installed: the checks of
 * node-llama-cpp 3.22.1 (dist/bindings/utils/detectAvailableComputeLayers.js and
 * getBestComputeLayersAvailable.js, which its package does not export), mirrored here over an
 * injected file lookup so they run in the node, before the engine exists, and in tests.
 *
 * - Metal: macOS on Apple silicon.
 * - CUDA (Linux): the NVIDIA driver (libnvidia-ml) and the CUDA runtime (libcuda, libcudart,
 *   libcublas, libcublasLt), looked for in PATH, LD_LIBRARY_PATH, CUDA_PATH, /usr/lib,
 *   /usr/lib64, the multiarch folders and /usr/local/cuda*\/targets/*\/lib.
 * - Vulkan (Linux): the Vulkan loader (libvulkan).
 * - else the CPU.
 *
 * CUDA on arm64 Linux (a Jetson) has no prebuilt package: `inference.gpu: "cuda"` there builds
 * llama.cpp from source (engine_source_build.ts), when the CUDA driver (libcuda, Jetson's in
 * `tegra/`) and the build's tools are found; "auto" never builds.
 *
 * ```ts
 * const found = await detectComputeLayers(systemLookup());
 * const choice = chooseBackend("auto", found); // { backend: "cpu", reason: "no NVIDIA driver ..." }
 * ```
 *
 * @module
 */

/** inference.gpu (spec/config.yaml). */
export type GpuSetting = "auto" | "cuda" | "vulkan" | "metal" | false;

/** What the engine runs on. */
export type Backend = "cuda" | "vulkan" | "metal" | "cpu";

/** The file system and environment detection reads (injected: tests give their own). */
export interface LibraryLookup {
  os: string;
  arch: string;
  /** Whether a file exists. */
  exists(path: string): Promise<boolean>;
  /** The names in a folder (empty when it cannot be read). */
  list(folder: string): Promise<string[]>;
  /** An environment variable. */
  env(name: string): string | undefined;
}

/** What the machine offers, with what each backend lacks. */
export interface ComputeLayers {
  /** Empty when CUDA can run; else what is missing, in words. */
  cudaMissing: string[];
  /** Empty when Vulkan can run. */
  vulkanMissing: string[];
  /** Empty when Metal can run. */
  metalMissing: string[];
  /**
   * What a CUDA source build lacks (the driver, git, cmake, a compiler, nvcc): found only where
   * one is possible (arm64 Linux); empty when it can run.
   */
  sourceBuildMissing?: string[];
}

/** The backend chosen, and why; `error` when the one named cannot run. */
export type BackendChoice =
  | { backend: Backend; reason: string; sourceBuild?: boolean; error?: undefined }
  | { backend?: undefined; reason?: undefined; sourceBuild?: undefined; error: string };

const CUDA_RUNTIME: [string, string[]][] = [
  ["libcuda.so.1", ["libcuda.so", "libcuda.so.1"]],
  ["libcudart.so", ["libcudart.so", "libcudart.so.11", "libcudart.so.12", "libcudart.so.13"]],
  ["libcublas.so", ["libcublas.so", "libcublas.so.11", "libcublas.so.12", "libcublas.so.13"]],
  [
    "libcublasLt.so",
    ["libcublasLt.so", "libcublasLt.so.11", "libcublasLt.so.12", "libcublasLt.so.13"],
  ],
];
const SYSTEM_LIBRARY_FOLDERS = [
  "/usr/lib",
  "/usr/lib64",
  "/usr/lib/x86_64-linux-gnu",
  "/usr/lib/aarch64-linux-gnu",
  "/usr/lib/armv7l-linux-gnu",
];
/** Where a Jetson's driver (L4T) keeps libcuda. */
const TEGRA_LIBRARY_FOLDERS = [
  "/usr/lib/aarch64-linux-gnu/tegra",
  "/usr/lib/aarch64-linux-gnu/nvidia",
];

/** The folders node-llama-cpp looks for libraries in, PATH and LD_LIBRARY_PATH split. */
async function searchFolders(lookup: LibraryLookup, cuda: boolean): Promise<string[]> {
  const split = (value?: string) => (value ?? "").split(":").filter((part) => part.length > 0);
  const folders = [...split(lookup.env("PATH")), ...split(lookup.env("LD_LIBRARY_PATH"))];
  if (cuda) folders.push(...split(lookup.env("CUDA_PATH")));
  folders.push(...SYSTEM_LIBRARY_FOLDERS);
  if (!cuda) return folders;
  const installs = [lookup.env("CUDA_PATH"), "/usr/local/cuda"]
    .concat(
      (await lookup.list("/usr/local")).filter((name) => name.startsWith("cuda-"))
        .map((name) => `/usr/local/${name}`),
    );
  for (const install of installs) {
    if (!install) continue;
    for (const target of await lookup.list(`${install}/targets`)) {
      folders.push(`${install}/targets/${target}/lib`, `${install}/targets/${target}/lib/stubs`);
    }
  }
  return folders;
}

async function found(lookup: LibraryLookup, folders: string[], names: string[]) {
  for (const folder of folders) {
    for (const name of names) if (await lookup.exists(`${folder}/${name}`)) return true;
  }
  return false;
}

/** What this machine can compute on, node-llama-cpp's way (see the module's description). */
export async function detectComputeLayers(lookup: LibraryLookup): Promise<ComputeLayers> {
  const metalMissing = lookup.os === "darwin" ? [] : ["Metal (macOS only)"];
  if (lookup.os !== "linux") {
    return {
      cudaMissing: ["an NVIDIA driver (detected on Linux only)"],
      vulkanMissing: ["a Vulkan loader (detected on Linux only)"],
      metalMissing,
    };
  }
  const cudaFolders = await searchFolders(lookup, true);
  const cudaMissing: string[] = [];
  if (!await found(lookup, cudaFolders, ["libnvidia-ml.so", "libnvidia-ml.so.1"])) {
    cudaMissing.push("no NVIDIA driver (libnvidia-ml.so.1 not found)");
  } else {
    const runtime: string[] = [];
    for (const [name, names] of CUDA_RUNTIME) {
      if (!await found(lookup, cudaFolders, names)) runtime.push(name);
    }
    if (runtime.length > 0) {
      cudaMissing.push(`no CUDA runtime (${runtime.join(", ")} not found)`);
    }
  }
  const vulkan = await found(lookup, await searchFolders(lookup, false), [
    "libvulkan.so",
    "libvulkan.so.1",
  ]);
  return {
    cudaMissing,
    vulkanMissing: vulkan ? [] : ["no Vulkan loader (libvulkan.so.1 not found)"],
    metalMissing,
  };
}

/** Empty when the CUDA driver (libcuda) is found, Jetson's folders included; else what lacks. */
export async function cudaDriverMissing(lookup: LibraryLookup): Promise<string[]> {
  const folders = [...await searchFolders(lookup, true), ...TEGRA_LIBRARY_FOLDERS];
  return await found(lookup, folders, ["libcuda.so", "libcuda.so.1"])
    ? []
    : ["no CUDA driver (libcuda.so.1 not found)"];
}

/** Whether CUDA needs a source build on a platform: it has no prebuilt package there. */
export function cudaNeedsSourceBuild(platform: { os: string; arch: string }): boolean {
  return platform.os === "linux" && platform.arch === "aarch64";
}

/**
 * The backend for `setting` on a machine that offers `layers`: with "auto" the first that runs
 * (Metal on Apple silicon, CUDA, Vulkan, the CPU), with the reason the others were passed over;
 * a backend named that cannot run is an error naming what is missing, never the CPU instead.
 */
export function chooseBackend(
  setting: GpuSetting,
  layers: ComputeLayers,
  platform: { os: string; arch: string },
): BackendChoice {
  const appleSilicon = platform.os === "darwin" && platform.arch === "aarch64";
  if (setting === false) return { backend: "cpu", reason: "inference.gpu is false" };
  if (setting === "cuda" && cudaNeedsSourceBuild(platform)) {
    const missing = layers.sourceBuildMissing ?? ["the build's tools were not looked for"];
    if (missing.length > 0) {
      return {
        error: `inference.gpu is "cuda" on ${platform.os} ${platform.arch}, which needs a source ` +
          `build of llama.cpp, but it cannot run here: ${missing.join("; ")}`,
      };
    }
    return {
      backend: "cuda",
      reason:
        `inference.gpu is "cuda": built from source (no prebuilt package for ${platform.arch})`,
      sourceBuild: true,
    };
  }
  if (setting !== "auto") {
    const missing = setting === "metal"
      ? (appleSilicon ? [] : ["Metal needs macOS on Apple silicon"])
      : setting === "cuda"
      ? layers.cudaMissing
      : layers.vulkanMissing;
    if (missing.length > 0) {
      return {
        error: `inference.gpu is "${setting}" but it cannot run here: ${missing.join("; ")}`,
      };
    }
    if (!backendPackage(setting, platform.os, platform.arch)) {
      return {
        error: `inference.gpu is "${setting}" but node-llama-cpp has no prebuilt ${setting} ` +
          `package for ${platform.os} ${platform.arch}`,
      };
    }
    return { backend: setting, reason: `inference.gpu is "${setting}"` };
  }
  if (appleSilicon) return { backend: "metal", reason: "macOS on Apple silicon" };
  const passed: string[] = [];
  for (
    const [backend, missing] of [["cuda", layers.cudaMissing], [
      "vulkan",
      layers.vulkanMissing,
    ]] as const
  ) {
    if (missing.length > 0) {
      passed.push(...missing);
    } else if (!backendPackage(backend, platform.os, platform.arch)) {
      const optIn = backend === "cuda" && cudaNeedsSourceBuild(platform)
        ? ' (inference.gpu "cuda" builds it from source)'
        : "";
      passed.push(`no prebuilt ${backend} package for ${platform.os} ${platform.arch}${optIn}`);
    } else {
      return { backend, reason: `${[...passed, `${backend} found`].join(", ")}` };
    }
  }
  return { backend: "cpu", reason: passed.join(", ") };
}

/**
 * node-llama-cpp's prebuilt package of `backend` for a platform; undefined when it has none
 * (CUDA on arm64 Linux, e.g. a Jetson, needs a source build).
 */
export function backendPackage(
  backend: Backend,
  os: string = Deno.build.os,
  arch: string = Deno.build.arch,
): string | undefined {
  const names: Record<string, string> = {
    "cpu linux x86_64": "linux-x64",
    "cuda linux x86_64": "linux-x64-cuda",
    "vulkan linux x86_64": "linux-x64-vulkan",
    "cpu linux aarch64": "linux-arm64",
    "cpu darwin x86_64": "mac-x64",
    "cpu darwin aarch64": "mac-arm64-metal",
    "metal darwin aarch64": "mac-arm64-metal",
    "cpu windows x86_64": "win-x64",
    "cuda windows x86_64": "win-x64-cuda",
    "vulkan windows x86_64": "win-x64-vulkan",
    "cpu windows aarch64": "win-arm64",
  };
  const name = names[`${backend} ${os} ${arch}`];
  return name ? `@node-llama-cpp/${name}` : undefined;
}

/** The lookup of this machine: its files and environment. */
export function systemLookup(): LibraryLookup {
  return {
    os: Deno.build.os,
    arch: Deno.build.arch,
    exists: (path) => Deno.stat(path).then(() => true, () => false),
    list: async (folder) => {
      try {
        return (await Array.fromAsync(Deno.readDir(folder))).map((entry) => entry.name);
      } catch {
        return [];
      }
    },
    env: (name) => {
      try {
        return Deno.env.get(name);
      } catch {
        return undefined;
      }
    },
  };
}
