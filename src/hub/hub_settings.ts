/**
 * The hub's settings: flags over `<data dir>/hub.json` (spec/config.yaml, HubConfig) over
 * defaults. The hub has no secret of its own: nodes and callers prove themselves with tokens of
 * the issuers it trusts.
 *
 * @module
 */
import { HubConfigDefaults } from "../../gen/config/defaults.ts";
import { join, resolve } from "node:path";
import { type HubConfig, HubConfigSchema } from "../../gen/config/validators.ts";
import type { TrustedIssuer } from "../../gen/config/validators.ts";
import { ConfigError, type EnvReader, readJsonFile, readTrustFiles } from "../config/mod.ts";
import { type ClusterSettings, clusterSettings } from "./cluster/cluster_settings.ts";
import { rawPortOf } from "./raw_listener.ts";

/** Flags of `edgenode hub`. */
export interface HubFlags {
  host?: string;
  port?: number;
  dataDir?: string;
  config?: string;
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
  const home = env("HOME") ?? env("USERPROFILE");
  const chosen = flags.dataDir ?? env("EDGENODE_HUB_DIR") ??
    (home ? join(home, ".edgenode-hub") : undefined);
  if (!chosen) throw new ConfigError("no hub data directory: pass --data-dir");
  const dataDir = resolve(chosen);
  await Deno.mkdir(dataDir, { recursive: true, mode: 0o700 });
  const configPath = resolve(flags.config ?? join(dataDir, "hub.json"));
  let file: HubConfig = {};
  try {
    file = await readJsonFile(configPath, HubConfigSchema, "hub config file");
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    if (flags.config) throw new ConfigError(`config file ${configPath} does not exist`);
  }
  const publicUrl = flags.publicUrl ?? file.publicUrl;
  if (publicUrl !== undefined && !/^https?:\/\/[^/?#]+\/?$/.test(publicUrl)) {
    throw new ConfigError(`--public-url must be a base URL like https://hub.example.com`);
  }
  const trustFiles = (flags.trust ?? []).map((path) => resolve(path));
  const trustedIssuers = [...(file.trustedIssuers ?? []), ...await readTrustFiles(trustFiles)];
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
