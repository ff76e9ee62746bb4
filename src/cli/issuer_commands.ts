/**
 * `edgenode issuer init` and `edgenode token`: a local token issuer, for nodes that trust it
 * (`serve --trust DIR/trust.json`), and the edge access tokens it signs.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { ConfigError } from "../config/config_error.ts";
import { initIssuer, parseTtl, signToken } from "../identity/issuer.ts";
import type { Env } from "./cli_context.ts";
import type { Command } from "./command.ts";

/** The issuer's folder: --dir, $EDGENODE_ISSUER_DIR, or ~/.edgenode-issuer. */
function issuerDir(dir: string | undefined, env: Env): string {
  const home = env("HOME") ?? env("USERPROFILE");
  const chosen = dir ?? env("EDGENODE_ISSUER_DIR") ??
    (home ? `${home}/.edgenode-issuer` : undefined);
  if (!chosen) throw new ConfigError("no issuer directory: pass --dir");
  return chosen;
}

/** `edgenode issuer init ...`. */
async function issuerInit(args: string[], env: Env): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== "init") {
    throw new ConfigError(`unknown issuer command '${sub ?? ""}'; try 'issuer init'`);
  }
  const { values } = parseArgs({
    args: rest,
    options: { dir: { type: "string" }, issuer: { type: "string", default: "edgenode-issuer" } },
    strict: true,
    allowPositionals: false,
  });
  const trust = await initIssuer(issuerDir(values.dir, env), values.issuer);
  console.log(`Issuer '${values.issuer}' created. Let a node trust it with:
  edgenode serve --trust ${trust}`);
  return 0;
}

/** `edgenode token ...`: prints a token signed by the local issuer. */
async function token(args: string[], env: Env): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      account: { type: "string" },
      scope: { type: "string" },
      ttl: { type: "string", default: "24h" },
      node: { type: "string" },
      dir: { type: "string" },
    },
    strict: true,
    allowPositionals: false,
  });
  if (!values.account) throw new ConfigError("--account is required");
  if (!values.scope?.trim()) {
    throw new ConfigError('--scope is required, e.g. "edge:account:associate"');
  }
  console.log(
    await signToken(issuerDir(values.dir, env), {
      account: values.account,
      scope: values.scope.trim(),
      ttlSeconds: parseTtl(values.ttl),
      nodeId: values.node,
    }),
  );
  return 0;
}

/** `edgenode issuer` and `edgenode token`: they need no node. */
export const ISSUER_COMMANDS: readonly Command[] = [{
  name: "issuer",
  help: `  edgenode issuer init [--dir DIR] [--issuer NAME]
      Creates a local token issuer (default dir $EDGENODE_ISSUER_DIR or ~/.edgenode-issuer)
      and its trust file DIR/trust.json for --trust.`,
  local: true,
  run: issuerInit,
}, {
  name: "token",
  help: `  edgenode token --account ID --scope "SCOPES" [--ttl 24h] [--node NODE_ID] [--dir DIR]
      Prints an edge access token signed by the local issuer. Scopes: edge:account:associate,
      edge:account:unassociate, edge:clusters, edge:mcm.`,
  local: true,
  run: token,
}];
