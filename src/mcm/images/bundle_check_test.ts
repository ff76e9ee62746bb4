import assert from "node:assert/strict";
import { checkBundle, LoadError } from "./bundle_check.ts";

Deno.test("checkBundle refuses import() and import.meta, wherever they stand, and nothing else", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const cases: [string, RegExp | null][] = [
      ["mimikModule.exports = function () {};", null],
      ['var s = "import(\'x\')"; // import("y")', null],
      ["var o = { import: 1 }; o.import;", null],
      ['import("node:fs");', /import\(\) \(line 1, column 1\)/],
      [
        "function f() {\n  return import/* hidden */('data:x');\n}",
        /import\(\) \(line 2, column 10\)/,
      ],
      ["new Function('return 1'); void import.meta", /import\.meta/],
      // Not a script for this parser: refused only if it names an import.
      ["export default {}", null],
      ["export default import('x')", /uses import\(\)/],
    ];
    for (const [i, [code, want]] of cases.entries()) {
      const path = `${dir}/${i}.js`;
      await Deno.writeTextFile(path, code);
      if (want === null) await checkBundle(path);
      else {await assert.rejects(checkBundle(path), (e) =>
          e instanceof LoadError && want.test(e.message), code);}
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
