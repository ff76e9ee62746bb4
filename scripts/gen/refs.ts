/**
 * `$ref` resolution across the files of spec/: a reference is `#/components/<section>/<name>`
 * within its own file, or `<file>.yaml#/components/<section>/<name>` into another file of spec/
 * (such as `common.yaml#/components/schemas/Error`, the schemas the services share).
 *
 * @module
 */

/** A parsed spec file. */
export type Document = Record<string, unknown>;

/** Every spec file, by file name (`store.yaml`). */
export type Documents = Record<string, Document>;

/** What a `$ref` names: a file of spec/, a section of its components and a name in it. */
export interface Ref {
  file: string;
  section: string;
  name: string;
}

const REF = /^([^#]*)#\/components\/([^/]+)\/([^/]+)$/;

/** The target of `ref`, written in the file `from`. */
export function parseRef(ref: string, from: string): Ref {
  const match = REF.exec(ref);
  if (!match) throw new Error(`unsupported $ref ${ref} in ${from}`);
  const file = match[1].replace(/^\.\//, "");
  return { file: file === "" ? from : file, section: match[2], name: match[3] };
}

/** `ref` as written in the file `into`: `#/...` when it names that file, `<file>#/...` otherwise. */
export function formatRef(ref: Ref, into: string): string {
  return `${ref.file === into ? "" : ref.file}#/components/${ref.section}/${ref.name}`;
}

/**
 * `value` (taken from the file `from`) with every `$ref` in it rewritten to be read in the file
 * `into`, so that a part of another file keeps naming what it named there.
 */
export function rebase(value: unknown, from: string, into: string): unknown {
  if (from === into) return value;
  if (Array.isArray(value)) return value.map((item) => rebase(item, from, into));
  if (!value || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) =>
      key === "$ref" && typeof item === "string"
        ? [key, formatRef(parseRef(item, from), into)]
        : [key, rebase(item, from, into)]
    ),
  );
}

/** Every `$ref` in `value` (written in the file `from`), in the order they appear. */
export function refsIn(value: unknown, from: string, into: Ref[] = []): Ref[] {
  if (Array.isArray(value)) {
    for (const item of value) refsIn(item, from, into);
  } else if (value && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      if (key === "$ref" && typeof item === "string") into.push(parseRef(item, from));
      else refsIn(item, from, into);
    }
  }
  return into;
}

/** Resolves the references of one spec file, into its own components or other files'. */
export class Resolver {
  constructor(readonly documents: Documents, readonly file: string) {}

  /** The spec file this resolver reads from. */
  get document(): Document {
    const document = this.documents[this.file];
    if (!document) throw new Error(`no spec file ${this.file}`);
    return document;
  }

  /** The component `ref` names, rebased to be read in this file. */
  lookup(ref: Ref): unknown {
    const components = this.documents[ref.file]?.components as
      | Record<string, Record<string, unknown>>
      | undefined;
    const found = components?.[ref.section]?.[ref.name];
    if (found === undefined) throw new Error(`unresolved ${formatRef(ref, this.file)}`);
    return rebase(found, ref.file, this.file);
  }

  /** `value`, or what its `$ref` names (through chains of references), as read in this file. */
  resolve<T>(value: unknown): T {
    const seen = new Set<string>();
    let current = value;
    for (;;) {
      const ref = (current as { $ref?: unknown } | undefined)?.$ref;
      if (typeof ref !== "string") return current as T;
      if (seen.has(ref)) throw new Error(`circular $ref ${ref} in ${this.file}`);
      seen.add(ref);
      current = this.lookup(parseRef(ref, this.file));
    }
  }

  /**
   * The names of the schemas of other files that this file uses: named by its references, or
   * by the responses, parameters and request bodies of other files it refers to.
   */
  externalSchemas(): Map<string, Set<string>> {
    const found = new Map<string, Set<string>>();
    const visit = (value: unknown) => {
      for (const ref of refsIn(value, this.file)) {
        if (ref.file === this.file) continue;
        if (ref.section === "schemas") {
          const names = found.get(ref.file) ?? new Set<string>();
          found.set(ref.file, names.add(ref.name));
        } else visit(this.lookup(ref));
      }
    };
    visit(this.document);
    return found;
  }
}
