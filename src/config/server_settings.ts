/**
 * What the node's and the hub's settings have in common: where their files are (flag, environment,
 * a folder in the home directory), the data directory made private, the config file read when it
 * is there, the trusted issuers of config and trust files, and what those issuers let the process
 * read and reach. The CLI finds the local node's config file here too, without the node.
 *
 * @example
 * ```ts
 * import { NODE_FILES, resolvePaths } from "./server_settings.ts";
 *
 * const { dataDir, configPath } = resolvePaths({}, (name) => Deno.env.get(name), NODE_FILES);
 * ```
 *
 * @module
 */
import { join, resolve } from "node:path";
import type * as v from "valibot";
import type { TrustedIssuer } from "../../gen/config/validators.ts";
import { ConfigError } from "./config_error.ts";
import { type EnvReader, readJsonFile, readTrustFiles, realConfigPath } from "./config_files.ts";
import { osReason, unreadable } from "./file_errors.ts";

/** The flags that say where a server's files are. */
export interface PathFlags {
  dataDir?: string;
  config?: string;
}

/** Where a server keeps its files when no flag says. */
export interface FilePlaces {
  /** The environment variable naming the data directory. */
  envVar: string;
  /** The data directory's name in the home directory. */
  homeFolder: string;
  /** The config file's name in the data directory. */
  configName: string;
  /** The ConfigError's message when there is no data directory to use. */
  missing: string;
}

/** The node's files: `~/.edgenode/config.json`. */
export const NODE_FILES: FilePlaces = {
  envVar: "EDGENODE_DATA_DIR",
  homeFolder: ".edgenode",
  configName: "config.json",
  missing: "no data directory: pass --data-dir or set EDGENODE_DATA_DIR",
};

/** The hub's files: `~/.edgenode-hub/hub.json`. */
export const HUB_FILES: FilePlaces = {
  envVar: "EDGENODE_HUB_DIR",
  homeFolder: ".edgenode-hub",
  configName: "hub.json",
  missing: "no hub data directory: pass --data-dir",
};

/** The data directory and config file paths (absolute), before anything is read. */
export function resolvePaths(
  flags: PathFlags,
  env: EnvReader,
  places: FilePlaces = NODE_FILES,
): { dataDir: string; configPath: string } {
  const home = env("HOME") ?? env("USERPROFILE");
  const dataDir = flags.dataDir ?? env(places.envVar) ??
    (home ? join(home, places.homeFolder) : undefined);
  if (!dataDir) throw new ConfigError(places.missing);
  const absolute = resolve(dataDir);
  return {
    dataDir: absolute,
    configPath: resolve(flags.config ?? join(absolute, places.configName)),
  };
}

/** Makes the data directory (mode 0700) if it is not there; a ConfigError saying the fix if not. */
export async function makeDataDir(dataDir: string): Promise<void> {
  await Deno.mkdir(dataDir, { recursive: true, mode: 0o700 }).catch((error) => {
    // Only a permission is fixed by making it: a file in the way or a read-only disk is not.
    const fix = error instanceof Deno.errors.PermissionDenied
      ? "make it for the user edgenode runs as, or pass another --data-dir"
      : "pass another --data-dir";
    throw new ConfigError(`cannot make the data directory ${dataDir} (${osReason(error)}): ${fix}`);
  });
}

/**
 * The config file checked against `schema`; undefined when it does not exist at its default
 * place (a missing `--config` file is an error).
 */
export async function readConfigIfAny<S extends v.GenericSchema>(
  path: string,
  schema: S,
  what: string,
  flags: PathFlags,
): Promise<v.InferOutput<S> | undefined> {
  try {
    return await readJsonFile(path, schema, what);
  } catch (error) {
    if (error instanceof Deno.errors.PermissionDenied) throw unreadable(path, error);
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    if (flags.config) throw new ConfigError(`config file ${path} does not exist`);
    return undefined;
  }
}

/** The issuers of the config file and of the `--trust` files, and those files' absolute paths. */
export async function trustedIssuersOf(
  trust: readonly string[] | undefined,
  configured: readonly TrustedIssuer[] | undefined,
): Promise<{ trustedIssuers: TrustedIssuer[]; trustFiles: string[] }> {
  const trustFiles = (trust ?? []).map((path) => resolve(path));
  return {
    trustedIssuers: [...(configured ?? []), ...await readTrustFiles(trustFiles)],
    trustFiles,
  };
}

/** What verifying the issuers' tokens needs: JWKS files to read and JWKS hosts to fetch from. */
export function issuerAccess(
  issuers: readonly TrustedIssuer[],
): { files: string[]; hosts: string[] } {
  return {
    files: issuers.flatMap((t) => (t.jwksFile ? [t.jwksFile] : [])),
    hosts: issuers.flatMap((t) => (t.jwksUrl ? [new URL(t.jwksUrl).host] : [])),
  };
}

/**
 * The files a server reads whatever its job: its data directory, its config file, the trust
 * files it was given and its issuers' JWKS files.
 */
export function settingsFiles(settings: {
  dataDir: string;
  configPath: string;
  trustFiles: readonly string[];
  trustedIssuers: readonly TrustedIssuer[];
}): string[] {
  const { dataDir, configPath, trustFiles, trustedIssuers } = settings;
  return [dataDir, configPath, ...trustFiles, ...issuerAccess(trustedIssuers).files];
}

/**
 * The settings' data directory and config file with their links resolved: permission paths must
 * be the real ones, or a symlinked data directory would not match.
 */
export async function resolveLinks(
  settings: { dataDir: string; configPath: string },
): Promise<void> {
  settings.dataDir = await Deno.realPath(settings.dataDir);
  settings.configPath = await realConfigPath(settings.configPath);
}
