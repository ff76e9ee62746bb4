/**
 * Validating a value against a valibot schema, with messages that name the field and say what to
 * fix, and the field at fault in the error's details (`field`: OpenAI's `param`).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { validate } from "./validate.ts";
 *
 * const body = validate(v.object({ top_p: v.number() }), { top_p: 0.9 }, "body");
 * console.assert(body.top_p === 0.9);
 * ```
 *
 * @module
 */
import * as v from "valibot";
import { Invalid } from "../errors/mod.ts";

/** Where a value came from, for error messages. */
export type InputSource = "body" | "path" | "query";

function describeIssue(issue: v.BaseIssue<unknown>, source: InputSource): string {
  const keys = (issue.path ?? []).map((item) => String(item.key));
  const isObjectIssue = issue.type === "strict_object" || issue.type === "object" ||
    issue.type === "loose_object";
  let message = issue.message;
  if (isObjectIssue && issue.expected === "never") {
    const allowed = source === "body" ? "field" : `${source} parameter`;
    return `unknown ${allowed} '${keys.join(".")}'`;
  }
  if (isObjectIssue && issue.received === "undefined" && keys.length > 0) {
    message = "is required";
  } else if (isObjectIssue) {
    message = "must be a JSON object";
  }
  if (keys.length === 0) return `${source === "body" ? "body" : source}: ${message}`;
  const where = source === "body"
    ? `field '${keys.join(".")}'`
    : `${source} parameter '${keys[0]}'`;
  return `${where} ${message}`;
}

/** The dotted path of the first body field at fault, if an issue names one. */
function fieldAtFault(issues: v.BaseIssue<unknown>[], source: InputSource): string | undefined {
  if (source !== "body") return undefined;
  const path = issues.find((issue) => (issue.path ?? []).length > 0)?.path;
  return path?.map((item) => String(item.key)).join(".");
}

/**
 * Validates a value against a schema; throws Invalid naming every problem, with the first body
 * field at fault as `details.field`.
 */
export function validate<S extends v.GenericSchema>(
  schema: S,
  value: unknown,
  source: InputSource,
): v.InferOutput<S> {
  const result = v.safeParse(schema, value);
  if (result.success) return result.output;
  const messages = [...new Set(result.issues.map((issue) => describeIssue(issue, source)))];
  const field = fieldAtFault(result.issues, source);
  throw new Invalid(messages.join("; "), field === undefined ? {} : { field });
}
