import assert from "node:assert/strict";
import { assetsModule, emitDashboardAssets } from "./dashboard_emitter.ts";

Deno.test("assetsModule: each file with its content type and a content-derived ETag", () => {
  const cases = [
    {
      name: "one file",
      given: [["a.css", "text/css", "body{}"]] as [string, string, string][],
      want: [
        `export const ASSETS: Record<string, Asset> = {`,
        `  "a.css": {\n    type: "text/css",\n    etag: "\\"`,
        `    body: "body{}",\n  },`,
      ],
    },
    {
      name: "a body that needs escaping",
      given: [["i.html", "text/html", `<a href="x">\n</a>`]] as [string, string, string][],
      want: [`    body: "<a href=\\"x\\">\\n</a>",`],
    },
  ];
  for (const { name, given, want } of cases) {
    const source = assetsModule(given);
    for (const part of want) assert.ok(source.includes(part), `${name}: ${part}\n${source}`);
  }
  const etag = (body: string) => /etag: "(.*)",/.exec(assetsModule([["f", "t", body]]))![1];
  assert.equal(etag("x"), etag("x"));
  assert.notEqual(etag("x"), etag("y"));
});

Deno.test({
  name: "emitDashboardAssets: the page, its script bundled",
  ignore: (await Deno.permissions.query({ name: "run" })).state !== "granted",
  fn: async () => {
    const source = await emitDashboardAssets();
    for (const name of ["index.html", "app.js", "app.css"]) {
      assert.ok(source.includes(`  ${JSON.stringify(name)}: {`), name);
    }
  },
});
