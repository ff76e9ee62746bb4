/**
 * `edgenode me|associate|unassociate|info|nodes`: the node's identity and the mesh from a
 * terminal, over the SDK (JSON-RPC and the insight client).
 *
 * @module
 */
import { ConfigError } from "../config/config_error.ts";
import { insightClient } from "../sdk/clients.ts";
import { rpcCall } from "../sdk/json_rpc.ts";
import { answer, type Env, exactly, invocation, reach } from "./cli_context.ts";
import { printJson, printTable } from "./output.ts";
import type { Command } from "./command.ts";
import { NODES_HELP, nodesDecryptCommand } from "./nodes.ts";

/** `edgenode me`, `associate`, `unassociate`. */
async function identity(
  command: "me" | "associate" | "unassociate",
  args: string[],
  env: Env,
): Promise<number> {
  const { positionals, connection, json } = invocation(args, {}, env);
  if (command === "me") {
    exactly(positionals, 0, "me");
    const me = await reach(rpcCall(connection, "getMe"));
    if (json) printJson(me);
    else {
      console.log(`node     ${me.nodeId}\nname     ${me.name}`);
      console.log(`account  ${me.accountId || "(none)"}\nversion  ${me.version}`);
    }
    return 0;
  }
  const [token] = exactly(positionals, 1, `${command} TOKEN`);
  const method = command === "associate" ? "associateAccount" : "unassociateAccount";
  const result = await reach(rpcCall(connection, method, [token]));
  if (json) printJson(result);
  else console.log(`${command}d: account ${result.accountId}`);
  return 0;
}

/** A node as a table row: id (shortened), name, account, first address. */
function nodeRow(node: Record<string, unknown>): string[] {
  const addresses = node.addresses as { url?: { href?: string } }[] | undefined;
  return [
    String(node.id ?? "").slice(0, 16),
    String(node.name ?? ""),
    String(node.accountId ?? "") || "-",
    addresses?.[0]?.url?.href ?? "-",
  ];
}

/** `edgenode info`. */
async function showInfo(args: string[], env: Env): Promise<number> {
  const { values, connection, json } = invocation(args, { types: { type: "string" } }, env);
  const info = await answer(
    insightClient(connection).GET("/info", {
      params: { query: { types: (values.types as string | undefined) ?? "self,supernode" } },
    }),
    "reading the node's info",
  );
  if (json) return printJson(info), 0;
  const data = (info as { data: Record<string, Record<string, unknown>> }).data;
  for (const [type, value] of Object.entries(data)) {
    if (type === "self" || type === "supernode") {
      const [id, name, account, address] = nodeRow(value);
      console.log(`${type.padEnd(10)} ${id}  ${name}  account ${account}  ${address}`);
    } else {
      // bep and sep: where the hub reaches this node from outside, and whether it answered.
      const endpoint = value as { url?: string; status?: string };
      console.log(`${type.padEnd(10)} ${endpoint.url ?? "-"}  ${endpoint.status ?? ""}`.trimEnd());
    }
  }
  return 0;
}

/** `edgenode nodes` (the listing; `nodes decrypt` is cli/nodes.ts). */
async function listNodes(args: string[], env: Env): Promise<number> {
  const { values, connection, json } = invocation(args, { type: { type: "string" } }, env);
  const type = (values.type as string | undefined) ?? "linkLocal";
  if (!["linkLocal", "account", "proximity"].includes(type)) {
    throw new ConfigError("--type is linkLocal, account or proximity");
  }
  const listing = await answer(
    insightClient(connection).GET("/nodes", {
      params: { query: { type: type as "linkLocal" } },
    }),
    `listing ${type} nodes`,
  );
  if (json) return printJson(listing), 0;
  const nodes = (listing as { data: Record<string, unknown>[] }).data;
  printTable(["ID", "NAME", "ACCOUNT", "ADDRESS"], nodes.map(nodeRow));
  return 0;
}

/** `edgenode me|associate|unassociate|info|nodes`. */
export const NODE_COMMANDS: readonly Command[] = [{
  name: "me",
  help: "  edgenode me                                    the node's id, name, account and version",
  run: (args, env) => identity("me", args, env),
}, {
  name: "associate",
  help:
    "  edgenode associate TOKEN                       associates the node with the token's account",
  run: (args, env) => identity("associate", args, env),
}, {
  name: "unassociate",
  help: "  edgenode unassociate TOKEN                     (a token with edge:account:unassociate)",
  run: (args, env) => identity("unassociate", args, env),
}, {
  name: "info",
  help: "  edgenode info [--types self,supernode,bep,sep]",
  run: showInfo,
}, {
  name: "nodes",
  help: `  edgenode nodes [--type linkLocal|account|proximity]\n${NODES_HELP}`,
  run: (args, env) =>
    args[0] === "decrypt" ? nodesDecryptCommand(args.slice(1)) : listNodes(args, env),
}];
