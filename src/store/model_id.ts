/**
 * The model ID rules of the registry spec, for code that builds paths from ids. HTTP input is
 * checked earlier by the generated ModelIdSchema, which gives the caller the exact rule broken;
 * this is the same rule again, as defence in depth, wherever a path is made.
 *
 * @module
 */
import * as v from "valibot";
import { ModelIdSchema } from "../../gen/store/validators.ts";

/** Whether `id` follows the ID rules (characters, length, no leading `.`/`-`, no `..`). */
export function isModelId(id: string): boolean {
  return v.is(ModelIdSchema, id);
}
