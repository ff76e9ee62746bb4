/**
 * The node's settings: command-line flags over environment over the config file over defaults.
 * A fresh data directory gets a config file (mode 0600) with a generated API key.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { join, resolve } from "node:path";
import {
  ConfigError,
  type EnvReader,
  makeDataDir,
  NODE_FILES,
  type PathFlags,
  readConfigIfAny,
  resolvePaths,
  trustedIssuersOf,
} from "../config/mod.ts";
import type { DiscoverySettings } from "../discovery/link_local.ts";
import type { McmSettings } from "../mcm/deployments.ts";
import type { InferenceSettings } from "../inference/inference_service.ts";
import {
  type NodeConfig,
  NodeConfigSchema,
  type TrustedIssuer,
} from "../../gen/config/validators.ts";
import { NodeConfigDefaults } from "../../gen/config/defaults.ts";
import { warnIfReadableByOthers } from "../config/file_errors.ts";

/** Flags of `edgenode serve`. */
export interface ServeFlags extends PathFlags {
  host?: string;
  port?: number;
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
  inference: InferenceSettings & {
    enabled: boolean;
    prefixes: string[];
    /** Which nodes serve this node's models and this node theirs (spec/config.yaml). */
    mesh: "off" | "lan" | "account";
  };
}

/** The defaults of every optional setting: spec/config.yaml's `default`s. */
export const DEFAULTS = NodeConfigDefaults;

/** A new random API key: 32 bytes, base64url. */
export function generateApiKey(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
}

/** The config file, or a fresh one with a new key (not written yet) when there is none. */
async function configOrFresh(
  configPath: string,
  flags: ServeFlags,
): Promise<{ file: NodeConfig; generatedKey?: string }> {
  const file = await readConfigIfAny(configPath, NodeConfigSchema, "config file", flags);
  if (file) return { file };
  const generatedKey = generateApiKey();
  return { file: { apiKey: generatedKey }, generatedKey };
}

/** What loadSettings may be asked to do. */
export interface LoadOptions {
  /**
   * Called with the settings before a fresh config file is written; what it throws stops the
   * start with nothing written (a busy port must not cost the user a key shown only once).
   */
  beforeCreating?: (settings: Settings) => Promise<void> | void;
}

/**
 * Loads the settings, creating the data directory and a config file with a new key when the
 * config file does not exist yet (only for the default location: a missing `--config` file is
 * an error). Returns the generated key so that the caller can print it once.
 */
export async function loadSettings(
  flags: ServeFlags,
  env: EnvReader,
  options: LoadOptions = {},
): Promise<{ settings: Settings; generatedKey?: string }> {
  const { dataDir, configPath } = resolvePaths(flags, env, NODE_FILES);
  await makeDataDir(dataDir);
  const { file, generatedKey } = await configOrFresh(configPath, flags);
  const apiKey = env("EDGENODE_API_KEY") || file.apiKey;
  if (!apiKey) {
    throw new ConfigError(
      `${configPath} has no "apiKey": add one (32 or more random characters) or set EDGENODE_API_KEY`,
    );
  }
  const trust = await trustedIssuersOf(flags.trust, file.trustedIssuers);
  const settings = settingsOf(file, flags, env, { dataDir, configPath, apiKey, ...trust });
  if (generatedKey) {
    await options.beforeCreating?.(settings);
    await Deno.writeTextFile(configPath, JSON.stringify(file, null, 2) + "\n", {
      createNew: true,
      mode: 0o600,
    });
  }
  await warnIfReadableByOthers(configPath);
  return { settings, generatedKey: env("EDGENODE_API_KEY") ? undefined : generatedKey };
}

/** The settings of a config file under the flags and environment, defaults filled in. */
function settingsOf(
  file: NodeConfig,
  flags: ServeFlags,
  env: EnvReader,
  known: Pick<Settings, "dataDir" | "configPath" | "apiKey" | "trustedIssuers" | "trustFiles">,
): Settings {
  return {
    ...known,
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
      apiKey: file.mcm?.apiKey ?? known.apiKey,
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
        env("EDGENODE_ENGINE_DIR") || file.inference?.engineDir || join(known.dataDir, "engine"),
      ),
    },
  };
}
