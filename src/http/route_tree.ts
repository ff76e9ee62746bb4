/**
 * A tree of path patterns (`/models/:id/upload`), matched segment by segment. A lookup walks one
 * branch per segment, static names before parameters, so its cost grows with the path's depth,
 * not with the number of routes; itty-router's list of regular expressions, tried in order,
 * grows with both (see the closing note of the request pipeline in README "Request pipeline").
 *
 * @example
 * ```ts
 * import { RouteTree } from "./route_tree.ts";
 *
 * const tree = new RouteTree<string>();
 * tree.add("GET", "/models/:id", "getModel");
 * const found = tree.find("GET", "/models/m1");
 * // found.value === "getModel", found.params.id === "m1"
 * ```
 *
 * @module
 */

/** What a lookup found. */
export type Found<T> =
  | { kind: "match"; value: T; params: Record<string, string> }
  | { kind: "method"; allow: readonly string[]; other: T }
  | { kind: "none" };

interface Branch<T> {
  statics: Map<string, Branch<T>>;
  param?: { name: string; branch: Branch<T> };
  byMethod: Map<string, T>;
}

const NONE = { kind: "none" } as const;

function branch<T>(): Branch<T> {
  return { statics: new Map(), byMethod: new Map() };
}

/** Splits a path into segments; repeated and trailing slashes do not make empty segments. */
function segmentsOf(path: string): string[] {
  return path.split("/").filter((segment) => segment !== "");
}

/** A segment with its percent-escapes decoded; a malformed one is left for the schema to judge. */
function decoded(segment: string): string {
  if (!segment.includes("%")) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** Route values by method and path pattern; `:name` segments are parameters. */
export class RouteTree<T> {
  readonly #root: Branch<T> = branch();

  /** Adds `value` for `method` on `pattern`; a second value for the same pair is an error. */
  add(method: string, pattern: string, value: T): void {
    let node = this.#root;
    for (const segment of segmentsOf(pattern)) {
      if (segment.startsWith(":")) {
        const name = segment.slice(1);
        if (node.param && node.param.name !== name) {
          throw new Error(`${pattern}: parameter ':${name}' clashes with ':${node.param.name}'`);
        }
        node.param ??= { name, branch: branch() };
        node = node.param.branch;
      } else {
        let next = node.statics.get(segment);
        if (!next) node.statics.set(segment, next = branch());
        node = next;
      }
    }
    if (node.byMethod.has(method)) throw new Error(`${method} ${pattern} is added twice`);
    node.byMethod.set(method, value);
  }

  /**
   * The value for `method` on `path`; `method` when the path exists only for other methods (with
   * them, for a 405's Allow header, and one of their values); `none` otherwise. HEAD falls back
   * to GET's value.
   */
  find(method: string, path: string): Found<T> {
    const segments = segmentsOf(path);
    const valueOf = (node: Branch<T>) =>
      node.byMethod.get(method) ?? (method === "HEAD" ? node.byMethod.get("GET") : undefined);
    const params: Record<string, string> = {};
    const node = this.#walk(this.#root, segments, 0, params, (n) => valueOf(n) !== undefined);
    if (node) return { kind: "match", value: valueOf(node)!, params };
    const other = this.#walk(this.#root, segments, 0, {}, (n) => n.byMethod.size > 0);
    if (!other) return NONE;
    return {
      kind: "method",
      allow: [...other.byMethod.keys()],
      other: other.byMethod.values().next().value!,
    };
  }

  #walk(
    node: Branch<T>,
    segments: string[],
    at: number,
    params: Record<string, string>,
    accept: (node: Branch<T>) => boolean,
  ): Branch<T> | undefined {
    if (at === segments.length) return accept(node) ? node : undefined;
    const segment = segments[at];
    const fixed = node.statics.get(segment);
    if (fixed) {
      const found = this.#walk(fixed, segments, at + 1, params, accept);
      if (found) return found;
    }
    if (!node.param) return undefined;
    const found = this.#walk(node.param.branch, segments, at + 1, params, accept);
    if (found) params[node.param.name] = decoded(segment);
    return found;
  }
}
