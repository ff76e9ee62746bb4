/**
 * A hub's cluster settings (spec/config.yaml, HubCluster): `--nats` over `nats` in hub.json, the
 * files holding the cluster key and the NATS credentials, and reading those secrets.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { credsAuthenticator, type NodeConnectionOptions } from "@nats-io/transport-node";
import { HubClusterDefaults } from "../../../gen/config/defaults.ts";
import type { HubCluster } from "../../../gen/config/validators.ts";
import { ConfigError } from "../../config/mod.ts";
import { osReason } from "../../config/file_errors.ts";
import { CLUSTER_KEY_ADVICE, ClusterKey, clusterKeyWeakness } from "./cluster_key.ts";

/** How a hub joins its cluster. Secrets stay in their files until the hub starts. */
export interface ClusterSettings {
  servers: string[];
  clusterKeyFile: string;
  user?: string;
  passwordFile?: string;
  tokenFile?: string;
  credsFile?: string;
  /** Without a trailing slash; undefined: from the listening address (cluster_node.ts). */
  advertiseUrl?: string;
  replicas: number;
}

const SERVER_URL = /^(nats|tls):\/\/[^/?#\s]+$/;

/** The cluster settings from `--nats` and hub.json's `nats`; undefined: the hub runs alone. */
export async function clusterSettings(
  file: HubCluster | undefined,
  flag: string | undefined,
  dataDir: string,
): Promise<ClusterSettings | undefined> {
  const servers = flag !== undefined
    ? flag.split(",").map((url) => url.trim()).filter((url) => url !== "")
    : file?.servers;
  if (servers === undefined) return undefined;
  const wrong = servers.find((url) => !SERVER_URL.test(url));
  if (servers.length === 0 || wrong !== undefined) {
    throw new ConfigError(
      `--nats takes NATS server URLs like nats://10.0.0.9:4222, comma-separated (got '${
        wrong ?? flag ?? ""
      }')`,
    );
  }
  const clusterKeyFile = resolve(file?.clusterKeyFile ?? join(dataDir, "cluster.key"));
  await checkClusterKey(clusterKeyFile, file?.clusterKeyFile === undefined);
  const ways = [file?.passwordFile, file?.tokenFile, file?.credsFile].filter(Boolean).length;
  if (ways > 1) {
    throw new ConfigError("nats: give one of passwordFile, tokenFile and credsFile, not several");
  }
  if ((file?.user === undefined) !== (file?.passwordFile === undefined)) {
    throw new ConfigError("nats: user and passwordFile go together");
  }
  for (const path of [file?.passwordFile, file?.tokenFile, file?.credsFile]) {
    if (path) await checkSecretFile(resolve(path));
  }
  return {
    servers,
    clusterKeyFile,
    ...file?.user ? { user: file.user } : {},
    ...file?.passwordFile ? { passwordFile: resolve(file.passwordFile) } : {},
    ...file?.tokenFile ? { tokenFile: resolve(file.tokenFile) } : {},
    ...file?.credsFile ? { credsFile: resolve(file.credsFile) } : {},
    ...file?.advertiseUrl ? { advertiseUrl: file.advertiseUrl.replace(/\/$/, "") } : {},
    replicas: file?.replicas ?? HubClusterDefaults.replicas,
  };
}

/** The files a clustered hub reads. */
export function clusterFiles(settings: ClusterSettings): string[] {
  return [settings.clusterKeyFile, settings.passwordFile, settings.tokenFile, settings.credsFile]
    .filter((path): path is string => path !== undefined);
}

async function checkClusterKey(path: string, defaulted: boolean): Promise<void> {
  let key: Uint8Array;
  try {
    key = await Deno.readFile(path);
  } catch (error) {
    const where = defaulted ? `, or name another file in hub.json's nats.clusterKeyFile` : "";
    throw new ConfigError(
      `the cluster key ${path} cannot be read (${osReason(error)}): a cluster needs the same ` +
        `key on every hub: ${CLUSTER_KEY_ADVICE}, at ${path}${where}`,
    );
  }
  // A key others may read is exposed whatever it holds: said first.
  await checkSecretFile(path);
  const weakness = clusterKeyWeakness(key);
  if (weakness !== undefined) {
    throw new ConfigError(`the cluster key ${path} ${weakness}: ${CLUSTER_KEY_ADVICE}`);
  }
}

/** Refuses a secret file that other users may read: whoever reads it could act as a hub. */
async function checkSecretFile(path: string): Promise<void> {
  let mode: number | null;
  try {
    mode = (await Deno.stat(path)).mode;
  } catch (error) {
    throw new ConfigError(`${path} cannot be read (${osReason(error)})`);
  }
  if (mode !== null && (mode & 0o077) !== 0) {
    throw new ConfigError(
      `${path} holds a cluster secret and other users may read it (mode ${
        (mode & 0o777).toString(8)
      }): run chmod 600 on it`,
    );
  }
}

/** The cluster key and the NATS connection's credentials, read from their files. */
export async function readClusterSecrets(
  settings: ClusterSettings,
): Promise<{ key: ClusterKey; auth: Partial<NodeConnectionOptions> }> {
  const key = new ClusterKey(await Deno.readFile(settings.clusterKeyFile));
  const text = async (path: string) => (await Deno.readTextFile(path)).trim();
  let auth: Partial<NodeConnectionOptions> = {};
  if (settings.passwordFile) {
    auth = { user: settings.user, pass: await text(settings.passwordFile) };
  } else if (settings.tokenFile) {
    auth = { token: await text(settings.tokenFile) };
  } else if (settings.credsFile) {
    auth = { authenticator: credsAuthenticator(await Deno.readFile(settings.credsFile)) };
  }
  return { key, auth };
}
