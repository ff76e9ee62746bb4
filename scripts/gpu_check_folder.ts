/**
 * `deno task gpu-check-folder DIR [--backend vulkan|cuda|cpu] [--debs]`: a folder that runs the
 * GPU check (scripts/gpu_check.ts) on an air-gapped machine of this platform: the check bundled
 * into one file, the engine for the backend (installed here with npm, then packed with xz), this
 * Deno binary (xz), and `run.sh`, which unpacks them on first use and runs the check with the
 * engine folder beside it. `--debs` adds Debian's Vulkan loader and glvnd packages (the NVIDIA
 * Vulkan driver needs libGLdispatch), downloaded with apt-get, for a machine that lacks them; as
 * root, `run.sh` unpacks into / the package of each of their libraries the machine lacks.
 *
 * Sizes on linux-x64: Deno 2.9.6 is 30.7 MB with xz; the Vulkan engine 92 MB, about 20 MB with xz
 * (node-llama-cpp's llama.cpp source, 34 MB, is left out: it is only for source builds); the CUDA
 * engine is 143 MB more.
 *
 * @module
 */
import { basename, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { installEngine, installFolder, isInstalled } from "../src/inference/engine_install.ts";
import type { Backend } from "../src/inference/engine_backend.ts";

const { values: flags, positionals } = parseArgs({
  args: Deno.args,
  options: { backend: { type: "string", default: "vulkan" }, debs: { type: "boolean" } },
  allowPositionals: true,
});
if (!positionals[0]) {
  console.error("usage: deno task gpu-check-folder DIR [--backend vulkan|cuda|cpu] [--debs]");
  Deno.exit(2);
}
const dir = resolve(positionals[0]);
const backend = flags.backend as Backend;
const repo = resolve(import.meta.dirname!, "..");
/** Debian's packages the Vulkan driver of an NVIDIA GPU loads through. */
const DEBS = ["libvulkan1", "libglvnd0", "libglx0", "libegl1", "libgl1", "libopengl0"];

async function run(command: string, args: string[], cwd?: string): Promise<void> {
  const { success, code } = await new Deno.Command(command, { args, cwd }).spawn().status;
  if (!success) throw new Error(`${command} ${args.join(" ")} failed (exit ${code})`);
}

await Deno.mkdir(dir, { recursive: true });
await run(Deno.execPath(), [
  "bundle",
  "--quiet",
  "--platform=deno",
  "-o",
  join(dir, "gpu_check.js"),
  join(repo, "scripts/gpu_check.ts"),
]);

// The engine, installed into a scratch folder and packed as the check's engine folder expects it.
const scratch = await Deno.makeTempDir({ prefix: "gpu-check-engine-" });
try {
  const folder = installFolder(scratch, backend);
  if (!await isInstalled(folder)) await installEngine(folder, backend);
  await Deno.remove(join(folder, "node_modules/node-llama-cpp/llama/gitRelease.bundle"))
    .catch(() => {});
  await run("tar", ["-C", scratch, "-cJf", join(dir, "engine.tar.xz"), basename(folder)]);
} finally {
  await Deno.remove(scratch, { recursive: true });
}
// xz writes into a file opened here: no shell sees the folder's name.
const packed = await Deno.open(join(dir, "deno.xz"), { write: true, create: true, truncate: true });
const xz = new Deno.Command("xz", { args: ["-T0", "-c", Deno.execPath()], stdout: "piped" })
  .spawn();
await xz.stdout.pipeTo(packed.writable);
if (!(await xz.status).success) throw new Error("xz failed");
if (flags.debs) {
  await Deno.mkdir(join(dir, "debs"), { recursive: true });
  await run("apt-get", ["download", ...DEBS], join(dir, "debs"));
}
await Deno.writeTextFile(
  join(dir, "run.sh"),
  `#!/bin/sh
# The GPU check, offline: sh run.sh [--gpu auto|cuda|vulkan] [--size small|1b|3b | model.gguf]
set -e
here=$(cd "$(dirname "$0")" && pwd)
work=\${GPU_CHECK_DIR:-$here/work}
mkdir -p "$work/engine"
if [ ! -x "$work/deno" ]; then
  xz -dc "$here/deno.xz" > "$work/deno.partial"
  chmod +x "$work/deno.partial"
  mv "$work/deno.partial" "$work/deno"
fi
if [ ! -f "$work/engine/.unpacked" ]; then
  rm -rf "$work/engine.partial" && mkdir -p "$work/engine.partial"
  tar -C "$work/engine.partial" -xJf "$here/engine.tar.xz"
  touch "$work/engine.partial/.unpacked"
  rm -rf "$work/engine" && mv "$work/engine.partial" "$work/engine"
fi
# Only the libraries missing here are added, each from its own package.
if [ -d "$here/debs" ]; then
  for pair in libvulkan.so.1:libvulkan1 libGLdispatch.so.0:libglvnd0 libGLX.so.0:libglx0 \
    libEGL.so.1:libegl1 libGL.so.1:libgl1 libOpenGL.so.0:libopengl0; do
    ldconfig -p | grep -q "\${pair%%:*}" && continue
    if [ "$(id -u)" != 0 ]; then
      echo "\${pair%%:*} is missing: as root, install $here/debs/\${pair#*:}_*.deb" >&2
      continue
    fi
    for deb in "$here/debs/\${pair#*:}"_*.deb; do dpkg -x "$deb" /; done
  done
  [ "$(id -u)" = 0 ] && ldconfig
fi
export EDGENODE_ENGINE_DIR="$work/engine" GPU_CHECK_DIR="$work"
exec "$work/deno" run --no-prompt --allow-read --allow-write --allow-env --allow-run \\
  --allow-sys=homedir,osRelease "$here/gpu_check.js" "$@"
`,
);
let bytes = 0;
for await (const entry of Deno.readDir(dir)) {
  if (entry.isFile) bytes += (await Deno.stat(join(dir, entry.name))).size;
}
console.log(`${dir}: ${(bytes / 2 ** 20).toFixed(1)} MiB; run it with: sh ${dir}/run.sh --size 1b`);
