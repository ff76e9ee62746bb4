/**
 * `edgenode account-token`: stores (or clears) the node's account token, the edge access token
 * (scope edge:clusters) it shows the hub and needs for account-wide answers
 * (PUT /mesh/insight/v1/token, with the node's API key).
 *
 * @module
 */
import { decodeJwt } from "jose";
import { ConfigError } from "../config/config_error.ts";
import { insightClient } from "../sdk/clients.ts";
import { humanTime } from "../sdk/human_units.ts";
import { answer, type Env, invocation } from "./cli_context.ts";
import { printJson } from "./output.ts";
import type { Command } from "./command.ts";
import { readSecretFile } from "./user_files.ts";

/** The help lines of this command. */
const HELP = `  edgenode account-token --token-file FILE | - | TOKEN
      Stores the node's account token (scope edge:clusters, for the node's account): the hub
      and the account-wide answers need it. '-' reads it from standard input; a file or stdin
      keeps it out of shell history.
  edgenode account-token --clear
      Forgets the stored account token (the node leaves its hub).`;

const USAGE = "usage: edgenode account-token --token-file FILE | - | TOKEN, or --clear";

/** What the token says of itself, for the confirmation (never the token). */
function described(token: string): string {
  try {
    const { sub, exp } = decodeJwt(token);
    const until = exp ? `, expires ${humanTime(exp * 1000)} UTC` : "";
    return sub ? ` (account ${sub}${until})` : "";
  } catch {
    return "";
  }
}

/** `edgenode account-token ...`. */
async function accountToken(args: string[], env: Env): Promise<number> {
  const { values, positionals, connection, json } = invocation(args, {
    "token-file": { type: "string" },
    clear: { type: "boolean" },
  }, env);
  const file = (values as { "token-file"?: string })["token-file"];
  const clear = (values as { clear?: boolean }).clear === true;
  const sources = [file !== undefined, clear, positionals.length > 0].filter(Boolean).length;
  if (sources !== 1 || positionals.length > 1) throw new ConfigError(USAGE);
  const token = clear
    ? ""
    : file !== undefined || positionals[0] === "-"
    ? await readSecretFile(file ?? "-", "token")
    : positionals[0];
  const stored = await answer(
    insightClient(connection).PUT("/token", { body: { token } }),
    clear ? "clearing the account token" : "storing the account token",
  );
  if (json) printJson(stored);
  else if (clear) console.log("cleared the account token");
  else console.log(`stored the account token${described(token)}`);
  return 0;
}

/** `edgenode account-token`. */
export const ACCOUNT_TOKEN_COMMAND: Command = {
  name: "account-token",
  help: HELP,
  run: accountToken,
};
