/**
 * Reading the files a node or a hub is configured with: JSON checked against a generated
 * schema, trust files, and config paths with their folder's links resolved. Errors are
 * ConfigErrors that name the file and what to fix.
 *
 * @module
 */
import { basename, dirname, join } from "node:path";
import type * as v from "valibot";
import { safeParse } from "valibot";
import { type TrustedIssuer, TrustedIssuerSchema } from "../../gen/config/validators.ts";
import { closestName } from "./closest_name.ts";
import { ConfigError } from "./config_error.ts";

/** Reads an environment variable; injected so that callers can decide which ones are allowed. */
export type EnvReader = (name: string) => string | undefined;

/** Reads a JSON file and validates it; ConfigError naming every problem otherwise. */
export async function readJsonFile<S extends v.GenericSchema>(
  path: string,
  schema: S,
  what: string,
): Promise<v.InferOutput<S>> {
  const text = await Deno.readTextFile(path);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${path} is not valid JSON: ${(error as Error).message}`);
  }
  const result = safeParse(schema, parsed);
  if (!result.success) {
    const problems = result.issues.map((issue) => describeIssue(schema, issue));
    throw new ConfigError(`${path} is not a valid ${what}: ${problems.join("; ")}`);
  }
  return result.output;
}

/** What an object schema at `keys` (under optional and array wrappers) allows, if it is one. */
function fieldsAt(schema: v.GenericSchema, keys: readonly unknown[]): string[] {
  type Node = { entries?: Record<string, Node>; wrapped?: Node; item?: Node };
  let node: Node | undefined = schema as unknown as Node;
  const unwrap = (n: Node | undefined) => {
    while (n?.wrapped) n = n.wrapped;
    return n;
  };
  for (const key of keys) {
    node = unwrap(node);
    node = typeof key === "number" ? node?.item : node?.entries?.[String(key)];
  }
  return Object.keys(unwrap(node)?.entries ?? {});
}

/**
 * One problem in the user's words: an unknown field is named as such, with the closest allowed
 * name when one is near; others say where and what.
 */
export function describeIssue(schema: v.GenericSchema, issue: v.BaseIssue<unknown>): string {
  const keys = (issue.path ?? []).map((item) => item.key);
  const where = keys.join(".") || "(file)";
  if (issue.expected === "never" && keys.length > 0) {
    const name = String(keys.at(-1));
    const allowed = fieldsAt(schema, keys.slice(0, -1));
    const closest = closestName(name, allowed);
    const hint = closest
      ? `; did you mean '${keys.slice(0, -1).concat(closest).join(".")}'?`
      : allowed.length > 0
      ? ` (known fields: ${allowed.join(", ")})`
      : "";
    return `unknown field '${where}'${hint}`;
  }
  return `${where}: ${issue.message}`;
}

/** The issuers of trust files given with --trust. */
export async function readTrustFiles(paths: string[]): Promise<TrustedIssuer[]> {
  const issuers: TrustedIssuer[] = [];
  for (const path of paths) {
    try {
      issuers.push(await readJsonFile(path, TrustedIssuerSchema, "trust file"));
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) {
        throw new ConfigError(`trust file ${path} does not exist`);
      }
      throw error;
    }
  }
  return issuers;
}

/** A config file's path with its folder's symlinks resolved (the file may not exist yet). */
export async function realConfigPath(path: string): Promise<string> {
  return join(await Deno.realPath(dirname(path)), basename(path));
}
