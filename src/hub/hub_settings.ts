/**
 * The hub's settings: flags over `<data dir>/hub.json` (spec/config.yaml, HubConfig) over
 * defaults. The hub has no secret of its own: nodes and callers prove themselves with tokens of
 * the issuers it trusts.
 *
 * @module
 */
import { HubConfigDefaults } from "../../gen/config/defaults.ts";
import { HubConfigSchema } from "../../gen/config/validators.ts";
import type { TrustedIssuer } from "../../gen/config/validators.ts";
import {
  ConfigError,
  type EnvReader,
  HUB_FILES,
  makeDataDir,
  type PathFlags,
  readConfigIfAny,
  resolvePaths,
  trustedIssuersOf,
} from "../config/mod.ts";
import { type ClusterSettings, clusterSettings } from "./cluster/cluster_settings.ts";
import { rawPortOf } from "./raw_listener.ts";

/** Flags of `edgenode hub`. */
export interface HubFlags extends PathFlags {
  host?: string;
  port?: number;
  publicUrl?: string;
  trust?: string[];
  /** `--nats`: NATS server URLs, comma-separated. */
  nats?: string;
}

/** Everything a running hub needs to know. */
export interface HubSettings {
  dataDir: string;
  configPath: string;
  host: string;
  port: number;
  /** Without a trailing slash; undefined: the origin each node connected to. */
  publicUrl: string | undefined;
  trustedIssuers: TrustedIssuer[];
  trustFiles: string[];
  proximityKm: number;
  pingSeconds: number;
  maxConnections: number;
  /** The raw transport's port (0: any free one); undefined: no raw transport. */
  tunnelPort: number | undefined;
  /** The hub cluster this hub joins; undefined: it runs alone. */
  cluster: ClusterSettings | undefined;
}

/** The hub's defaults. */
export const HUB_DEFAULTS = HubConfigDefaults;

/** Loads the hub's settings, creating its data directory. */
export async function loadHubSettings(flags: HubFlags, env: EnvReader): Promise<HubSettings> {
  const { dataDir, configPath } = resolvePaths(flags, env, HUB_FILES);
  await makeDataDir(dataDir);
  const file = await readConfigIfAny(configPath, HubConfigSchema, "hub config file", flags) ?? {};
  const publicUrl = flags.publicUrl ?? file.publicUrl;
  if (publicUrl !== undefined && !/^https?:\/\/[^/?#]+\/?$/.test(publicUrl)) {
    throw new ConfigError(`--public-url must be a base URL like https://hub.example.com`);
  }
  const { trustedIssuers, trustFiles } = await trustedIssuersOf(flags.trust, file.trustedIssuers);
  if (trustedIssuers.length === 0) {
    throw new ConfigError(
      "the hub trusts no token issuer, so no node could connect: pass --trust FILE " +
        "(edgenode issuer init writes one) or set trustedIssuers in hub.json",
    );
  }
  const host = flags.host ?? file.host ?? HUB_DEFAULTS.host;
  const port = flags.port ?? file.port ?? HUB_DEFAULTS.port;
  const tunnelPort = file.tunnelPort ?? rawPortOf(port);
  return {
    dataDir,
    configPath,
    host,
    port,
    publicUrl: publicUrl?.replace(/\/$/, ""),
    trustedIssuers,
    trustFiles,
    proximityKm: file.proximityKm ?? HUB_DEFAULTS.proximityKm,
    pingSeconds: file.pingSeconds ?? HUB_DEFAULTS.pingSeconds,
    maxConnections: file.maxConnections ?? HUB_DEFAULTS.maxConnections,
    // Configured 0 turns it off; the default is 0 (any free port) only beside HTTP port 0.
    tunnelPort: file.tunnelPort === 0 ? undefined : tunnelPort,
    cluster: await clusterSettings(file.nats, flags.nats, dataDir),
  };
}
