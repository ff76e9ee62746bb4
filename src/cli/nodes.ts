/**
 * `edgenode nodes decrypt`: decrypts a saved answer of GET /mds/v1/nodes with the token it was
 * requested with, and prints the listing.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { decryptNodeListing } from "../sdk/local_nodes.ts";
import { ConfigError } from "../config/config_error.ts";
import { readSecretFile, readUserText } from "./user_files.ts";

/** Usage lines for the program's help. */
export const NODES_HELP =
  `  edgenode nodes decrypt (--token T | --token-file F) [--clusters linkLocal] [FILE]
      Decrypts an answer of GET /mds/v1/nodes (from FILE or standard input) with the edge
      access token it was requested with, and prints the node listing as JSON.`;

/** Runs `edgenode nodes decrypt ARGS` (the listing itself is cli/node_commands.ts). */
export async function nodesDecryptCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      token: { type: "string" },
      "token-file": { type: "string" },
      clusters: { type: "string", default: "linkLocal" },
    },
    strict: true,
    allowPositionals: true,
  });
  if (positionals.length > 1) throw new ConfigError("give at most one file");
  const token = values.token ??
    (values["token-file"] ? await readSecretFile(values["token-file"], "token") : undefined);
  if (!token) throw new ConfigError("--token or --token-file is required");
  const fromStdin = !positionals[0] || positionals[0] === "-";
  if (fromStdin && !positionals[0] && Deno.stdin.isTerminal()) {
    // Nothing piped in: waiting for a JWE to be typed would only look like a hang.
    throw new ConfigError(
      "give the saved answer as FILE, or pipe it in (curl ... | edgenode nodes decrypt ...)",
    );
  }
  const input = fromStdin
    ? await new Response(Deno.stdin.readable).text()
    : await readUserText(positionals[0]);
  let listing: unknown;
  try {
    listing = await decryptNodeListing(input, token, values.clusters);
  } catch (error) {
    console.error(`edgenode: ${(error as Error).message}`);
    return 1;
  }
  console.log(JSON.stringify(listing, null, 2));
  return 0;
}
