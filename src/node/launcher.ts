/**
 * `edgenode serve` runs the node as a child process with a permission set narrowed to what it
 * needs: its data directory and config file, and its listening address. The launcher itself
 * reads the settings (creating a fresh config on first start), then passes signals on and exits
 * with the child. The child watches its stdin: when the launcher dies, the pipe closes and the
 * node shuts down too.
 *
 * @module
 */
import { dirname } from "node:path";
import { MDNS_GROUP } from "../discovery/mdns_socket.ts";
import { loadSettings, type ServeFlags, type Settings } from "./config.ts";

/** The environment variables the node may read. */
export const NODE_ENV_VARS = [
  "EDGENODE_API_KEY",
  "EDGENODE_DATA_DIR",
  "HOME",
  "USERPROFILE",
  // Where Deno keeps its cache, passed on to container processes.
  "DENO_DIR",
  "XDG_CACHE_HOME",
];

/** `host:port` as Deno's --allow-net takes it. */
export function netAddress(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * The Deno permission flags of a node with these settings. Downloads fetch from any host the
 * user names and discovery checks any peer on the LAN, so the node may connect anywhere unless
 * `downloadHosts` narrows it (Deno cannot grant "connect anywhere" without also granting "listen
 * anywhere"). Narrowed, it keeps its mDNS socket and static peers; peers found by multicast on
 * other hosts can then not be checked (Deno permissions have no address ranges).
 */
export function nodePermissions(settings: Settings): string[] {
  const jwksFiles = settings.trustedIssuers.flatMap((t) => (t.jwksFile ? [t.jwksFile] : []));
  const readable = [settings.dataDir, settings.configPath, ...settings.trustFiles, ...jwksFiles];
  const jwksHosts = settings.trustedIssuers.flatMap((t) =>
    t.jwksUrl ? [new URL(t.jwksUrl).host] : []
  );
  const { discovery } = settings;
  const mdns = discovery.mdns
    ? [netAddress("0.0.0.0", discovery.port), netAddress(MDNS_GROUP, discovery.port)]
    : [];
  const net = settings.downloadHosts
    ? `--allow-net=${[
      netAddress(settings.host, settings.port),
      ...settings.downloadHosts,
      ...jwksHosts,
      ...mdns,
      ...discovery.peers.map((url) => new URL(url).host),
      ...(settings.hub ? [new URL(settings.hub.url).host] : []),
    ]}`
    : "--allow-net";
  return [
    "--no-prompt",
    `--allow-read=${readable.join(",")}`,
    `--allow-write=${settings.dataDir}`,
    net,
    `--allow-env=${NODE_ENV_VARS.join(",")}`,
    // Container processes: this same Deno, with permissions of their own (src/mcm/).
    `--allow-run=${Deno.execPath()}`,
    // statfs: free disk space before a transfer, and total storage; hostname: the default node
    // name; networkInterfaces: the node's addresses and mDNS interfaces; systemMemoryInfo: the
    // totalPhysicalMemory characteristic.
    "--allow-sys=statfs,hostname,networkInterfaces,systemMemoryInfo",
  ];
}

/** Runs the node in a child process and returns its exit code. */
export async function launch(
  flags: ServeFlags,
  env: (name: string) => string | undefined,
): Promise<number> {
  const { settings, generatedKey } = await loadSettings(flags, env);
  // Permission paths must be the real ones: a symlinked data directory would otherwise not match.
  settings.dataDir = await Deno.realPath(settings.dataDir);
  settings.configPath = await realConfigPath(settings.configPath);
  if (generatedKey) {
    console.log(
      `Generated a new API key (saved in ${settings.configPath}, shown only now):\n  ${generatedKey}`,
    );
  }
  return await runChild(nodePermissions(settings), [
    "__node",
    `--data-dir=${settings.dataDir}`,
    `--config=${settings.configPath}`,
    `--host=${settings.host}`,
    `--port=${settings.port}`,
    ...settings.trustFiles.map((path) => `--trust=${path}`),
  ]);
}

/** A config file's path with its folder's symlinks resolved (the file may not exist yet). */
export async function realConfigPath(path: string): Promise<string> {
  return `${await Deno.realPath(dirname(path))}/${path.split("/").pop()}`;
}

/**
 * Runs this program again as a child with `permissions` and `args`, passing SIGINT and SIGTERM
 * on; returns the child's exit code.
 */
export async function runChild(permissions: string[], args: string[]): Promise<number> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...permissions, Deno.mainModule, ...args],
    stdin: "piped",
  }).spawn();
  const forward = (signal: Deno.Signal) => () => {
    try {
      child.kill(signal);
    } catch {
      // Already gone.
    }
  };
  const signals: Deno.Signal[] = ["SIGINT", "SIGTERM"];
  const handlers = signals.map((signal) => [signal, forward(signal)] as const);
  for (const [signal, handler] of handlers) Deno.addSignalListener(signal, handler);
  const status = await child.status;
  for (const [signal, handler] of handlers) Deno.removeSignalListener(signal, handler);
  return status.signal ? 128 + (SIGNAL_NUMBERS[status.signal] ?? 0) : status.code;
}

/** Exit code 128 + N for a child ended by signal N, as shells report it. */
const SIGNAL_NUMBERS: Partial<Record<Deno.Signal, number>> = { SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };
