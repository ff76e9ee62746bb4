/**
 * Emits the route table of one OpenAPI spec: for each operation its method, itty-router path,
 * whether it needs the API key, the valibot schemas of its path, query and body inputs, and (a
 * type only) what its success responses carry.
 *
 * @module
 */
import { type Document, Resolver } from "./refs.ts";
import {
  type JsonSchema,
  schemaConstsIn,
  SchemaTypes,
  valibotFor,
  valibotForQuery,
} from "./valibot_emitter.ts";

/** An OpenAPI document, as far as the route table reads it. */
export type Spec = {
  security?: unknown[];
  paths?: Record<string, Record<string, unknown>>;
  components?: { schemas?: Record<string, JsonSchema>; parameters?: Record<string, JsonSchema> };
};

/** An operation parameter, resolved. */
export type Parameter = { name: string; in: string; required?: boolean; schema: JsonSchema };

const METHODS = ["get", "head", "post", "put", "patch", "delete"];
const JSON_TYPE = "application/json";

/** The operations of a spec, with their parameters (shared ones first) resolved. */
export function operationsOf(
  spec: Spec,
  resolver: Resolver,
): {
  path: string;
  method: string;
  id: string;
  operation: Record<string, unknown>;
  params: Parameter[];
}[] {
  const found = [];
  for (const [path, item] of Object.entries(spec.paths ?? {})) {
    const shared = ((item.parameters ?? []) as unknown[]).map((p) =>
      resolver.resolve<Parameter>(p)
    );
    for (const method of METHODS) {
      const operation = item[method] as Record<string, unknown> | undefined;
      if (!operation) continue;
      const id = operation.operationId;
      if (typeof id !== "string") throw new Error(`${method} ${path} has no operationId`);
      const own = ((operation.parameters ?? []) as unknown[]).map((p) =>
        resolver.resolve<Parameter>(p)
      );
      found.push({ path, method, id, operation, params: [...shared, ...own] });
    }
  }
  return found;
}

/** Whether a media type carries JSON: application/json, or a `+json` type. */
export function isJsonMediaType(type: string): boolean {
  return /^application\/(?:[^\s;]+\+)?json\s*(?:;|$)/i.test(type);
}

type Response = { content?: Record<string, { schema?: JsonSchema } | null> };

/**
 * The type of what the success responses (statuses below 400) of an operation carry, by status:
 * `{ json: T }` for a JSON body of a schema, `{ raw: true }` for any other body, `{ empty: true }`
 * for none.
 */
export function responsesType(
  operation: Record<string, unknown>,
  resolver: Resolver,
  types: SchemaTypes,
): string {
  const responses = (operation.responses ?? {}) as Record<string, unknown>;
  const entries: string[] = [];
  const statuses = Object.keys(responses).filter((status) => /^[1-3][0-9][0-9]$/.test(status))
    .sort((a, b) => Number(a) - Number(b));
  for (const status of statuses) {
    const content = resolver.resolve<Response>(responses[status]).content ?? {};
    const json: string[] = [];
    let raw = false;
    for (const [type, media] of Object.entries(content)) {
      if (isJsonMediaType(type) && media?.schema) json.push(types.typeOf(media.schema));
      else raw = true;
    }
    const shapes = [
      ...(json.length > 0 ? [`{ json: ${[...new Set(json)].join(" | ")} }`] : []),
      ...(raw ? [`{ raw: true }`] : []),
    ];
    entries.push(`${status}: ${shapes.length > 0 ? shapes.join(" | ") : `{ empty: true }`}`);
  }
  return entries.length > 0 ? `{ ${entries.join("; ")} }` : `{}`;
}

function paramObject(params: Parameter[], resolver: Resolver, where: "path" | "query"): string {
  const entries = params.filter((p) => p.in === where).map((p) => {
    const schema = where === "query"
      ? valibotForQuery(p.schema, (ref) => resolver.resolve<JsonSchema>({ $ref: ref }))
      : valibotFor(p.schema);
    const required = where === "path" || p.required;
    return `${JSON.stringify(p.name)}: ${required ? schema : `v.optional(${schema})`}`;
  });
  return `v.strictObject({ ${entries.join(", ")} })`;
}

function bodyOf(operation: Record<string, unknown>, resolver: Resolver): string {
  const requestBody = operation.requestBody
    ? resolver.resolve<{
      content: Record<string, { schema: JsonSchema }>;
      "x-json-without-content-type"?: boolean;
    }>(operation.requestBody)
    : undefined;
  if (!requestBody) return `{ kind: "none" }`;
  const types = Object.keys(requestBody.content);
  if (!types.includes(JSON_TYPE)) {
    return `{ kind: "stream", contentTypes: ${JSON.stringify(types)} }`;
  }
  // Other media types of a JSON operation carry the same JSON text (the reference's clients
  // send it as form data): they must name the same schema.
  const schema = requestBody.content[JSON_TYPE].schema;
  const differing = types.find((type) =>
    JSON.stringify(requestBody.content[type].schema) !== JSON.stringify(schema)
  );
  if (differing) {
    throw new Error(`${differing} must have the same schema as ${JSON_TYPE} in a JSON operation`);
  }
  const untyped = requestBody["x-json-without-content-type"] === true;
  return `{ kind: "json", schema: ${valibotFor(schema)}, contentTypes: ${
    JSON.stringify(types)
  }, untyped: ${untyped} }`;
}

/** The TypeScript source of `gen/<service>/routes.ts`. */
export function emitRoutes(
  spec: Spec,
  service: string,
  specFile: string,
  resolver: Resolver = new Resolver(
    { [specFile.split("/").pop()!]: spec as Document },
    specFile.split("/").pop()!,
  ),
): string {
  const lines: string[] = [];
  const types = new SchemaTypes();
  for (const { path, method, id, operation, params } of operationsOf(spec, resolver)) {
    const security = (operation.security ?? spec.security ?? []) as Record<string, unknown>[];
    // Only the `apiKey` scheme is checked by mountRoutes; other schemes (an edge access
    // token) are the handler's to check.
    const needsKey = security.some((requirement) => "apiKey" in requirement);
    lines.push(
      `  ${id}: {`,
      `    method: ${JSON.stringify(method.toUpperCase())},`,
      `    path: ${JSON.stringify(path.replace(/\{([^}]+)\}/g, ":$1"))},`,
      `    auth: ${needsKey},`,
      `    params: ${paramObject(params, resolver, "path")},`,
      `    query: ${paramObject(params, resolver, "query")},`,
      `    body: ${bodyOf(operation, resolver)},`,
      `    responses: {} as unknown as ${responsesType(operation, resolver, types)},`,
      `  },`,
    );
  }
  const inline = types.declarations();
  const imports = schemaConstsIn([...inline, ...lines].join("\n")).join(", ");
  return [
    `// Generated by scripts/gen.ts from ${specFile}. Do not edit.`,
    `import * as v from "valibot";`,
    ...(imports ? [`import { ${imports} } from "./validators.ts";`] : []),
    ``,
    ...(inline.length > 0
      ? [`// The schemas of inline response bodies, for the types of \`responses\`.`, ...inline, ``]
      : []),
    `/** Every operation of ${specFile}, keyed by operationId. */`,
    `export const ${service}Routes = {`,
    ...lines,
    `} as const;`,
    ``,
  ].join("\n");
}
