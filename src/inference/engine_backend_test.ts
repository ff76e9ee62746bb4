/** The backend choice (engine_backend.ts); the node-level tests are in tests/inference_backend_test.ts. */
import assert from "node:assert/strict";
import {
  backendPackage,
  chooseBackend,
  cudaDriverMissing,
  detectComputeLayers,
  type LibraryLookup,
} from "./engine_backend.ts";

/** A machine holding `files`, with `env`. */
function machine(
  files: string[],
  env: Record<string, string> = {},
  os = "linux",
  arch = "x86_64",
): LibraryLookup {
  const set = new Set(files);
  return {
    os,
    arch,
    exists: (path) => Promise.resolve(set.has(path)),
    list: (folder) =>
      Promise.resolve([
        ...new Set(
          files.filter((file) => file.startsWith(`${folder}/`))
            .map((file) => file.slice(folder.length + 1).split("/")[0]),
        ),
      ]),
    env: (name) => env[name],
  };
}

const LINUX = { os: "linux", arch: "x86_64" };
const CUDA_FILES = [
  "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
  "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
  "/usr/local/cuda-13.1/targets/x86_64-linux/lib/libcudart.so.13",
  "/usr/local/cuda-13.1/targets/x86_64-linux/lib/libcublas.so.13",
  "/usr/local/cuda-13.1/targets/x86_64-linux/lib/libcublasLt.so.13",
];

Deno.test("a machine without GPU libraries runs on the CPU, and says why", async () => {
  const layers = await detectComputeLayers(machine([]));
  assert.deepEqual(chooseBackend("auto", layers, LINUX), {
    backend: "cpu",
    reason: "no NVIDIA driver (libnvidia-ml.so.1 not found), " +
      "no Vulkan loader (libvulkan.so.1 not found)",
  });
});

Deno.test("CUDA is chosen when the driver and the runtime are found, in CUDA's targets too", async () => {
  const layers = await detectComputeLayers(machine(CUDA_FILES));
  assert.deepEqual(layers.cudaMissing, []);
  assert.deepEqual(chooseBackend("auto", layers, LINUX).backend, "cuda");
});

Deno.test("the driver without the runtime names the missing libraries, and Vulkan is next", async () => {
  const files = [CUDA_FILES[0], "/opt/vk/libvulkan.so.1"];
  const layers = await detectComputeLayers(machine(files, { LD_LIBRARY_PATH: "/x:/opt/vk" }));
  assert.deepEqual(layers.cudaMissing, [
    "no CUDA runtime (libcuda.so.1, libcudart.so, libcublas.so, libcublasLt.so not found)",
  ]);
  const auto = chooseBackend("auto", layers, LINUX);
  assert.deepEqual(auto.backend, "vulkan");
  assert.match(auto.reason!, /no CUDA runtime .*vulkan found/);
  const cuda = chooseBackend("cuda", layers, LINUX);
  assert.deepEqual(cuda.backend, undefined);
  assert.match(cuda.error!, /"cuda" but it cannot run here: no CUDA runtime \(libcuda\.so\.1/);
});

Deno.test("a backend named where it cannot run is an error, never the CPU", async () => {
  const layers = await detectComputeLayers(machine([]));
  assert.match(chooseBackend("cuda", layers, LINUX).error!, /no NVIDIA driver/);
  assert.match(chooseBackend("vulkan", layers, LINUX).error!, /no Vulkan loader/);
  assert.match(chooseBackend("metal", layers, LINUX).error!, /macOS on Apple silicon/);
  assert.deepEqual(chooseBackend(false, layers, LINUX).backend, "cpu");
});

Deno.test("CUDA on arm64 Linux (a Jetson): a source build, opt-in, never with auto", async () => {
  const arm = CUDA_FILES.map((file) => file.replace("x86_64", "aarch64"));
  const layers = await detectComputeLayers(machine(arm, {}, "linux", "aarch64"));
  const platform = { os: "linux", arch: "aarch64" };
  // Not looked for: an error, never the CPU.
  assert.match(chooseBackend("cuda", layers, platform).error!, /needs a source build/);
  const auto = chooseBackend("auto", layers, platform);
  assert.deepEqual(auto.backend, "cpu");
  assert.match(auto.reason!, /no prebuilt cuda package.*inference.gpu "cuda" builds it/);
  const missing = ["git (not found in PATH)", "the CUDA toolkit (nvcc not found)"];
  const refused = chooseBackend("cuda", { ...layers, sourceBuildMissing: missing }, platform);
  assert.match(refused.error!, /needs a source build.*git \(not found in PATH\); the CUDA toolkit/);
  const built = chooseBackend("cuda", { ...layers, sourceBuildMissing: [] }, platform);
  assert.deepEqual([built.backend, built.sourceBuild], ["cuda", true]);
  // x64 keeps its package: no source build.
  const x64 = chooseBackend("cuda", await detectComputeLayers(machine(CUDA_FILES)), LINUX);
  assert.deepEqual([x64.backend, x64.sourceBuild], ["cuda", undefined]);
});

Deno.test("a Jetson's CUDA driver is found in tegra/, its absence named", async () => {
  const tegra = machine(["/usr/lib/aarch64-linux-gnu/tegra/libcuda.so.1"], {}, "linux", "aarch64");
  assert.deepEqual(await cudaDriverMissing(tegra), []);
  assert.deepEqual(await cudaDriverMissing(machine([], {}, "linux", "aarch64")), [
    "no CUDA driver (libcuda.so.1 not found)",
  ]);
});

Deno.test("a Mac on Apple silicon uses Metal", async () => {
  const platform = { os: "darwin", arch: "aarch64" };
  const layers = await detectComputeLayers(machine([], {}, "darwin", "aarch64"));
  assert.deepEqual(chooseBackend("auto", layers, platform).backend, "metal");
  assert.deepEqual(chooseBackend("metal", layers, platform).backend, "metal");
});

Deno.test("packages by backend and platform", () => {
  const table: [Parameters<typeof backendPackage>, string | undefined][] = [
    [["cpu", "linux", "x86_64"], "@node-llama-cpp/linux-x64"],
    [["cuda", "linux", "x86_64"], "@node-llama-cpp/linux-x64-cuda"],
    [["vulkan", "linux", "x86_64"], "@node-llama-cpp/linux-x64-vulkan"],
    [["cpu", "linux", "aarch64"], "@node-llama-cpp/linux-arm64"],
    [["cuda", "linux", "aarch64"], undefined],
    [["metal", "darwin", "aarch64"], "@node-llama-cpp/mac-arm64-metal"],
  ];
  for (const [args, want] of table) assert.deepEqual(backendPackage(...args), want, args.join(" "));
});
