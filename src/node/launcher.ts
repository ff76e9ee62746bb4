/**
 * `edgenode serve` runs the node with a permission set narrowed to what it needs: its data
 * directory and config file, and its listening address (a child process, or in the single
 * executable a worker: src/program/self_program.ts). The launcher alone reads the settings
 * (creating a fresh config on first start) and hands them to the node as they are, so the
 * permissions it computed and the settings the node runs with cannot differ; then it passes
 * signals on and exits with the node. A child watches its stdin: when the launcher dies, the pipe
 * closes and the node shuts down too.
 *
 * @module
 */
import meta from "../../deno.json" with { type: "json" };
import { listenError } from "../http/pipeline.ts";
import { MDNS_GROUP } from "../discovery/mdns_socket.ts";
import { NODE_ENV_VARS } from "../program/env_vars.ts";
import { netAddress, type PermissionSet } from "../program/permission_set.ts";
import { launcherSettings, runNarrowed, runUntilStopped } from "../program/self_program.ts";
import { issuerAccess, resolveLinks, settingsFiles } from "../config/mod.ts";
import { lockDataDir } from "../storage/data_dir_lock.ts";
import { databaseFiles } from "../storage/database.ts";
import { checkWritable } from "../storage/writable_check.ts";
import { browserAddresses, dashboardLine, interfaceAddresses } from "./browser_addresses.ts";
import { loadSettings, type ServeFlags, type Settings } from "./config.ts";
import { startNode } from "./server.ts";

/**
 * The Deno permissions of a node with these settings. Downloads fetch from any host the user
 * names and discovery checks any peer on the LAN, so the node may connect anywhere unless
 * `downloadHosts` narrows it (Deno cannot grant "connect anywhere" without also granting "listen
 * anywhere"). Narrowed, it keeps its mDNS socket and static peers; peers found by multicast on
 * other hosts can then not be checked (Deno permissions have no address ranges).
 */
export function nodePermissions(settings: Settings): PermissionSet {
  const jwks = issuerAccess(settings.trustedIssuers);
  const { discovery } = settings;
  const mdns = discovery.mdns
    ? [netAddress("0.0.0.0", discovery.port), netAddress(MDNS_GROUP, discovery.port)]
    : [];
  return {
    // The engine folder: to see whether the inference engine is installed (a process of its
    // own installs it, and another runs it: src/inference/engine_process.ts).
    read: [...settingsFiles(settings), settings.inference.engineDir],
    write: [settings.dataDir],
    net: settings.downloadHosts
      ? [
        netAddress(settings.host, settings.port),
        ...settings.downloadHosts,
        ...jwks.hosts,
        ...mdns,
        ...discovery.peers.map((url) => new URL(url).host),
        ...(settings.hub ? [new URL(settings.hub.url).host] : []),
      ]
      : true,
    env: NODE_ENV_VARS,
    // Container processes: this same Deno (or executable), narrowed again (src/mcm/).
    run: [Deno.execPath()],
    // statfs: free disk space before a transfer, and total storage; hostname: the default node
    // name; networkInterfaces: the node's addresses and mDNS interfaces; systemMemoryInfo: the
    // totalPhysicalMemory characteristic.
    sys: ["statfs", "hostname", "networkInterfaces", "systemMemoryInfo"],
  };
}

/** Throws the ConfigError the node would, where it could not listen on `hostname:port`. */
function assertCanListen(hostname: string, port: number): void {
  try {
    Deno.listen({ hostname, port }).close();
  } catch (error) {
    throw listenError(hostname, port, error);
  }
}

/** Runs the node, narrowed (src/program/self_program.ts), and returns its exit code. */
export async function launch(
  flags: ServeFlags,
  env: (name: string) => string | undefined,
): Promise<number> {
  // A fresh data directory's key is shown once: not before a start that is bound to fail.
  const { settings, generatedKey } = await loadSettings(flags, env, {
    beforeCreating: (settings) => assertCanListen(settings.host, settings.port),
  });
  await resolveLinks(settings);
  // Held while this launcher lives, that is while its node runs.
  using _lock = await lockDataDir(settings.dataDir);
  // What the node writes: the database, the model store (src/store/model_files.ts) and the
  // microservices' images and storage (src/mcm/images/bundle_files.ts).
  await checkWritable(settings.dataDir, {
    trees: ["models", "mcm", "inference"],
    files: databaseFiles("edgenode.db"),
  });
  if (generatedKey) {
    console.log(
      `Generated a new API key (saved in ${settings.configPath}, shown only now):\n  ${generatedKey}`,
    );
  }
  return await runNarrowed(nodePermissions(settings), ["__node"], settings);
}

/**
 * The child side of `serve` (`__node`): runs the node with the settings its launcher handed over,
 * until a signal, or until the launcher goes away.
 */
export async function runNode(): Promise<number> {
  const settings = await launcherSettings<Settings>();
  if (settings.apiKey.length < 16) {
    console.warn("warning: the API key is shorter than 16 characters; anyone nearby may guess it");
  }
  return await runUntilStopped(async () => {
    const node = await startNode(settings);
    const url = `http://${netAddress(node.hostname, node.port)}`;
    console.log(`edgenode ${meta.version} listening on ${url} (pid ${Deno.pid})`);
    if (settings.dashboard.enabled) {
      const addresses = browserAddresses(node.hostname, node.port, interfaceAddresses());
      console.log(dashboardLine(addresses, settings.dashboard.path));
    }
    return node;
  });
}
