/** The source build's decisions (engine_source_build.ts); a real build is in tests/inference_install_test.ts (opt-in: EDGENODE_SOURCE_BUILD_TEST). */
import assert from "node:assert/strict";
import type { LibraryLookup } from "./engine_backend.ts";
import {
  architecturesOfComputeCaps,
  cudaArchitectures,
  missingBuildTools,
  nvccFolder,
  nvidiaSmiComputeCaps,
  sourceBuildName,
} from "./engine_source_build.ts";
import { installFolder } from "./engine_install.ts";

/** A machine holding `files`, with `env`. */
function machine(files: string[], env: Record<string, string> = {}): LibraryLookup {
  const set = new Set(files);
  return {
    os: "linux",
    arch: "aarch64",
    exists: (path) => Promise.resolve(set.has(path)),
    list: () => Promise.resolve([]),
    env: (name) => env[name],
  };
}

const TOOLS = ["/usr/bin/git", "/usr/bin/cmake", "/usr/bin/g++", "/usr/bin/npm"];

Deno.test("each missing tool is named; nvcc only for CUDA, in CUDA_PATH or /usr/local/cuda", async () => {
  const path = { PATH: "/usr/bin:/bin" };
  assert.deepEqual(await missingBuildTools("cpu", machine(TOOLS, path)), []);
  assert.deepEqual(await missingBuildTools("cuda", machine(TOOLS, path)), [
    "the CUDA toolkit (nvcc not found in CUDA_PATH/bin, /usr/local/cuda/bin or PATH)",
  ]);
  const jetson = machine([...TOOLS, "/usr/local/cuda/bin/nvcc"], path);
  assert.deepEqual(await missingBuildTools("cuda", jetson), []);
  assert.equal(await nvccFolder(jetson), "/usr/local/cuda/bin");
  const custom = machine([...TOOLS, "/opt/cuda-12/bin/nvcc"], {
    ...path,
    CUDA_PATH: "/opt/cuda-12",
  });
  assert.equal(await nvccFolder(custom), "/opt/cuda-12/bin");
  assert.deepEqual(await missingBuildTools("cuda", machine([], path)), [
    "git (not found in PATH)",
    "cmake (not found in PATH)",
    "a C++ compiler (c++, g++ or clang++ not found in PATH)",
    "npm (not found in PATH)",
    "the CUDA toolkit (nvcc not found in CUDA_PATH/bin, /usr/local/cuda/bin or PATH)",
  ]);
  // No PATH at all: nothing found, nothing thrown.
  assert.equal((await missingBuildTools("cpu", machine(TOOLS))).length, 4);
});

Deno.test("CUDA architectures: CUDAARCHS, else nvidia-smi's compute_cap, else native", async () => {
  const smi = (text?: string) => () => Promise.resolve(text);
  assert.equal(await cudaArchitectures((name) => ({ CUDAARCHS: "72" })[name], smi("8.7")), "72");
  assert.equal(await cudaArchitectures(() => undefined, smi("8.7\n")), "87");
  assert.equal(await cudaArchitectures(() => undefined, smi("8.7\n8.6\n8.7\n")), "87;86");
  assert.equal(await cudaArchitectures(() => undefined, smi(undefined)), "native");
  assert.equal(await cudaArchitectures(() => undefined, smi("[N/A]\n")), "native");
  assert.equal(architecturesOfComputeCaps("junk\n"), undefined);
});

Deno.test("hostile CUDAARCHS: no shell words nor folder names get through", async () => {
  const smi = () => Promise.resolve("8.7");
  for (const value of ["87; rm -rf /", "../../etc", "87 -DCMAKE_C_COMPILER=/tmp/x", "$(id)"]) {
    assert.equal(await cudaArchitectures((name) => ({ CUDAARCHS: value })[name], smi), "87");
  }
  // Whatever reaches the name stays one folder under the engine's.
  const name = sourceBuildName("cuda", "linux", "aarch64", "../../x;87");
  assert.equal(name, "linux-arm64-cuda-smx-sm87");
  assert.ok(!installFolder("/engines", "cuda", name).slice("/engines/".length).includes("/"));
});

Deno.test("a source build's folder is per device: its CUDA architectures in the name", () => {
  assert.equal(sourceBuildName("cuda", "linux", "aarch64", "87"), "linux-arm64-cuda-sm87");
  assert.equal(sourceBuildName("cuda", "linux", "aarch64", "72;87"), "linux-arm64-cuda-sm72-sm87");
  assert.equal(sourceBuildName("cuda", "linux", "aarch64", "native"), "linux-arm64-cuda-native");
  assert.equal(sourceBuildName("cpu", "linux", "x86_64"), "linux-x64-cpu-source");
  assert.match(
    installFolder("/data/engine", "cuda", "linux-arm64-cuda-sm87"),
    /^\/data\/engine\/node-llama-cpp-\d+\.\d+\.\d+-linux-arm64-cuda-sm87$/,
  );
});

Deno.test({
  name: "an nvidia-smi that hangs is given up after its timeout: the build says native",
  ignore: Deno.build.os === "windows",
  async fn() {
    const bin = await Deno.makeTempDir({ prefix: "edgenode-smi-" });
    const path = Deno.env.get("PATH") ?? "";
    try {
      await Deno.writeTextFile(`${bin}/nvidia-smi`, "#!/bin/sh\nexec sleep 30\n");
      await Deno.chmod(`${bin}/nvidia-smi`, 0o755);
      Deno.env.set("PATH", `${bin}:${path}`);
      const started = Date.now();
      assert.equal(await nvidiaSmiComputeCaps(200), undefined);
      assert.ok(Date.now() - started < 5000, "waited for nvidia-smi");
      assert.equal(
        await cudaArchitectures(() => undefined, () => nvidiaSmiComputeCaps(200)),
        "native",
      );
    } finally {
      Deno.env.set("PATH", path);
      await Deno.remove(bin, { recursive: true });
    }
  },
});
