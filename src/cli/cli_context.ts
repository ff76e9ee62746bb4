/**
 * What the client commands share: the global flags (`--node`, `--api-key`, `--json`), the API
 * key found the way users expect (flag, environment, the local node's config file), their
 * arguments' checks, and the node's failures said so that the user can act (output.ts prints).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { closestName } from "../config/closest_name.ts";
import { ConfigError, resolvePaths } from "../config/mod.ts";
import type { NodeConnection } from "../sdk/clients.ts";
import { NodeError, nodeError, NodeUnreachableError, NotANodeError } from "../sdk/node_errors.ts";

/** Reads an environment variable (undefined when unset or not allowed). */
export type Env = (name: string) => string | undefined;

/** The flags every client command takes. */
export const GLOBAL_OPTIONS = {
  node: { type: "string" },
  "api-key": { type: "string" },
  json: { type: "boolean" },
} as const;

/** The help lines of the global flags. */
export const GLOBAL_HELP =
  `Global flags of the client commands: --node URL (default $EDGENODE_NODE or
http://127.0.0.1:8083), --api-key KEY (default $EDGENODE_API_KEY, else the local node's config
file), --json (machine-readable output).`;

/** A parsed client command line. */
export interface Invocation<V> {
  values: V;
  positionals: string[];
  connection: NodeConnection;
  json: boolean;
}

/** The API key of the node on this machine, from its config file, if readable. */
function localApiKey(env: Env): string | undefined {
  try {
    const { configPath } = resolvePaths({}, env);
    return JSON.parse(Deno.readTextFileSync(configPath)).apiKey;
  } catch {
    return undefined;
  }
}

/**
 * Whether `url` names a node on this machine (a loopback name or address): only such a node is
 * sent the key of the local node's config file, which another host has no business seeing.
 */
export function isThisMachine(url: string): boolean {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return host === "localhost" || host.endsWith(".localhost") || host === "::1" ||
    /^127(\.\d{1,3}){3}$/.test(host);
}

/** Parses a client command's arguments with the global flags. */
export function invocation<
  O extends Record<string, { type: "string" | "boolean"; multiple?: boolean }>,
>(
  args: string[],
  options: O,
  env: Env,
) {
  const { values, positionals } = parseArgs({
    args,
    options: { ...GLOBAL_OPTIONS, ...options },
    allowPositionals: true,
    strict: true,
  });
  const all = values as Record<string, unknown>;
  const url = String(all.node ?? env("EDGENODE_NODE") ?? "http://127.0.0.1:8083");
  if (!/^https?:\/\/[^/]+\/?$/.test(url)) {
    throw new ConfigError(`--node must be a base URL like http://127.0.0.1:8083 (got '${url}')`);
  }
  const credential = (all["api-key"] as string | undefined) ?? env("EDGENODE_API_KEY") ??
    (isThisMachine(url) ? localApiKey(env) : undefined);
  return {
    values,
    positionals,
    connection: { url: url.replace(/\/$/, ""), credential },
    json: all.json === true,
  };
}

/** The positionals when there are exactly `count`; else a ConfigError "usage: edgenode USAGE". */
export function exactly(positionals: string[], count: number, usage: string): string[] {
  if (positionals.length !== count) throw new ConfigError(`usage: edgenode ${usage}`);
  return positionals;
}

/** How to point the client at another node. */
const NODE_HINT = "--node URL or EDGENODE_NODE";

/**
 * The error to show for `error`, with what to do when the user can fix it: point the client at
 * the node (unreachable, or not a node), or give it the node's API key.
 */
export function clientError(error: unknown): unknown {
  const hint = error instanceof NodeUnreachableError
    ? `is it running? Point to another with ${NODE_HINT}`
    : error instanceof NotANodeError
    ? `point to the node with ${NODE_HINT}`
    : error instanceof NodeError && /API key/.test(error.message)
    ? "pass the node's key with --api-key or EDGENODE_API_KEY, or, for a node on this machine, " +
      "point EDGENODE_DATA_DIR at its data directory (its config.json holds the key)"
    : undefined;
  return hint ? new Error(`${(error as Error).message}; ${hint}`, { cause: error }) : error;
}

/** `call`'s result; a node that cannot be reached is said as clientError says it. */
export async function reach<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    throw clientError(error);
  }
}

/** The data of an SDK call; an Error with the node's message ("WHAT: STATUS MESSAGE") otherwise. */
export async function answer<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
  what: string,
): Promise<T> {
  const result = await reach(call);
  if (result.data !== undefined && result.response.ok) return result.data;
  throw clientError(nodeError(result.response, result.error, what));
}

/** A command's subcommands by name (`containers ls`, `image push`, ...). */
export type Subcommands = ReadonlyMap<string, (args: string[], env: Env) => Promise<number>>;

/**
 * The flags that may come before a subcommand: the global ones, and the deployment credential's
 * (`edgenode containers --key-file F stop x`); the subcommand's parser judges them after that.
 */
const LEADING_OPTIONS = {
  ...GLOBAL_OPTIONS,
  key: { type: "string" },
  "key-file": { type: "string" },
} as const;

/**
 * The subcommand word in a command's `args`: the first, after any global flags written before it
 * (`edgenode containers --node URL stop x`), and the other arguments in their order.
 */
export function splitSubcommand(args: readonly string[]): { sub?: string; rest: string[] } {
  let at = 0;
  while (at < args.length) {
    const [flag, value] = args[at].split(/=(.*)/s);
    const option = flag.startsWith("--")
      ? LEADING_OPTIONS[flag.slice(2) as keyof typeof LEADING_OPTIONS]
      : undefined;
    if (!option) break;
    at += option.type === "string" && value === undefined ? 2 : 1;
  }
  return { sub: args[at], rest: [...args.slice(0, at), ...args.slice(at + 1)] };
}

/**
 * The run of a command made of `subcommands`: runs its subcommand (splitSubcommand) of `command`;
 * without one, refuses with `usage`; with an unknown one, names the subcommands there are and
 * the nearest.
 */
export function subcommandsOf(
  command: string,
  subcommands: Subcommands,
  usage: string,
): (args: string[], env: Env) => Promise<number> {
  return (args, env) => {
    const { sub, rest } = splitSubcommand(args);
    const run = sub === undefined ? undefined : subcommands.get(sub);
    if (run) return run(rest, env);
    if (sub === undefined) throw new ConfigError(usage);
    const names = [...subcommands.keys()];
    const near = closestName(sub, names);
    throw new ConfigError(
      `unknown ${command} command '${sub}'${near ? `; did you mean '${near}'?` : ""} ` +
        `(${names.join(", ")})`,
    );
  };
}
