/**
 * A tree of path patterns (`/models/:id/upload`), matched segment by segment. A lookup walks one
 * branch per segment, static names before parameters, so its cost grows with the path's depth,
 * not with the number of routes; itty-router's list of regular expressions, tried in order,
 * grows with both (see the closing note of the request pipeline in docs/development.md, "Request pipeline").
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
const SLASH = 47;
/** How many recent matches a tree keeps. */
const RECENT_PATHS = 1024;
/** The longest path kept among them (so the cache holds at most about 256 KiB of paths). */
const RECENT_PATH_LENGTH = 256;

/** The value of `method` at a branch; HEAD falls back to GET. */
function valueFor<T>(node: Branch<T>, method: string): T | undefined {
  return node.byMethod.get(method) ?? (method === "HEAD" ? node.byMethod.get("GET") : undefined);
}

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
  /**
   * Recent matches by method and path: a node answers the same few paths over and over (a
   * model's record, a microservice's route), and one Map lookup beats a walk. Bounded; emptied
   * when full and whenever a route is added.
   */
  readonly #recent = new Map<string, Found<T>>();

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
    this.#recent.clear();
  }

  /**
   * The value for `method` on `path`; `method` when the path exists only for other methods (with
   * them, for a 405's Allow header, and one of their values); `none` otherwise. HEAD falls back
   * to GET's value.
   */
  find(method: string, path: string): Found<T> {
    const key = method + " " + path;
    const recent = this.#recent.get(key);
    if (recent) return recent;
    const params: Record<string, string> = {};
    const node = this.#walk(this.#root, path, 0, params, method);
    if (node) {
      const found = { kind: "match", value: valueFor(node, method)!, params } as const;
      // Long paths are not kept: anyone may send them, and the cache must stay small.
      if (path.length <= RECENT_PATH_LENGTH) {
        if (this.#recent.size >= RECENT_PATHS) this.#recent.clear();
        this.#recent.set(key, Object.freeze(found));
      }
      Object.freeze(params);
      return found;
    }
    const other = this.#walk(this.#root, path, 0, {}, undefined);
    if (!other) return NONE;
    return {
      kind: "method",
      allow: [...other.byMethod.keys()],
      other: other.byMethod.values().next().value!,
    };
  }

  /**
   * The branch that `path` from `at` leads to and that answers `method` (any method when
   * undefined). Walks the string itself: no array of segments is made per request.
   */
  #walk(
    node: Branch<T>,
    path: string,
    at: number,
    params: Record<string, string>,
    method: string | undefined,
  ): Branch<T> | undefined {
    while (path.charCodeAt(at) === SLASH) at++;
    if (at >= path.length) {
      const fits = method === undefined ? node.byMethod.size > 0 : valueFor(node, method);
      return fits ? node : undefined;
    }
    let end = path.indexOf("/", at);
    if (end < 0) end = path.length;
    const segment = path.slice(at, end);
    const fixed = node.statics.get(segment);
    if (fixed) {
      const found = this.#walk(fixed, path, end, params, method);
      if (found) return found;
    }
    if (!node.param) return undefined;
    const found = this.#walk(node.param.branch, path, end, params, method);
    if (found) params[node.param.name] = decoded(segment);
    return found;
  }
}
