/**
 * Turns the JSON Schema subset our OpenAPI specs use into valibot source code.
 *
 * Supported: `$ref` to component schemas (of the same spec file, or of another one such as
 * `common.yaml#/components/schemas/Error`: the same constant name, imported), string (enum, const, minLength, maxLength, pattern,
 * `allOf` of patterns, `not: {pattern}`, with an optional `x-error-message` per rule: an OpenAPI
 * extension, so that strict linters accept the specs), integer and
 * number (minimum, maximum, const), boolean (const), array (items, minItems, maxItems), object
 * (properties, required, additionalProperties false or a schema), `null`, and `anyOf` of those
 * (a union, with `x-error-message` as its message: valibot's own names no alternative). Anything
 * else throws, so a spec never silently loses a rule.
 *
 * @module
 */

/** A JSON Schema object as parsed from YAML. */
export type JsonSchema = Record<string, unknown>;

import { parseRef } from "./refs.ts";

const REF_PREFIX = "#/components/schemas/";

/** The name of the generated valibot constant for a component schema. */
export function schemaConstName(name: string): string {
  return `${name}Schema`;
}

/** Component names a schema refers to in its own file, directly or nested. */
export function refsOf(schema: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) {
    for (const item of schema) refsOf(item, into);
  } else if (schema && typeof schema === "object") {
    for (const [key, value] of Object.entries(schema)) {
      if (key === "$ref" && typeof value === "string" && value.startsWith(REF_PREFIX)) {
        into.add(value.slice(REF_PREFIX.length));
      } else refsOf(value, into);
    }
  }
  return into;
}

/** Component names ordered so that every schema comes after the ones it refers to. */
export function dependencyOrder(schemas: Record<string, JsonSchema>): string[] {
  const done: string[] = [];
  const visiting = new Set<string>();
  const visit = (name: string) => {
    if (done.includes(name)) return;
    if (visiting.has(name)) throw new Error(`recursive schema ${name} is not supported`);
    visiting.add(name);
    for (const dep of refsOf(schemas[name])) visit(dep);
    visiting.delete(name);
    done.push(name);
  };
  for (const name of Object.keys(schemas).sort()) visit(name);
  return done;
}

const lit = (value: unknown) => JSON.stringify(value);

/** The extension that gives a rule's own message (`errorMessage` is not an OpenAPI keyword). */
export const ERROR_MESSAGE = "x-error-message";

function ruleMessage(rule: JsonSchema, fallback: string): string {
  const message = rule[ERROR_MESSAGE];
  return lit(typeof message === "string" ? message : fallback);
}

/** Throws on the former `errorMessage` keyword, so that a spec never silently loses a message. */
function refuseErrorMessage(schema: JsonSchema): void {
  if ("errorMessage" in schema) {
    throw new Error(`'errorMessage' is not an OpenAPI keyword: write '${ERROR_MESSAGE}'`);
  }
}

function patternActions(schema: JsonSchema): string[] {
  const actions: string[] = [];
  const rules = [schema, ...((schema.allOf as JsonSchema[] | undefined) ?? [])];
  for (const rule of rules) {
    refuseErrorMessage(rule);
    if (typeof rule.pattern === "string") {
      actions.push(
        `v.regex(new RegExp(${lit(rule.pattern)}, "u"), ${
          ruleMessage(rule, `must match ${rule.pattern}`)
        })`,
      );
    }
    const not = rule.not as JsonSchema | undefined;
    if (not && typeof not.pattern === "string") {
      actions.push(
        `v.check((s) => !new RegExp(${lit(not.pattern)}, "u").test(s), ${
          ruleMessage(rule, `must not match ${not.pattern}`)
        })`,
      );
    }
  }
  return actions;
}

function pipe(base: string, actions: string[]): string {
  return actions.length === 0 ? base : `v.pipe(${base}, ${actions.join(", ")})`;
}

function stringSchema(schema: JsonSchema): string {
  if (Array.isArray(schema.enum)) {
    return `v.picklist(${lit(schema.enum)}, ${lit(`must be one of: ${schema.enum.join(", ")}`)})`;
  }
  if (schema.const !== undefined) {
    return `v.literal(${lit(schema.const)}, ${lit(`must be ${lit(schema.const)}`)})`;
  }
  const actions: string[] = [];
  if (typeof schema.minLength === "number") {
    actions.push(
      `v.minLength(${schema.minLength}, ${
        lit(
          schema.minLength === 1
            ? "must not be empty"
            : `must be at least ${schema.minLength} long`,
        )
      })`,
    );
  }
  if (typeof schema.maxLength === "number") {
    actions.push(
      `v.maxLength(${schema.maxLength}, ${lit(`must be at most ${schema.maxLength} characters`)})`,
    );
  }
  actions.push(...patternActions(schema));
  return pipe(`v.string("must be a string")`, actions);
}

function numberSchema(schema: JsonSchema, integer: boolean): string {
  if (schema.const !== undefined) return `v.literal(${lit(schema.const)})`;
  const actions: string[] = [];
  if (integer) actions.push(`v.safeInteger("must be an integer")`);
  if (typeof schema.minimum === "number") {
    actions.push(`v.minValue(${schema.minimum}, ${lit(`must be at least ${schema.minimum}`)})`);
  }
  if (typeof schema.maximum === "number") {
    actions.push(`v.maxValue(${schema.maximum}, ${lit(`must be at most ${schema.maximum}`)})`);
  }
  return pipe(`v.number(${lit(integer ? "must be an integer" : "must be a number")})`, actions);
}

function objectSchema(schema: JsonSchema): string {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  const entries = Object.entries(properties).map(([key, value]) => {
    const inner = valibotFor(value);
    return `${lit(key)}: ${required.has(key) ? inner : `v.optional(${inner})`}`;
  });
  const body = `{ ${entries.join(", ")} }`;
  const additional = schema.additionalProperties;
  // No custom message: one message would also replace the "unknown field" and "required" ones.
  if (additional === false) return `v.strictObject(${body})`;
  if (additional && typeof additional === "object" && entries.length === 0) {
    return `v.record(v.string(), ${valibotFor(additional as JsonSchema)}, "must be an object")`;
  }
  if (additional === undefined || additional === true) {
    return `v.looseObject(${body}, "must be an object")`;
  }
  throw new Error(
    "objects with both properties and an additionalProperties schema are unsupported",
  );
}

/** valibot source for one JSON schema. */
export function valibotFor(schema: JsonSchema): string {
  refuseErrorMessage(schema);
  if (typeof schema.$ref === "string") {
    const ref = parseRef(schema.$ref, "");
    if (ref.section !== "schemas") throw new Error(`unsupported $ref ${schema.$ref}`);
    return schemaConstName(ref.name);
  }
  if (Array.isArray(schema.anyOf)) {
    const options = (schema.anyOf as JsonSchema[]).map(valibotFor).join(", ");
    return `v.union([${options}], ${ruleMessage(schema, "is not of an accepted form")})`;
  }
  switch (schema.type) {
    case "null":
      return `v.null("must be null")`;
    case "string":
      return stringSchema(schema);
    case "integer":
      return numberSchema(schema, true);
    case "number":
      return numberSchema(schema, false);
    case "boolean":
      return schema.const !== undefined
        ? `v.literal(${lit(schema.const)}, ${lit(`must be ${schema.const}`)})`
        : `v.boolean("must be true or false")`;
    case "array": {
      const items = valibotFor((schema.items ?? {}) as JsonSchema);
      const actions: string[] = [];
      if (typeof schema.minItems === "number") {
        actions.push(
          `v.minLength(${schema.minItems}, ${lit(`must have at least ${schema.minItems} items`)})`,
        );
      }
      if (typeof schema.maxItems === "number") {
        actions.push(
          `v.maxLength(${schema.maxItems}, ${lit(`must have at most ${schema.maxItems} items`)})`,
        );
      }
      return pipe(`v.array(${items}, "must be an array")`, actions);
    }
    case "object":
      return objectSchema(schema);
    default:
      // `{}` (any JSON value) is what JSON Schema calls the schema without constraints.
      if (Object.keys(schema).length === 0) return "v.unknown()";
      throw new Error(`unsupported schema: ${JSON.stringify(schema)}`);
  }
}

