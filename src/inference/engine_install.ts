/**
 * Where the inference engine's npm packages live, and how they get there.
 *
 * node-llama-cpp ships llama.cpp prebuilt for each platform in optional npm packages. `deno
 * install` refuses the package (one optional platform package is missing from the registry), so
 * npm installs it, from engine/package.json and its lock file, into
 * `<engine dir>/node-llama-cpp-<version>-<platform>`: the library and this platform's CPU build
 * only (85 MB on linux-x64, against 725 MB with every GPU variant). The install goes to a
 * temporary folder that is renamed into place once complete, so a crash never leaves half an
 * engine that looks installed.
 *
 * Run as a script (by the node, with the permissions this needs and the node lacks: running
 * npm), it installs into the folder given as its argument:
 * `deno run --no-config --allow-run --allow-read --allow-write=<dir> --allow-env engine_install.ts <dir>`
 *
 * @module
 */
import lock from "../../engine/package-lock.json" with { type: "json" };
import manifest from "../../engine/package.json" with { type: "json" };

/** The node-llama-cpp version engine/package.json pins. */
export const ENGINE_VERSION: string = manifest.dependencies["node-llama-cpp"];

/** node-llama-cpp's prebuilt CPU package for this machine, if it has one. */
export function platformPackage(
  os: string = Deno.build.os,
  arch: string = Deno.build.arch,
): string | undefined {
  const names: Record<string, string> = {
    "linux x86_64": "linux-x64",
    "linux aarch64": "linux-arm64",
    "darwin x86_64": "mac-x64",
    "darwin aarch64": "mac-arm64-metal",
    "windows x86_64": "win-x64",
    "windows aarch64": "win-arm64",
  };
  const name = names[`${os} ${arch}`];
  return name ? `@node-llama-cpp/${name}` : undefined;
}

/** The folder the engine of this version and platform is installed in, under `engineDir`. */
export function installFolder(engineDir: string): string {
  const platform = platformPackage()?.split("/")[1] ?? `${Deno.build.os}-${Deno.build.arch}`;
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
  const output = await new Deno.Command("npm", {
    args,
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).output().catch((error) => {
    throw new Error(
      `cannot run npm (${(error as Error).message}): the inference engine is installed with npm; ` +
        "install Node.js and npm, or set inference.engineDir to a folder holding the engine",
    );
  });
  if (!output.success) {
    const stderr = new TextDecoder().decode(output.stderr).trim().split("\n").slice(-8).join("\n");
    throw new Error(`npm ${args[0]} failed (exit ${output.code}):\n${stderr}`);
  }
}

/** Installs the engine into `folder` (see the module's description). */
export async function installEngine(folder: string): Promise<void> {
  const platform = platformPackage();
  if (!platform) {
    throw new Error(
      `node-llama-cpp has no prebuilt engine for ${Deno.build.os} ${Deno.build.arch}`,
    );
  }
  const partial = `${folder}.partial-${Deno.pid}`;
  await Deno.remove(partial, { recursive: true }).catch(() => {});
  await Deno.mkdir(partial, { recursive: true });
  try {
    await Deno.writeTextFile(`${partial}/package.json`, JSON.stringify(manifest, null, 2));
    await Deno.writeTextFile(`${partial}/package-lock.json`, JSON.stringify(lock, null, 2));
    // The lock pins every package; the platform's own build is the one optional package wanted.
    await npm([
      "install",
      "--no-save",
      "--omit=optional",
      "--ignore-scripts",
      "--no-audit",
      "--no-fund",
      "--loglevel=error",
      `${platform}@${ENGINE_VERSION}`,
    ], partial);
    if (!await isInstalled(partial)) throw new Error("npm finished but node-llama-cpp is missing");
    try {
      await Deno.rename(partial, folder);
    } catch (error) {
      // Another node installed it meanwhile: theirs is as good.
      if (!await isInstalled(folder)) throw error;
    }
  } finally {
    await Deno.remove(partial, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) {
  try {
    await installEngine(Deno.args[0]);
  } catch (error) {
    console.error((error as Error).message);
    Deno.exit(1);
  }
}
