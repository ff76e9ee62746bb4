/**
 * `edgenode image build`: bundles a microservice project into one classic script with esbuild,
 * refusing any import that resolves outside the project folder, and packs it in the
 * reference's image format (a `docker save` archive whose one layer holds index.js).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { basename, dirname, join, resolve } from "node:path";
import type * as esbuild from "esbuild";
import { isExecutable } from "../program/self_program.ts";
import { packTar } from "modern-tar";
import { ConfigError } from "../config/config_error.ts";

/** A built image. */
export interface BuiltImage {
  name: string;
  version: string;
  /** The bundle, index.js. */
  bundle: Uint8Array;
  /** The image archive. */
  tar: Uint8Array;
}

const ENTRY_CANDIDATES = ["index.js", "index.ts", "src/index.js", "src/index.ts"];
const NAME_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

/** The project's entry file, name and version, from package.json or the usual file names. */
async function project(input: string) {
  const path = resolve(input);
  const info = await Deno.stat(path).catch(() => {
    throw new ConfigError(`${input} does not exist`);
  });
  if (info.isFile) {
    return {
      root: dirname(path),
      entry: path,
      name: basename(path).replace(/\.[jt]s$/, ""),
      version: "1.0.0",
    };
  }
  const manifest = await Deno.readTextFile(join(path, "package.json")).then(JSON.parse, () => ({}));
  const candidates = [manifest.main, ...ENTRY_CANDIDATES].filter((c) => typeof c === "string");
  for (const candidate of candidates) {
    if (await exists(join(path, candidate))) {
      return {
        root: path,
        entry: join(path, candidate),
        name: String(manifest.name ?? basename(path)).replace(/^@[^/]+\//, ""),
        version: String(manifest.version ?? "1.0.0"),
      };
    }
  }
  throw new ConfigError(`${input} has no entry file: set "main" in package.json or add index.js`);
}

/** Fails the build for an import that resolves outside `root` (symlinks followed). */
function jail(root: string): esbuild.Plugin {
  return {
    name: "edgenode-jail",
    setup(build) {
      const realRoot = Deno.realPathSync(root);
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData?.jailed) return undefined;
        const result = await build.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          resolveDir: args.resolveDir,
          pluginData: { jailed: true },
        });
        if (result.errors.length > 0) return { errors: result.errors };
        if (result.external || result.namespace !== "file") {
          return { errors: [{ text: `'${args.path}' is not a file of the project` }] };
        }
        const real = await Deno.realPath(result.path);
        if (real !== realRoot && !real.startsWith(`${realRoot}/`)) {
          return {
            errors: [{ text: `'${args.path}' resolves outside the project folder (${real})` }],
          };
        }
        return { path: real };
      });
    },
  };
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const file = (name: string, body: Uint8Array) => ({
  header: { name, size: body.length, type: "file" as const, mode: 0o644, mtime: new Date(0) },
  body,
});

/** The reference's image layout around one bundle. */
export async function packImage(bundle: Uint8Array, name: string, version: string) {
  const layer = await packTar([file("index.js", bundle)]);
  const layerSha = sha256(layer);
  const config = encode({
    architecture: "amd64",
    os: "linux",
    config: { Entrypoint: ["/index.js"] },
    rootfs: { type: "layers", diff_ids: [`sha256:${layerSha}`] },
  });
  const configName = `${sha256(config)}.json`;
  const layerId = layerSha;
  const repoTag = `${name}:${version}`;
  return await packTar([
    file(
      "manifest.json",
      encode([{ Config: configName, RepoTags: [repoTag], Layers: [`${layerId}/layer.tar`] }]),
    ),
    file("repositories", encode({ [name]: { [version]: layerId } })),
    file(configName, config),
    file(`${layerId}/VERSION`, new TextEncoder().encode("1.0")),
    file(`${layerId}/json`, encode({ id: layerId })),
    file(`${layerId}/layer.tar`, layer),
  ]);
}

/** Bundles and packs the project (a folder, or one entry file). */
export async function buildImage(input: string, nameFlag?: string): Promise<BuiltImage> {
  const { root, entry, name: projectName, version } = await project(input);
  const name = nameFlag ?? projectName;
  if (!NAME_PATTERN.test(name)) {
    throw new ConfigError(
      `image name '${name}' must be letters, digits, '.', '_' or '-'; pass --name`,
    );
  }
  if (isExecutable()) {
    // esbuild is a native program of its own, which a compiled binary cannot carry and run.
    throw new ConfigError(
      "the single executable does not build images: build one with 'deno task edgenode image " +
        "build' in a checkout of edgenode, then 'edgenode image push' or 'edgenode deploy' the tar",
    );
  }
  // Loaded here: esbuild reads the environment when imported, which the node may not. Named by
  // a variable, so that `deno compile` does not embed it.
  const esbuildModule = "esbuild";
  const esbuild: typeof import("esbuild") = await import(esbuildModule);
  let result: esbuild.BuildResult & { outputFiles: esbuild.OutputFile[] };
  try {
    result = await esbuild.build({
      entryPoints: [entry],
      bundle: true,
      write: false,
      // A classic script: the node evaluates it as one, never as a module graph. A default
      // export lands in __edgenode_module.
      format: "iife",
      globalName: "__edgenode_module",
      platform: "neutral",
      mainFields: ["module", "main"],
      target: "es2022",
      logLevel: "silent",
      plugins: [jail(root)],
    });
  } catch (error) {
    const failure = error as esbuild.BuildFailure;
    const lines = (failure.errors ?? []).map((e) =>
      `${e.location ? `${e.location.file}:${e.location.line}: ` : ""}${e.text}`
    );
    throw new ConfigError(`the build failed:\n  ${lines.join("\n  ") || failure.message}`);
  } finally {
    await esbuild.stop();
  }
  const bundle = result.outputFiles[0].contents;
  return { name, version, bundle, tar: await packImage(bundle, name, version) };
}
