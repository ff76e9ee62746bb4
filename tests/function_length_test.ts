/**
 * The composition roots stay readable: no function in src/node or src/hub is longer than 80
 * lines (from its head to its closing brace), as Deno's own parser sees them (a lint plugin run
 * on each file).
 */
import assert from "node:assert/strict";

const LIMIT = 80;
const FOLDERS = ["src/node", "src/hub"];

/** Reports every function (declaration, expression, arrow, method) longer than LIMIT lines. */
const plugin: Deno.lint.Plugin = {
  name: "function-length",
  rules: {
    "max-lines": {
      create(context) {
        const lineOf = (offset: number) =>
          context.sourceCode.text.slice(0, offset).split("\n").length;
        const check = (node: Deno.lint.Node) => {
          const lines = lineOf(node.range[1]) - lineOf(node.range[0]) + 1;
          if (lines > LIMIT) context.report({ node, message: `${lines} lines` });
        };
        return {
          FunctionDeclaration: check,
          FunctionExpression: check,
          ArrowFunctionExpression: check,
        };
      },
    },
  },
};

/** The .ts files under `folder`, recursively. */
async function* sources(folder: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(folder)) {
    const path = `${folder}/${entry.name}`;
    if (entry.isDirectory) yield* sources(path);
    else if (entry.name.endsWith(".ts")) yield path;
  }
}

/** The functions over LIMIT lines in `text`, as `line: n lines`. */
function longFunctions(path: string, text: string): string[] {
  return Deno.lint.runPlugin(plugin, path, text).map((found) =>
    `${text.slice(0, found.range[0]).split("\n").length}: ${found.message}`
  );
}

Deno.test("the check finds a long function, a long method and a long arrow, and only those", () => {
  const body = (n: number) => "  x++;\n".repeat(n);
  const text = `let x = 0;\nfunction long() {\n${body(LIMIT - 1)}}\n` +
    `function short() {\n${body(LIMIT - 2)}}\n` +
    `class C {\n  method() {\n${body(LIMIT - 1)}  }\n}\n` +
    `const arrow = () => {\n${body(LIMIT - 1)}};\n`;
  assert.deepEqual(longFunctions("/tmp/sample.ts", text), [
    `2: ${LIMIT + 1} lines`,
    `${2 * LIMIT + 4}: ${LIMIT + 1} lines`,
    `${3 * LIMIT + 6}: ${LIMIT + 1} lines`,
  ]);
});

Deno.test(`no function in ${FOLDERS.join(" or ")} is over ${LIMIT} lines`, async () => {
  const root = new URL("..", import.meta.url).pathname;
  const long: string[] = [];
  let files = 0;
  for (const folder of FOLDERS) {
    for await (const path of sources(root + folder)) {
      files++;
      const found = longFunctions(path, await Deno.readTextFile(path));
      long.push(...found.map((where) => `${path.slice(root.length)}:${where}`));
    }
  }
  assert.ok(files > 10, `${files} files`);
  assert.deepEqual(long, []);
});
