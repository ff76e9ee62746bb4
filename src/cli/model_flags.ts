/**
 * The flags of `edgenode models ...` that describe a record (kind, version, gguf and onnx
 * settings), turned into the bodies of the registry's requests, and what a push or pull into a
 * ready model says.
 *
 * @module
 */
import type { components } from "../../gen/store/types.ts";
import { ConfigError } from "../config/config_error.ts";
import { humanBytes } from "../sdk/human_units.ts";
import type { Model } from "../sdk/models.ts";

/** A model kind (spec/store.yaml's Kind). */
export type Kind = components["schemas"]["Kind"];

/** The flags of a record's gguf and onnx settings. */
export const CONFIG_OPTIONS = {
  ctx: { type: "string" },
  "gpu-layers": { type: "string" },
  template: { type: "string" },
  provider: { type: "string" },
} as const;

/** The settings flags as they are written in usage lines. */
export const CONFIG_USAGE = "[--ctx N] [--gpu-layers N] [--template HINT] [--provider P]";

/** The version a record gets when it is created without --version. */
export const DEFAULT_VERSION = "1.0.0";

function integer(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) {
    throw new ConfigError(`--${flag} takes a whole number (got '${value}')`);
  }
  return Number(value);
}

/**
 * The gguf and onnx parts of a request from the flags: only what was given, plus the cpu
 * provider when `newKind` (a kind being set now) is onnx and none was given.
 */
export function configOf(values: Record<string, unknown>, newKind: Kind | undefined) {
  const gguf = {
    initContextSize: integer(values.ctx as string | undefined, "ctx"),
    initGpuLayerSize: integer(values["gpu-layers"] as string | undefined, "gpu-layers"),
    chatTemplateHint: values.template as string | undefined,
  };
  const given = Object.fromEntries(Object.entries(gguf).filter(([, v]) => v !== undefined));
  const provider = values.provider as string | undefined;
  return {
    ...(Object.keys(given).length > 0 ? { gguf: given } : {}),
    ...(provider !== undefined || newKind === "onnx"
      ? { onnx: { executionProvider: (provider ?? "cpu") as "cpu" } }
      : {}),
  };
}

/** The record flags among `values` that were given, as `--name`s. */
export function givenRecordFlags(values: Record<string, unknown>): string[] {
  return ["kind", "version", ...Object.keys(CONFIG_OPTIONS)]
    .filter((name) => values[name] !== undefined)
    .map((name) => `--${name}`);
}

/** What a pull or push into a ready model says instead of replacing its file. */
export function alreadyReady(model: Model, nothing: string, forceTo: string): string {
  return `${model.id} is already ready (${humanBytes(model.totalSize)}); nothing was ` +
    `${nothing}. Add --force to ${forceTo}.`;
}

/** A kind that cannot be read from the file: the one line that asks for `--kind`. */
export function kindNeeded(why: string): ConfigError {
  return new ConfigError(`${why}, so its kind cannot be read: give --kind llm|vlm|embed|onnx`);
}
