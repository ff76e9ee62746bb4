/**
 * Emits `gen/<service>/types.ts`: the TypeScript types of an OpenAPI spec, in the shape
 * openapi-typescript gives them and openapi-fetch reads (`paths`, `operations`, `components`),
 * but built on the valibot schemas of `gen/<service>/validators.ts`: a component schema's type is
 * the one valibot infers, so that the server and the clients share one type system.
 *
 * @module
 */
import type { Resolver } from "./refs.ts";
import { operationsOf, type Parameter, type Spec } from "./routes_emitter.ts";
import { type JsonSchema, schemaConstsIn, SchemaTypes } from "./valibot_emitter.ts";

const HTTP_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const LOCATIONS = ["query", "header", "path", "cookie"] as const;
const ANY_HEADERS = "headers: { [name: string]: unknown }";

type Media = Record<string, { schema?: JsonSchema } | null>;

/** A property name as TypeScript source: bare when it can be, quoted otherwise. */
export function propertyName(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
}

/** A one-line JSDoc comment of `text` (its first line), or nothing. */
function doc(text: unknown, indent: string): string[] {
  if (typeof text !== "string" || text.trim() === "") return [];
  return [`${indent}/** ${text.trim().split("\n")[0].replaceAll("*/", "*\\/")} */`];
}

/** `query?: …`, `header?: …`, `path: …`, `cookie?: …` of an operation's parameters. */
export function parameterMembers(params: Parameter[], types: SchemaTypes): string[] {
  return LOCATIONS.map((where) => {
    const own = params.filter((p) => p.in === where);
    if (own.length === 0) return `${where}?: never`;
    const required = where === "path" || own.some((p) => p.required === true);
    const entries = own.map((p) =>
      `${propertyName(p.name)}${where === "path" || p.required ? "" : "?"}: ${
        types.typeOf(p.schema)
      }`
    );
    return `${where}${required ? "" : "?"}: { ${entries.join("; ")} }`;
  });
}

/** `{ "media/type": T; … }` of a request or response body. */
function contentType(content: Media, types: SchemaTypes): string {
  const entries = Object.entries(content).map(([type, media]) =>
    `${JSON.stringify(type)}: ${media?.schema ? types.typeOf(media.schema) : "unknown"}`
  );
  return `{ ${entries.join("; ")} }`;
}

/** The `requestBody` member of an operation. */
export function requestBodyType(
  operation: Record<string, unknown>,
  resolver: Resolver,
  types: SchemaTypes,
): string {
  if (!operation.requestBody) return `requestBody?: never`;
  const body = resolver.resolve<{ required?: boolean; content?: Media }>(operation.requestBody);
  return `requestBody${body.required === true ? "" : "?"}: { content: ${
    contentType(body.content ?? {}, types)
  } }`;
}

/** The members of an operation's `responses`: every status, with its headers and content. */
export function responseMembers(
  operation: Record<string, unknown>,
  resolver: Resolver,
  types: SchemaTypes,
): string[] {
  const responses = (operation.responses ?? {}) as Record<string, unknown>;
  return Object.entries(responses).map(([status, value]) => {
    const content = resolver.resolve<{ content?: Media }>(value).content;
    const key = /^[0-9]+$/.test(status) ? status : propertyName(status);
    const body = content && Object.keys(content).length > 0
      ? `content: ${contentType(content, types)}`
      : `content?: never`;
    return `${key}: { ${ANY_HEADERS}; ${body} }`;
  });
}

/** The source of `gen/<service>/types.ts`. */
export function emitTypes(spec: Spec, specFile: string, resolver: Resolver): string {
  const types = new SchemaTypes("InferOutput", (name) => `schemas.${name}`);
  const own = Object.keys(spec.components?.schemas ?? {});
  const external = [...resolver.externalSchemas().values()].flatMap((names) => [...names]);
  const components = [...new Set([...own, ...external])].sort().map((name) =>
    `    ${propertyName(name)}: schemas.${name};`
  );

  const pathLines: string[] = [];
  const operationLines: string[] = [];
  const operations = operationsOf(spec, resolver);
  for (const [path, item] of Object.entries(spec.paths ?? {})) {
    const shared = ((item.parameters ?? []) as unknown[]).map((p) =>
      resolver.resolve<Parameter>(p)
    );
    pathLines.push(
      `  ${JSON.stringify(path)}: {`,
      `    parameters: { ${parameterMembers(shared, types).join("; ")} };`,
    );
    for (const method of HTTP_METHODS) {
      const found = operations.find((o) => o.path === path && o.method === method);
      if (!found) {
        pathLines.push(`    ${method}?: never;`);
        continue;
      }
      pathLines.push(
        ...doc(found.operation.summary, "    "),
        `    ${method}: operations[${JSON.stringify(found.id)}];`,
      );
      operationLines.push(
        ...doc(found.operation.summary, "  "),
        `  ${propertyName(found.id)}: {`,
        `    parameters: {`,
        ...parameterMembers(found.params, types).map((member) => `      ${member};`),
        `    };`,
        `    ${requestBodyType(found.operation, resolver, types)};`,
        `    responses: {`,
        ...responseMembers(found.operation, resolver, types).map((member) => `      ${member};`),
        `    };`,
        `  };`,
      );
    }
    pathLines.push(`  };`);
  }

  const inline = types.declarations();
  const values = schemaConstsIn(inline.join("\n"));
  return [
    `// Generated by scripts/gen.ts from ${specFile}. Do not edit.`,
    ...(inline.length > 0 ? [`import * as v from "valibot";`] : []),
    ...(values.length > 0 ? [`import { ${values.join(", ")} } from "./validators.ts";`] : []),
    ...(components.length > 0 ? [`import type * as schemas from "./validators.ts";`] : []),
    ``,
    ...(inline.length > 0
      ? [`// The schemas written inline in parameters and bodies, for their types.`, ...inline, ``]
      : []),
    `/** The component schemas of ${specFile} (and those it uses from other files), as validated. */`,
    `export interface components {`,
    `  schemas: {`,
    ...components,
    `  };`,
    `}`,
    ``,
    ...(pathLines.length > 0
      ? [
        `/** Every path of ${specFile} and its operations (the \`paths\` openapi-fetch reads). */`,
        `export interface paths {`,
        ...pathLines,
        `}`,
        ``,
        `/** Every operation of ${specFile}, keyed by operationId. */`,
        `export interface operations {`,
        ...operationLines,
        `}`,
      ]
      : [
        `/** ${specFile} has no paths. */`,
        `export type paths = Record<string, never>;`,
        ``,
        `/** ${specFile} has no operations. */`,
        `export type operations = Record<string, never>;`,
      ]),
    ``,
  ].join("\n");
}
