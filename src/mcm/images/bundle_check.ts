/**
 * The node's check of a microservice's bundle before it runs: the sandbox evaluates it as a
 * classic script, where `import()` and `import.meta` would load modules past the sandbox's
 * permissions (Deno checks a literal import against the process's, not the worker's). A
 * bundle that contains them is refused with the place, as a load error. Each bundle file is
 * named by its content's hash, so one is parsed once per node process.
 *
 * @module
 */
import { parse } from "acorn";
import { simple } from "acorn-walk";

const checked = new Set<string>();

/** The bundle does not load: it is not retried until redeployed. */
export class LoadError extends Error {
  override name = "LoadError";
}

/** Refuses (LoadError) a bundle that loads modules or is no script at all. */
export async function checkBundle(path: string): Promise<void> {
  if (checked.has(path)) return;
  const code = await Deno.readTextFile(path);
  let ast;
  try {
    ast = parse(code, {
      ecmaVersion: "latest",
      sourceType: "script",
      allowHashBang: true,
      locations: true,
    });
  } catch {
    // Not parsed here (a syntax this parser does not know, or no script at all: V8 then says
    // what is wrong): refused only if it names import at all.
    if (/\bimport\s*(\(|\.\s*meta\b)/.test(code)) {
      throw new LoadError(
        "index.js uses import() or import.meta: microservices cannot load modules; " +
          "bundle every dependency into index.js",
      );
    }
    checked.add(path);
    return;
  }
  const found: string[] = [];
  const where = (node: { loc?: { start: { line: number; column: number } } | null }) =>
    node.loc ? ` (line ${node.loc.start.line}, column ${node.loc.start.column + 1})` : "";
  simple(ast, {
    ImportExpression: (node) => void found.push(`import()${where(node)}`),
    MetaProperty: (node) => {
      if (node.meta.name === "import") found.push(`import.meta${where(node)}`);
    },
  });
  if (found.length > 0) {
    throw new LoadError(
      `index.js uses ${found.slice(0, 3).join(", ")}: microservices cannot load modules; ` +
        "bundle every dependency into index.js",
    );
  }
  checked.add(path);
}
