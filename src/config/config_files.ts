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
    const problems = result.issues.map((issue) =>
      `${(issue.path ?? []).map((p) => p.key).join(".") || "(file)"}: ${issue.message}`
    );
    throw new ConfigError(`${path} is not a valid ${what}: ${problems.join("; ")}`);
  }
  return result.output;
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
