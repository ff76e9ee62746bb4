/**
 * The node and credential of the deployment commands (`image`, `images`, `deploy`,
 * `containers`): the global flags plus the deployment key, found without it ever having to
 * appear on a command line (`deno task` echoes its arguments, shells keep history).
 *
 * @module
 */
import { ConfigError } from "../config/config_error.ts";
import { type McmClient, mcmClient } from "../sdk/clients.ts";
import { type Env, invocation } from "./cli_context.ts";
import { readSecretFile } from "./user_files.ts";

/** The help line of the credential, shared by the deployment commands' help. */
export const CREDENTIAL_HELP =
  `      The credential (the node's deployment key, or an edge access token with edge:mcm) comes
      from $EDGENODE_KEY or --key-file FILE, else the API key's usual places. --key KEY works
      too, but leaves the key in shell history and in 'deno task' output.`;

/** Where the deployment commands send their requests, and with which credential. */
export interface DeploymentTarget {
  /** The node's base URL. */
  node: string;
  /** The key or token; never printed. */
  key: string;
  client: McmClient;
}

/** What a deployment command takes besides the global flags and the credential. */
export interface DeploymentArguments<O> {
  /** How many positional arguments: exactly these, else a ConfigError with `usage`. */
  positionals: number;
  /** The command's usage, after `usage: edgenode `. */
  usage: string;
  /** Its own flags, if any. */
  options?: O;
}

/**
 * Parses a deployment command's arguments: the global flags, `--key`, `--key-file`, the
 * command's own `options` and its `positionals`.
 */
export async function deploymentInvocation<
  O extends Record<string, { type: "string" | "boolean"; multiple?: boolean }>,
>(args: string[], env: Env, { positionals, usage, options }: DeploymentArguments<O>) {
  const parsed = invocation(
    args,
    { ...options, key: { type: "string" }, "key-file": { type: "string" } },
    env,
  );
  const values = parsed.values as Record<string, unknown>;
  const flag = values.key as string | undefined;
  const file = values["key-file"] as string | undefined;
  if (flag !== undefined && file !== undefined) {
    throw new ConfigError("give --key or --key-file, not both");
  }
  const key = flag ?? (file !== undefined ? await readSecretFile(file, "key") : undefined) ??
    (values["api-key"] as string | undefined) ?? env("EDGENODE_KEY") ??
    parsed.connection.credential;
  if (!key) {
    throw new ConfigError(
      "no credential: set EDGENODE_KEY (or EDGENODE_API_KEY), or pass --key-file FILE",
    );
  }
  if (parsed.positionals.length !== positionals) throw new ConfigError(`usage: edgenode ${usage}`);
  const node = parsed.connection.url;
  const target: DeploymentTarget = { node, key, client: mcmClient({ url: node, credential: key }) };
  return { ...parsed, target };
}
