/**
 * `edgenode status`: is the node up, and the node at a glance: its name, id, version, uptime,
 * account, models (count, ready, loaded), containers (count, running), LAN peers and the disk
 * of its data directory. Most of it is the dashboard's GET /dashboard/v1/status; the loaded
 * models come from the inference API's list and the peers from insight's linkLocal listing
 * (which needs the API key: without it the peers are not counted). A node that does not answer
 * is one line naming the address tried and how to start one, and exit 1.
 *
 * @module
 */
import type { Status } from "../../gen/dashboard/validators.ts";
import { dashboardClient, insightClient, type NodeConnection } from "../sdk/clients.ts";
import { humanBytes } from "../sdk/human_units.ts";
import { rpcCall } from "../sdk/json_rpc.ts";
import { NodeUnreachableError } from "../sdk/node_errors.ts";
import { answer, type Env, exactly, invocation } from "./cli_context.ts";
import { printJson } from "./output.ts";
import type { Command } from "./command.ts";
import { listModels } from "./ps_command.ts";

const HELP = `  edgenode status
      Whether the node answers, and its name, id, version, uptime, account, models (count,
      ready, loaded), containers (count, running), LAN peers and its data directory's free
      disk; exit 1 with one line when no node answers. --json prints it as one object.`;

/** What `status --json` prints of a node that answers. */
export interface NodeStatusView {
  up: true;
  url: string;
  nodeId: string;
  name: string;
  version: string;
  accountId: string;
  /** Absent when the node's dashboard is off (its status endpoint gives these). */
  uptimeSeconds?: number;
  models: { count?: number; ready?: number; loaded?: number };
  containers?: { count: number; running: number };
  /** Other nodes on the LAN; absent without the API key. */
  peers?: number;
  disk?: { freeBytes: number; totalBytes: number };
}

/** The dashboard's status, or undefined when the node has its dashboard off (404). */
async function dashboardStatus(connection: NodeConnection): Promise<Status | undefined> {
  const result = await dashboardClient(connection).GET("/dashboard/v1/status");
  if (result.response.status === 404) return undefined;
  return await answer(Promise.resolve(result), "reading the node's status");
}

/** The LAN peers: linkLocal members but this node; undefined when the node refuses (no key). */
async function peerCount(connection: NodeConnection, self: string): Promise<number | undefined> {
  if (!connection.credential) return undefined;
  const { data, response } = await insightClient(connection).GET("/nodes", {
    params: { query: { type: "linkLocal" } },
  });
  if (!response.ok || !data) return undefined;
  return (data as { data: { id?: string }[] }).data.filter((node) => node.id !== self).length;
}

/** The status of the node at `connection`; NodeUnreachableError when nothing answers. */
async function readStatus(connection: NodeConnection): Promise<NodeStatusView> {
  const status = await dashboardStatus(connection);
  const me = status ?? await rpcCall(connection, "getMe");
  const nodeId = status?.nodeId ?? (me as { nodeId: string }).nodeId;
  const [models, peers] = await Promise.all([
    listModels(connection.url),
    peerCount(connection, nodeId),
  ]);
  return {
    up: true,
    url: connection.url,
    nodeId,
    name: me.name,
    version: me.version,
    accountId: me.accountId,
    ...(status ? { uptimeSeconds: status.uptimeSeconds } : {}),
    models: {
      ...(status ? { count: status.models.count, ready: status.models.ready } : {}),
      ...(models ? { loaded: models.filter((model) => model.loaded === true).length } : {}),
    },
    ...(status
      ? { containers: { count: status.containers.count, running: status.containers.started } }
      : {}),
    ...(peers === undefined ? {} : { peers }),
    ...(status ? { disk: status.disk } : {}),
  };
}

/** Seconds as people read an uptime: `3d 4h`, `2h 5m`, `4m 10s`. */
export function uptimeText(seconds: number): string {
  const [d, h, m, s] = [
    seconds / 86400,
    (seconds % 86400) / 3600,
    (seconds % 3600) / 60,
    seconds % 60,
  ]
    .map(Math.floor);
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  return m > 0 ? `${m}m ${s}s` : `${s}s`;
}

/** The status as lines of `label  value`. */
function statusLines(view: NodeStatusView): string[] {
  const unknown = "unknown (the node's dashboard is off)";
  const { models, containers, disk } = view;
  const modelText = models.count === undefined
    ? (models.loaded === undefined
      ? "unknown (inference and the dashboard are off)"
      : `${models.loaded} loaded`)
    : models.loaded === undefined
    ? `${models.count} (${models.ready} ready; inference off)`
    : `${models.count} (${models.ready} ready, ${models.loaded} loaded)`;
  return [
    ["node", `up at ${view.url}`],
    ["name", view.name],
    ["id", view.nodeId],
    ["version", view.version],
    ["uptime", view.uptimeSeconds === undefined ? unknown : uptimeText(view.uptimeSeconds)],
    ["account", view.accountId || "(none)"],
    ["models", modelText],
    ["containers", containers ? `${containers.count} (${containers.running} running)` : unknown],
    [
      "peers",
      view.peers === undefined ? "unknown (needs the API key)" : `${view.peers} on the LAN`,
    ],
    [
      "disk",
      disk
        ? `${humanBytes(disk.freeBytes)} free of ${humanBytes(disk.totalBytes)} (data directory)`
        : unknown,
    ],
  ].map(([label, value]) => `${label.padEnd(11)}${value}`);
}

async function status(args: string[], env: Env): Promise<number> {
  const { positionals, connection, json } = invocation(args, {}, env);
  exactly(positionals, 0, "status");
  let view: NodeStatusView;
  try {
    view = await readStatus(connection);
  } catch (error) {
    if (!(error instanceof NodeUnreachableError)) throw error;
    if (json) printJson({ up: false, url: connection.url, reason: error.reason });
    console.error(
      `edgenode: no node answers at ${connection.url} (${error.reason}); start one with ` +
        "'edgenode serve', or point to another with --node URL or EDGENODE_NODE",
    );
    return 1;
  }
  if (json) printJson(view);
  else for (const line of statusLines(view)) console.log(line);
  return 0;
}

/** `edgenode status`. */
export const STATUS_COMMAND: Command = { name: "status", help: HELP, run: status };
