/**
 * `edgenode hub` runs the hub narrowed (a child process or a worker), as `serve` does for a
 * node: its data directory and config, its listening address, and its issuers' JWKS hosts.
 *
 * @module
 */
import meta from "../../deno.json" with { type: "json" };
import { type EnvReader, issuerAccess, resolveLinks, settingsFiles } from "../config/mod.ts";
import { netAddress } from "../program/permission_set.ts";
import { HUB_ENV_VARS } from "../program/env_vars.ts";
import { NO_PERMISSIONS, type PermissionSet } from "../program/permission_set.ts";
import { launcherSettings, runNarrowed, runUntilStopped } from "../program/self_program.ts";
import { lockDataDir } from "../storage/data_dir_lock.ts";
import { databaseFiles } from "../storage/database.ts";
import { checkWritable } from "../storage/writable_check.ts";
import { startHub } from "./hub_server.ts";
import { clusterFiles } from "./cluster/cluster_settings.ts";
import { type HubFlags, type HubSettings, loadHubSettings } from "./hub_settings.ts";

/** The Deno permissions of a hub with these settings. */
export function hubPermissions(settings: HubSettings): PermissionSet {
  const jwksHosts = issuerAccess(settings.trustedIssuers).hosts;
  // Port 0 (any free port) cannot be named in a permission; the host alone allows it.
  const ports = [settings.port, ...settings.tunnelPort === undefined ? [] : [settings.tunnelPort]];
  const listen = ports.includes(0)
    ? [settings.host]
    : ports.map((port) => netAddress(settings.host, port));
  const cluster = settings.cluster;
  return {
    ...NO_PERMISSIONS,
    read: [...settingsFiles(settings), ...cluster ? clusterFiles(cluster) : []],
    write: [settings.dataDir],
    // In a cluster the hub connects to NATS (and the servers NATS names) and to the other hubs
    // at the addresses they publish, unknown when it starts; it follows only what was sealed
    // with the cluster key (./cluster/cluster_key.ts).
    net: cluster ? true : [...listen, ...jwksHosts],
    env: HUB_ENV_VARS,
    sys: cluster ? ["hostname"] : [],
  };
}

/** Runs the hub, narrowed as a node is, and returns its exit code. */
export async function launchHub(flags: HubFlags, env: EnvReader): Promise<number> {
  const settings = await loadHubSettings(flags, env);
  await resolveLinks(settings);
  // Held while this launcher lives, that is while its hub runs.
  using _lock = await lockDataDir(settings.dataDir);
  await checkWritable(settings.dataDir, { trees: [], files: databaseFiles("hub.db") });
  return await runNarrowed(hubPermissions(settings), ["__hub"], settings);
}

/** The child side of `hub` (`__hub`): runs the hub until a signal or its launcher goes away. */
export async function runHub(): Promise<number> {
  const settings = await launcherSettings<HubSettings>();
  return await runUntilStopped(async () => {
    const hub = await startHub(settings);
    const url = `http://${netAddress(hub.hostname, hub.port)}`;
    console.log(`edgenode hub ${meta.version} listening on ${url} (pid ${Deno.pid})`);
    return hub;
  });
}