/**
 * valibot source for a query parameter: query values arrive as strings, so booleans and
 * integers are parsed from their text before the schema's own checks run.
 */
export function valibotForQuery(schema: JsonSchema, resolve: (ref: string) => JsonSchema): string {
  const target = typeof schema.$ref === "string" ? resolve(schema.$ref) : schema;
  if (target.type === "boolean") {
    return `v.pipe(v.picklist(["true", "false"], "must be true or false"), v.transform((s) => s === "true"))`;
  }
  if (target.type === "integer") {
    return `v.pipe(v.string(), v.regex(/^-?[0-9]{1,15}$/u, "must be an integer"), v.transform(Number), ${
      numberSchema(target, true)
    })`;
  }
  return valibotFor(schema);
}

/** The module of generated `gen/` that holds the schemas of a spec file (`common.yaml`). */
export function validatorsModule(file: string): string {
  return `../${file.replace(/\.yaml$/, "")}/validators.ts`;
}

/**
 * The source of `gen/<service>/validators.ts`: a valibot constant and its type for every
 * component schema. `external` names, per other spec file, the schemas of that file this one
 * uses: they are imported from that file's module and exported again, so that a service's
 * module offers every schema its spec names.
 */
export function emitValidators(
  schemas: Record<string, JsonSchema>,
  specFile: string,
  external: Map<string, Set<string>> = new Map(),
): string {
  const lines = [
    `// Generated by scripts/gen.ts from ${specFile}. Do not edit.`,
    `import * as v from "valibot";`,
  ];
  for (const [file, names] of [...external].sort(([a], [b]) => a.localeCompare(b))) {
    const sorted = [...names].sort();
    const clash = sorted.find((name) => name in schemas);
    if (clash) throw new Error(`${clash} is both a schema of ${specFile} and of ${file}`);
    const module = validatorsModule(file);
    lines.push(
      `import { ${sorted.map(schemaConstName).join(", ")} } from ${lit(module)};`,
      `export { ${
        sorted.map((name) => `${schemaConstName(name)}, type ${name}`).join(", ")
      } } from ${lit(module)};`,
    );
  }
  lines.push(``);
  for (const name of dependencyOrder(schemas)) {
    const description = typeof schemas[name].description === "string"
      ? String(schemas[name].description).split("\n")[0]
      : `The ${name} schema.`;
    lines.push(
      `/** ${description} */`,
      `export const ${schemaConstName(name)} = ${valibotFor(schemas[name])};`,
      `/** ${name} as validated. */`,
      `export type ${name} = v.InferOutput<typeof ${schemaConstName(name)}>;`,
      ``,
    );
  }
  return lines.join("\n");
}

/**
 * TypeScript types of the values a schema accepts (`v.InferInput`), from its valibot schema: a
 * component by its constant, an inline schema through a constant of the module being generated
 * (`inline1`, …, one per distinct schema; `declarations()` gives them).
 */
export class SchemaTypes {
  readonly #inline = new Map<string, string>();

  /** The TypeScript type of `schema`'s values. */
  typeOf(schema: JsonSchema): string {
    const source = valibotFor(schema);
    if (typeof schema.$ref === "string") return `v.InferInput<typeof ${source}>`;
    let name = this.#inline.get(source);
    if (!name) {
      name = `inline${this.#inline.size + 1}`;
      this.#inline.set(source, name);
    }
    return `v.InferInput<typeof ${name}>`;
  }

  /** The constants of the inline schemas `typeOf` has named. */
  declarations(): string[] {
    return [...this.#inline].map(([source, name]) => `const ${name} = ${source};`);
  }
}

/** The `<Name>Schema` constants a generated source uses, sorted. */
export function schemaConstsIn(source: string): string[] {
  return [...new Set(source.match(/\b[A-Z][A-Za-z0-9]*Schema\b/g) ?? [])].sort();
}
