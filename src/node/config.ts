/**
 * The node's settings: command-line flags over environment over the config file over defaults.
 * A fresh data directory gets a config file (mode 0600) with a generated API key.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { join, resolve } from "node:path";
import { ConfigError, type EnvReader, readJsonFile, readTrustFiles } from "../config/mod.ts";
import type { DiscoverySettings } from "../discovery/link_local.ts";
import type { McmSettings } from "../mcm/deployments.ts";
import type { InferenceSettings } from "../inference/inference_service.ts";
import {
  type NodeConfig,
  NodeConfigSchema,
  type TrustedIssuer,
} from "../../gen/config/validators.ts";
import { NodeConfigDefaults } from "../../gen/config/defaults.ts";
import { osReason, unreadable, warnIfReadableByOthers } from "../config/file_errors.ts";

/** Flags of `edgenode serve`. */
export interface ServeFlags {
  host?: string;
  port?: number;
  dataDir?: string;
  config?: string;
  /** Trust files (`{ issuer, jwks }`) to add to the trusted issuers. */
  trust?: string[];
}

/** Everything a running node needs to know. */
export interface Settings {
  dataDir: string;
  configPath: string;
  apiKey: string;
  host: string;
  port: number;
  storePrefixes: string[];
  readsRequireKey: boolean;
  maxModelFileBytes: number | undefined;
  downloadStallSeconds: number;
  downloadRetries: number;
  downloadHosts: string[] | undefined;
  /** The name from the config file; undefined: defaultNodeName (src/identity/identity.ts). */
  nodeName: string | undefined;
  insightPrefixes: string[];
  trustedIssuers: TrustedIssuer[];
  /** The trust files given with --trust, as absolute paths (the node must read them too). */
  trustFiles: string[];
  discovery: DiscoverySettings;
  /** The hub to connect to, if any. */
  hub: { url: string } | undefined;
  /** Microservice deployment. */
  mcm: McmSettings;
  /** The web page (spec/dashboard.yaml). */
  dashboard: { enabled: boolean; path: string };
  /** Running models (spec/inference.yaml). */
  inference: InferenceSettings & { enabled: boolean; prefixes: string[] };
}

/** The defaults of every optional setting: spec/config.yaml's `default`s. */
export const DEFAULTS = NodeConfigDefaults;

export { ConfigError, type EnvReader, readJsonFile, readTrustFiles };

/** The data directory and config file paths, before anything is read. */
export function resolvePaths(
  flags: ServeFlags,
  env: EnvReader,
): { dataDir: string; configPath: string } {
  const home = env("HOME") ?? env("USERPROFILE");
  const dataDir = flags.dataDir ?? env("EDGENODE_DATA_DIR") ??
    (home ? join(home, ".edgenode") : undefined);
  if (!dataDir) {
    throw new ConfigError("no data directory: pass --data-dir or set EDGENODE_DATA_DIR");
  }
  const absolute = resolve(dataDir);
  return { dataDir: absolute, configPath: resolve(flags.config ?? join(absolute, "config.json")) };
}

/** A new random API key: 32 bytes, base64url. */
export function generateApiKey(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
}

function readConfigFile(path: string): Promise<NodeConfig> {
  return readJsonFile(path, NodeConfigSchema, "config file");
}

/**
 * Loads the settings, creating the data directory and a config file with a new key when the
 * config file does not exist yet (only for the default location: a missing `--config` file is
 * an error). Returns the generated key so that the caller can print it once.
 */
export async function loadSettings(
  flags: ServeFlags,
  env: EnvReader,
): Promise<{ settings: Settings; generatedKey?: string }> {
  const { dataDir, configPath } = resolvePaths(flags, env);
  const trustFiles = (flags.trust ?? []).map((path) => resolve(path));
  await Deno.mkdir(dataDir, { recursive: true, mode: 0o700 }).catch((error) => {
    // Only a permission is fixed by making it: a file in the way or a read-only disk is not.
    const fix = error instanceof Deno.errors.PermissionDenied
      ? "make it for the user edgenode runs as, or pass another --data-dir"
      : "pass another --data-dir";
    throw new ConfigError(`cannot make the data directory ${dataDir} (${osReason(error)}): ${fix}`);
  });
  let file: NodeConfig;
  let generatedKey: string | undefined;
  try {
    file = await readConfigFile(configPath);
  } catch (error) {
    if (error instanceof Deno.errors.PermissionDenied) throw unreadable(configPath, error);
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    if (flags.config) throw new ConfigError(`config file ${configPath} does not exist`);
    generatedKey = generateApiKey();
    file = { apiKey: generatedKey };
    await Deno.writeTextFile(configPath, JSON.stringify(file, null, 2) + "\n", {
      createNew: true,
      mode: 0o600,
    });
  }
  await warnIfReadableByOthers(configPath);
  const apiKey = env("EDGENODE_API_KEY") || file.apiKey;
  if (!apiKey) {
    throw new ConfigError(
      `${configPath} has no "apiKey": add one (32 or more random characters) or set EDGENODE_API_KEY`,
    );
  }
  const settings: Settings = {
    dataDir,
    configPath,
    apiKey,
    host: flags.host ?? file.host ?? DEFAULTS.host,
    port: flags.port ?? file.port ?? DEFAULTS.port,
    storePrefixes: file.storePrefixes ?? [...DEFAULTS.storePrefixes],
    readsRequireKey: file.readsRequireKey ?? DEFAULTS.readsRequireKey,
    maxModelFileBytes: file.maxModelFileBytes,
    downloadStallSeconds: file.downloadStallSeconds ?? DEFAULTS.downloadStallSeconds,
    downloadRetries: file.downloadRetries ?? DEFAULTS.downloadRetries,
    downloadHosts: file.downloadHosts,
    nodeName: file.nodeName,
    insightPrefixes: file.insightPrefixes ?? [...DEFAULTS.insightPrefixes],
    trustedIssuers: [...(file.trustedIssuers ?? []), ...await readTrustFiles(trustFiles)],
    trustFiles,
    discovery: {
      mdns: file.discovery?.mdns ?? DEFAULTS.discovery.mdns,
      interfaces: file.discovery?.interfaces,
      port: file.discovery?.port ?? DEFAULTS.discovery.port,
      announceSeconds: file.discovery?.announceSeconds ?? DEFAULTS.discovery.announceSeconds,
      peers: file.discovery?.peers ?? [...DEFAULTS.discovery.peers],
    },
    hub: file.hub ? { url: file.hub.url.replace(/\/$/, "") } : undefined,
    mcm: {
      ...DEFAULTS.mcm,
      ...file.mcm,
      apiKey: file.mcm?.apiKey ?? apiKey,
      outboundHosts: file.mcm?.outboundHosts,
      outboundNetworks: [...(file.mcm?.outboundNetworks ?? DEFAULTS.mcm.outboundNetworks)],
    },
    dashboard: {
      enabled: file.dashboard?.enabled ?? DEFAULTS.dashboard.enabled,
      path: file.dashboard?.path ?? DEFAULTS.dashboard.path,
    },
    inference: {
      ...DEFAULTS.inference,
      ...file.inference,
      prefixes: [...(file.inference?.prefixes ?? DEFAULTS.inference.prefixes)],
      engineDir: resolve(
        env("EDGENODE_ENGINE_DIR") || file.inference?.engineDir || join(dataDir, "engine"),
      ),
    },
  };
  return { settings, generatedKey: env("EDGENODE_API_KEY") ? undefined : generatedKey };
}
